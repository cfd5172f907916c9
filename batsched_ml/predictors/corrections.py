"""Corrections for running jobs that outlive their predicted runtime (Tsafrir et al.; Gaussier et al. 5.2).

Each returns the job's new *total* estimate (from its start); the estimator
caps it at the requested time. Jobs are never killed at their prediction.
"""

from __future__ import annotations

from ..config.validate import ValidationError, check_number, positive
from .base import Correction

MINUTE, HOUR = 60.0, 3600.0
# Tsafrir et al.'s incremental ladder.
LADDER = (1 * MINUTE, 5 * MINUTE, 15 * MINUTE, 30 * MINUTE, 1 * HOUR, 2 * HOUR, 5 * HOUR, 10 * HOUR,
          20 * HOUR, 50 * HOUR, 100 * HOUR)


class RequestedCorrection(Correction):
    """Jump straight to the requested time."""

    name = "requested"

    def advance(self, estimate, state, job, now: float) -> tuple:
        return job.walltime_cap, state


class IncrementalCorrection(Correction):
    """Add 1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 5 h, 10 h, 20 h, 50 h, 100 h in turn (the
    last step repeats), i.e. the k-th correction of a job adds ``steps[k]``."""

    name = "incremental"

    def __init__(self, steps=LADDER):
        self.steps = steps

    def validate_params(self) -> None:
        steps = self.steps
        if not isinstance(steps, (list, tuple)) or not steps:
            raise ValidationError(f"steps must be a non-empty list of seconds, got {steps!r}")
        for step in steps:
            positive(step, "every correction step", "seconds added")

    def advance(self, estimate, state, job, now: float) -> tuple:
        """``state``: how many steps were taken so far."""
        elapsed = now - job.start_time
        k = state or 0
        while True:
            estimate += self.steps[min(k, len(self.steps) - 1)]
            k += 1
            if estimate > elapsed:
                return estimate, k


class DoublingCorrection(Correction):
    """Twice the elapsed running time (recursive doubling)."""

    name = "doubling"

    def __init__(self, factor: float = 2.0):
        self.factor = factor

    def validate_params(self) -> None:
        check_number(self.factor, "factor", low=1, low_open=True,
                     meaning="the new estimate is factor x the elapsed time")

    def advance(self, estimate, state, job, now: float) -> tuple:
        elapsed = max(now - job.start_time, 1.0)
        return max(self.factor * elapsed, estimate + 1.0), state
