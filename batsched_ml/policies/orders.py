"""Queue orders: a policy maps a job to a sort key (lower runs first).

``r`` is the job's current runtime estimate (its requested time unless a
predictor is active), ``n`` its core count, ``w`` its waiting time and ``s`` its
submission time. Ties fall back to the job id string, as batsched does.
WFP3 and UNICEF depend on the waiting time, so they are *dynamic*: the queue
re-sorts them at every scheduling pass; the others are kept sorted incrementally.
"""

from __future__ import annotations

import math


class Policy:
    name = "policy"
    dynamic = False  # True when the key depends on the current time

    def key(self, job, now: float) -> tuple:
        raise NotImplementedError

    def order(self, jobs: list, now: float) -> list:
        """``jobs`` highest priority first (ties: arrival). A dynamic policy whose keys are cheaper
        computed together (a neural network) overrides this; the queue sorts through it."""
        return sorted(jobs, key=lambda j: (self.key(j, now), j.seq))

    def on_simulation_begins(self, nb_cores: int) -> None:
        """The machine's size, given by the scheduler before the first job (optional)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class FCFS(Policy):
    """First come, first served (batsched ``fcfs``: arrival time, then id)."""

    name = "fcfs"

    def key(self, job, now):
        return (job.submission_time, job.id)


class SPF(Policy):
    """Shortest (estimated) processing time first (batsched ``asc_walltime``)."""

    name = "spf"

    def key(self, job, now):
        return (job.estimate, job.id)


class SAF(Policy):
    """Smallest area (estimate x cores) first."""

    name = "saf"

    def key(self, job, now):
        return (job.estimate * job.res, job.id)


class WFP3(Policy):
    """score = -(w/r)^3 * n (Tang et al.; Carastan-Santos Table 2)."""

    name = "wfp3"
    dynamic = True

    def key(self, job, now):
        wait = now - job.submission_time
        return (-((wait / max(job.estimate, 1.0)) ** 3) * job.res, job.submission_time, job.id)


class UNICEF(Policy):
    """score = -w / (log2(n) * r); log2(n + 1) keeps one-core jobs finite."""

    name = "unicef"
    dynamic = True

    def key(self, job, now):
        wait = now - job.submission_time
        return (-wait / (math.log2(job.res + 1) * max(job.estimate, 1.0)), job.submission_time, job.id)


def _log_s(job) -> float:
    # s is the submission time in seconds from the workload start; clip at 1 s
    # so the first job (s = 0) gets a finite score.
    return math.log10(max(job.subtime, 1.0))


class F1(Policy):
    """log10(r) * n + 8.70e2 * log10(s) (Carastan-Santos & de Camargo, Table 3)."""

    name = "f1"

    def key(self, job, now):
        return (math.log10(max(job.estimate, 1.0)) * job.res + 8.70e2 * _log_s(job), job.submission_time, job.id)


class F2(Policy):
    """sqrt(r) * n + 2.56e4 * log10(s)."""

    name = "f2"

    def key(self, job, now):
        return (math.sqrt(job.estimate) * job.res + 2.56e4 * _log_s(job), job.submission_time, job.id)


class F3(Policy):
    """r * n + 6.86e6 * log10(s)."""

    name = "f3"

    def key(self, job, now):
        return (job.estimate * job.res + 6.86e6 * _log_s(job), job.submission_time, job.id)


class F4(Policy):
    """r * sqrt(n) + 5.30e5 * log10(s)."""

    name = "f4"

    def key(self, job, now):
        return (job.estimate * math.sqrt(job.res) + 5.30e5 * _log_s(job), job.submission_time, job.id)


class SJBF(Policy):
    """Shortest estimated job first: the backfill order of EASY-SJBF (Tsafrir)."""

    name = "sjbf"

    def key(self, job, now):
        return (job.estimate, job.submission_time, job.id)
