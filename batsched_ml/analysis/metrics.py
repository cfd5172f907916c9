"""Job-level metrics from Batsim's export files (``PREFIX_jobs.csv``, ``PREFIX_schedule.csv``).

Both transports write these files — real Batsim behind the ZeroMQ server and the embedded
simulator — so one reader and one set of metric definitions score every run, and the golden
Batsim outputs check the definitions themselves (the README's AVEbsld figures).

Pipeline: :func:`read_jobs_csv` (:mod:`~batsched_ml.analysis.jobs_csv`: one row per *attempt*, as
Batsim writes it) -> :func:`merge_attempts` (one record per *logical job*: a killed-and-requeued job
``12``, ``12#1``, ... is one job for its user) -> :func:`compute_metrics` / :func:`per_job_bsld` /
:func:`cumulative_bsld` -> :func:`format_metrics`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Iterable, Sequence, Union

import numpy as np

from .jobs_csv import (  # noqa: F401 - the reading side, importable from here as before
    COMPLETED_FAILED,
    COMPLETED_KILLED,
    COMPLETED_SUCCESSFULLY,
    COMPLETED_WALLTIME_REACHED,
    JOBS_COLUMNS,
    REJECTED,
    JobsTable,
    read_jobs_csv,
    read_schedule,
    read_schedule_csv,
    schedule_csv_for,
    schedule_file_for,
)


# ----------------------------------------------------------------------------- logical jobs
@dataclass(frozen=True, eq=False)
class JobRecords:
    """One record per logical job (all attempts ``12``, ``12#1``, ... merged); see :func:`merge_attempts`.

    Arrays are aligned; filter with :meth:`subset` (mask or indices) or :meth:`select_ids`
    (original ids such as ``"12"``, ``12`` or protocol ids ``"w0!12"``). Times are NaN for
    rejected jobs.
    """

    workload: np.ndarray
    job_id: np.ndarray
    submission: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    run: np.ndarray
    wait: np.ndarray
    res: np.ndarray
    requested_time: np.ndarray
    final_state: np.ndarray
    attempts: np.ndarray
    killed_attempts: np.ndarray
    core_seconds: np.ndarray
    wasted_core_seconds: np.ndarray

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def full_id(self) -> np.ndarray:
        """Protocol ids ``"<workload>!<id>"`` (the ids the scheduler saw)."""
        return self.workload + "!" + self.job_id

    @property
    def rejected(self) -> np.ndarray:
        return self.final_state == REJECTED

    def subset(self, selector) -> "JobRecords":
        """Records picked by a boolean mask or an index array (order kept)."""
        return JobRecords(**{f.name: getattr(self, f.name)[selector] for f in fields(self)})

    def mask_ids(self, ids: Iterable) -> np.ndarray:
        """Boolean mask of the records whose id is in ``ids`` (``"w0!12"`` pins the workload)."""
        plain, full = set(), set()
        for i in ids:
            (full if "!" in str(i) else plain).add(str(i))
        mask = np.fromiter((j in plain for j in self.job_id), bool, len(self))
        if full:
            mask |= np.fromiter((j in full for j in self.full_id), bool, len(self))
        return mask

    def select_ids(self, ids: Iterable) -> "JobRecords":
        return self.subset(self.mask_ids(ids))


def merge_attempts(table: JobsTable) -> JobRecords:
    """Merge requeued attempts into one record per logical job.

    An attempt ``<id>#<k>`` belongs to job ``<id>`` of the same workload; the attempt without
    ``#`` is attempt 0 and the highest ``k`` is the final one. Accounting, chosen so that a
    kill-and-requeue costs the user what it really cost them:

    - ``submission`` = first attempt's submission time; ``start``, ``finish``, ``run``
      (execution time) and ``final_state`` = the final attempt's;
    - ``wait = start - submission``: the time lost in killed attempts counts as waiting,
      since the user still had no result (bsld then uses only the final run time);
    - ``res`` / ``requested_time`` = the first attempt's request (requeues keep them);
    - ``core_seconds`` = sum of res x execution_time over all attempts (machine time used),
      ``wasted_core_seconds`` = the part thrown away: every non-final attempt, and the final
      one too when it was killed (``COMPLETED_KILLED``: no result). This is the one
      definition of wasted work: the metrics and the classifier's report both use it;
    - ``killed_attempts`` = attempts that ended ``COMPLETED_KILLED``.

    Records keep the file order of each job's first row.
    """
    ids, workloads = table.job_id, table.workload_name
    base, attempt = ids, np.zeros(len(ids), dtype=np.int64)
    for i in np.flatnonzero(np.fromiter(("#" in j for j in ids), bool, len(ids))):
        if base is ids:
            base = ids.copy()
        base[i], _, suffix = ids[i].partition("#")
        try:
            attempt[i] = int(suffix)
        except ValueError:
            raise ValueError(f"{table.path}: bad attempt number in job id {ids[i]!r}") from None
    # Group by protocol id "<workload>!<original id>" ("!" cannot occur in either part).
    groups: dict = {}
    gid = np.fromiter((groups.setdefault(k, len(groups)) for k in workloads + "!" + base),
                      np.int64, len(ids))
    order = np.lexsort((attempt, gid))  # by job, then attempt number
    g_sorted, a_sorted = gid[order], attempt[order]
    dup = (g_sorted[1:] == g_sorted[:-1]) & (a_sorted[1:] == a_sorted[:-1])
    if dup.any():
        raise ValueError(f"{table.path}: job id {ids[order[1:][dup][0]]!r} appears twice")
    is_last = np.append(g_sorted[1:] != g_sorted[:-1], True) if len(order) else np.zeros(0, bool)
    is_first = np.append(True, is_last[:-1]) if len(order) else np.zeros(0, bool)
    first, last = order[is_first], order[is_last]  # one row index per job, job order = gid

    n = len(groups)
    res = table.requested_number_of_resources
    used = res * np.nan_to_num(table.execution_time)
    core_seconds = np.bincount(gid, weights=used, minlength=n)
    killed = np.bincount(gid, weights=table.final_state == COMPLETED_KILLED, minlength=n)
    start = table.starting_time[last]
    submission = table.submission_time[first]
    return JobRecords(
        workload=table.workload_name[first],
        job_id=base[first],
        submission=submission,
        start=start,
        finish=table.finish_time[last],
        run=table.execution_time[last],
        wait=start - submission,
        res=res[first],
        requested_time=table.requested_time[first],
        final_state=table.final_state[last],
        attempts=np.bincount(gid, minlength=n).astype(np.int64),
        killed_attempts=killed.astype(np.int64),
        core_seconds=core_seconds,
        wasted_core_seconds=core_seconds - np.where(table.final_state[last] == COMPLETED_KILLED, 0.0,
                                                    used[last]),
    )


# ----------------------------------------------------------------------------- metrics
Source = Union[JobsTable, JobRecords, str, os.PathLike]


def _as_records(source: Source) -> tuple[JobRecords, str | None]:
    if isinstance(source, JobRecords):
        return source, None
    table = source if isinstance(source, JobsTable) else read_jobs_csv(source)
    return merge_attempts(table), table.path


def per_job_bsld(records: Source, tau: float) -> np.ndarray:
    """Bounded slowdown ``max((wait + run) / max(run, tau), 1)`` per record; NaN if rejected.

    Aligned with ``records`` so a report can index it with any mask (small vs large jobs).
    """
    r, _ = _as_records(records)
    with np.errstate(invalid="ignore"):
        return np.maximum((r.wait + r.run) / np.maximum(r.run, tau), 1.0)


def cumulative_bsld(source: Source, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """``(finish times, running sum of bsld)`` over executed jobs in finish order.

    The curve of Zrigui et al. 2022, Figure 6: the sum grows each time a job finishes.
    """
    r, _ = _as_records(source)
    bsld = per_job_bsld(r, tau)
    done = ~np.isnan(bsld)
    order = np.argsort(r.finish[done], kind="stable")
    return r.finish[done][order], np.cumsum(bsld[done][order])


def _tau_key(tau: float) -> str:
    return f"tau{float(tau):g}"


def compute_metrics(source: Source, taus: Sequence[float] = (10.0, 60.0),
                    nb_cores: int | None = None) -> dict:
    """Summary metrics of one run, as a JSON-serialisable dict of plain ints/floats/None.

    Counts cover every logical job; time metrics only the executed ones (rejected jobs are
    counted in ``jobs`` and ``rejected`` but have no wait or bsld). Definitions:

    - ``avebsld_tau<t>`` / ``maxbsld_tau<t>``: mean / max of :func:`per_job_bsld`;
    - ``mean_wait``, ``median_wait``, ``max_wait``; ``geomean_wait`` = exp(mean(ln(wait + 1))) - 1,
      the geometric mean shifted by 1 s so that it is defined when a wait is 0;
      ``geomean_wait_10s`` = exp(mean(ln(max(wait, 10 s)))), Nissimov & Feitelson's (Table 3);
    - ``mean_turnaround`` = mean(finish - first submission);
    - ``first_submission`` (all jobs, rejected included), ``last_finish``,
      ``makespan`` = last_finish - first_submission;
    - ``utilisation`` = sum of res x execution_time over all attempts (killed ones too)
      / (nb_cores x makespan): how busy the machine was. ``useful_utilisation`` counts only
      the work that produced results (``useful_core_seconds`` = all core-seconds minus
      ``wasted_core_seconds``, see :func:`merge_attempts`), ``wasted_utilisation`` the rest;
      the two add up to ``utilisation``. ``nb_cores`` defaults to ``nb_computing_machines``
      of the sibling ``PREFIX_schedule.csv`` when ``source`` is a path or a table read from
      one; without it the three are None;
    - counts: ``jobs``, ``attempts``, ``completed`` (COMPLETED_SUCCESSFULLY),
      ``walltime_reached``, ``failed``, ``killed`` (jobs whose final attempt was killed),
      ``rejected``, ``requeued_jobs``, ``killed_attempts``, ``wasted_core_seconds``.
    """
    from ..config.validate import positive_int, tau as check_tau

    taus = [check_tau(t) for t in taus]
    positive_int(nb_cores, "nb_cores", "machine size", allow_none=True)
    r, path = _as_records(source)
    if nb_cores is None and path is not None:
        schedule = schedule_file_for(path)
        if schedule is not None:
            nb_cores = read_schedule(schedule).get("nb_computing_machines")
    state = r.final_state
    m: dict = {
        "jobs": len(r),
        "attempts": int(r.attempts.sum()),
        "completed": int((state == COMPLETED_SUCCESSFULLY).sum()),
        "walltime_reached": int((state == COMPLETED_WALLTIME_REACHED).sum()),
        "failed": int((state == COMPLETED_FAILED).sum()),
        "killed": int((state == COMPLETED_KILLED).sum()),
        "rejected": int(r.rejected.sum()),
        "requeued_jobs": int((r.attempts > 1).sum()),
        "killed_attempts": int(r.killed_attempts.sum()),
        "wasted_core_seconds": float(r.wasted_core_seconds.sum()),
    }
    done = r.subset(~r.rejected & ~np.isnan(r.start))
    have = len(done) > 0
    for tau in taus:
        bsld = per_job_bsld(done, tau)
        m[f"avebsld_{_tau_key(tau)}"] = float(bsld.mean()) if have else None
        m[f"maxbsld_{_tau_key(tau)}"] = float(bsld.max()) if have else None
    m["mean_wait"] = float(done.wait.mean()) if have else None
    m["geomean_wait"] = float(np.expm1(np.log1p(done.wait).mean())) if have else None
    m["geomean_wait_10s"] = geomean_wait_floor(done.wait) if have else None
    m["median_wait"] = float(np.median(done.wait)) if have else None
    m["max_wait"] = float(done.wait.max()) if have else None
    m["mean_turnaround"] = float((done.finish - done.submission).mean()) if have else None
    m["first_submission"] = float(r.submission.min()) if len(r) else None
    m["last_finish"] = float(done.finish.max()) if have else None
    makespan = m["last_finish"] - m["first_submission"] if have else None
    m["makespan"] = makespan
    m["nb_cores"] = int(nb_cores) if nb_cores is not None else None
    m["utilisation"] = (float(r.core_seconds.sum() / (nb_cores * makespan))
                        if nb_cores and makespan else None)
    _add_useful_work(m, r, nb_cores, makespan)
    return m


def geomean_wait_floor(waits, w_min: float = 10.0) -> float:
    """Geometric mean of waiting times with waits below ``w_min`` counted as ``w_min``:
    exp(mean ln max(w, w_min)) (Nissimov & Feitelson, Table 3; 10 s after Feitelson et al. 1997)."""
    w = np.asarray(waits, dtype=np.float64)
    return float(np.exp(np.log(np.maximum(w, w_min)).mean()))


def _add_useful_work(m: dict, r: JobRecords, nb_cores, makespan) -> None:
    """``useful_core_seconds``, ``useful_utilisation``, ``wasted_utilisation`` (see compute_metrics)."""
    wasted = float(r.wasted_core_seconds.sum())
    useful = float(r.core_seconds.sum()) - wasted
    m["useful_core_seconds"] = useful
    capacity = nb_cores * makespan if nb_cores and makespan else None
    m["useful_utilisation"] = useful / capacity if capacity else None
    m["wasted_utilisation"] = wasted / capacity if capacity else None


# Which way a metric is better, for the words of a comparison ("-63.4% better"). By name: a
# campaign's flat columns (avebsld10, cum_bsld60, kills) and compute_metrics' keys alike.
HIGHER_IS_BETTER = ("utilisation", "useful_utilisation", "completed")
LOWER_IS_BETTER_PREFIXES = ("avebsld", "cum_bsld", "maxbsld", "mean_wait", "geomean_wait", "median_wait",
                            "max_wait", "mean_turnaround", "makespan", "wasted", "kills", "killed", "rejected",
                            "unfinished", "failed")


def better_direction(metric: str) -> str | None:
    """``"lower"`` (slowdowns, waits, kills, waste), ``"higher"`` (utilisation, completed jobs) or
    None (a count such as ``jobs``, or a metric this module does not know)."""
    if metric in HIGHER_IS_BETTER:
        return "higher"
    return "lower" if metric.startswith(LOWER_IS_BETTER_PREFIXES) else None


def format_metrics(metrics: dict) -> str:
    """Two aligned columns (key, value) for the terminal; None shows as ``-``."""
    def fmt(v) -> str:
        if v is None:
            return "-"
        if isinstance(v, (bool, np.bool_)):
            return str(bool(v))
        if isinstance(v, (int, np.integer)):
            return f"{int(v):,}"
        if isinstance(v, (float, np.floating)):
            return f"{v:,.4f}" if abs(v) < 10 else f"{v:,.2f}"
        if isinstance(v, (list, tuple)):  # an interval
            return "[" + ", ".join(fmt(x) for x in v) + "]"
        return str(v)

    shown = [(str(k), fmt(v)) for k, v in metrics.items()]
    if not shown:
        return ""
    kw = max(len(k) for k, _ in shown)
    vw = max(len(v) for _, v in shown)
    return "\n".join(f"{k:<{kw}}  {v:>{vw}}" for k, v in shown)
