"""UserLogNormal: each user's runtimes as a log-normal distribution over the runtime bins.

A runtime-distribution plugin for ``--scheduler probabilistic --distribution user-lognormal``:
``predict_proba(jobs, now)`` gives one probability vector per job over the logarithmic bins
``bins_`` (created by ``reset`` from ``bin_factor`` / ``max_runtime``), or zeros for a user
with fewer than ``min_jobs`` completed jobs (the scheduler then uses a point mass at the
walltime). The spread is widened by ``prior_sigma / sqrt(n)`` so that a short history is not
over-confident. Options: ``-o distribution_min_jobs=N``, ``-o distribution_prior_sigma=S``.
"""

from __future__ import annotations

import math

import numpy as np

from batsched_ml.api import RuntimeDistribution, ValidationError


class UserLogNormal(RuntimeDistribution):
    api_version = "1.0"
    name = "user-lognormal"

    def __init__(self, min_jobs: int = 2, prior_sigma: float = 1.0, bin_factor: float = 1.8,
                 max_runtime: float = 30 * 86400.0):
        self.min_jobs = min_jobs
        self.prior_sigma = prior_sigma
        super().__init__(bin_factor, max_runtime)

    def validate_params(self) -> None:
        super().validate_params()
        if isinstance(self.min_jobs, bool) or not isinstance(self.min_jobs, int) or self.min_jobs < 1:
            raise ValidationError(f"min_jobs must be an integer >= 1 (completed jobs before a user gets a "
                                  f"distribution), got {self.min_jobs!r}")
        if isinstance(self.prior_sigma, bool) or not isinstance(self.prior_sigma, (int, float)) \
                or not self.prior_sigma >= 0:
            raise ValidationError(f"prior_sigma must be a number >= 0, got {self.prior_sigma!r}")

    def reset(self):
        super().reset()
        self.users_ = {}  # user -> [n, sum of log runtimes, sum of their squares]
        return self

    def predict_proba(self, jobs, now: float = 0.0) -> np.ndarray:
        out = np.zeros((len(jobs), self.n_bins))
        inner_edges = np.log(self.bins_.hi[:-1])
        for k, job in enumerate(jobs):
            stats = self.users_.get(job.data.get("user"))
            if stats is None or stats[0] < self.min_jobs:
                continue
            n, total, squares = stats
            mean = total / n
            sigma = math.sqrt(max(squares / n - mean * mean, 0.0) + self.prior_sigma ** 2 / n) or 1e-9
            cdf = 0.5 * (1.0 + np.vectorize(math.erf)((inner_edges - mean) / (sigma * math.sqrt(2.0))))
            out[k] = np.diff(np.concatenate(([0.0], cdf, [1.0])))
        return out

    def partial_fit(self, job, runtime: float, now: float = 0.0):
        value = math.log(max(float(runtime), 1.0))
        stats = self.users_.setdefault(job.data.get("user"), [0, 0.0, 0.0])
        stats[0] += 1
        stats[1] += value
        stats[2] += value * value
        return self
