"""FixedStep: a running job that outlived its estimate gets ``step`` more seconds, as many as
needed to end after now.

A correction plugin: ``advance`` is a pure step (new estimate, new state), so the estimator can
preview future corrections and ask a call only when one could change a decision. Its option is
``-o correction_step=SECONDS``.
"""

from __future__ import annotations

import math

from batsched_ml.api import Correction, ValidationError


class FixedStep(Correction):
    api_version = "1.0"
    name = "fixed-step"

    def __init__(self, step: float = 600.0):
        self.step = step

    def validate_params(self) -> None:
        if isinstance(self.step, bool) or not isinstance(self.step, (int, float)) \
                or not (self.step > 0 and math.isfinite(self.step)):
            raise ValidationError(f"step must be a number > 0 (seconds added), got {self.step!r}")

    def advance(self, estimate: float, state, job, now: float) -> tuple:
        elapsed = now - job.start_time
        steps = max(1, math.floor((elapsed - estimate) / self.step) + 1)
        return estimate + steps * self.step, state
