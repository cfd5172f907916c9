"""LastRuntime: a job's runtime is predicted as ``factor`` times its user's last runtime.

A runtime predictor plugin, with scikit-learn's estimator contract: the constructor only stores
``factor`` (``-o predictor_factor=...``), ``validate_params`` checks it, the learned state
(``last_``) is created by ``reset`` when a simulation begins, and ``partial_fit`` learns from
each completed job. Without history the prediction is the walltime (the estimator also clips
every prediction to [1 s, walltime]).
"""

from __future__ import annotations

import math

from batsched_ml.api import RuntimePredictor, ValidationError


class LastRuntime(RuntimePredictor):
    api_version = "1.0"
    name = "last-runtime"

    def __init__(self, factor: float = 1.0):
        self.factor = factor

    def validate_params(self) -> None:
        if isinstance(self.factor, bool) or not isinstance(self.factor, (int, float)) \
                or not (self.factor > 0 and math.isfinite(self.factor)):
            raise ValidationError(f"factor must be a number > 0 (times the last runtime), got {self.factor!r}")

    def reset(self):
        super().reset()
        self.last_ = {}  # user -> runtime of their last completed job
        return self

    def predict(self, job, now: float = 0.0) -> float:
        last = self.last_.get(job.data.get("user"))
        return job.walltime_cap if last is None else self.factor * last

    def partial_fit(self, job, runtime: float, now: float = 0.0):
        self.last_[job.data.get("user")] = float(runtime)
        return self
