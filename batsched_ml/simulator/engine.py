"""An event-driven simulator that behaves like Batsim towards its scheduler: Batsim 4.2.1 by
default, Batsim 5.0.0-rc2 with ``line=BATSIM_5``.

The timing of everything the scheduler sees comes from Batsim's actors and the one server
actor they talk to; this package replays that model in four parts:

* ``actors``: the latencies of Batsim's internal messages (``Latency``; the defaults are those
  of a cluster platform with 50 us links and a 500 us backbone, like the golden runs), the
  server's mailbox and the actors that post to it (job submitter, request-reply);
* ``batsim_server``: the server during one run (its state in one ``BatsimServer``): it gathers
  events, calls the scheduler when Batsim would, and applies each decision with the rules of
  ``checks`` (where Batsim would abort, ``SimulationError``);
* ``lines``: what differs between Batsim 4.2.1 and 5.0.0-rc2 (dates in messages, the first and
  last message, calls, registered jobs, output files); the actors and latencies are the same;
* this module: the ``Simulator`` (the machine and the workloads' jobs) and the run loop, which
  writes Batsim's output files (``outputs``), whole or, after an early stop, as far as known.

``NO_LATENCY`` gives the idealised model: whatever happens at one instant reaches the
scheduler in one message. The scheduler is any callable ``(now, events) -> (reply_now,
decisions)``: the in-process decision core or a remote one behind ZeroMQ.
"""

from __future__ import annotations

import gc
import time

from ..config.validate import machine_size
from ..protocol import events as ev
from ..workloads.batsim5 import as_v5, typed_job, typed_profiles
from .actors import BATSIM_LATENCY, NO_LATENCY, Latency, ns
from .batsim_server import BatsimServer
from .checks import SimulationError
from .lines import BATSIM_4, BATSIM_5, BatsimLine
from .outputs import JobsTracer, JobsTracer5
from .records import PartialOutputs, SimJob, SimStatus, SimulationResult

__all__ = ["BATSIM_4", "BATSIM_5", "BATSIM_LATENCY", "NO_LATENCY", "BatsimLine", "Latency", "PartialOutputs",
           "SimJob", "SimStatus", "SimulationError", "SimulationResult", "Simulator"]


