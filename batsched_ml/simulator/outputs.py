"""Batsim's output files, written the way Batsim's ``JobsTracer`` writes them.

Rows of the jobs file are appended as jobs end (completion, kill or rejection),
numbers are printed with C's ``%f``, so tools that read Batsim's output (evalys,
our ``metrics``) read ours unchanged. ``JobsTracer`` writes Batsim 4.2.1's
``PREFIX_jobs.csv`` and ``PREFIX_schedule.csv`` (Batsim's columns in its
alphabetical order); ``JobsTracer5`` writes rc2's ``PREFIXjobs.csv`` (profiles
named ``workload!name``, an empty metadata column, a registered job's energy 0),
``PREFIXschedule.json`` (keys sorted, no timings: they go to
``PREFIXreal_exec_info.json``) and rc2's machine times: a host counts as idle
until its first job starts, then as computing (rc2 never sets it back to idle).

With a ``path`` the jobs file is streamed: rows go to disk in whole lines at
least every ``flush_every`` seconds, so a run that is killed, interrupted or
fails keeps the jobs that had ended (a valid CSV) instead of nothing.

A streaming tracer pickles (snapshots) as the length and SHA-256 of what it wrote: a resumed
run finds its file by them (``JobsTracer.continue_file``) and goes on from there.
"""

from __future__ import annotations

import hashlib
import json
import time

from .. import __version__
from ..protocol.coreset import mask_intervals
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
_ROW5 = "%s,%s,%s,%f,%d,%f,%d,%s,%f,%f,%f,%f,%f,%f,%s,%s,"  # rc2: energy -1 (0 if registered), no metadata


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
        if job.final_state == "REJECTED":
            self.nb_rejected += 1
            self.rows.append(self._waiting_row(job, "REJECTED"))
            self._maybe_flush()
            return
        self.nb_finished += 1
        success = job.final_state == "COMPLETED_SUCCESSFULLY"
        if success:
            self.nb_success += 1
        else:
            self.nb_killed += 1
        start, runtime, finish, wait, turnaround, stretch = self._times(job)
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
        self._machines_used(job)
        self.rows.append(self._row(job, success, start, runtime, finish, wait, turnaround, stretch))
        self._maybe_flush()

    @staticmethod
    def _times(job):
        """(start, run time, finish, wait, turnaround, stretch), Python floats."""
        runtime = job.runtime
        start = job.start
        finish = start + runtime
        wait = start - job.subtime_actual
        turnaround = finish - job.subtime_actual
        stretch = turnaround / runtime if runtime else float("inf")
        return start, runtime, finish, wait, turnaround, stretch

    def _machines_used(self, job) -> None:
        self.time_computing += job.runtime * job.res

    def _row(self, job, success, start, runtime, finish, wait, turnaround, stretch) -> str:
        return _ROW % (job.id.partition("!")[2], job.workload, job.profile_name, job.subtime_actual, job.res,
                       job.walltime, success, job.final_state, start, runtime, finish, wait, turnaround, stretch,
                       job.alloc_text, f'"{job.metadata}"')

    def _waiting_row(self, job, state: str) -> str:
        """The row of a job that never ran: rejected, or still waiting when the run had to stop."""
        return (f"{job.id.partition('!')[2]},{job.workload},{job.profile_name},{job.subtime_actual:f},{job.res},"
                f"{job.walltime:f},0,{state},,,,,,,,,\"{job.metadata}\"")

    def unfinished(self, job) -> None:
        """A job still queued when the simulation had to stop (a scheduler bug): kept, never dropped."""
        self.nb_jobs += 1
        self.rows.append(self._waiting_row(job, job.state))

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
            "makespan": float(self.makespan),
            "max_slowdown": float(self.max_slowdown),
            "max_turnaround_time": float(self.max_turnaround),
            "max_waiting_time": float(self.max_wait),
            "mean_slowdown": float(self.sum_slowdown) / n,
            "mean_turnaround_time": float(self.sum_turnaround) / n,
            "mean_waiting_time": float(self.sum_wait) / n,
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
            **self._machine_times(end_time),
            "time_sleeping": 0.0,
            "time_switching_off": 0.0,
            "time_switching_on": 0.0,
            "time_unavailable": 0.0,
        }

    def _machine_times(self, end_time: float) -> dict:
        return {"time_computing": self.time_computing,
                "time_idle": self.nb_machines * end_time - self.time_computing}

    def write_summary(self, output, values: dict) -> str:
        """Write the schedule file (``output(name)`` gives a file's path) and return its path."""
        path = output("schedule.csv")
        self.write_schedule(path, values)
        return path

    def write_schedule(self, path, values: dict) -> None:
        def fmt(v):
            return f"{v:f}" if isinstance(v, float) else str(v)

        with open(path, "w", newline="") as out:
            out.write(",".join(SCHEDULE_COLUMNS) + "\n")
            out.write(",".join(fmt(values[c]) for c in SCHEDULE_COLUMNS) + "\n")


