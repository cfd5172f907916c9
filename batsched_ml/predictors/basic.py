"""The simple predictors: requested time, clairvoyant, and Tsafrir's AVE2."""

from __future__ import annotations

from ..config.validate import positive_int
from .base import RuntimePredictor


class RequestedTime(RuntimePredictor):
    """The user's requested time (the walltime): plain EASY."""

    name = "requested"

    def predict(self, job, now: float = 0.0) -> float:
        return job.walltime_cap


class Clairvoyant(RuntimePredictor):
    """The job's actual runtime (known from its delay profile): an upper bound of what predictions can give."""

    name = "clairvoyant"

    def predict(self, job, now: float = 0.0) -> float:
        return job.runtime if job.runtime is not None else job.walltime_cap


class UserAverage(RuntimePredictor):
    """Mean runtime of the last ``window`` completed jobs of the same user (Tsafrir et al.'s AVE2).

    The user is ``job.data["user"]``; with no history, the requested time.
    Only successfully completed / walltime-reached jobs are learned.
    """

    name = "ave2"

    def __init__(self, window: int = 2):
        self.window = window

    def validate_params(self) -> None:
        positive_int(self.window, "window", "how many past runtimes of the user are averaged")

    def reset(self):
        super().reset()
        self.history_ = {}  # user -> last runtimes, oldest first
        return self

    def predict(self, job, now: float = 0.0) -> float:
        last = self.history_.get(job.data.get("user"))
        if not last:
            return job.walltime_cap
        return sum(last) / len(last)

    def partial_fit(self, job, runtime: float, now: float = 0.0):
        last = self.history_.setdefault(job.data.get("user"), [])
        last.append(float(runtime))
        if len(last) > self.window:
            del last[0]
        return self
