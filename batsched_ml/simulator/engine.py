"""An event-driven simulator that behaves like Batsim 4.2.1 towards its scheduler.

Batsim is a SimGrid program whose actors talk to one *server* actor through a
mailbox, and the timing of everything the scheduler sees comes from that:

* every internal message (a submission, a job's end, each decision of a reply,
  the "scheduler ready" that closes a reply, a kill or call-me-later
  acknowledgement) is a SimGrid communication that takes the route's latency:
  ``loopback`` between actors on the master host, ``node_to_master`` from the
  compute host where a job ran;
* the server receives one message at a time, in the order they were posted, and
  a message waits in the mailbox while another is in transit;
* the server sends the events it gathered to the scheduler only when the
  scheduler is ready (its previous reply fully applied) and the mailbox is
  empty, so events that reach Batsim together share one message;
* the job submitter sleeps from one submission date to the next *after* its
  previous send, so submissions drift by a few latencies.

This module replays that model (``Latency`` holds the two latencies; the
defaults are those of a cluster platform with 50 us links and a 500 us
backbone, like the golden runs) with the same rules of the protocol:
``JOB_COMPLETED`` at the end of a delay job or at its walltime
(``COMPLETED_WALLTIME_REACHED``, also when delay == walltime); ``KILL_JOB``
answered by ``JOB_COMPLETED(COMPLETED_KILLED)`` then ``JOB_KILLED`` (a job that
had already ended is listed without progress); ``CALL_ME_LATER`` strictly in
the future, answered by ``REQUESTED_CALL``; dynamic jobs (``REGISTER_PROFILE``
/ ``REGISTER_JOB``) when enabled, the simulation then lasting until
``NOTIFY registration_finished``; ``NOTIFY no_more_static_job_to_submit`` after
the last static submission; ``SIMULATION_ENDS`` once nothing is left.
``NO_LATENCY`` gives the idealised model: whatever happens at one instant
reaches the scheduler in one message.

The scheduler is any callable ``(now, events) -> (reply_now, decisions)``:
the in-process decision core or a remote one behind ZeroMQ.
"""

from __future__ import annotations

import gc
import heapq
import time
from collections import deque
from dataclasses import dataclass, field

from ..protocol import events as ev
from ..protocol.coreset import format_mask
from ..validation import machine_size
from .outputs import JobsTracer


class SimulationError(RuntimeError):
    """The scheduler broke a rule Batsim enforces (Batsim would abort)."""


@dataclass(slots=True, eq=False)
class SimJob:
    id: str
    workload: str
    profile_name: str
    profile: dict
    subtime: float
    walltime: float
    res: int
    data: dict  # the JOB_SUBMITTED ``job`` object
    state: str = "NOT_SUBMITTED"
    subtime_actual: float = 0.0
    start: float = -1.0
    start_ns: int = -1
    subtime_ns: int = 0
    runtime: float = 0.0
    alloc: int = 0  # bitmask of its cores while it runs; 0 once it ended (see _record_end)
    alloc_text: str = ""  # the allocation as Batsim writes it, once the job ended
    final_state: str = ""
    metadata: str = ""


@dataclass(frozen=True)
class Latency:
    """Durations of Batsim's internal messages (seconds of simulated time).

    A message takes its route's latency plus the time to move its one byte. The
    defaults are the golden platforms' (``platforms/``): 50 us host links and a
    500 us backbone, 125 MBps. Checked against the real transcripts and outputs
    (``tests/test_simulator.py``).
    """

    loopback: float = 0.0001  # between two actors of the master host (its link, up and down)
    node_to_master: float = 0.0006  # from a compute host, where a job's actor runs, to the server
    loopback_transfer: float = 8e-9  # one byte at 125 MBps
    node_transfer: float = 8e-9


BATSIM_LATENCY = Latency()
NO_LATENCY = Latency(0.0, 0.0, 0.0, 0.0)


def _stamp(t: int) -> float:
    """A date as Batsim writes it in its messages: ``%f``, to the microsecond. A scheduler
    echoing it as its ``now`` may be a fraction of a microsecond ahead, and Batsim waits."""
    return (t + 500) // 1000 / 1e6


