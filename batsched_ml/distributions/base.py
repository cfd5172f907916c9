"""Base class of runtime-distribution predictors (scikit-learn conventions).

A distribution predictor learns online from completed jobs (``partial_fit``) and
gives, for jobs at their submission, one probability vector per job over the
fixed logarithmic runtime bins ``bins_`` (``predict_proba``). A row of zeros
means *no history for this job*: the scheduler then uses a point mass at the
job's walltime (plain EASY, as the paper notes). Hyper-parameters are
constructor arguments stored as given (``get_params``/``set_params``), checked by
``validate_params``; learned state ends in ``_`` and is (re)created by ``reset()``, which
``begin`` calls when a simulation starts.
"""

from __future__ import annotations

import numpy as np

from ..config.params import Params
from ..config.validate import check_number
from .bins import DEFAULT_FACTOR, DEFAULT_MAX_RUNTIME, RuntimeBins


class RuntimeDistribution(Params):
    name = "distribution"

    def __init__(self, bin_factor: float = DEFAULT_FACTOR, max_runtime: float = DEFAULT_MAX_RUNTIME):
        self.bin_factor = bin_factor
        self.max_runtime = max_runtime

    def validate_params(self) -> None:
        check_number(self.bin_factor, "bin_factor", low=1, low_open=True, meaning="each bin is this much wider")
        check_number(self.max_runtime, "max_runtime", low=1, low_open=True, meaning="seconds, the last bin edge")

    def reset(self):
        """Check the parameters and forget everything learned (``begin`` and ``fit`` call it;
        subclasses create their learned ``*_`` state here, after ``super().reset()``)."""
        self.validate_params()
        self.bins_ = RuntimeBins(self.bin_factor, self.max_runtime)
        return self

    @property
    def n_bins(self) -> int:
        return len(self.bins_)

    def begin(self, workloads: dict | None = None, options: dict | None = None) -> None:
        """The simulation starts (``workloads``: name -> file, for plugins that read the trace's calendar)."""
        self.reset()

    def predict_proba(self, jobs, now: float = 0.0) -> np.ndarray:
        """(len(jobs), n_bins): each row sums to 1, or is all zeros (no history)."""
        raise NotImplementedError

    def partial_fit(self, job, runtime: float, now: float = 0.0):
        """Learn from one completed job whose actual runtime was ``runtime``."""
        return self

    def fit(self, jobs, runtimes=None):
        """Restart and learn from ``jobs`` in order, each predicted at its submission then
        learned at its end (``runtimes`` defaults to ``job.runtime``)."""
        self.reset()
        jobs = list(jobs)
        if runtimes is None:
            runtimes = [job.runtime for job in jobs]
        for job, runtime in zip(jobs, runtimes):
            self.predict_proba([job], job.subtime)
            self.partial_fit(job, float(runtime), job.subtime + float(runtime))
        return self


class WalltimeOnly(RuntimeDistribution):
    """No history ever: a point mass at every walltime (probabilistic EASY is then exactly EASY)."""

    name = "walltime"

    def predict_proba(self, jobs, now: float = 0.0) -> np.ndarray:
        return np.zeros((len(jobs), self.n_bins))
