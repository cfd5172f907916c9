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
import pickle
import time

from ..config.validate import machine_size
from ..incremental import AppendOnlyList
from ..protocol import events as ev
from ..snapshot_files import Snapshot, SnapshotError
from ..workloads.batsim5 import as_v5, typed_job, typed_profiles
from . import snapshots
from .actors import BATSIM_LATENCY, NO_LATENCY, Latency, ns
from .batsim_server import BatsimServer
from .checks import SimulationError
from .lines import BATSIM_4, BATSIM_5, BatsimLine
from .outputs import JobsTracer, JobsTracer5
from .records import PartialOutputs, SimJob, SimStatus, SimulationResult

__all__ = ["BATSIM_4", "BATSIM_5", "BATSIM_LATENCY", "NO_LATENCY", "BatsimLine", "Latency", "PartialOutputs",
           "SimJob", "SimStatus", "SimulationError", "SimulationResult", "Simulator", "Snapshot", "SnapshotError",
           "Watch"]


KEEP = object()  # Simulator.from_snapshot: the outputs go on in the run's own files
# Batsim 5's kernel (kernel, actors5) runs a simulation to its end in one call, its actors generators
# (their suspended frames do not pickle): no pause, so no snapshot
NOT_PAUSABLE = ("snapshots, checkpoints, --stop-at, --resume and --fork are for Batsim 4.2.1 runs: the Batsim "
                "{line} line's kernel (a re-creation of SimGrid's) runs to the end in one go and cannot pause")


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


