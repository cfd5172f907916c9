"""Rewards of the scheduling environment (``reward=`` of ``SchedulingEnv``).

A job's outcome is known as soon as it starts (its wait, and its run time from its profile),
so every objective can be paid at the end of the episode or step by step, as jobs start:

| ``reward`` | paid | value |
|---|---|---|
| ``bsld`` (default, RLScheduler's) | at the end | ``-AVEbsld``: ``-mean max((wait + run) / max(run, tau), 1)`` over the sequence's jobs (``tau`` 10 s) |
| ``bsld-step`` | at each step | ``-sum of the bsld of the jobs started since the previous step / jobs``: the same total |
| ``wait`` / ``wait-step`` | end / each step | ``-mean wait`` in hours, likewise |
| ``utilisation`` | at the end | ``sum(cores x run time) / (machine cores x makespan)`` |

The per-step variants add up to exactly the end value, so an episode's return is the same
number either way; they only move the signal closer to the decisions.
"""

from __future__ import annotations

__all__ = ["REWARDS", "Reward"]

REWARDS = ("bsld", "bsld-step", "wait", "wait-step", "utilisation")


def _bsld(wait: float, run: float, tau: float) -> float:
    return max((wait + run) / max(run, tau), 1.0)


def _wait_hours(wait: float, run: float, tau: float) -> float:
    return wait / 3600.0


class Reward:
    """Accumulates one episode's reward from the jobs as they start."""

    def __init__(self, kind: str = "bsld", tau: float = 10.0):
        if kind not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {kind!r}")
        if not tau > 0:
            raise ValueError(f"tau must be > 0, got {tau!r}")
        self.kind, self.tau = kind, tau
        self.per_job = _wait_hours if kind.startswith("wait") else _bsld
        self.stepwise = kind.endswith("-step")
        self.reset(1)

    def reset(self, nb_jobs: int) -> None:
        """A new episode of ``nb_jobs`` jobs that will run (the mean's denominator)."""
        self.nb_jobs = max(nb_jobs, 1)
        self.total = 0.0  # sum over started jobs of the per-job value
        self.core_seconds = 0.0
        self.started = 0

    def jobs_started(self, jobs) -> float:
        """Account for ``jobs`` (the decision core's, just started); returns this step's reward."""
        return self.started_now([(job.start_time - job.submission_time, job.runtime or 0.0, job.res)
                                 for job in jobs])

    def started_now(self, jobs) -> float:
        """Account for jobs just started, given as ``(wait, run time, cores)``; returns this step's reward."""
        step = 0.0
        per_job, tau = self.per_job, self.tau
        for wait, run, res in jobs:
            step += per_job(wait, run, tau)
            self.core_seconds += res * run
        self.total += step
        self.started += len(jobs)
        return -step / self.nb_jobs if self.stepwise else 0.0

    def final(self, nb_cores: int, makespan: float) -> float:
        """What the end of the episode pays (on top of the last step's share)."""
        if self.kind == "utilisation":
            return self.core_seconds / (nb_cores * makespan) if makespan > 0 else 0.0
        return 0.0 if self.stepwise else -self.total / self.nb_jobs

    def mean(self) -> float:
        """The episode's mean per-job value so far (AVEbsld, or the mean wait in hours)."""
        return self.total / self.started if self.started else 0.0