def _ns_of(stamp: float) -> int:
    """A scheduler's date in nanoseconds; exact for the microsecond dates Batsim sends."""
    ns = round(stamp * 1e9)
    us = round(stamp * 1e6)
    return us * 1000 if abs(ns - us * 1000) < 50 else ns


def _ns(seconds: float) -> int:
    """Simulated dates are kept in integer nanoseconds: a date reached along two paths
    (a job's end, another's notice) coincides exactly when it does in decimal, and a 8 ns
    transfer time still separates two events, as in SimGrid."""
    return round(seconds * 1e9)


def _output(prefix: str | None, kind: str) -> str | None:
    """``PREFIX_jobs.csv`` / ``PREFIX_schedule.csv`` (None without a prefix: rows kept in memory)."""
    return None if prefix is None else f"{prefix}_{kind}.csv"


@dataclass
class SimulationResult:
    end_time: float
    nb_jobs: int
    wall_time: float
    scheduling_time: float
    jobs_csv: str | None = None
    schedule_csv: str | None = None
    unfinished: list = field(default_factory=list)
    schedule: dict = field(default_factory=dict)
    messages: int = 0


@dataclass
class PartialOutputs:
    """What a run stopped early left behind (attached to the exception as ``partial_outputs``)."""

    sim_time: float  # simulated seconds reached
    jobs_written: int  # rows in the jobs file: jobs that had ended
    pending: int  # jobs queued or running when it stopped (not in the file)
    not_submitted: int  # jobs whose submission time had not come
    jobs_csv: str | None = None
    schedule_csv: str | None = None

    def describe(self) -> str:
        where = f" in {self.jobs_csv}" if self.jobs_csv else ""
        return (f"stopped at simulated time {self.sim_time:.0f} s: {self.jobs_written} ended jobs kept{where}, "
                f"{self.pending} queued or running and {self.not_submitted} not yet submitted are not")


@dataclass(frozen=True)
class SimStatus:
    """Where a run is, for progress displays (``Simulator(progress=...)``)."""

    sim_time: float  # simulated seconds
    finished: int  # jobs that reached their final state (a killed-and-requeued job counts once)
    total: int  # jobs of the workloads
    queued: int
    running: int
    messages: int
    done: bool = False


