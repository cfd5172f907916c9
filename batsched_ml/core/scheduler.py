"""The interface every scheduling plugin implements, and the context it decides through.

A scheduler never sees the transport: the decision core calls its ``on_*``
hooks for the events of one message, then ``schedule(ctx)`` once, and the
scheduler answers by calling ``ctx.execute / reject / kill / call_me_later /
requeue``. The same object therefore runs unchanged inside the embedded
simulator and behind the ZeroMQ server.
"""

from __future__ import annotations

import math

from ..protocol import events as ev
from ..protocol.coreset import CoreSet
from .job import QUEUED, REJECTED, RUNNING, Job
from .machine import Machine


class SchedulingError(RuntimeError):
    """A scheduler asked for something the protocol forbids."""


# The one rule for CALL_ME_LATER, applied by ``Context.call_me_later`` (the only way the core asks for
# a call): never sooner than this after ``now``. Batsim checks that a call is in the future when it
# *applies* the decision, i.e. after the route latency of every earlier decision of the reply and of
# any message already in flight (0.1 to 0.6 ms each on the golden platforms): a call 0.2 ms ahead
# passes as the first decision and aborts Batsim as the third. One second covers thousands of
# them, and is below the resolution of the traces (whole seconds).
CALL_MARGIN = 1.0
# With the embedded simulator's idealised timing (``NO_LATENCY``) a decision applies at ``now``; a
# call 20 us ahead still survives Batsim's microsecond stamps.
EXACT_CALL_MARGIN = 2e-5


class Context:
    """What a scheduler reads and does during one call of a hook, at time ``now``.

    Read: ``now`` (seconds), ``machine`` (free cores), ``jobs`` (every job by id), ``running``
    (the running jobs by id), ``workloads`` (workload name -> the file Batsim read, from
    SIMULATION_BEGINS: plugins read the trace's metadata there), ``static_submission_over``,
    ``decisions`` (taken so far in this pass). Do: ``execute``, ``reject``, ``kill``,
    ``call_me_later``, ``requeue`` (after a kill), ``notify``, ``set_metadata``. Mappings are
    the decision core's own: read them, never change them.

    Decisions take effect in what the context shows at once: a job given to ``execute`` is in
    ``running`` with its ``start_time`` (``now``) and its cores taken from ``machine``, so a
    pass that starts the head and then computes a shadow time from ``running`` counts it.
    """

    def __init__(self, core):
        self._core = core
        self.now = 0.0
        self.decisions: list = []
        self._calls: set = set()

    @property
    def machine(self) -> Machine:
        return self._core.machine

    @property
    def jobs(self) -> dict:
        return self._core.jobs

    @property
    def running(self) -> dict:
        """The running jobs by id."""
        return self._core.running

    @property
    def workloads(self) -> dict:
        """Workload name (``w0``...) -> the workload file Batsim announced (empty when unknown)."""
        return self._core.workloads

    @property
    def static_submission_over(self) -> bool:
        """True once Batsim said every job of the workload files was submitted."""
        return self._core.static_submission_over

    def execute(self, job: Job, mask: int) -> None:
        if job.state != QUEUED:
            raise SchedulingError(f"cannot execute {job.id}: it is {job.state}")
        if mask.bit_count() != job.res:
            raise SchedulingError(f"{job.id} needs {job.res} cores, got {mask.bit_count()}")
        self.machine.allocate(mask)
        job.state = RUNNING
        job.start_time = self.now
        job.alloc = mask
        self.decisions.append(ev.ExecuteJob(self.now, job.id, CoreSet(mask)))
        self._core.running[job.id] = job

    def reject(self, job: Job, reason: str) -> None:
        if job.state != QUEUED:
            raise SchedulingError(f"cannot reject {job.id}: it is {job.state}")
        job.state = REJECTED
        job.final_state = "REJECTED"
        job.info["reject_reason"] = reason
        self._core.rejected.append((job.id, reason))
        self.decisions.append(ev.RejectJob(self.now, job.id, reason))

    def kill(self, job: Job) -> None:
        """Ask for a running job to be killed (answered later by JOB_KILLED)."""
        if job.id in self._core.kills_pending:
            return
        self._core.kills_pending.add(job.id)
        self.decisions.append(ev.KillJob(self.now, [job.id]))

    def call_me_later(self, at: float) -> float:
        """Ask for a REQUESTED_CALL at ``at``, or at ``now + call margin`` if that is later (see
        ``CALL_MARGIN``: "as soon as possible" is that). Duplicates are merged. Returns the date asked."""
        if not math.isfinite(at):
            raise SchedulingError(f"CALL_ME_LATER at {at}: not a date")
        earliest = self.now + self._core.call_margin
        if at < earliest:
            at = earliest
        if at in self._calls or at in self._core.calls_pending:
            return at
        self._calls.add(at)
        self._core.calls_pending.add(at)
        self.decisions.append(ev.CallMeLater(self.now, at))
        return at

    def requeue(self, job: Job) -> Job:
        """Register a fresh copy of a killed job as ``<original>#<attempt>`` (dynamic jobs).

        Batsim forgets a profile once its jobs are finished, so the copy gets a
        fresh profile name too. The new job is submitted at ``now`` and handed
        to the scheduler's ``on_job_submitted`` like any arrival.
        """
        core = self._core
        if not core.dynamic_jobs_enabled:
            raise SchedulingError(
                "requeueing needs dynamic jobs: run Batsim with --enable-dynamic-jobs")
        attempt = job.attempt + 1
        original = job.original_id or job.id
        new_id = f"{original}#{attempt}"
        base_profile = job.info.get("base_profile", job.profile)
        known = core.profiles.setdefault(job.workload, {})
        profile_name = f"{base_profile}#{attempt}"
        if profile_name in known:  # another job with this profile was requeued already
            profile_name = f"{base_profile}#{original.partition('!')[2]}#{attempt}"
        profile = known.get(job.profile)
        if profile is None:
            raise SchedulingError(f"profile {job.profile!r} of {job.id} is unknown: cannot requeue")
        core.profiles.setdefault(job.workload, {})[profile_name] = profile
        data = dict(job.data)
        data.update(id=new_id, subtime=self.now, profile=profile_name)
        wire_job = {"id": new_id, "subtime": self.now, "walltime": job.walltime, "res": job.res,
                    "profile": profile_name}
        self.decisions.append(ev.RegisterProfile(self.now, job.workload, profile_name, profile))
        self.decisions.append(ev.RegisterJob(self.now, new_id, wire_job))
        new_job = core.new_job(new_id, data, self.now)
        new_job.attempt = attempt
        new_job.original_id = original
        new_job.info["base_profile"] = base_profile
        core.scheduler.on_job_submitted(new_job, self)
        return new_job

    def notify(self, kind: str) -> None:
        self.decisions.append(ev.Notify(self.now, kind))

    def set_metadata(self, job: Job, text: str) -> None:
        self.decisions.append(ev.SetJobMetadata(self.now, job.id, text))


