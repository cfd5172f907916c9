"""The empirical runtime distribution of the same user's recent jobs (the paper's proposed alternative).

A user's distribution is the histogram of their last ``window`` completed jobs,
smoothed towards the distribution of every completed job (``prior_weight``
pseudo-jobs of it), so that a user with little history leans on everyone's. A
user without any history gets no distribution (a point mass at the walltime)
unless ``unknown_user="prior"``.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ..config.validate import ValidationError, non_negative, positive_int
from .base import RuntimeDistribution
from .bins import DEFAULT_FACTOR, DEFAULT_MAX_RUNTIME

UNKNOWN = ("walltime", "prior")


class UserDistribution(RuntimeDistribution):
    name = "user"

    def __init__(self, window: int = 20, prior_weight: float = 1.0, unknown_user: str = "walltime",
                 bin_factor: float = DEFAULT_FACTOR, max_runtime: float = DEFAULT_MAX_RUNTIME):
        self.window = window
        self.prior_weight = prior_weight
        self.unknown_user = unknown_user
        super().__init__(bin_factor, max_runtime)

    def validate_params(self) -> None:
        super().validate_params()
        if self.unknown_user not in UNKNOWN:
            raise ValidationError(f"unknown_user must be one of {', '.join(UNKNOWN)}, got {self.unknown_user!r}")
        positive_int(self.window, "window", "recent runtimes per user")
        non_negative(self.prior_weight, "prior_weight", "pseudo-jobs of everyone's distribution")

    def reset(self):
        super().reset()
        self.users_ = {}  # user -> (deque of recent bins, counts vector)
        self.global_counts_ = np.zeros(self.n_bins)
        return self

    def _one(self, job) -> np.ndarray:
        total = self.global_counts_.sum()
        entry = self.users_.get(job.data.get("user"))
        if entry is None:
            if self.unknown_user == "prior" and total > 0:
                return self.global_counts_ / total
            return np.zeros(self.n_bins)
        recent, counts = entry
        if total > 0 and self.prior_weight > 0:
            mixed = counts + self.prior_weight * (self.global_counts_ / total)
            return mixed / (len(recent) + self.prior_weight)
        return counts / len(recent)

    def predict_proba(self, jobs, now: float = 0.0) -> np.ndarray:
        return np.array([self._one(job) for job in jobs]).reshape(len(jobs), self.n_bins)

    def partial_fit(self, job, runtime: float, now: float = 0.0):
        b = int(self.bins_.index(float(runtime)))
        user = job.data.get("user")
        entry = self.users_.get(user)
        if entry is None:
            entry = self.users_[user] = (deque(), np.zeros(self.n_bins))
        recent, counts = entry
        recent.append(b)
        counts[b] += 1
        if len(recent) > self.window:
            counts[recent.popleft()] -= 1
        self.global_counts_[b] += 1
        return self
