"""Shared machinery of the backfilling families: an availability profile of
running jobs and reservations, in one of two reservation models."""

from __future__ import annotations

import heapq
import math
from operator import attrgetter

from ..config.validate import non_negative
from ..core.job import RUNNING
from ..core.scheduler import Context
from .base import QueueScheduler
from .core_profile import CoreProfile
from .profile import CountProfile, Placement

PROFILES = {"cores": CoreProfile, "count": CountProfile}  # the two reservation models

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
        super().__init__(*args, **kwargs)
        self.reservations = reservations
        # batsched plans every job for its walltime plus an "RJMS delay" (its -d
        # option, 5 s by default): part of batsched's model, so of ``cores``.
        if rjms_delay is None:
            rjms_delay = 5.0 if reservations == "cores" else 0.0
        self.rjms_delay = non_negative(rjms_delay, "rjms_delay", "seconds added to every planned job")
        self.profile = None
        # (planned end, seq, job, placement) of running jobs, stale entries skipped lazily:
        # the earliest event the running jobs promise (see ``wake_at_next_reservation``)
        self._running_ends: list = []
        self._next_reservation = math.inf  # earliest start of a queued job's reservation

    def span(self, job) -> float:
        """How long the profile plans ``job`` to hold its cores."""
        return job.estimate + self.rjms_delay

    def spans(self, jobs: list):
        """``span`` of each of ``jobs``, as a numpy array: the same sums without a Python call per
        job (a pass of conservative backfilling reads the whole queue's)."""
        import numpy as np  # here: ``serve`` starts without numpy (only compiled passes need it)

        return np.fromiter(map(attrgetter("estimate"), jobs), np.float64, len(jobs)) + self.rjms_delay

    def on_simulation_begins(self, nb_cores: int, ctx: Context) -> None:
        super().on_simulation_begins(nb_cores, ctx)
        self.profile = PROFILES[self.reservations](nb_cores, ctx.now)

    def on_job_adopted(self, job, ctx: Context) -> None:
        """A running job handed over by a fork holds its cores in the profile until its
        estimated end (or a moment past now)."""
        super().on_job_adopted(job, ctx)
        if job.state == RUNNING:
            self._replace_running(job, ctx.now)

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
        if late or self.queued_overdue(now):
            self._drop_reservations()
            for job in late:
                if job.state == RUNNING:
                    profile.remove(job)
                    self._track_running(job, profile.place(job, now, now + OVERRUN_GRACE,
                                                           self._placed_resources(job)))
        profile.update_first_slice(now)

    def queued_overdue(self, now: float) -> bool:
        """Whether a queued job's reservation kept outside the profile's placements ended
        unstarted (the compiled conservative pass keeps them in arrays); those in the
        profile are among its ``overdue`` jobs."""
        return False

    def _drop_reservations(self) -> None:
        profile = self.profile
        for queued in [j for j in profile.placed if j.state != RUNNING]:
            profile.remove(queued)
        self._next_reservation = math.inf
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
        self._track_running(job, self.profile.place(job, now, end, self._placed_resources(job)))

    def start(self, ctx: Context, job, placement: Placement) -> None:
        """Start a job placed at the present; it stays in the profile while running."""
        if self.reservations == "cores":
            mask = placement.used
        else:
            mask = ctx.machine.lowest_free(job.res)
        self.queue.remove(job)
        ctx.execute(job, mask)
        self._track_running(job, placement)
        if self.estimator is not None:
            self.estimator.on_start(job, ctx)

    # ------------------------------------------------------------ wake-ups
    def _track_running(self, job, placement: Placement) -> None:
        ends = self._running_ends
        heapq.heappush(ends, (placement.end, job.seq, job, placement))
        if len(ends) > 2 * len(self.profile.placed) + 64:
            # only ``_next_running_end`` pops finished jobs' entries, and EASY never calls it:
            # without this the heap would keep every job (and its placement) of the run
            placed = self.profile.placed
            ends[:] = [e for e in ends if e[2].state == RUNNING and placed.get(e[2]) is e[3]]
            heapq.heapify(ends)

    def _next_running_end(self) -> float:
        """The earliest planned end of a running job (inf when none runs)."""
        ends, placed = self._running_ends, self.profile.placed
        while ends:
            _, _, job, placement = ends[0]
            if job.state == RUNNING and placed.get(job) is placement:
                return placement.end
            heapq.heappop(ends)
        return math.inf

    def note_reservation(self, placement: Placement) -> None:
        """A queued job was given a reservation (not started now)."""
        if placement.start < self._next_reservation:
            self._next_reservation = placement.start

    def reservation_due(self, now: float) -> bool:
        """A queued job's reservation has begun: the pass must re-plan the queue."""
        return self._next_reservation <= now

    def wake_at_next_reservation(self, ctx: Context) -> None:
        """Ask for a call at the earliest reservation start unless a running job is planned
        to end by then. A reservation normally begins where running jobs end (their
        completion then brings the scheduler back); when nothing is planned to end first,
        as on an idle machine, no event may ever come, and the job would wait forever."""
        start = self._next_reservation
        if start == math.inf or start <= ctx.now:
            return
        if self._next_running_end() > start:
            ctx.call_me_later(start)  # the core applies the call margin
