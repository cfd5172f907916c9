"""Base classes of runtime predictors and corrections, scikit-learn style.

A *predictor* learns, online, the actual runtime of jobs from the jobs that
completed so far and predicts the runtime of a job at its submission, with scikit-learn's
estimator contract (``batsched_ml.config.params``):

* hyper-parameters are constructor arguments, stored as given (``get_params`` /
  ``set_params``), checked by ``validate_params``;
* learned state lives in attributes ending in ``_`` and is (re)created by
  ``reset()``, which the estimator calls when a simulation begins;
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

from ..config.params import Params

__all__ = ["Correction", "Params", "RuntimePredictor"]


class RuntimePredictor(Params):
    """Predicts a job's runtime at submission; learns online from completed jobs."""

    name = "predictor"

    def reset(self):
        """Check the parameters and forget everything learned (the estimator calls it when a
        simulation begins; subclasses create their learned ``*_`` state here, after ``super().reset()``)."""
        self.validate_params()
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
