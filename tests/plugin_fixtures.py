"""Third-party-looking plugins for tests/test_config.py (registered there by monkeypatching
``batsched_ml.config.plugins``): the schedulers a new user writes first, as issue 24 tried them."""

from __future__ import annotations

from batsched_ml.api import QueueScheduler, Scheduler


class BareFirstFit(Scheduler):
    """The README's hooks and nothing else: a constructor that takes no collaborator."""

    name = "bare-firstfit"

    def __init__(self):
        self.queue = []

    def on_job_submitted(self, job, ctx):
        if job.res > ctx.machine.nb_cores:
            ctx.reject(job, "too big")
        else:
            self.queue.append(job)

    def schedule(self, ctx):
        for job in list(self.queue):
            if job.res <= ctx.machine.nb_free:
                ctx.execute(job, ctx.machine.lowest_free(job.res))
                self.queue.remove(job)


class OpenFirstFit(BareFirstFit):
    """The same with ``**flags`` added, as the issue's user did to silence the TypeError."""

    name = "open-firstfit"

    def __init__(self, **flags):
        super().__init__()
        self.flags = flags


class OrderedFirstFit(QueueScheduler):
    """A queue scheduler: takes a policy and an estimator (and so a classifier)."""

    name = "ordered-firstfit"
    needs_walltime = False

    def __init__(self, policy=None, estimator=None, greedy: bool = True):
        super().__init__(policy=policy, estimator=estimator)
        self.greedy = greedy

    def schedule(self, ctx):
        for job in self.queue.ordered(ctx.now):
            if job.res <= ctx.machine.nb_free:
                self.queue.remove(job)
                ctx.execute(job, ctx.machine.lowest_free(job.res))
                if self.estimator is not None:
                    self.estimator.on_start(job, ctx)
            elif not self.greedy:
                break
        self.end_pass(ctx)


class FutureScheduler(BareFirstFit):
    api_version = "2.0"


class NewerMinorScheduler(BareFirstFit):
    api_version = "1.9"