class JobsTracer5(JobsTracer):
    """Batsim 5.0.0-rc2's ``JobsTracer``: the same figures computed as rc2 computes them (long
    doubles, as in its C++), its row format, its machine times and its JSON summary files."""

    def __init__(self, nb_machines: int, path=None, flush_every: float = 2.0):
        super().__init__(nb_machines, path, flush_every)
        import numpy as np

        self._np = np
        zeros = np.zeros(nb_machines, dtype=np.longdouble)
        self._last_change, self._idle, self._computing = zeros, zeros.copy(), zeros.copy()
        self._touched = np.zeros(nb_machines, dtype=bool)  # hosts that ever started a job
        self.sum_wait = self.sum_turnaround = self.sum_slowdown = np.longdouble(0)

    def _times(self, job):
        ld = self._np.longdouble
        start, runtime, submitted = ld(job.start), ld(job.runtime), ld(job.subtime_actual)
        finish = start + runtime
        turnaround = finish - submitted
        return start, runtime, finish, start - submitted, turnaround, turnaround / runtime

    def _machines_used(self, job) -> None:
        """rc2 tracks machine states but only ever sets a host to computing, at each of its jobs'
        starts, adding the time since the previous change to the state it leaves: a host is
        idle until its first job starts, then computing until its last job starts. Rows come
        in end order, which on a host is its start order."""
        np = self._np
        hosts = np.concatenate([np.arange(first, end + 1) for first, end in mask_intervals(job.alloc)])
        start = np.longdouble(job.start)
        since = start - self._last_change[hosts]
        first = ~self._touched[hosts]
        self._idle[hosts[first]] += since[first]
        self._computing[hosts[~first]] += since[~first]
        self._touched[hosts] = True
        self._last_change[hosts] = start

    def _machine_times(self, end_time: float) -> dict:
        return {"time_computing": float(self._computing.sum()), "time_idle": float(self._idle.sum())}

    def _row(self, job, success, start, runtime, finish, wait, turnaround, stretch) -> str:
        return _ROW5 % (job.id.partition("!")[2], job.workload, _profile_id(job), job.subtime_actual, job.res,
                        job.walltime, success, job.final_state, start, runtime, finish, wait, turnaround, stretch,
                        job.alloc_text, "0.000000" if job.registered else "-1.000000")

    def _waiting_row(self, job, state: str) -> str:
        return (f"{job.id.partition('!')[2]},{job.workload},{_profile_id(job)},{job.subtime_actual:f},{job.res},"
                f"{job.walltime:f},0,{state},,,,,,,,,")

    def write_summary(self, output, values: dict) -> str:
        """``schedule.json`` (the figures but the timings) and ``real_exec_info.json`` (the timings,
        peak memory), as rc2 writes them: keys sorted, reals with ``%f``."""
        path = output("schedule.json")
        self.write_schedule(path, values)
        _write_json_lines(output("real_exec_info.json"), {
            **_memory_kb(), "time_in_edc_seconds": values["scheduling_time"],
            "time_in_simu_seconds": values["simulation_time"]})
        return path

    def write_schedule(self, path, values: dict) -> None:
        _write_json_lines(path, {key: value for key, value in values.items() if key not in _TIMINGS})


_TIMINGS = ("scheduling_time", "simulation_time")  # in 4.2.1's schedule file, in rc2's real_exec_info


def _profile_id(job) -> str:
    """rc2 names a job's profile ``workload!name`` (a registered job may use another workload's)."""
    name = job.profile_name
    return name if "!" in name else f"{job.workload}!{name}"


def _write_json_lines(path, values: dict) -> None:
    """rc2's summary files: one ``"key": value`` line per key in sorted order, reals with ``%f``."""

    def text(v):
        if isinstance(v, str):
            return json.dumps(v)
        return f"{v:f}" if isinstance(v, float) else str(v)

    lines = [f'  "{key}": {text(values[key])}' for key in sorted(values)]
    with open(path, "w", newline="") as out:
        out.write("{\n" + ",\n".join(lines) + "\n}\n")


def _memory_kb() -> dict:
    """rc2's peak memory figures, from ``/proc/self/status`` (0 where it cannot be read)."""
    found = {"VmPeak": 0, "VmHWM": 0}
    try:
        with open("/proc/self/status") as status:
            for line in status:
                key, _, rest = line.partition(":")
                if key in found:
                    found[key] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return {"memory_VmHWM_kB": found["VmHWM"], "memory_VmPeak_kB": found["VmPeak"]}
