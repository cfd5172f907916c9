"""Shared machinery of the backfilling families: an availability profile of
running jobs and reservations, in one of two reservation models."""

from __future__ import annotations

from ..core.job import RUNNING
from ..core.scheduler import Context
from .base import QueueScheduler
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

    def __init__(self, *args, reservations="count", **kwargs):
        if reservations not in PROFILES:
            raise ValueError(f"unknown reservation model {reservations!r}; choose from {sorted(PROFILES)}")
        super().__init__(*args, reservations=reservations, **kwargs)
        self.profile = None

    def on_simulation_begins(self, nb_cores: int, ctx: Context) -> None:
        super().on_simulation_begins(nb_cores, ctx)
        self.profile = PROFILES[self.reservations](nb_cores, ctx.now)

    def refresh_profile(self, now: float) -> bool:
        """Drop ended jobs, re-place overdue ones, move the origin to now.

        Returns True when a queued job's reservation had to be dropped (the
        caller must then recompute reservations).
        """
        profile = self.profile
        for job in self._ended:
            profile.remove_if_present(job)
        stale = False
        for job in profile.overdue(now):
            profile.remove(job)
            if job.state == RUNNING:
                end = max(job.expected_end, now + OVERRUN_GRACE)
                profile.place(job, now, end, self._placed_resources(job))
            else:
                stale = True
        profile.update_first_slice(now)
        return stale

    def _placed_resources(self, job):
        return job.alloc if self.reservations == "cores" else job.res

    def reestimate_running(self, job, now: float) -> None:
        """Re-place a running job whose estimate changed (corrections)."""
        if job in self.profile:
            self.profile.remove(job)
        end = max(job.expected_end, now + OVERRUN_GRACE)
        self.profile.place(job, now, end, self._placed_resources(job))
        self._dirty = True

    def start(self, ctx: Context, job, placement: Placement) -> None:
        """Start a job placed at the present; it stays in the profile while running."""
        if self.reservations == "cores":
            mask = placement.used
        else:
            mask = ctx.machine.lowest_free(job.res)
        self.queue.remove(job)
        ctx.execute(job, mask)
