"""Base classes of runtime predictors and corrections, scikit-learn style.

A *predictor* learns, online, the actual runtime of jobs from the jobs that
completed so far and predicts the runtime of a job at its submission:

* hyper-parameters are constructor arguments (``get_params`` / ``set_params``);
* learned state lives in attributes ending in ``_`` and is (re)created by
  ``reset()``;
* ``partial_fit(job, runtime, now)`` learns from one completed job,
  ``fit(jobs, runtimes)`` restarts from scratch and learns from a batch;
* ``predict(job, now)`` gives a runtime in seconds (the estimator clips it to
  ``[1, walltime]``);
* ``job_started`` / ``job_ended`` let a predictor follow the system state
  (features such as "jobs of the user currently running").

A *correction* gives a running job that outlived its estimate a new (total)
estimate; the estimator caps it at the requested time.
"""

from __future__ import annotations

import inspect


class Params:
    """``get_params`` / ``set_params`` from the constructor signature (as scikit-learn does)."""

    @classmethod
    def _param_names(cls) -> list:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def get_params(self, deep: bool = True) -> dict:
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        valid = set(self._param_names())
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"invalid parameter {key!r} for {type(self).__name__}; valid: {sorted(valid)}")
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class RuntimePredictor(Params):
    """Predicts a job's runtime at submission; learns online from completed jobs."""

    name = "predictor"

    def __init__(self):
        self.reset()

    def reset(self):
        """Forget everything learned."""
        return self

    def predict(self, job, now: float = 0.0) -> float:
        raise NotImplementedError

    def partial_fit(self, job, runtime: float, now: float = 0.0):
        """Learn from one completed job whose actual runtime was ``runtime``."""
        return self

    def fit(self, jobs, runtimes=None):
        """Restart and learn from ``jobs`` in order (``runtimes`` defaults to ``job.runtime``).

        Each job is predicted first (building its features as at submission),
        then learned, as online learning would see it.
        """
        self.reset()
        jobs = list(jobs)
        if runtimes is None:
            runtimes = [job.runtime for job in jobs]
        for job, runtime in zip(jobs, runtimes):
            now = job.subtime
            self.predict(job, now)
            self.partial_fit(job, float(runtime), now + float(runtime))
        return self

    def job_started(self, job, now: float) -> None:
        pass

    def job_ended(self, job, now: float) -> None:
        """Any end (completion, walltime, kill), before ``partial_fit``."""


class Correction(Params):
    """New total estimate for a running job with ``start + estimate <= now``.

    Implement ``advance`` (a pure step, so the estimator can preview future
    corrections and skip calls that cannot matter); ``correct`` applies it and keeps
    the correction's own state (e.g. a ladder position) in ``job.info``. A plugin
    may override ``correct`` alone: it is then called at every due date.
    """

    name = "correction"

    def correct(self, job, now: float) -> float:
        estimate, job.info["correction_state"] = self.advance(
            job.estimate, job.info.get("correction_state"), job, now)
        return estimate

    def advance(self, estimate: float, state, job, now: float) -> tuple:
        """``(new estimate, new state)`` after a correction at ``now`` of ``job`` estimated
        at ``estimate``; ``state`` is None before the job's first correction."""
        raise NotImplementedError
