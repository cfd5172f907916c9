"""What every queue-based scheduler shares: admission, the ordered queue, estimates."""

from __future__ import annotations

import math

from ..config import validate as check
from ..core.job import RUNNING
from ..core.queue import JobQueue
from ..core.scheduler import Context, Scheduler
from ..policies.orders import FCFS, SJBF


BACKFILL_ORDERS = ("queue", "sjbf")


class QueueScheduler(Scheduler):
    """A scheduler with one policy-ordered queue.

    Subclasses implement ``schedule``; the hooks here collect the jobs released
    and ended since the previous pass, like batsched's ``_jobs_released_recently``.

    Collaborators are given, never looked up: ``policy`` is the queue order (a
    `Policy`, FCFS by default), ``estimator`` the runtime
    estimator (``predictors.Estimator``: it may set ``job.estimate`` at submission and correct
    it; without one the estimate is the walltime). A subclass's constructor parameters are what
    it accepts (see ``compose``): one that does not use ``backfill_order`` (strict FCFS,
    conservative) leaves it out of its signature, and ``--backfill-order`` is refused for it.
    """

    needs_walltime = True
    """Whether a job without a walltime is rejected at submission ("has no walltime (backfilling
    needs one)"), as batsched's EASY and conservative do: a reservation needs an end. Set it to
    False in a scheduler that plans nothing ahead (strict FCFS, first fit)."""

    def __init__(self, policy=None, starvation_threshold=None, estimator=None, backfill_order="queue"):
        self.policy = FCFS() if policy is None else policy
        if backfill_order not in BACKFILL_ORDERS:
            raise check.ValidationError(f"backfill_order must be one of {', '.join(BACKFILL_ORDERS)}, "
                                        f"got {backfill_order!r}")
        self.backfill_order = backfill_order
        self.starvation_threshold = check.starvation_threshold(starvation_threshold)
        self.estimator = estimator
        self.queue = JobQueue(self.policy, self.starvation_threshold,
                              backfill_policy=SJBF() if backfill_order == "sjbf" else None)
        self.nb_cores = 0
        self._released: list = []
        self._ended: list = []
        self._dirty = False  # an estimate changed: recompute everything at the next pass

    # ----------------------------------------------------------------- hooks
    def on_simulation_begins(self, nb_cores: int, ctx: Context) -> None:
        self.nb_cores = nb_cores
        begins = getattr(self.policy, "on_simulation_begins", None)  # a policy relative to the machine size
        if begins is not None:
            begins(nb_cores)
        if self.estimator is not None:
            self.estimator.attach(self, ctx)

    def admission_error(self, job) -> str | None:
        if job.res > self.nb_cores:
            return f"requests {job.res} cores but the machine has {self.nb_cores}"
        if job.res <= 0:
            return f"requests {job.res} cores"
        if self.needs_walltime and not job.has_walltime:
            return "has no walltime (backfilling needs one)"
        return None

    def on_job_submitted(self, job, ctx: Context) -> None:
        reason = self.admission_error(job)
        if reason is not None:
            ctx.reject(job, reason)
            return
        if self.estimator is not None:
            self.estimator.on_submission(job, ctx)
        self.queue.add(job, ctx.now)
        self._released.append(job)

    def on_job_completed(self, job, ctx: Context) -> None:
        self._ended.append(job)
        if self.estimator is not None:
            self.estimator.on_completion(job, ctx)

    def on_requested_call(self, ctx: Context) -> None:
        if self.estimator is not None:
            self.estimator.on_call(ctx)

    def on_job_adopted(self, job, ctx: Context) -> None:
        """A fork hands over a queued job (submitted again) or a running one (estimated, and
        followed by the estimator as if it had just started)."""
        if job.state != RUNNING:
            self.on_job_submitted(job, ctx)
        elif self.estimator is not None:
            self.estimator.on_submission(job, ctx)
            self.estimator.on_start(job, ctx)

    def components(self) -> dict:
        out = {"policy": self.policy}
        if self.estimator is not None:
            out["predictor"] = self.estimator.predictor
            if self.estimator.correction is not None:
                out["correction"] = self.estimator.correction
        return out

    def start_job(self, ctx: Context, job, mask: int | None = None) -> None:
        """Start queued ``job`` now on ``mask`` (default: the lowest free core ids, batsched's
        first fit): it leaves the queue and the estimator follows it."""
        self.queue.remove(job)
        ctx.execute(job, ctx.machine.lowest_free(job.res) if mask is None else mask)
        if self.estimator is not None:
            self.estimator.on_start(job, ctx)

    def reestimate_running(self, job, now: float) -> None:
        """A running job's estimate changed (a correction): plan everything anew."""
        self._dirty = True

    # ------------------------------------------------------------- helpers
    def backfill_candidates(self, jobs: list, now: float) -> list:
        """``jobs`` (queued, in queue order) in the order a backfilling pass tries them: as given
        with ``--backfill-order queue``, shortest estimate first (ties: arrival) with ``sjbf``.
        A scheduler that backfills job by job loops over it; ``queue.fit_search`` is the indexed
        way to the same first fit."""
        if self.backfill_order == "sjbf":
            key = SJBF().key
            return sorted(jobs, key=lambda j: (key(j, now), j.seq))
        return jobs

    def report(self) -> dict:
        return {} if self.estimator is None else {"predictions": self.estimator.report()}

    def job_details(self) -> dict:
        return {} if self.estimator is None else {"predictions": self.estimator.job_predictions()}

    def correction_window(self) -> tuple[float, float] | None:
        """When a running job's longer occupancy could change this scheduler's next pass:
        ``(lo, hi)`` = only if the job is then planned to end after ``lo`` and the
        correction falls before ``hi``; None = never (until the next event). The estimator
        skips the calls of corrections outside it. By default every correction matters."""
        return -math.inf, math.inf

    def end_pass(self, ctx: Context) -> None:
        self._released = []
        self._ended = []
        self._dirty = False
        if self.estimator is not None:
            self.estimator.after_pass(ctx)