class Scheduler:
    """Base class of every scheduling plugin. Override what you need.

    ``may_requeue`` tells the transports that this scheduler can kill and
    requeue jobs, which needs Batsim's dynamic jobs.
    """

    name = "scheduler"
    may_requeue = False

    def on_simulation_begins(self, nb_cores: int, ctx: Context) -> None:
        pass

    def on_job_submitted(self, job: Job, ctx: Context) -> None:
        pass

    def on_job_completed(self, job: Job, ctx: Context) -> None:
        pass

    def on_job_killed(self, job: Job, progress: float | None, ctx: Context) -> None:
        """``progress`` is None when the job had finished before the kill took effect."""

    def on_requested_call(self, ctx: Context) -> None:
        pass

    def on_notify(self, kind: str, ctx: Context) -> None:
        pass

    def on_simulation_ends(self, ctx: Context) -> None:
        pass

    def schedule(self, ctx: Context) -> None:
        """Take the decisions of this pass (called once per message)."""

    def registration_finished(self) -> bool:
        """True once this scheduler will register no further job (requeues)."""
        return True

    def report(self) -> dict:
        """Scheduler-specific results for ``--json`` (predictions, classification, ...)."""
        return {}

    def job_details(self) -> dict:
        """Per-job tables too big for a summary: ``{name: (columns, rows)}``; the CLI writes
        each to ``PREFIX_<name>.csv`` (e.g. ``classes``, ``predictions``)."""
        return {}

    # ---------------------------------------------------------------- forks (API 1.2)
    def components(self) -> dict:
        """This scheduler's policy and learning components by kind (``policy``, ``predictor``,
        ``correction``, ``classifier``, ``distribution``): what a fork matches with the snapshot's."""
        return {}

    def fork_from(self, previous: "Scheduler") -> dict:
        """A run forks from a snapshot (``simulate --fork``) into this scheduler; ``previous`` is the
        snapshot's scheduler. Called once the simulation has begun for this one and before the
        run's jobs are handed over (``on_job_adopted``). Each component takes over what it can
        from the snapshot's component of the same kind (its ``fork_from``, see ``Params``);
        returns ``{kind: what it took over}``, a kind left out starting fresh."""
        out = {}
        theirs = previous.components()
        for kind, component in self.components().items():
            take = getattr(component, "fork_from", None)
            if take is not None and theirs.get(kind) is not None:
                text = take(theirs[kind])
                if text:
                    out[kind] = text
        return out

    def on_job_adopted(self, job: Job, ctx: Context) -> None:
        """A fork hands over a job the run already holds, with its fields as they are: queued
        (``job.state == QUEUED``, submitted at ``job.submission_time``), or running on
        ``job.alloc`` since ``job.start_time`` (the machine already counts its cores; no decision
        is taken for it). Queued jobs come after the running ones, in arrival order. By default a
        queued job is submitted (``on_job_submitted``) and a running one refused: a scheduler
        that plans around running jobs says how it takes one over."""
        if job.state == QUEUED:
            self.on_job_submitted(job, ctx)
            return
        raise SchedulingError(f"scheduler {self.name!r} cannot take over a running job ({job.id}): it does not "
                              "implement on_job_adopted (see the plugin API), so it cannot start from a snapshot "
                              "with jobs running")
