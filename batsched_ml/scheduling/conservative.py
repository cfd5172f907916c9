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
        for job in candidates:
            reserved = profile.placed.get(job)
            span = self.span(job)
            if counted and reserved is not None and reserved.start > now and reserved.end == reserved.start + span:
                # re-placing it is a no-op unless it fits earlier (most of a long queue)
                start = profile.earlier_fit(job, span)
                if start is None:
                    self.note_reservation(reserved)
                    continue
                profile.remove(job)
                placement = profile.place(job, start, start + span, job.res)
            else:
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
