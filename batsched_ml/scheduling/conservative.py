"""Conservative backfilling: every queued job holds a reservation (batsched ``conservative_bf``).

When nothing ended, new arrivals are inserted at their earliest fit and
existing reservations stay. When cores were released (or estimates changed, or
a reservation's start has come), the schedule is compressed by re-inserting
every queued job, one at a time in queue order, at its earliest fit, as
batsched does.

Two rules keep that from stalling. A job whose reservation has begun starts
now on its reservation even when its earliest fit is later: re-placed for its
whole estimate from a slightly later ``now`` (a job that ended a few
microseconds late, a clock stamped to the microsecond), it would overlap the
next reservation by that much and fall behind it, while jobs re-planned
before it were anchored on its old reservation. And when no running job is
planned to end before the earliest reservation, the scheduler asks to be
called then (``wake_at_next_reservation``), so a quiet machine is revisited.

Compressing costs a first-fit search per queued job, and a burst of n jobs
makes n compressions of up to n jobs over O(n) slices (issue 13 section 2).
With the counting model, re-inserting a job changes nothing unless it fits
earlier than its reservation: ``CountProfile.earlier_fit`` answers that without
touching the profile, and each search starts where the pass's earlier searches
proved that nothing fits (``NoFitBefore``). With batsched's model the job must
also keep its cores (``CoreProfile.reinsertion``). The result is exactly the
re-insertion's (tests/test_profile_search.py).
"""

from __future__ import annotations

import math

from ..core.scheduler import Context
from .reserving import ProfileScheduler


class ConservativeBackfilling(ProfileScheduler):
    name = "conservative"

    def schedule(self, ctx: Context) -> None:
        now, profile = ctx.now, self.profile
        self.refresh_profile(now)
        if not self._ended and not self._dirty and not self.reservation_due(now):
            candidates = [j for j in self._released if j in self.queue]
        else:
            candidates = self.queue.ordered(now)
            self._next_reservation = math.inf
        counted = self.reservations == "count"
        bounds = NoFitBefore()
        for job in candidates:
            reserved = profile.placed.get(job)
            span = self.span(job)
            # a future reservation planned for the job's current span: re-placing it may change nothing
            future = reserved is not None and reserved.start > now and reserved.end == reserved.start + span
            if future and counted:
                # re-placing it is a no-op unless it fits earlier (most of a long queue)
                lowest, shortest = bounds.lowest_start(job.res, span, reserved.start)
                start, longest = profile.earlier_fit(job, span, lowest)
                if start is None:
                    bounds.note(job.res, max(shortest, longest), reserved.start)
                    self.note_reservation(reserved)
                    continue
                profile.remove(job)
                placement = profile.place(job, start, start + span, job.res)
                vacated = max(reserved.start, placement.end)
                if vacated < reserved.end:
                    bounds.freed(vacated, profile.most_free(vacated, reserved.end))
                bounds.note(job.res, max(shortest, longest), start)
            elif future:
                # batsched's model: the same, and the job must also keep its cores (no bounds:
                # they serve the counting model's searches only)
                moved = profile.reinsertion(job, span)
                if moved is None:
                    self.note_reservation(reserved)
                    continue
                start, used = moved
                profile.remove(job)
                placement = profile.place(job, start, start + span, used)
            else:
                if reserved is not None:
                    bounds.freed(reserved.start, math.inf)
                profile.remove_if_present(job)
                placement = profile.add_first_fit(job, span)
            if not placement.started_now and reserved is not None and reserved.start <= now < reserved.end:
                profile.remove(job)
                placement = profile.place(job, now, reserved.end, reserved.used)
            if placement.started_now:
                self.start(ctx, job, placement)
            else:
                self.note_reservation(placement)
        self.wake_at_next_reservation(ctx)
        self.end_pass(ctx)


class NoFitBefore:
    """What one pass has learnt from its searches: "from no start before ``x`` do ``n``
    cores stay free for ``d`` seconds or longer" (a search that reached ``x`` tried every
    earlier start, and the longest stretch it met was shorter than ``d``). That holds for
    more cores or a longer time too, and reserving cores keeps it true. Freeing cores from
    time ``a`` on, leaving at most ``m`` free there, can only lengthen stretches of ``m``
    cores or fewer that reach ``a``: the bounds of ``n <= m`` move back to ``a - d``. The
    search for a job of ``n`` cores for ``d`` seconds starts at the best bound."""

    KEPT = 16  # the latest bounds
    SLACK = 1e-6  # float slack on stretch lengths: ``a - b`` and ``b + d`` round differently

    def __init__(self):
        self._bounds: list = []  # (n, d, x)

    def freed(self, a: float, most: float) -> None:
        """Cores were freed from ``a`` on, leaving at most ``most`` free there."""
        slack = self.SLACK
        self._bounds = [(n, d, x) if n > most or x + d <= a else (n, d, a - d - slack)
                        for n, d, x in self._bounds]

    def lowest_start(self, n: int, d: float, reserved_from: float) -> tuple[float, float]:
        """``(x, dx)``: the search for a job of ``n`` cores for ``d`` seconds, reserved from
        ``reserved_from`` on (taking it out frees its cores from then on), may start at
        ``x``, a bound that holds for ``dx`` seconds or longer (-inf, 0: from the start)."""
        best, shortest = -math.inf, 0.0
        for nb, db, x in self._bounds:
            if x > best and nb <= n and db <= d and x + db <= reserved_from:
                best, shortest = x, db
        return best, shortest

    def note(self, n: int, longest: float, x: float) -> None:
        """No start before ``x`` keeps ``n`` cores free for longer than ``longest``."""
        bounds = self._bounds
        bounds.append((n, longest * (1 + 1e-12) + self.SLACK, x))
        if len(bounds) > self.KEPT:
            del bounds[0]
