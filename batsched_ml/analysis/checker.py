"""An independent checker of a finished run: does its jobs CSV describe a valid schedule?

It reads only what any Batsim run leaves behind (``PREFIX_jobs.csv``, optionally the
workloads and the machine size), never the scheduler's state, so it checks our embedded
simulator, real Batsim and any scheduler alike. :func:`check_run` returns a list of
:class:`Violation` (empty = valid):

* ``never-ended`` / ``missing`` / ``duplicate`` / ``unknown-job`` / ``attempts`` /
  ``killed-not-requeued``: every workload job ends exactly once -- completed, killed and
  requeued (``12``, ``12#1``, ...) then completed, or rejected;
* ``no-reason``: a rejection without a reason (when the reasons are given);
* ``early-start``: an attempt started before its submission (or a requeue before the kill);
* ``alloc``: an allocation of the wrong size, unparsable, or beyond the machine;
* ``overlap``: a core used by two attempts at once;
* ``runtime``: an execution time that its delay profile and walltime do not explain;
* ``idle-wait``: a job waited while the whole machine stood idle for longer than
  ``idle_slack`` seconds (Batsim's message latencies explain a few milliseconds): a startable
  job left waiting, the signature of a scheduler that forgot to revisit its queue;
* ``head-wait`` (only with ``fcfs_head=True``, for runs of a scheduler that starts the head of
  its queue as soon as it fits -- strict FCFS, EASY -- with the queue in submission order: the
  ``fcfs`` policy, no classification): the first waiting job in submission order waited while
  enough cores were free for longer than ``idle_slack``: a job left waiting on a partly busy
  machine. (Conservative backfilling may keep its head waiting with free cores: compression
  re-places one job at a time while later jobs keep their reservations. Real batsched does.)

Times in the CSV are printed to the microsecond, so comparisons allow ``tolerance``.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass
from pathlib import Path

from sortedcontainers import SortedList

from ..protocol.codec import parse_alloc
from .jobs_csv import JobsTable, read_jobs_csv

# What makes a jobs CSV's figures wrong whatever the scheduler (``metrics`` refuses such a file): a start
# before the submission (a negative wait), a job written twice, attempts that do not follow each other.
# Allocations are left to ``check``: no figure reads them. The other kinds judge the scheduler
# (idle-wait, head-wait) or say the run is partial (never-ended, killed-not-requeued: the commands warn).
INCONSISTENT = ("duplicate", "attempts", "early-start")
FINAL_STATES = ("COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED", "REJECTED", "COMPLETED_FAILED")
KILLED = "COMPLETED_KILLED"
TOLERANCE = 2e-6  # two %f roundings
IDLE_SLACK = 1.0


@dataclass(frozen=True)
class Violation:
    kind: str
    job: str  # protocol id "w0!12" (or "w0!12#1" for one attempt); "" for the whole run
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.job + ': ' if self.job else ''}{self.message}"


@dataclass(slots=True)
class _Attempt:
    id: str  # "w0!12#1"
    base: str  # "w0!12"
    number: int
    state: str
    submission: float
    start: float
    finish: float
    execution: float
    res: int
    walltime: float
    alloc: str


def check_run(jobs, workloads=None, nb_cores: int | None = None, *, rejected=None,
              idle_slack: float | None = IDLE_SLACK, tolerance: float = TOLERANCE,
              fcfs_head: bool = False) -> list[Violation]:
    """Violations of the run described by ``jobs`` (a jobs CSV path or a :class:`JobsTable`).

    ``workloads``: ``{name: workload dict}`` or a list of workload dicts (named ``w0``, ``w1``...
    as Batsim names them): every job must then appear, and delay profiles check execution
    times. ``nb_cores``: allocations must stay below it. ``rejected``: ``{job id: reason}``
    (e.g. ``dict(core.rejected)``): every rejection must then have a non-empty reason.
    ``idle_slack=None`` leaves out the idle-wait check.
    """
    table = jobs if isinstance(jobs, JobsTable) else read_jobs_csv(jobs)
    if isinstance(workloads, (list, tuple)):
        workloads = {f"w{i}": w for i, w in enumerate(workloads)}
    out: list[Violation] = []
    attempts = _attempts(table, out)
    by_job: dict[str, list[_Attempt]] = {}
    for a in attempts:
        by_job.setdefault(a.base, []).append(a)
    _check_lifecycles(by_job, workloads, rejected, tolerance, out)
    ran = [a for a in attempts if not math.isnan(a.start)]
    masks = _check_allocations(ran, nb_cores, out)
    idle = _check_overlaps(ran, masks, tolerance, out)
    if idle_slack is not None:
        _check_idle_waits(attempts, idle, idle_slack, out)
    if fcfs_head and nb_cores is not None:
        _check_head_waits(attempts, nb_cores, idle_slack, out)
    return out


def _attempts(table: JobsTable, out: list) -> list[_Attempt]:
    rows = []
    for i in range(len(table)):
        name, workload = str(table.job_id[i]), str(table.workload_name[i])
        base, sep, suffix = name.partition("#")
        number = 0
        if sep:
            if not suffix.isdigit():
                out.append(Violation("attempts", f"{workload}!{name}", "attempt suffix is not a number"))
                continue
            number = int(suffix)
        rows.append(_Attempt(f"{workload}!{name}", f"{workload}!{base}", number, str(table.final_state[i]),
                             float(table.submission_time[i]), float(table.starting_time[i]),
                             float(table.finish_time[i]), float(table.execution_time[i]),
                             int(table.requested_number_of_resources[i]), float(table.requested_time[i]),
                             str(table.allocated_resources[i])))
    return rows


def _check_lifecycles(by_job: dict, workloads, rejected, tol: float, out: list) -> None:
    """Each logical job: attempts 0..k once each, all but the last killed, the last final."""
    expected = {}
    if workloads is not None:
        for wname, w in workloads.items():
            profiles = w.get("profiles", {})
            for job in w["jobs"]:
                expected[f"{wname}!{job['id']}"] = (job, profiles.get(job["profile"]))
        for job_id in [j for j in expected if j not in by_job]:  # in workload order, run after run
            out.append(Violation("missing", job_id, "in the workload but not in the output"))
    for job_id, tries in by_job.items():
        tries.sort(key=lambda a: a.number)
        numbers = [a.number for a in tries]
        if len(set(numbers)) != len(numbers):
            out.append(Violation("duplicate", job_id, f"{len(numbers) - len(set(numbers))} attempt(s) "
                                 "written more than once"))
            continue
        if numbers != list(range(len(numbers))):
            out.append(Violation("attempts", job_id, f"attempt numbers {numbers} are not 0..{len(numbers) - 1}"))
        source = expected.get(job_id)
        if workloads is not None and source is None:
            out.append(Violation("unknown-job", job_id, "in the output but in no workload"))
        for a in tries[:-1]:
            if a.state != KILLED:
                out.append(Violation("attempts", a.id, f"ended {a.state} but was attempted again"))
        for prev, a in zip(tries, tries[1:]):
            if a.submission < prev.finish - tol:
                out.append(Violation("early-start", a.id, f"requeued at {a.submission:f}, before the "
                                     f"previous attempt was killed at {prev.finish:f}"))
        last = tries[-1]
        if last.state == KILLED:
            out.append(Violation("killed-not-requeued", last.id, "killed and never run again"))
        elif last.state not in FINAL_STATES:
            out.append(Violation("never-ended", last.id, f"still {last.state} when the simulation ended"))
        elif last.state == "REJECTED" and rejected is not None and not rejected.get(last.id):
            out.append(Violation("no-reason", last.id, "rejected without a reason"))
        if source is not None:
            job, profile = source
            if tries[0].submission < float(job["subtime"]) - tol:
                out.append(Violation("early-start", tries[0].id, f"submitted at {tries[0].submission:f}, "
                                     f"before its subtime {job['subtime']}"))
            walltime = float(job.get("walltime", -1))  # exact: the CSV's is rounded
            for a in tries:
                _check_runtime(a, profile, walltime, tol, out)
        for a in tries:
            if not math.isnan(a.start) and a.start < a.submission - tol:
                out.append(Violation("early-start", a.id, f"started at {a.start:f}, submitted at {a.submission:f}"))


def _check_runtime(a: _Attempt, profile, walltime: float, tol: float, out: list) -> None:
    """Batsim's rules: a delay job runs its delay, or is stopped at its walltime (also when
    delay == walltime); a killed one ran no longer than that."""
    if math.isnan(a.start):
        return
    if abs(a.start + a.execution - a.finish) > tol * max(1.0, a.finish) * 2:
        out.append(Violation("runtime", a.id, f"start {a.start:f} + execution {a.execution:f} != finish {a.finish:f}"))
    if not profile or profile.get("type") not in ("delay", "DelayProfile"):  # Batsim 4.2.1's name, Batsim 5's
        return
    delay = float(profile["delay"])
    if 0 <= walltime <= delay:
        state, runtime = "COMPLETED_WALLTIME_REACHED", walltime
    else:
        state, runtime = "COMPLETED_SUCCESSFULLY", delay
    if a.state == KILLED:
        if a.execution > runtime + tol:
            out.append(Violation("runtime", a.id, f"killed after {a.execution:f} s, longer than it can run "
                                 f"({runtime:g} s)"))
    elif a.state in (state, "COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"):
        if a.state != state or abs(a.execution - runtime) > tol:
            out.append(Violation("runtime", a.id, f"{a.state} after {a.execution:f} s; delay {delay:g} and "
                                 f"walltime {walltime:g} give {state} after {runtime:g} s"))


def _check_allocations(ran: list, nb_cores: int | None, out: list) -> list[int]:
    masks = []
    for a in ran:
        try:
            mask = parse_alloc(a.alloc).mask
        except ValueError as exc:
            out.append(Violation("alloc", a.id, str(exc)))
            mask = 0
        if mask and mask.bit_count() != a.res:
            out.append(Violation("alloc", a.id, f"{mask.bit_count()} cores allocated ({a.alloc}), {a.res} requested"))
        if nb_cores is not None and mask >> nb_cores:
            out.append(Violation("alloc", a.id, f"allocation {a.alloc} exceeds the {nb_cores} cores"))
        masks.append(mask)
    return masks


def _check_overlaps(ran: list, masks: list, tol: float, out: list) -> list[tuple[float, float]]:
    """Sweep the attempts by start time: a core given while still in use is an overlap.
    Returns the intervals during which no attempt ran (idle machine), in order."""
    order = sorted(range(len(ran)), key=lambda i: (ran[i].start, ran[i].finish, ran[i].id))  # empty runs first
    running: list = []  # (finish, index)
    busy, idle, idle_since = 0, [], -math.inf
    for i in order:
        a = ran[i]
        while running and running[0][0] <= a.start + tol:
            finish, j = heapq.heappop(running)
            busy &= ~masks[j]
            if not running:
                idle_since = finish
        if not running:
            idle.append((idle_since, a.start))
        clash = busy & masks[i]
        if clash:
            others = [ran[j].id for _, j in running if masks[j] & clash]
            out.append(Violation("overlap", a.id, f"started at {a.start:f} on cores also used by "
                                 f"{', '.join(sorted(others))}"))
        busy |= masks[i]
        heapq.heappush(running, (a.finish, i))
    end = max((f for f, _ in running), default=idle_since)
    idle.append((end, math.inf))
    return idle


def _check_idle_waits(attempts: list, idle: list, slack: float, out: list) -> None:
    starts = [lo for lo, _ in idle]
    for a in attempts:
        if a.state == "REJECTED" or (math.isnan(a.start) and a.state in FINAL_STATES + (KILLED,)):
            continue
        lo, hi = a.submission, (math.inf if math.isnan(a.start) else a.start)
        k = max(bisect.bisect_right(starts, lo) - 1, 0)
        while k < len(idle) and idle[k][0] < hi:
            gap_lo, gap_hi = max(idle[k][0], lo), min(idle[k][1], hi)
            if gap_hi - gap_lo > slack:
                until = "the end" if math.isinf(gap_hi) else f"{gap_hi:f}"
                out.append(Violation("idle-wait", a.id, f"waited on an idle machine from {gap_lo:f} to {until}"))
                break
            k += 1


def _check_head_waits(attempts: list, nb_cores: int, slack: float, out: list) -> None:
    """Sweep the run's dates: while the earliest-submitted waiting jobs (those within ``slack``
    of the earliest: Batsim's arrival order among them is not in the CSV) all fit in the free
    cores, the head is startable; it must not stay so for longer than ``slack``."""
    waiting = [a for a in attempts if a.state != "REJECTED"]
    events = []  # (date, order, kind, attempt): ends (0) before submissions (1) before starts (2)
    for a in waiting:
        events.append((a.submission, 1, id(a), a))
        if not math.isnan(a.start):
            events.append((a.start, 2, id(a), a))
            events.append((a.finish, 0, id(a), a))
    events.sort(key=lambda e: e[:3])
    queue = SortedList(key=lambda a: (a.submission, a.id))
    busy, since, reported = 0, None, set()
    for k, (date, kind, _, a) in enumerate(events):
        if kind == 0:
            busy -= a.res
        elif kind == 1:
            queue.add(a)
        else:
            queue.discard(a)
            busy += a.res
        if k + 1 < len(events) and events[k + 1][0] == date:
            continue  # the state between two dates is what counts
        startable = False
        if queue:
            first = queue[0].submission
            heads = list(queue.irange_key(max_key=(first + slack, "\uffff")))
            startable = max(h.res for h in heads) <= nb_cores - busy
        if not startable:
            since = None
            continue
        if since is None:
            since = date
        following = events[k + 1][0] if k + 1 < len(events) else math.inf
        if following - since > slack and heads[0].id not in reported:
            reported.add(heads[0].id)
            until = "the end" if math.isinf(following) else f"{following:f}"
            out.append(Violation("head-wait", heads[0].id, f"first in submission order, it fitted in the "
                                 f"{nb_cores - busy} free cores from {since:f} to {until} but waited"))


def inconsistencies(jobs) -> list[Violation]:
    """The violations of ``jobs`` (a path or a :class:`JobsTable`) that make its figures wrong
    (:data:`INCONSISTENT`): a start before the submission, a job written twice... Only the jobs'
    lives are read (no allocation), so it costs a fraction of ``check_run``."""
    table = jobs if isinstance(jobs, JobsTable) else read_jobs_csv(jobs)
    out: list[Violation] = []
    by_job: dict[str, list[_Attempt]] = {}
    for a in _attempts(table, out):
        by_job.setdefault(a.base, []).append(a)
    _check_lifecycles(by_job, None, None, TOLERANCE, out)
    return [v for v in out if v.kind in INCONSISTENT]


def violation_lines(violations: list[Violation], first: int = 20) -> list[str]:
    """The violations as lines, at most ``first`` of each kind, then one line per kind that had
    more (``... and 18,551 more missing``): a partial run can miss thousands of jobs."""
    shown: dict[str, int] = {}
    lines = []
    for v in violations:
        shown[v.kind] = shown.get(v.kind, 0) + 1
        if shown[v.kind] <= first:
            lines.append(str(v))
    lines += [f"... and {count - first:,} more {kind} (--json lists them all)"
              for kind, count in shown.items() if count > first]
    return lines


def check_files(jobs_csv, workload_paths=(), nb_cores: int | None = None, **options) -> list[Violation]:
    """:func:`check_run` on files: a jobs CSV and the workload files the run used (in order)."""
    from ..workloads import load_workload

    workloads = [load_workload(Path(p)) for p in workload_paths] or None
    return check_run(jobs_csv, workloads, nb_cores, **options)
