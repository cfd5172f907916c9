"""Strict queue order, no backfilling (batsched ``fcfs``)."""

from __future__ import annotations

from ..core.scheduler import Context
from .base import QueueScheduler


class StrictFCFS(QueueScheduler):
    """Start jobs from the head of the queue while they fit; never skip the head.

    Allocation is the lowest free core ids. Jobs without a walltime are
    accepted (batsched's ``fcfs`` only rejects jobs larger than the machine).
    """

    name = "fcfs"
    needs_walltime = False

    def __init__(self, policy=None, starvation_threshold=None, estimator=None):
        """No ``reservations`` nor ``backfill_order``: nothing is reserved or backfilled."""
        super().__init__(policy=policy, starvation_threshold=starvation_threshold, estimator=estimator)

    def schedule(self, ctx: Context) -> None:
        machine, queue, now = ctx.machine, self.queue, ctx.now
        head = queue.first(now)
        while head is not None and head.res <= machine.nb_free:
            self.start_job(ctx, head)
            head = queue.first(now)
        self.end_pass(ctx)