class Watch:
    """When the run loop stops to look: before an event of a date ``>= at`` (ns) it calls
    ``reached``, which may snapshot the run and says whether to pause there. ``alert()``
    (from a signal handler or another thread) makes the loop look at its next event.
    This one pauses at ``until`` (seconds; None: never)."""

    NEVER = float("inf")  # later than any simulated date (a date in ns may pass 2**62: 146 years)

    def __init__(self, until: float | None = None):
        self.until_ns = self.NEVER if until is None else ns(until)
        self.at = self.until_ns

    def until(self, until: float | None) -> "Watch":
        """This watch, pausing at ``until`` as well (seconds; None: as before)."""
        if until is not None:
            self.until_ns = ns(until)
            self.at = min(self.at, self.until_ns)
        return self

    def alert(self) -> None:
        self.at = 0

    def reached(self, sim: "Simulator", t: int) -> bool:
        """At an event of date ``t`` (ns) >= ``at``: True pauses the run before it."""
        self.at = self.until_ns
        return t >= self.until_ns


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
        # (workload, name, profile) of REGISTER_PROFILE, in order
        self.registered_profiles: AppendOnlyList = AppendOnlyList()
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
        # one run's state (``run``): its server, outputs, whether it ended, wall time of earlier sessions
        self._server: BatsimServer | None = None
        self._prefix: str | None = None
        self._ended = False
        self._between_events = False
        self._in_loop = False
        self._pause_date: int | None = None  # ns: the date a paused run stopped before
        self._wall_before = 0.0
        self._session_start = 0.0
        self._static_ids: frozenset | None = None
        self._end_date = 0  # the platform's date at the end of the run
        self._snapshot_cache = snapshots.SnapshotCache()  # frames earlier snapshots wrote (not stored)

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

    def run(self, scheduler, prefix: str | None = None, on_start=None, *, until: float | None = None,
            watch: Watch | None = None) -> SimulationResult | None:
        """Simulate to the end; with ``prefix``, write ``PREFIX_jobs.csv`` (streamed as jobs end)
        and ``PREFIX_schedule.csv``. If anything stops the run early (an error, Ctrl-C), both
        files are still finished with what is known and the exception carries a
        ``PartialOutputs`` as ``partial_outputs`` before it propagates. ``on_start()`` runs
        once the jobs file is open, before the first event: whatever it writes (the CLI's
        ``PREFIX_run.json``) is never left without both files.

        ``until`` (simulated seconds): pause before the first event at or after that date and
        return None; ``snapshot`` then captures the run and ``resume`` continues it.
        ``watch``: a ``Watch`` the loop consults at its dates (checkpoints, signals)."""
        if self._server is not None:
            raise RuntimeError("this Simulator has run already: build another one, or resume() a paused run")
        self._session_start = time.perf_counter()
        server = BatsimServer(self, scheduler, self.line.platform(self.latency))
        if (until is not None or watch is not None) and not hasattr(server.platform, "advance"):
            raise SnapshotError(NOT_PAUSABLE.format(line=self.line.name))
        self._server, self._prefix = server, prefix
        self._in_loop = True  # (SIMULATION_BEGINS is sent now: no snapshot inside it either)
        try:
            server.tracer = self._tracer(prefix)
            if on_start is not None:
                on_start()
            self._begin(server)
        except BaseException as exc:
            self._in_loop = False
            self._stopped(exc)
            raise
        return self._advance(until, watch)

    def resume(self, until: float | None = None, watch: Watch | None = None) -> SimulationResult | None:
        """Continue a paused run (``run(until=...)``, ``from_snapshot``): to its end (the
        result), or to the next pause (None)."""
        if not self.paused:
            raise RuntimeError("resume() continues a paused run: this one is not paused")
        self._session_start = time.perf_counter()
        return self._advance(until, watch)

    def close(self) -> PartialOutputs:
        """End a paused run where it is: its files finished as far as known (as after an early
        stop), the run not resumable any more (its snapshots still are)."""
        if not self.paused:
            raise RuntimeError("close() ends a paused run: this one is not paused")
        self._ended = True
        return self._finish_partial(self._server, self._prefix)

    def replace_scheduler(self, scheduler) -> None:
        """A paused run goes on with another scheduler (a fork: the new one has taken over the
        state the old one had reached, see ``forking``)."""
        if not self.paused or self._in_loop:
            raise RuntimeError("the scheduler of a run is replaced while it is paused")
        self._server.scheduler = scheduler
        self._snapshot_cache = snapshots.SnapshotCache()  # the ended jobs are the new core's copies

    def enable_dynamic_jobs(self) -> None:
        """A paused run goes on with dynamic jobs (a fork into a scheduler that requeues)."""
        self.dynamic_jobs = True
        self.reopen_registration()

    def reopen_registration(self) -> None:
        """Registration open again (Batsim's NOTIFY continue_registration), for a fork's scheduler."""
        self._server.registration_open = self.dynamic_jobs

    @property
    def scheduler(self):
        """The scheduler the run calls (``runner.InProcess`` for the decision core in this process)."""
        return None if self._server is None else self._server.scheduler

    @property
    def paused(self) -> bool:
        """A run was started and stopped at a date before its end (``until``, a snapshot loaded)."""
        return self._server is not None and not self._ended

    @property
    def now(self) -> float:
        """The simulated date reached (seconds)."""
        return 0.0 if self._server is None else self._server.now / 1e9

    def _advance(self, until, watch) -> SimulationResult | None:
        server = self._server
        watch = Watch(until) if watch is None else watch.until(until)
        self._in_loop = True
        try:
            if self._simulate(server, watch):
                self._wall_before = self.wall_time()
                self._pause_date = watch.until_ns
                return None
            error, unfinished = self._end(server)
            result = self._finish(server, self._prefix, unfinished)
        except BaseException as exc:
            self._stopped(exc)
            raise
        finally:
            self._in_loop = False
        if error:
            raise SimulationError(error)
        return result

    def _stopped(self, exc: BaseException) -> None:
        """An early stop: the files finished with what is known, attached to ``exc``."""
        self._ended = True
        partial = self._finish_partial(self._server, self._prefix)
        try:
            exc.partial_outputs = partial
        except AttributeError:  # an exception type without a __dict__: the files are written anyway
            pass

    # ------------------------------------------------------------ snapshots
    def snapshot(self, date: int | None = None) -> Snapshot:
        """The run as it is now, paused (``run(until=...)``) or at a watch's turn: a
        ``Snapshot`` whose header says where it stopped and whose
        payload ``from_snapshot`` loads. Only a run whose scheduler is in this process (the
        decision core, not ``--connect``) can be snapshotted: the scheduler's state is part of it.
        ``date`` (ns, default the last event's): the simulated date it is recorded at, any date
        after the last event and up to the next one (a pause's, a checkpoint's)."""
        if self._server is None or self._ended or (self._in_loop and not self._between_events):
            raise RuntimeError("a snapshot is taken of a paused run (run(until=...)) or at a watch's turn")
        if date is None and not self._in_loop:
            date = self._pause_date
        server = self._server
        counts = {"running": server.nb_running, "ended": server.nb_ended,
                  "queued": server.nb_submitted - server.nb_ended - server.nb_running,
                  "not_submitted": self.nb_static - (server.nb_submitted - server.nb_registered)}
        # the cyclic collector paused: the pickler's memo keeps what each reduction built until it is
        # done, enough to set off full collections over the run's whole heap (0.2-1 CPU s, one
        # snapshot in ten on CTC-SP2) for objects that are all freed by reference counting right
        # after. What is left (the new frame, the jobs read: a few thousand objects) is collected
        # here, in the youngest generation only: left to the allocator, it would start the
        # collection due next, of older generations too, in the snapshot (as often as a full one
        # in a hundred snapshots: 0.3-0.6 s on SDSC-BLUE), where the run would have made it anyway
        collecting = gc.isenabled()
        gc.disable()
        try:
            payload, frames = snapshots.dumps(self, self._snapshot_cache)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise SnapshotError(f"this run cannot be snapshotted (its scheduler does not pickle: {exc})") from None
        finally:
            if collecting:
                gc.collect(0)
                gc.enable()
        date = server.now if date is None else max(date, server.now)
        header = {"sim_time": date / 1e9, "last_event_ns": server.now, "jobs": counts,
                  "outputs": self._prefix, "simulator_state": snapshots.PROTOCOL}
        return Snapshot(header, payload, frames)

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot, nb_hosts: int, workloads, *, host_names=None, progress=None,
                      prefix=KEEP) -> "Simulator":
        """The run of ``snapshot``, paused where it was taken: ``resume`` continues it. The
        inputs (``nb_hosts``, ``workloads``, ``host_names`` as for the constructor) must be those
        of the run (checked: machine size and number of jobs per workload; the CLI also checks the
        files' digests). ``prefix``: where the outputs go on, by default the run's own files (the
        jobs file cut back to what it held at the snapshot); another prefix starts as a copy."""
        fresh = cls(nb_hosts, workloads, host_names=host_names)
        sim = snapshots.loads(snapshot.payload, snapshot.frames, fresh)
        sim.progress = progress
        sim._pause_date = ns(snapshot.sim_time)
        tracer = sim._server.tracer
        if prefix is not KEEP and prefix != sim._prefix:
            tracer.continue_file(sim.output(prefix, "jobs.csv"))
            sim._prefix = prefix
        else:
            tracer.continue_file()
        return sim

    def static_ids(self) -> frozenset:
        """The ids of the workloads' jobs (not those registered during the run)."""
        if self._static_ids is None:
            self._static_ids = frozenset(j.id for jobs in self.static.values() for j in jobs)
        return self._static_ids

    def wall_time(self) -> float:
        """Wall-clock seconds spent simulating this run, over every session that ran it."""
        return self._wall_before + time.perf_counter() - self._session_start

    def _begins(self) -> ev.SimulationBegins:
        return ev.SimulationBegins(
            0.0, nb_resources=self.nb_hosts, nb_compute_resources=self.nb_hosts,
            allow_compute_sharing=False,
            config={"dynamic-jobs-enabled": self.dynamic_jobs,
                    "dynamic-jobs-acknowledged": self.acknowledge_dynamic_jobs,
                    "profile-reuse-enabled": self.profile_reuse, "profiles-forwarded-on-submission": False},
            compute_resources=_compute_resources(self.host_names),
            workloads={name: w.get("source", name) for name, w in self.workloads},
            profiles={name: dict(p) for name, p in self.profiles.items()})

    def _begin(self, server: BatsimServer) -> None:
        """The first events (a platform that pauses: Batsim 4.2.1's): submitters, SIMULATION_BEGINS."""
        if hasattr(server.platform, "advance"):
            server.platform.begin(server, self._begins(), list(self.static.values()))

    def _simulate(self, server: BatsimServer, watch: Watch) -> bool:
        """The platform's events until nothing is left (False) or ``watch`` pauses the run before
        the event of a date (True). Between two events the whole run is in its objects: the
        watch may snapshot it there. (Batsim 5's kernel runs to the end in one go.)"""
        platform = server.platform
        if not hasattr(platform, "advance"):
            self._end_date = platform.run(server, self._begins(), list(self.static.values()))
            return False
        if platform.advance(watch, self._look):
            return True
        self._end_date = server.now
        return False

    def _look(self, watch: Watch, t: int) -> bool:
        """The watch's turn, at a point where the run may be snapshotted."""
        self._between_events = True
        try:
            return watch.reached(self, t)
        finally:
            self._between_events = False

    def _end(self, server: BatsimServer):
        """After the last event: (error or None, jobs left unfinished)."""
        self._ended = True
        unfinished = [j for j in self.jobs.values() if j.state in ("SUBMITTED", "RUNNING")]
        return server.end(self._end_date), unfinished

    def _finish(self, server: BatsimServer, prefix, unfinished) -> SimulationResult:
        """The end of a run: jobs left unfinished written, both files closed, the result."""
        end_time = server.platform.seconds(server.now)
        tracer = server.tracer
        for job in unfinished:
            tracer.unfinished(job)
        server.report_progress(final=True)
        wall = self.wall_time()
        schedule = tracer.schedule_values(end_time, server.scheduling_time, wall)
        result = SimulationResult(end_time, tracer.nb_jobs, wall, server.scheduling_time,
                                  unfinished=[j.id for j in unfinished], schedule=schedule,
                                  messages=server.messages)
        tracer.close()
        if prefix is not None:
            result.jobs_csv = self.output(prefix, "jobs.csv")
            result.schedule_file = tracer.write_summary(lambda name: self.output(prefix, name), schedule)
        return result

    def _finish_partial(self, server: BatsimServer, prefix) -> PartialOutputs:
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
                schedule = tracer.schedule_values(end_time, server.scheduling_time, self.wall_time())
                partial.schedule_file = tracer.write_summary(lambda name: self.output(prefix, name), schedule)
        except OSError:  # the disk itself may be the problem: keep the original error
            pass
        return partial
