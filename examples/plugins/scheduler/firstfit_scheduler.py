"""FirstFit: start, in queue order, every queued job that fits in the free cores now.

A complete scheduler plugin (the documentation's tutorial "Your own scheduler" builds it step
by step). Unlike EASY it reserves nothing, so a wide job may wait behind a stream of narrow
ones: ``--starvation-threshold`` bounds that. Its constructor says what it accepts: a queue
order (``--policy``), a starvation threshold, a runtime estimator (``--predictor`` /
``--correction``: the estimates order the queue under ``--policy spf``) and one option of its
own, ``-o lookahead=N`` (examine only the first N queued jobs per pass). It takes no
``reservations`` nor ``backfill_order``: ``--reservations cores`` is refused, not ignored.
"""

from __future__ import annotations

from batsched_ml.api import QueueScheduler, ValidationError


class FirstFit(QueueScheduler):
    api_version = "1.0"
    name = "firstfit"
    needs_walltime = False  # nothing is planned ahead: a job without walltime is fine

    def __init__(self, policy=None, starvation_threshold=None, estimator=None, lookahead: int | None = None):
        super().__init__(policy=policy, starvation_threshold=starvation_threshold, estimator=estimator)
        if lookahead is not None and (isinstance(lookahead, bool) or not isinstance(lookahead, int)
                                      or lookahead < 1):
            raise ValidationError(f"lookahead must be an integer >= 1 (queued jobs examined per pass) or null, "
                                  f"got {lookahead!r}")
        self.lookahead = lookahead

    def schedule(self, ctx) -> None:
        """One pass: the queued jobs in order, each started if it fits in the cores free now."""
        machine = ctx.machine
        for examined, job in enumerate(self.queue.ordered(ctx.now)):
            if machine.nb_free == 0 or (self.lookahead is not None and examined >= self.lookahead):
                break
            if job.res <= machine.nb_free:
                self.start_job(ctx, job)
        self.end_pass(ctx)
