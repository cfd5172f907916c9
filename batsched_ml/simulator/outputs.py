"""Batsim 4.2.1's output files, written the way Batsim's ``JobsTracer`` writes them.

Rows of ``PREFIX_jobs.csv`` are appended as jobs end (completion, kill or
rejection), numbers are printed with C's ``%f``, and ``PREFIX_schedule.csv`` has
Batsim's columns in its (alphabetical) order, so tools that read Batsim's
output (evalys, our ``metrics``) read ours unchanged.

With a ``path`` the jobs file is streamed: rows go to disk in whole lines at
least every ``flush_every`` seconds, so a run that is killed, interrupted or
fails keeps the jobs that had ended (a valid CSV) instead of nothing.

A streaming tracer pickles (snapshots) as the length and SHA-256 of what it wrote: a resumed
run finds its file by them (:meth:`JobsTracer.continue_file`) and goes on from there.
"""

from __future__ import annotations

import hashlib
import time

from .. import __version__
from ..snapshot_files import SnapshotError

JOBS_COLUMNS = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,"
                "success,final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,"
                "stretch,allocated_resources,consumed_energy,metadata")

SCHEDULE_COLUMNS = (
    "batsim_version", "consumed_joules", "makespan", "max_slowdown", "max_turnaround_time", "max_waiting_time",
    "mean_slowdown", "mean_turnaround_time", "mean_waiting_time", "nb_computing_machines", "nb_grouped_switches",
    "nb_jobs", "nb_jobs_finished", "nb_jobs_killed", "nb_jobs_rejected", "nb_jobs_success", "nb_machine_switches",
    "scheduling_time", "simulation_time", "success_rate", "time_computing", "time_idle", "time_sleeping",
    "time_switching_off", "time_switching_on", "time_unavailable")


# One row of PREFIX_jobs.csv for a job that ran (``%f`` like Batsim's C++ export).
_ROW = "%s,%s,%s,%f,%d,%f,%d,%s,%f,%f,%f,%f,%f,%f,%s,-1.000000,%s"


