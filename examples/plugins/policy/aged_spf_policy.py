"""AgedSPF: shortest estimated job first, each job's estimate divided by ``1 + wait / aging``.

A queue order (policy) plugin: ``key(job, now)`` is the job's score, lower first. The score
depends on the waiting time, so the policy is ``dynamic`` (re-sorted at every pass). Its option
is ``-o policy_aging=SECONDS`` (how long a wait halves a job's estimate).
"""

from __future__ import annotations

from batsched_ml.api import Policy, ValidationError


class AgedSPF(Policy):
    api_version = "1.0"
    name = "aged-spf"
    dynamic = True

    def __init__(self, aging: float = 3600.0):
        if isinstance(aging, bool) or not isinstance(aging, (int, float)) or not aging > 0:
            raise ValidationError(f"aging must be a number > 0 (seconds of waiting that halve an estimate), "
                                  f"got {aging!r}")
        self.aging = float(aging)

    def key(self, job, now: float) -> tuple:
        wait = max(now - job.submission_time, 0.0)
        return (job.estimate / (1.0 + wait / self.aging), job.submission_time, job.id)
