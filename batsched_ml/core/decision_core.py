"""The transport-free decision core: ``(now, events) -> decisions``.

It keeps the jobs, the machine's free cores and the bookkeeping every
scheduler needs (running jobs, pending kills and calls), feeds the events of a
message to the scheduler's hooks, runs one scheduling pass and returns the
decisions. Nothing here knows whether Batsim or the embedded simulator is on the
other side.
"""

from __future__ import annotations

import dataclasses
import sys

from ..incremental import JournaledDict
from ..protocol import events as ev
from ..protocol.codec import ProtocolViolation, parse_alloc
from ..protocol.coreset import format_mask
from .job import FINISHED, QUEUED, RUNNING, Job
from .machine import Machine
from .scheduler import CALL_MARGIN, Context, Scheduler, SchedulingError

CALL_STAMP_TOLERANCE = 1e-6  # Batsim prints dates to the microsecond


class DecisionCore:
    def __init__(self, scheduler: Scheduler, *, call_margin: float = CALL_MARGIN):
        """``call_margin``: how far after ``now`` a CALL_ME_LATER is at the earliest (see CALL_MARGIN)."""
        self.scheduler = scheduler
        self.call_margin = call_margin
        self.machine: Machine | None = None
        self.jobs: dict[str, Job] = {}
        self.running: dict[str, Job] = {}
        self.kills_pending: set = set()
        self.calls_pending: set = set()
        self.profiles: dict = {}  # workload -> JournaledDict of its profiles (snapshots write each once)
        self.workloads: dict = {}  # name -> workload file path, from SIMULATION_BEGINS
        self.rejected: list = []
        self.dynamic_jobs_enabled = False
        self.registration_done = False
        self.static_submission_over = False
        self.ended = False
        self.last_now = None  # ``now`` of the previous message: time never goes back
        self._seq = 0
        self._ctx = Context(self)
        self._carried: list = []  # decisions taken while taking over a system state (take_over)

    # ----------------------------------------------------------------- jobs
    def new_job(self, job_id: str, data: dict, now: float) -> Job:
        """Create and register a job from its protocol object."""
        workload, _, name = job_id.partition("!")
        workload = sys.intern(workload)  # one string per workload, not one per job (jobs stay)
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
        """Apply one message's events, run one scheduling pass, return the decisions.

        A message Batsim would never send (see ``_check_order``) raises ProtocolViolation
        before anything changes; a SIMULATION_ENDS while a job still runs raises it when reached
        (the completions before it in the same message count).
        """
        self._check_order(now, events)
        ctx = self._ctx
        ctx.now = now
        ctx.decisions, self._carried = self._carried, []
        ctx._calls = set()
        sched = self.scheduler
        for index, event in enumerate(events):
            kind = type(event)
            if kind is ev.JobSubmitted:
                if event.profile is not None:
                    self.profiles.setdefault(event.job_id.partition("!")[0], JournaledDict())[event.job["profile"]] = event.profile
                job = self.new_job(event.job_id, event.job, event.timestamp)
                sched.on_job_submitted(job, ctx)
            elif kind is ev.JobCompleted:
                self._job_completed(event, ctx)
            elif kind is ev.JobKilled:
                for job_id in event.job_ids:
                    job = self._killed_job(job_id, now, index)
                    self.kills_pending.discard(job_id)
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
                if self.machine is not None:
                    raise self._violation(now, index, event, "a second SIMULATION_BEGINS (Batsim "
                                          "sends it once, first): the simulation already began")
                self._begin(event, ctx)
            elif kind is ev.SimulationEnds:
                if self.running:
                    raise self._violation(now, index, event, _still_running(self.running))
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

    def _check_order(self, now: float, events) -> None:
        """What any Batsim guarantees about message order: SIMULATION_BEGINS first (and once: see
        ``_begin``), SIMULATION_ENDS last (nothing after it, in its message or later), time never
        going back (no message, no event before the previous message's ``now``; events are
        sorted, as the codec checks, so the first one tells)."""
        last = self.last_now
        if self.ended:
            raise ProtocolViolation(f"Batsim->scheduler message at now={now!r} after SIMULATION_ENDS "
                                    "(Batsim sends nothing more once the simulation ended)")
        if last is None:
            if not events or type(events[0]) is not ev.SimulationBegins:
                what = type(events[0]).type if events else "an empty message"
                raise ProtocolViolation(f"the first message must start with SIMULATION_BEGINS, got {what} "
                                        f"(message at now={now!r})", index=0 if events else None)
        elif now < last:
            raise ProtocolViolation(f"Batsim->scheduler message: now={now!r} is earlier than the previous "
                                    f"message's now={last!r}")
        elif events and events[0].timestamp < last:
            raise self._violation(now, 0, events[0], f"timestamp {events[0].timestamp!r} is earlier than "
                                  f"the previous message's now={last!r}")
        self._check_ends_last(now, events)
        self.last_now = now

    def _check_ends_last(self, now: float, events) -> None:
        """SIMULATION_ENDS is the last event Batsim ever sends: name the first event after it."""
        last_index = len(events) - 1
        for index, event in enumerate(events):
            if type(event) is ev.SimulationEnds and index != last_index:
                after = events[index + 1]
                what = ("a second SIMULATION_ENDS" if type(after) is ev.SimulationEnds
                        else f"{after.type} after SIMULATION_ENDS")
                raise self._violation(now, index + 1, after, f"{what} (event #{index}): Batsim sends "
                                      "SIMULATION_ENDS last, once")

    @staticmethod
    def _violation(now: float, index: int, event, text: str) -> ProtocolViolation:
        return ProtocolViolation(f"Batsim->scheduler message at now={now!r}, event #{index} ({event.type}): {text}",
                                 index=index, event_type=event.type)

    def _killed_job(self, job_id: str, now: float, index: int) -> Job:
        """The job a JOB_KILLED names: it must have been asked to die, and its JOB_COMPLETED must
        have come first (in this message or before: Batsim frees its cores there)."""
        job = self.jobs.get(job_id)
        event = ev.JobKilled(now, [job_id], {})
        if job is None:
            raise self._violation(now, index, event, f"names unknown job {job_id}")
        if job_id not in self.kills_pending:
            raise self._violation(now, index, event, f"names {job_id}, whose kill was never asked for")
        if job.state == RUNNING:
            raise self._violation(now, index, event, f"{job_id} is still running: Batsim sends its "
                                  "JOB_COMPLETED (COMPLETED_KILLED) first, in the same message")
        return job

    def _begin(self, event: ev.SimulationBegins, ctx: Context) -> None:
        self.machine = Machine(event.nb_compute_resources)
        self.workloads = dict(event.workloads)
        self.profiles = {w: JournaledDict(p) for w, p in event.profiles.items()}
        self.dynamic_jobs_enabled = event.dynamic_jobs_enabled
        if self.scheduler.may_requeue and not self.dynamic_jobs_enabled:
            raise SchedulingError(
                f"scheduler {self.scheduler.name!r} kills and requeues jobs, which needs dynamic jobs: "
                "run Batsim with --enable-dynamic-jobs")
        self.scheduler.on_simulation_begins(event.nb_compute_resources, ctx)

    def _job_completed(self, event: ev.JobCompleted, ctx: Context) -> None:
        job = self.running.get(event.job_id)
        if job is None:
            known = self.jobs.get(event.job_id)
            state = "unknown" if known is None else known.state
            raise ProtocolViolation(f"JOB_COMPLETED for {event.job_id}, which is not running ({state}), "
                                    f"at {event.timestamp!r}", event_type=event.type)
        mask = event.mask if event.mask is not None else parse_alloc(event.alloc).mask
        if mask != job.alloc:
            raise ProtocolViolation(f"JOB_COMPLETED for {event.job_id} at {event.timestamp!r} says it ran on "
                                    f"{event.alloc!r}, but it was allocated {format_mask(job.alloc)!r}",
                                    event_type=event.type)
        del self.running[event.job_id]
        self.machine.release(job.alloc)
        job.state = FINISHED
        job.final_state = event.job_state
        job.end_time = event.timestamp
        self.scheduler.on_job_completed(job, ctx)
        job.alloc = 0  # its cores are free: an ended job keeping a bitmask would cost O(machine) each

    # --------------------------------------------------------------- forks
    def take_over(self, previous: "DecisionCore", dynamic_jobs: bool | None = None) -> dict:
        """Start from the system state ``previous`` (another core, whose scheduler is set aside)
        had reached: its machine, its jobs -- ended ones as they ended, running ones on their
        cores, queued ones in their order -- and the kills and calls it awaits; this core's
        scheduler begins at that date, takes over what its components can from the previous
        scheduler's (``Scheduler.fork_from``; returned) and is handed the running jobs then the
        queued ones (``on_job_adopted``). The decisions it takes meanwhile (a rejection) go with
        its next reply. ``dynamic_jobs``: whether the run has dynamic jobs from now on (default:
        as before; a fork into a requeueing scheduler turns them on)."""
        if previous.machine is None:  # the run had not begun: SIMULATION_BEGINS will come
            return {}
        now = previous.last_now
        ctx = self._ctx
        ctx.now, ctx.decisions, ctx._calls = now, [], set()
        self.machine = Machine(previous.machine.nb_cores)
        self.workloads = dict(previous.workloads)
        self.profiles = {w: JournaledDict(p) for w, p in previous.profiles.items()}
        self.dynamic_jobs_enabled = previous.dynamic_jobs_enabled if dynamic_jobs is None else dynamic_jobs
        self.registration_done = previous.registration_done and not self.scheduler.may_requeue
        self.static_submission_over = previous.static_submission_over
        self.last_now = now
        self.kills_pending = set(previous.kills_pending)
        self.calls_pending = set(previous.calls_pending)
        self.rejected = list(previous.rejected)
        self._seq = previous._seq
        if self.scheduler.may_requeue and not self.dynamic_jobs_enabled:
            raise SchedulingError(f"scheduler {self.scheduler.name!r} kills and requeues jobs, which needs dynamic "
                                  "jobs: the snapshot's run had them off")
        self.scheduler.on_simulation_begins(self.machine.nb_cores, ctx)
        inherited = self.scheduler.fork_from(previous.scheduler)
        for job in previous.jobs.values():
            self.jobs[job.id] = _copy_of(job)
        running = sorted((j for j in self.jobs.values() if j.state == RUNNING), key=lambda j: (j.start_time, j.seq))
        for job in running:
            self.machine.allocate(job.alloc)
            self.running[job.id] = job
            self.scheduler.on_job_adopted(job, ctx)
        for job in [j for j in self.jobs.values() if j.state == QUEUED]:
            self.scheduler.on_job_adopted(job, ctx)
        self._carried = ctx.decisions
        return inherited

    # --------------------------------------------------------------- queries
    def running_jobs(self) -> list:
        return [j for j in self.jobs.values() if j.state == RUNNING]


def _copy_of(job: Job) -> Job:
    """A fresh Job of a forked run: the previous one's fields, its estimate back to the walltime (the
    new estimator sets its own) and its scratch space copied (a classifier's class, a requeue's base
    profile: what a component of the same kind may take over)."""
    copy = dataclasses.replace(job, info=dict(job.info))
    copy.estimate = job.walltime if job.walltime > 0 else float("inf")
    return copy


def _still_running(running: dict) -> str:
    """The SIMULATION_ENDS-while-running text, naming a few of the jobs."""
    names = list(running)
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return (f"the simulation ends while {len(names)} job(s) still run ({shown}): Batsim ends it only "
            "once every job has completed")
