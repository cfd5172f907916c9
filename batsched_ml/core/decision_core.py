"""The transport-free decision core: ``(now, events) -> decisions``.

It keeps the jobs, the machine's free cores and the bookkeeping every
scheduler needs (running jobs, pending kills and calls), feeds the events of a
message to the scheduler's hooks, runs one scheduling pass and returns the
decisions. Nothing here knows whether Batsim or the embedded simulator is on the
other side.
"""

from __future__ import annotations

from ..protocol import events as ev
from .job import FINISHED, QUEUED, RUNNING, Job
from .machine import Machine
from .scheduler import Context, Scheduler, SchedulingError

CALL_STAMP_TOLERANCE = 1e-6  # Batsim prints dates to the microsecond


class DecisionCore:
    def __init__(self, scheduler: Scheduler):
        self.scheduler = scheduler
        self.machine: Machine | None = None
        self.jobs: dict[str, Job] = {}
        self.running: dict[str, Job] = {}
        self.kills_pending: set = set()
        self.calls_pending: set = set()
        self.profiles: dict = {}
        self.workloads: dict = {}  # name -> workload file path, from SIMULATION_BEGINS
        self.rejected: list = []
        self.dynamic_jobs_enabled = False
        self.registration_done = False
        self.static_submission_over = False
        self.ended = False
        self._seq = 0
        self._ctx = Context(self)

    # ----------------------------------------------------------------- jobs
    def new_job(self, job_id: str, data: dict, now: float) -> Job:
        """Create and register a job from its protocol object."""
        workload, _, name = job_id.partition("!")
        if job_id in self.jobs:
            raise SchedulingError(f"job {job_id} submitted twice")
        walltime = data.get("walltime", -1)
        walltime = -1.0 if walltime is None else float(walltime)
        profile_name = data["profile"]
        runtime = None
        profile = self.profiles.get(workload, {}).get(profile_name)
        if profile is not None and profile.get("type") == "delay":
            runtime = float(profile["delay"])
            if walltime > 0:
                runtime = min(runtime, walltime)
        self._seq += 1
        job = Job(id=job_id, workload=workload, name=name, subtime=float(data.get("subtime", now)),
                  walltime=walltime, res=int(data["res"]), profile=profile_name, data=data,
                  submission_time=now, seq=self._seq, runtime=runtime,
                  estimate=walltime if walltime > 0 else float("inf"))
        self.jobs[job_id] = job
        return job

    # ---------------------------------------------------------------- events
    def handle(self, now: float, events) -> list:
        """Apply one message's events, run one scheduling pass, return the decisions."""
        ctx = self._ctx
        ctx.now = now
        ctx.decisions = []
        ctx._calls = set()
        sched = self.scheduler
        for event in events:
            kind = type(event)
            if kind is ev.JobSubmitted:
                if event.profile is not None:
                    self.profiles.setdefault(event.job_id.partition("!")[0], {})[event.job["profile"]] = event.profile
                job = self.new_job(event.job_id, event.job, event.timestamp)
                sched.on_job_submitted(job, ctx)
            elif kind is ev.JobCompleted:
                self._job_completed(event, ctx)
            elif kind is ev.JobKilled:
                for job_id in event.job_ids:
                    self.kills_pending.discard(job_id)
                    job = self.jobs.get(job_id)
                    if job is None:
                        raise SchedulingError(f"JOB_KILLED names unknown job {job_id}")
                    progress = event.job_progress.get(job_id)
                    sched.on_job_killed(job, None if progress is None else progress.get("progress"), ctx)
            elif kind is ev.RequestedCall:
                # Batsim may deliver a call a little after the asked time, and stamps it
                # to the microsecond (a call due at 12.3456789 may arrive as 12.345678).
                self.calls_pending = {t for t in self.calls_pending if t > event.timestamp + CALL_STAMP_TOLERANCE}
                sched.on_requested_call(ctx)
            elif kind is ev.Notify:
                if event.kind == ev.NO_MORE_STATIC_JOB_TO_SUBMIT:
                    self.static_submission_over = True
                sched.on_notify(event.kind, ctx)
            elif kind is ev.SimulationBegins:
                self._begin(event, ctx)
            elif kind is ev.SimulationEnds:
                self.ended = True
                sched.on_simulation_ends(ctx)
                return []
            # OtherEvent (energy / workflow): nothing to do.
        if self.machine is not None:
            sched.schedule(ctx)
            if self.dynamic_jobs_enabled and not self.registration_done and sched.registration_finished():
                self.registration_done = True
                ctx.notify(ev.REGISTRATION_FINISHED)
        return ctx.decisions

    def _begin(self, event: ev.SimulationBegins, ctx: Context) -> None:
        self.machine = Machine(event.nb_compute_resources)
        self.workloads = dict(event.workloads)
        self.profiles = {w: dict(p) for w, p in event.profiles.items()}
        self.dynamic_jobs_enabled = event.dynamic_jobs_enabled
        if self.scheduler.may_requeue and not self.dynamic_jobs_enabled:
            raise SchedulingError(
                f"scheduler {self.scheduler.name!r} kills and requeues jobs, which needs dynamic jobs: "
                "run Batsim with --enable-dynamic-jobs")
        self.scheduler.on_simulation_begins(event.nb_compute_resources, ctx)

    def _job_completed(self, event: ev.JobCompleted, ctx: Context) -> None:
        job = self.running.pop(event.job_id, None)
        if job is None:
            known = self.jobs.get(event.job_id)
            state = "unknown" if known is None else known.state
            raise SchedulingError(f"JOB_COMPLETED for {event.job_id}, which is not running ({state})")
        self.machine.release(job.alloc)
        job.state = FINISHED
        job.final_state = event.job_state
        job.end_time = event.timestamp
        self.scheduler.on_job_completed(job, ctx)

    # --------------------------------------------------------------- queries
    def pending_jobs(self) -> list:
        return [j for j in self.jobs.values() if j.state == QUEUED]

    def running_jobs(self) -> list:
        return [j for j in self.jobs.values() if j.state == RUNNING]
