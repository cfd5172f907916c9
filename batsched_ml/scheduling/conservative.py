"""Conservative backfilling: every queued job holds a reservation (batsched ``conservative_bf``).

When nothing ended, new arrivals are inserted at their earliest fit and
existing reservations stay; when cores were released, the schedule is
compressed by re-inserting every queued job in queue order.
"""

from __future__ import annotations

from ..core.scheduler import Context
from .reserving import ProfileScheduler


class ConservativeBackfilling(ProfileScheduler):
    name = "conservative"

    def schedule(self, ctx: Context) -> None:
        now, profile = ctx.now, self.profile
        self.refresh_profile(now)
        if not self._ended and not self._dirty:
            candidates = [j for j in self._released if j in self.queue]
        else:
            candidates = self.queue.ordered(now)
        for job in candidates:
            profile.remove_if_present(job)
            placement = profile.add_first_fit(job, self.span(job))
            if placement.started_now:
                self.start(ctx, job, placement)
        self.end_pass(ctx)