def _compute_resources(names) -> list:
    """SIMULATION_BEGINS's ``compute_resources``, built with the cyclic garbage collector paused:
    8M new dicts on a 4M-core machine would trigger collections walking all of them again and
    again (19 of 26 s). A real list: the codec writes it (``--connect``, transcripts). Every host
    has the same ``properties``: one dict, shared (read only; half the dicts to build and free,
    0.02-0.03 CPU s on 93,312 cores)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        properties = {"role": ""}
        return [{"id": i, "name": n, "state": "idle", "properties": properties} for i, n in enumerate(names)]
    finally:
        if was_enabled:
            gc.enable()


class Simulator:
    """The machine and the workloads' jobs; ``run`` simulates them with one scheduler."""

    def __init__(self, nb_hosts: int, workloads, *, host_names=None, dynamic_jobs: bool = False,
                 profile_reuse: bool = False, acknowledge_dynamic_jobs: bool = False, progress=None,
                 latency: Latency = BATSIM_LATENCY, line: BatsimLine = BATSIM_4):
        """``workloads``: list of (name, Batsim workload dict); names are ``w0``, ``w1``... in Batsim.
        ``line``: the Batsim release to behave like (``lines``); under Batsim 5 a 4.2.1 workload
        is read as its Batsim 5 conversion (``workloads.batsim5.as_v5``), and
        ``acknowledge_dynamic_jobs`` (a feature the scheduler asks for) answers each registered
        job with a JOB_SUBMITTED."""
        self.nb_hosts = machine_size(nb_hosts, "nb_hosts")
        self.host_names = host_names or [f"node{i}" for i in range(nb_hosts)]
        self.dynamic_jobs = dynamic_jobs
        self.profile_reuse = profile_reuse
        self.acknowledge_dynamic_jobs = acknowledge_dynamic_jobs
        self.progress = progress
        self.latency = latency
        self.line = line
        if line.major == 5:
            workloads = [(name, as_v5(w, w.get("source", name))) for name, w in workloads]
            self.profiles = {name: typed_profiles(w, w.get("source", name)) for name, w in workloads}
        else:
            self.profiles = {name: dict(w.get("profiles", {})) for name, w in workloads}
        self.workloads = list(workloads)
        self.jobs: dict[str, SimJob] = {}
        self.static: dict[str, list[SimJob]] = {}
        for name, workload in self.workloads:
            jobs = [self.make_job(name, data) for data in workload["jobs"]]
            if line.major == 5:  # rc2 submits jobs of equal subtimes in the order of their ids' text
                jobs.sort(key=lambda j: (j.subtime, j.id))
            else:  # stable: equal subtimes keep the workload's order
                jobs.sort(key=lambda j: j.subtime)
            self.static[name] = jobs
        self.nb_static = sum(len(j) for j in self.static.values())

    def make_job(self, workload: str, data: dict) -> SimJob:
        """A job of the workloads or registered during the run (``REGISTER_JOB``), its id unique.
        Under Batsim 5 a profile may be another workload's, named ``workload!name``."""
        job_id = f"{workload}!{data['id']}"
        if job_id in self.jobs:
            raise SimulationError(f"job {job_id} is defined twice")
        profile_name = data["profile"]
        owner, name = workload, profile_name
        if self.line.major == 5 and "!" in profile_name:
            owner, _, name = profile_name.partition("!")
        profile = self.profiles.get(owner, {}).get(name)
        if profile is None:
            raise SimulationError(f"job {job_id} uses undefined profile {profile_name!r}")
        walltime = data.get("walltime", -1)
        if self.line.major == 5:
            wire = typed_job(job_id, data)
        else:
            wire = dict(data)
            wire["id"] = job_id
        job = SimJob(job_id, workload, profile_name, profile, float(data.get("subtime", 0.0)),
                     -1.0 if walltime is None else float(walltime), int(data["res"]), wire)
        job.subtime_ns = ns(job.subtime)
        self.jobs[job_id] = job
        return job

    def output(self, prefix: str | None, name: str) -> str | None:
        """The path of one of Batsim's output files (None without a prefix: rows kept in memory)."""
        return None if prefix is None else self.line.output(prefix, name)

    def _tracer(self, prefix):
        tracer = JobsTracer5 if self.line.major == 5 else JobsTracer
        return tracer(self.nb_hosts, path=self.output(prefix, "jobs.csv"))

    def run(self, scheduler, prefix: str | None = None, on_start=None) -> SimulationResult:
        """Simulate to the end; with ``prefix``, write the jobs file (streamed as jobs end) and
        the schedule file: ``PREFIX_jobs.csv`` and ``PREFIX_schedule.csv`` under Batsim 4.2.1,
        ``PREFIXjobs.csv``, ``PREFIXschedule.json`` and ``PREFIXreal_exec_info.json`` under rc2.
        If anything stops the run early (an error, Ctrl-C), the files are still finished with
        what is known and the exception carries a :class:`PartialOutputs` as
        ``partial_outputs`` before it propagates. ``on_start()`` runs once the jobs file is
        open, before the first event: whatever it writes (the CLI's run description) is never
        left without the other files."""
        started = time.perf_counter()
        server = BatsimServer(self, scheduler, self.line.platform(self.latency))
        try:
            server.tracer = self._tracer(prefix)
            if on_start is not None:
                on_start()
            error, unfinished = self._simulate(server)
            result = self._finish(server, prefix, started, unfinished)
        except BaseException as exc:
            partial = self._finish_partial(server, prefix, started)
            try:
                exc.partial_outputs = partial
            except AttributeError:  # an exception type without a __dict__: the files are written anyway
                pass
            raise
        if error:
            raise SimulationError(error)
        return result

    def _simulate(self, server: BatsimServer):
        """Run the platform to the end; returns (error or None, jobs left unfinished)."""
        begins = ev.SimulationBegins(
            0.0, nb_resources=self.nb_hosts, nb_compute_resources=self.nb_hosts,
            allow_compute_sharing=False,
            config={"dynamic-jobs-enabled": self.dynamic_jobs,
                    "dynamic-jobs-acknowledged": self.acknowledge_dynamic_jobs,
                    "profile-reuse-enabled": self.profile_reuse, "profiles-forwarded-on-submission": False},
            compute_resources=_compute_resources(self.host_names),
            workloads={name: w.get("source", name) for name, w in self.workloads},
            profiles={name: dict(p) for name, p in self.profiles.items()})
        now = server.platform.run(server, begins, list(self.static.values()))
        unfinished = [j for j in self.jobs.values() if j.state in ("SUBMITTED", "RUNNING")]
        return server.end(now), unfinished

    def _finish(self, server: BatsimServer, prefix, started, unfinished) -> SimulationResult:
        """The end of a run: jobs left unfinished written, both files closed, the result."""
        end_time = server.platform.seconds(server.now)
        tracer = server.tracer
        for job in unfinished:
            tracer.unfinished(job)
        server.report_progress(final=True)
        wall = time.perf_counter() - started
        schedule = tracer.schedule_values(end_time, server.scheduling_time, wall)
        result = SimulationResult(end_time, tracer.nb_jobs, wall, server.scheduling_time,
                                  unfinished=[j.id for j in unfinished], schedule=schedule,
                                  messages=server.messages)
        tracer.close()
        if prefix is not None:
            result.jobs_csv = self.output(prefix, "jobs.csv")
            result.schedule_file = tracer.write_summary(lambda name: self.output(prefix, name), schedule)
        return result

    def _finish_partial(self, server: BatsimServer, prefix, started) -> PartialOutputs:
        """After an early stop: close the jobs file (the jobs that ended) and write the schedule
        file as of now. Jobs still queued or running are not written (they have no final state)."""
        end_time = server.platform.seconds(server.now)
        pending = sum(1 for j in self.jobs.values() if j.state in ("SUBMITTED", "RUNNING"))
        not_submitted = sum(1 for j in self.jobs.values() if j.state == "NOT_SUBMITTED")
        partial = PartialOutputs(end_time, 0, pending, not_submitted)
        try:
            tracer = server.tracer or self._tracer(prefix)
            partial.jobs_written = tracer.nb_jobs
            tracer.close()
            if prefix is not None:
                partial.jobs_csv = self.output(prefix, "jobs.csv")
                schedule = tracer.schedule_values(end_time, server.scheduling_time, time.perf_counter() - started)
                partial.schedule_file = tracer.write_summary(lambda name: self.output(prefix, name), schedule)
        except OSError:  # the disk itself may be the problem: keep the original error
            pass
        return partial