class JobsTracer:
    """Accumulates job rows and the aggregate figures of the schedule file."""

    def __init__(self, nb_machines: int, path=None, flush_every: float = 2.0):
        """Without ``path`` rows stay in ``rows`` (``write_jobs`` writes them); with one, they
        are streamed to it (``close`` finishes the file)."""
        self.nb_machines = nb_machines
        self.rows: list[str] = [JOBS_COLUMNS]
        self.path = path
        self.nb_rows_written = 0
        self._out = None
        self.flush_every = flush_every
        self._digest = hashlib.sha256()  # of the bytes written to ``path``
        self._written = 0
        if path is not None:
            self._out = open(path, "w", newline="", encoding="utf-8")
            self._flushed_at = time.monotonic()
            self._flush()
        self.nb_jobs = self.nb_finished = self.nb_success = self.nb_killed = self.nb_rejected = 0
        self.sum_wait = self.sum_turnaround = self.sum_slowdown = 0.0
        self.max_wait = self.max_turnaround = self.max_slowdown = 0.0
        self.makespan = 0.0
        self.time_computing = 0.0

    def job_ended(self, job) -> None:
        """``job`` is a simulator job record (see ``records.SimJob``) in a final state, with
        its ``alloc_text`` set if it ran."""
        self.nb_jobs += 1
        name = job.id.partition("!")[2]
        meta = f'"{job.metadata}"'
        if job.final_state == "REJECTED":
            self.nb_rejected += 1
            self.rows.append(f"{name},{job.workload},{job.profile_name},{job.subtime_actual:f},{job.res},"
                             f"{job.walltime:f},0,REJECTED,,,,,,,,,{meta}")
            self._maybe_flush()
            return
        self.nb_finished += 1
        success = job.final_state == "COMPLETED_SUCCESSFULLY"
        if success:
            self.nb_success += 1
        else:
            self.nb_killed += 1
        runtime = job.runtime
        start = job.start
        finish = start + runtime
        wait = start - job.subtime_actual
        turnaround = finish - job.subtime_actual
        stretch = turnaround / runtime if runtime else float("inf")
        self.sum_wait += wait
        self.sum_turnaround += turnaround
        self.sum_slowdown += stretch
        if finish > self.makespan:
            self.makespan = finish
        if wait > self.max_wait:
            self.max_wait = wait
        if turnaround > self.max_turnaround:
            self.max_turnaround = turnaround
        if stretch > self.max_slowdown:
            self.max_slowdown = stretch
        self.time_computing += runtime * job.res
        self.rows.append(_ROW % (name, job.workload, job.profile_name, job.subtime_actual, job.res, job.walltime,
                                 success, job.final_state, start, runtime, finish, wait, turnaround, stretch,
                                 job.alloc_text, meta))
        self._maybe_flush()

    def unfinished(self, job) -> None:
        """A job still queued when the simulation had to stop (a scheduler bug): kept, never dropped."""
        self.nb_jobs += 1
        name = job.id.partition("!")[2]
        self.rows.append(f"{name},{job.workload},{job.profile_name},{job.subtime_actual:f},{job.res},"
                         f"{job.walltime:f},0,{job.state},,,,,,,,,\"{job.metadata}\"")

    def _maybe_flush(self) -> None:
        if self._out is not None and time.monotonic() - self._flushed_at >= self.flush_every:
            self._flush()

    def _flush(self) -> None:
        """Whole lines in one write, then to the OS: the file never ends mid-row."""
        rows, self.rows = self.rows, []
        if rows:
            text = "\n".join(rows) + "\n"
            self._out.write(text)
            data = text.encode("utf-8")
            self._digest.update(data)
            self._written += len(data)
            self.nb_rows_written += len(rows)
        self._out.flush()
        self._flushed_at = time.monotonic()

    # ------------------------------------------------------------ snapshots
    def __getstate__(self) -> dict:
        """Rows not yet written go to the file first; the file is then known by its length and
        digest (the open file itself does not pickle)."""
        if self._out is not None:
            self._flush()
        state = dict(self.__dict__)
        state["_out"] = None
        state["_digest"] = self._digest.hexdigest()
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._expected = state["_digest"]  # the file continue_file() must find
        self._digest = None

    def continue_file(self, path=None) -> None:
        """After unpickling, stream on: to the tracer's own file, cut back to what it held when
        the snapshot was taken, or to ``path``, which starts as a copy of that part. Raises
        ``SnapshotError`` (one line) when the file is missing, shorter or different."""
        source, self._out = self.path, None
        if source is None:
            return
        digest = hashlib.sha256()
        try:
            with open(source, "rb") as src:
                head = src.read(self._written)
        except OSError as exc:
            raise SnapshotError(f"the jobs file {source} of the snapshot cannot be read: "
                                   f"{exc.strerror or exc}") from None
        digest.update(head)
        if len(head) != self._written or digest.hexdigest() != self._expected:
            raise SnapshotError(f"the jobs file {source} is not the one the snapshot was written with "
                                   f"({len(head)} of its {self._written} bytes read, not the same): was the run "
                                   f"started again with the same -e prefix?")
        target = source if path is None else str(path)
        if target == source:
            with open(target, "r+b") as out:
                out.truncate(self._written)  # what a later session wrote after the snapshot
            self._out = open(target, "a", newline="", encoding="utf-8")
        else:
            self._out = open(target, "w", newline="", encoding="utf-8")
            self._out.buffer.write(head)
            self.path = target
        self._digest = digest
        self._flushed_at = time.monotonic()

    def close(self) -> None:
        """Write the remaining rows and close the streamed file (idempotent)."""
        if self._out is not None:
            self._flush()
            self._out.close()
            self._out = None

    def write_jobs(self, path) -> None:
        if self._out is not None or self.nb_rows_written:
            raise RuntimeError("the jobs file is streamed: use close()")
        with open(path, "w", newline="") as out:
            out.write("\n".join(self.rows))
            out.write("\n")

    def schedule_values(self, end_time: float, scheduling_time: float, simulation_time: float) -> dict:
        n = self.nb_jobs or 1
        return {
            "batsim_version": f"batsched-ml-{__version__}",
            "consumed_joules": 0.0,
            "makespan": self.makespan,
            "max_slowdown": self.max_slowdown,
            "max_turnaround_time": self.max_turnaround,
            "max_waiting_time": self.max_wait,
            "mean_slowdown": self.sum_slowdown / n,
            "mean_turnaround_time": self.sum_turnaround / n,
            "mean_waiting_time": self.sum_wait / n,
            "nb_computing_machines": self.nb_machines,
            "nb_grouped_switches": 0,
            "nb_jobs": self.nb_jobs,
            "nb_jobs_finished": self.nb_finished,
            "nb_jobs_killed": self.nb_killed,
            "nb_jobs_rejected": self.nb_rejected,
            "nb_jobs_success": self.nb_success,
            "nb_machine_switches": 0,
            "scheduling_time": scheduling_time,
            "simulation_time": simulation_time,
            "success_rate": self.nb_success / n,
            "time_computing": self.time_computing,
            "time_idle": self.nb_machines * end_time - self.time_computing,
            "time_sleeping": 0.0,
            "time_switching_off": 0.0,
            "time_switching_on": 0.0,
            "time_unavailable": 0.0,
        }

    def write_schedule(self, path, values: dict) -> None:
        def fmt(v):
            return f"{v:f}" if isinstance(v, float) else str(v)

        with open(path, "w", newline="") as out:
            out.write(",".join(SCHEDULE_COLUMNS) + "\n")
            out.write(",".join(fmt(values[c]) for c in SCHEDULE_COLUMNS) + "\n")