def _compute_resources(names) -> list:
    """SIMULATION_BEGINS's ``compute_resources``, built with the cyclic garbage collector paused:
    8M new dicts on a 4M-core machine would trigger collections walking all of them again and
    again (19 of 26 s). A real list: the codec writes it (``--connect``, transcripts)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return [{"id": i, "name": n, "state": "idle", "properties": {"role": ""}} for i, n in enumerate(names)]
    finally:
        if was_enabled:
            gc.enable()


# Internal message kinds (what the server receives).
_HELLO, _SUBMITTED, _BYE, _COMPLETED, _DECISION, _READY, _WAITING_DONE, _KILLING_DONE = range(8)


class _Submitter:
    """Batsim's static job submitter: it sends every job whose subtime has come in one
    message, then sleeps for (next subtime - the date it last woke up) *after* that send,
    so each submission lands a few latencies after its subtime."""

    __slots__ = ("sim", "jobs", "next")

    def __init__(self, sim, jobs):
        self.sim, self.jobs, self.next = sim, jobs, 0

    def start(self, t):
        self.sim._post(t, self.sim._loopback, _HELLO, None, lambda t2: self._advance(t2, False))

    def _advance(self, t, woken):
        sim, jobs = self.sim, self.jobs
        i, n = self.next, len(jobs)
        batch = []
        if woken:  # the job it slept for is due, whatever the rounding
            batch.append(jobs[i])
            i += 1
        while i < n and jobs[i].subtime_ns <= t:
            batch.append(jobs[i])
            i += 1
        self.next = i
        if i == n:
            def after(t2):
                sim._post(t2, sim._loopback, _BYE, None, None)
        else:
            delay = jobs[i].subtime_ns - t

            def after(t2):
                sim._wake(t2 + delay, lambda t3: self._advance(t3, True))
        if batch:
            sim._post(t, sim._loopback, _SUBMITTED, batch, after)
        else:
            after(t)


class _Reply:
    """Batsim's request-reply actor: forwards the decisions of one reply to the server one by
    one (each send waits for the previous one), then says the scheduler is ready."""

    __slots__ = ("sim", "decisions", "next", "now", "sent", "sent_ns")

    def __init__(self, sim, decisions, now, sent, sent_ns):
        """``now``: the reply's; ``sent``: the message's ``now`` and ``sent_ns`` its date in ns."""
        self.sim, self.decisions, self.next, self.now = sim, decisions, 0, now
        self.sent, self.sent_ns = sent, sent_ns

    def _ns(self, stamp: float) -> int:
        return self.sent_ns if stamp == self.sent else _ns_of(stamp)

    def step(self, t):
        sim = self.sim
        if self.next < len(self.decisions):
            d = self.decisions[self.next]
            self.next += 1
            at = self._ns(d.timestamp)
            if at > t:
                sim._wake(at, lambda t2: sim._post(t2, sim._loopback, _DECISION, d, self.step))
            else:
                sim._post(t, sim._loopback, _DECISION, d, self.step)
        else:
            at = self._ns(self.now)
            if at > t:
                sim._wake(at, lambda t2: sim._post(t2, sim._loopback, _READY, None, None))
            else:
                sim._post(t, sim._loopback, _READY, None, None)


class Simulator:
    def __init__(self, nb_hosts: int, workloads, *, host_names=None, dynamic_jobs: bool = False,
                 profile_reuse: bool = False, progress=None, latency: Latency = BATSIM_LATENCY):
        """``workloads``: list of (name, Batsim workload dict); names are ``w0``, ``w1``... in Batsim."""
        self.nb_hosts = machine_size(nb_hosts, "nb_hosts")
        self.host_names = host_names or [f"node{i}" for i in range(nb_hosts)]
        self.dynamic_jobs = dynamic_jobs
        self.profile_reuse = profile_reuse
        self.progress = progress
        self.latency = latency
        self.workloads = list(workloads)
        self.profiles = {name: dict(w.get("profiles", {})) for name, w in self.workloads}
        self.jobs: dict[str, SimJob] = {}
        self.static: dict[str, list[SimJob]] = {}
        for name, workload in self.workloads:
            jobs = [self._make_job(name, data) for data in workload["jobs"]]
            jobs.sort(key=lambda j: j.subtime)  # stable: equal subtimes keep the workload's order
            self.static[name] = jobs
        self.nb_static = sum(len(j) for j in self.static.values())

    def _make_job(self, workload: str, data: dict) -> SimJob:
        job_id = f"{workload}!{data['id']}"
        if job_id in self.jobs:
            raise SimulationError(f"job {job_id} is defined twice")
        profile_name = data["profile"]
        profile = self.profiles[workload].get(profile_name)
        if profile is None:
            raise SimulationError(f"job {job_id} uses undefined profile {profile_name!r}")
        walltime = data.get("walltime", -1)
        wire = dict(data)
        wire["id"] = job_id
        job = SimJob(job_id, workload, profile_name, profile, float(data.get("subtime", 0.0)),
                     -1.0 if walltime is None else float(walltime), int(data["res"]), wire)
        job.subtime_ns = _ns(job.subtime)
        self.jobs[job_id] = job
        return job

    # ------------------------------------------------------------- actors
    def _wake(self, t: float, action) -> None:
        """An actor sleeping until ``t`` (SimGrid runs sleepers before message receivers)."""
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, action))

    def _post(self, t: float, latency: float, kind: int, payload, on_sent) -> None:
        """An actor sends the server a message; ``on_sent(t)`` runs once it is received."""
        if self._in_transit is None:
            self._in_transit = (t + latency, kind, payload, on_sent)
        else:
            self._mailbox.append((latency, kind, payload, on_sent))

    # ---------------------------------------------------------------- run
    def run(self, scheduler, prefix: str | None = None, on_start=None) -> SimulationResult:
        """Simulate to the end; with ``prefix``, write ``PREFIX_jobs.csv`` (streamed as jobs end)
        and ``PREFIX_schedule.csv``. If anything stops the run early (an error, Ctrl-C), both
        files are still finished with what is known and the exception carries a
        :class:`PartialOutputs` as ``partial_outputs`` before it propagates. ``on_start()`` runs
        once the jobs file is open, before the first event: whatever it writes (the CLI's
        ``PREFIX_run.json``) is never left without both files."""
        started = time.perf_counter()
        self._heap: list = []
        self._seq = 0
        self._mailbox: deque = deque()
        self._in_transit = None
        lat = self.latency
        self._loopback = _ns(lat.loopback + lat.loopback_transfer)
        self._node_to_master = _ns(lat.node_to_master + lat.node_transfer)
        self._busy = 0  # busy cores bitmask
        self._tracer = None  # opened in the try below: an early stop finishes it
        self._registration_open = self.dynamic_jobs
        self._scheduler = scheduler
        self._events: list = []  # gathered for the next message
        self._sched_ready = False
        self._ends_sent = self._ends_acknowledged = False
        self._submitters_left = len(self.static)
        self._nb_submitted = self._nb_ended = self._nb_running = 0
        self._nb_registered = 0  # dynamic jobs (requeued attempts)
        self._waiters = self._killers = 0
        self._kill_requested: set = set()
        self._created: list = []  # actors created while the server handles a message
        self.scheduling_time = 0.0
        self.messages = 0
        self._progress_at = 0
        self._now = 0
        try:
            self._tracer = JobsTracer(self.nb_hosts, path=_output(prefix, "jobs"))
            if on_start is not None:
                on_start()
            error, unfinished = self._simulate()
            result = self._finish(prefix, started, unfinished)
        except BaseException as exc:
            partial = self._finish_partial(prefix, started)
            try:
                exc.partial_outputs = partial
            except AttributeError:  # an exception type without a __dict__: the files are written anyway
                pass
            raise
        if error:
            raise SimulationError(error)
        return result

    def _finish(self, prefix, started, unfinished) -> SimulationResult:
        """The end of a run: jobs left unfinished written, both files closed, the result."""
        end_time = self._now / 1e9
        for job in unfinished:
            self._tracer.unfinished(job)
        self._report_progress(final=True)
        wall = time.perf_counter() - started
        schedule = self._tracer.schedule_values(end_time, self.scheduling_time, wall)
        result = SimulationResult(end_time, self._tracer.nb_jobs, wall, self.scheduling_time,
                                  unfinished=[j.id for j in unfinished], schedule=schedule,
                                  messages=self.messages)
        self._tracer.close()
        if prefix is not None:
            result.jobs_csv, result.schedule_csv = _output(prefix, "jobs"), _output(prefix, "schedule")
            self._tracer.write_schedule(result.schedule_csv, schedule)
        return result

    def _simulate(self):
        """The event loop; returns (error or None, jobs left unfinished)."""
        submitters = [_Submitter(self, jobs) for jobs in self.static.values()]
        for s in submitters:
            s.start(0)
        begins = ev.SimulationBegins(
            0.0, nb_resources=self.nb_hosts, nb_compute_resources=self.nb_hosts,
            allow_compute_sharing=False,
            config={"dynamic-jobs-enabled": self.dynamic_jobs, "dynamic-jobs-acknowledged": False,
                    "profile-reuse-enabled": self.profile_reuse, "profiles-forwarded-on-submission": False},
            compute_resources=_compute_resources(self.host_names),
            workloads={name: w.get("source", name) for name, w in self.workloads},
            profiles={name: dict(p) for name, p in self.profiles.items()})
        self._events.append(begins)
        self._send(0)
        for actor in self._created:
            actor(0)
        self._created.clear()

        heap = self._heap
        now = 0
        while True:
            transit = self._in_transit
            if heap and (transit is None or heap[0][0] <= transit[0]):
                now, _, action = heapq.heappop(heap)
                self._now = now
                action(now)
            elif transit is not None:
                now = self._now = transit[0]
                self._receive(now, transit)
            else:
                break

        end_time = now / 1e9
        unfinished = [j for j in self.jobs.values() if j.state in ("SUBMITTED", "RUNNING")]
        error = None
        if not self._ends_sent:
            # Batsim would wait forever: report instead of hanging.
            if self._registration_open:
                error = ("the scheduler never sent NOTIFY registration_finished although dynamic jobs are "
                         "enabled: Batsim would wait forever (a scheduler that does not use dynamic jobs, "
                         "like batsched, runs without --enable-dynamic-jobs)")
            self._events = [ev.SimulationEnds(end_time)]
            self._call(now)
        return error, unfinished

    def _finish_partial(self, prefix, started) -> "PartialOutputs":
        """After an early stop: close the jobs file (the jobs that ended) and write the schedule
        file as of now. Jobs still queued or running are not written (they have no final state)."""
        end_time = self._now / 1e9
        pending = sum(1 for j in self.jobs.values() if j.state in ("SUBMITTED", "RUNNING"))
        not_submitted = sum(1 for j in self.jobs.values() if j.state == "NOT_SUBMITTED")
        partial = PartialOutputs(end_time, 0, pending, not_submitted)
        try:
            tracer = self._tracer or JobsTracer(self.nb_hosts, path=_output(prefix, "jobs"))
            partial.jobs_written = tracer.nb_jobs
            tracer.close()
            if prefix is not None:
                partial.jobs_csv, partial.schedule_csv = _output(prefix, "jobs"), _output(prefix, "schedule")
                schedule = tracer.schedule_values(end_time, self.scheduling_time, time.perf_counter() - started)
                tracer.write_schedule(partial.schedule_csv, schedule)
        except OSError:  # the disk itself may be the problem: keep the original error
            pass
        return partial

    # ------------------------------------------------------------- server
    def _receive(self, t: float, transit) -> None:
        """The server gets one message: handle it, maybe call the scheduler, wait for the next."""
        _, kind, payload, on_sent = transit
        mailbox = self._mailbox
        if kind == _COMPLETED:
            self._on_completed(t, payload)
        elif kind == _DECISION:
            self._on_decision(t, payload)
        elif kind == _READY:
            self._sched_ready = True
            if self._ends_sent:
                self._ends_acknowledged = True
        elif kind == _SUBMITTED:
            seconds = _stamp(t)
            for job in payload:
                job.state = "SUBMITTED"
                job.subtime_actual = job.subtime
                self._events.append(ev.JobSubmitted(seconds, job.id, job.data))
            self._nb_submitted += len(payload)
        elif kind == _WAITING_DONE:
            self._waiters -= 1
            self._events.append(ev.RequestedCall(_stamp(t)))
        elif kind == _KILLING_DONE:
            self._on_killing_done(t, payload)
        elif kind == _BYE:
            self._submitters_left -= 1
            if self._submitters_left == 0:
                self._events.append(ev.Notify(_stamp(t), ev.NO_MORE_STATIC_JOB_TO_SUBMIT))
        # _HELLO: nothing to do
        if self._sched_ready and not mailbox and not self._ends_acknowledged:
            if self._events:
                self._send(t)
            elif self._finished():
                self._events.append(ev.SimulationEnds(_stamp(t)))
                self._ends_sent = True
                self._send(t)
        if mailbox:
            latency, kind2, payload2, on_sent2 = mailbox.popleft()
            self._in_transit = (t + latency, kind2, payload2, on_sent2)
        else:
            self._in_transit = None
        if on_sent is not None:
            on_sent(t)
        if self._created:
            created, self._created = self._created, []
            for actor in created:
                actor(t)

    def _finished(self) -> bool:
        return (self._submitters_left == 0 and not self._registration_open
                and self._nb_ended == self._nb_submitted and self._nb_running == 0
                and self._waiters == 0 and self._killers == 0)

    def _send(self, t: float) -> None:
        """One message to the scheduler; its reply is applied by a request-reply actor."""
        self._sched_ready = False
        sent, reply_now, decisions = self._call(t)
        self._created.append(_Reply(self, decisions, reply_now, sent, (t + 500) // 1000 * 1000).step)
        if self.progress is not None and self.messages - self._progress_at >= 500:
            self._progress_at = self.messages
            self._report_progress()

    def _report_progress(self, final: bool = False) -> None:
        """``progress.simulation_status(SimStatus)`` when it has that method (see ``batsched_ml.progress``),
        else ``progress(finished jobs, total jobs)``."""
        progress = self.progress
        if progress is None:
            return
        finished = self._nb_ended - self._nb_registered  # a requeued attempt ends its killed one
        if final:
            finished = self.nb_static
        status = getattr(progress, "simulation_status", None)
        if status is None:
            progress(finished, self.nb_static)
            return
        status(SimStatus(self._now / 1e9, finished, self.nb_static,
                         self._nb_submitted - self._nb_ended - self._nb_running, self._nb_running,
                         self.messages, final))

    def _call(self, t: float):
        events, self._events = self._events, []
        t0 = time.perf_counter()
        now = _stamp(t)
        reply_now, decisions = self._scheduler(now, events)
        self.scheduling_time += time.perf_counter() - t0
        self.messages += 1
        if reply_now < now:
            raise SimulationError(f"the scheduler replied with now={reply_now} < {now}")
        for d in decisions:
            if d.timestamp > reply_now:
                raise SimulationError(f"{d.type} has timestamp {d.timestamp} after now={reply_now}")
        return now, reply_now, decisions

    # ------------------------------------------------------------ jobs
    def _on_completed(self, t: float, job: SimJob) -> None:
        # Batsim's return codes: 0 on success, -1 at the walltime.
        code = 0 if job.final_state == ev.COMPLETED_SUCCESSFULLY else -1
        self._events.append(self._record_end(t, job, job.final_state, code))

    def _record_end(self, t: int, job: SimJob, state: str, code: int) -> ev.JobCompleted:
        """Write a job that ran and ended, and return its JOB_COMPLETED. The job then keeps its
        allocation as text only: a bitmask costs up to a bit per core of the machine, per job."""
        self._nb_running -= 1
        self._nb_ended += 1
        job.alloc_text = format_mask(job.alloc)
        self._tracer.job_ended(job)
        event = ev.JobCompleted(_stamp(t), job.id, state, code, job.alloc_text, job.alloc)
        job.alloc = 0
        return event

    def _job_ends(self, job: SimJob, t: float) -> None:
        """The job's actor wakes up at its end (unless it was killed) and tells the server."""
        if job.state != "RUNNING":
            return
        job.state = job.final_state
        self._busy &= ~job.alloc
        self._post(t, self._node_to_master, _COMPLETED, job, None)

    def _execute(self, d: ev.ExecuteJob, t: float) -> None:
        job = self._job(d.job_id, "EXECUTE_JOB")
        if job.state != "SUBMITTED":
            raise SimulationError(f"EXECUTE_JOB {d.job_id}: the job is {job.state}, not waiting")
        mask = d.alloc.mask
        if mask.bit_count() != job.res:
            raise SimulationError(f"EXECUTE_JOB {d.job_id}: {mask.bit_count()} cores allocated, "
                                  f"the job requests {job.res}")
        if mask >> self.nb_hosts:
            raise SimulationError(f"EXECUTE_JOB {d.job_id}: allocation {format_mask(mask)} exceeds the "
                                  f"{self.nb_hosts} hosts")
        if mask & self._busy:
            raise SimulationError(f"EXECUTE_JOB {d.job_id}: cores {format_mask(mask & self._busy)} are busy")
        profile = job.profile
        if profile.get("type") != "delay":
            raise SimulationError(f"job {job.id}: profile type {profile.get('type')!r} is not supported by the "
                                  "embedded simulator (only 'delay'); run real Batsim for it")
        self._busy |= mask
        self._nb_running += 1
        job.state = "RUNNING"
        job.start = t / 1e9
        job.start_ns = t
        job.alloc = mask
        delay = float(profile["delay"])
        if 0 <= job.walltime <= delay:
            job.runtime = job.walltime
            job.final_state = ev.COMPLETED_WALLTIME_REACHED
        else:
            job.runtime = delay
            job.final_state = ev.COMPLETED_SUCCESSFULLY
        self._wake(t + _ns(job.runtime), lambda t2: self._job_ends(job, t2))

    def _on_decision(self, t: float, d) -> None:
        kind = type(d)
        if kind is ev.ExecuteJob:
            self._execute(d, t)
        elif kind is ev.CallMeLater:
            at = _ns_of(d.at)
            if not at > t:
                raise SimulationError(f"CALL_ME_LATER at {d.at} is not strictly after now={_stamp(t)}")
            self._waiters += 1
            # Batsim's waiter sleeps at least 10 us.
            self._wake(t + max(at - t, 10_000),
                       lambda t2: self._post(t2, self._loopback, _WAITING_DONE, None, None))
        elif kind is ev.RejectJob:
            job = self._job(d.job_id, "REJECT_JOB")
            if job.state != "SUBMITTED":
                raise SimulationError(f"REJECT_JOB {d.job_id}: the job is {job.state}, not waiting")
            job.state = job.final_state = "REJECTED"
            if d.reason and not job.metadata:
                # the reason travels only in-process (REJECT_JOB has no reason on the wire); it goes
                # where Batsim puts a scheduler's words about a job, the metadata column
                job.metadata = d.reason.replace('"', "'")
            self._nb_ended += 1
            self._tracer.job_ended(job)
        elif kind is ev.KillJob:
            self._on_kill(t, d)
        elif kind is ev.RegisterProfile:
            self._require_registration("REGISTER_PROFILE")
            profiles = self.profiles.setdefault(d.workload_name, {})
            if d.profile_name in profiles and not self.profile_reuse:
                raise SimulationError(f"REGISTER_PROFILE: profile {d.profile_name!r} already exists")
            profiles[d.profile_name] = d.profile
        elif kind is ev.RegisterJob:
            self._require_registration("REGISTER_JOB")
            workload, _, name = d.job_id.partition("!")
            if "subtime" not in d.job:
                raise SimulationError(f"REGISTER_JOB {d.job_id}: 'subtime' is required")
            self.profiles.setdefault(workload, {})
            data = dict(d.job)
            data["id"] = name
            job = self._make_job(workload, data)
            job.state = "SUBMITTED"
            job.subtime_actual = job.subtime
            self._nb_submitted += 1  # Batsim does not echo a JOB_SUBMITTED unless acknowledged
            self._nb_registered += 1
        elif kind is ev.SetJobMetadata:
            self._job(d.job_id, "SET_JOB_METADATA").metadata = d.metadata
        elif kind is ev.Notify:
            if d.kind == ev.REGISTRATION_FINISHED:
                self._registration_open = False
            elif d.kind == ev.CONTINUE_REGISTRATION:
                self._require_dynamic("NOTIFY continue_registration")
                self._registration_open = True
        else:
            raise SimulationError(f"unsupported decision {d!r}")

    def _on_kill(self, t: float, d: ev.KillJob) -> None:
        """A killer actor ends the running jobs now and acknowledges once the server is free."""
        jobs = []
        for job_id in d.job_ids:
            job = self.jobs.get(job_id)
            if job is None:
                raise SimulationError(f"KILL_JOB: unknown job {job_id}")
            if job.state in ("NOT_SUBMITTED", "SUBMITTED", "REJECTED"):
                raise SimulationError(f"KILL_JOB {job_id}: the job is {job.state}, not started")
            if job_id not in self._kill_requested:  # Batsim ignores a repeated kill
                self._kill_requested.add(job_id)
                jobs.append(job)
        if not jobs:
            return
        job_ids = [job.id for job in jobs]
        self._killers += 1

        def kill(t2):
            progress, killed = {}, []
            for job in jobs:
                if job.state != "RUNNING":
                    continue  # it ended first: listed without progress
                elapsed = (t2 - job.start_ns) / 1e9
                delay = float(job.profile["delay"])
                job.runtime = elapsed if elapsed > 0 else 1e-5
                job.state = job.final_state = ev.COMPLETED_KILLED
                self._busy &= ~job.alloc
                killed.append(job)
                progress[job.id] = {"profile_name": job.profile_name,
                                    "progress": elapsed / delay if delay > 0 else 1.0}
            self._post(t2, self._loopback, _KILLING_DONE, (job_ids, killed, progress), None)

        self._created.append(kill)

    def _on_killing_done(self, t: float, payload) -> None:
        job_ids, killed, progress = payload
        self._killers -= 1
        for job in killed:
            self._events.append(self._record_end(t, job, ev.COMPLETED_KILLED, -1))
        self._events.append(ev.JobKilled(_stamp(t), job_ids, progress))

    def _require_dynamic(self, what: str) -> None:
        if not self.dynamic_jobs:
            raise SimulationError(f"{what} needs dynamic jobs (Batsim's --enable-dynamic-jobs)")

    def _require_registration(self, what: str) -> None:
        self._require_dynamic(what)
        if not self._registration_open:
            raise SimulationError(f"{what} after NOTIFY registration_finished")

    def _job(self, job_id: str, what: str) -> SimJob:
        job = self.jobs.get(job_id)
        if job is None:
            raise SimulationError(f"{what}: unknown job {job_id}")
        return job
