"""Shared machinery of the backfilling families: an availability profile of
running jobs and reservations, in one of two reservation models."""

from __future__ import annotations

from ..core.job import RUNNING
from ..core.scheduler import Context
from .base import QueueScheduler
from ..validation import non_negative
from .profile import PROFILES, Placement

# How long a job that outlived its estimate is assumed to keep its cores when
# nothing better is known (Batsim delivers walltime kills a few microseconds late).
OVERRUN_GRACE = 1e-6


class ProfileScheduler(QueueScheduler):
    """A queue scheduler that plans with an availability profile.

    ``reservations="cores"`` pins specific cores (batsched); ``"count"`` counts
    cores (the papers' model). Running jobs occupy the profile from their start
    to ``start + estimate``.
    """

    def __init__(self, *args, reservations="count", rjms_delay=None, **kwargs):
        if reservations not in PROFILES:
            raise ValueError(f"unknown reservation model {reservations!r}; choose from {sorted(PROFILES)}")
        super().__init__(*args, reservations=reservations, **kwargs)
        # batsched plans every job for its walltime plus an "RJMS delay" (its -d
        # option, 5 s by default): part of batsched's model, so of ``cores``.
        if rjms_delay is None:
            rjms_delay = 5.0 if reservations == "cores" else 0.0
        self.rjms_delay = non_negative(rjms_delay, "rjms_delay", "seconds added to every planned job")
        self.profile = None

    def span(self, job) -> float:
        """How long the profile plans ``job`` to hold its cores."""
        return job.estimate + self.rjms_delay

    def on_simulation_begins(self, nb_cores: int, ctx: Context) -> None:
        super().on_simulation_begins(nb_cores, ctx)
        self.profile = PROFILES[self.reservations](nb_cores, ctx.now)

    def refresh_profile(self, now: float) -> None:
        """Drop the jobs that ended, extend the ones that outlived their plan, move to ``now``.

        A job that overruns its planned end (an estimate below its runtime, or
        Batsim's microsecond latencies) keeps cores that reservations may have
        been promised: every reservation is dropped (the pass recomputes them)
        and the job is extended a moment past now.
        """
        profile = self.profile
        for job in self._ended:
            profile.remove_if_present(job)
        if self.estimator is not None:
            self.estimator.before_pass(now)
        late = profile.overdue(now)
        if late:
            self._drop_reservations()
            for job in late:
                if job.state == RUNNING:
                    profile.remove(job)
                    profile.place(job, now, now + OVERRUN_GRACE, self._placed_resources(job))
        profile.update_first_slice(now)

    def _drop_reservations(self) -> None:
        profile = self.profile
        for queued in [j for j in profile.placed if j.state != RUNNING]:
            profile.remove(queued)
        self._dirty = True

    def _placed_resources(self, job):
        return job.alloc if self.reservations == "cores" else job.res

    def reestimate_running(self, job, now: float) -> None:
        """Re-place a running job whose estimate changed (corrections).

        Its cores may have been promised to reservations after its old end, so
        every reservation is dropped and the next pass recomputes them.
        """
        self._drop_reservations()
        self._replace_running(job, now)
        self._dirty = True

    def _replace_running(self, job, now: float) -> None:
        """Plan a running job anew until its (new) estimated end, or a moment past now."""
        self.profile.remove_if_present(job)
        end = max(job.start_time + self.span(job), now + OVERRUN_GRACE)
        self.profile.place(job, now, end, self._placed_resources(job))

    def start(self, ctx: Context, job, placement: Placement) -> None:
        """Start a job placed at the present; it stays in the profile while running."""
        if self.reservations == "cores":
            mask = placement.used
        else:
            mask = ctx.machine.lowest_free(job.res)
        self.queue.remove(job)
        ctx.execute(job, mask)
        if self.estimator is not None:
            self.estimator.on_start(job, ctx)
