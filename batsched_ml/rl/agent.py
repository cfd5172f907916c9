"""Schedulers whose next job is chosen by an agent: the real ``fcfs`` and ``easy`` schedulers with a
queue whose head is the agent's choice.

:class:`AgentQueue` is the FCFS :class:`~batsched_ml.core.queue.JobQueue` with one change:
``first(now)`` -- "which job runs next?", the one question both schedulers ask -- is answered
by a *chooser* that sees the oldest ``window`` queued jobs and picks one. Everything else is
the deployed code: strict FCFS starts the chosen job if it fits and asks again, else waits for
the next event; EASY gives the chosen job the reservation and backfills the other queued jobs,
in FCFS order (submission time, then id), around it (as RLScheduler backfills). The choice is asked afresh at every
scheduling pass (an event may change the agent's mind), and again after each start; a queue
of one job needs no choice.

So a greedy agent scoring jobs with a network picks, under ``fcfs``, exactly the job that
``--scheduler fcfs --policy rl:FILE`` runs next (the policy scores the whole queue, the agent
its window: the same while at most ``window`` jobs wait). Under EASY the deployed policy
backfills in score order, the environment in FCFS order.

Per-job features are kept in numpy arrays indexed by the job's arrival number, written once
at submission; the window is read from a sorted list of the queued arrival numbers, so an
observation costs O(window), whatever the length of the queue.
"""

from __future__ import annotations

import numpy as np
from sortedcontainers import SortedList

from ..core.queue import JobQueue
from ..policies.network import TIME_SCALE, size_features_scalar, time_feature_scalar
from ..policies.orders import FCFS
from ..scheduling.easy import EasyBackfilling
from ..scheduling.fcfs import StrictFCFS

__all__ = ["AgentQueue", "BACKFILL", "agent_scheduler"]

BACKFILL = ("none", "easy")


class AgentQueue(JobQueue):
    """A FCFS job queue whose head is chosen by ``chooser(queue, now) -> slot`` (see the module doc)."""

    def __init__(self, chooser, window: int = 128):
        super().__init__(FCFS())
        if window < 1:
            raise ValueError(f"the window must hold at least one job, got {window}")
        self.chooser = chooser
        self.window = window
        self.nb_cores = 0
        self.now = 0.0
        self.machine = None  # the decision core's Machine, from the current pass
        self.decisions = 0
        self.invalid_actions = 0
        self.slots = np.zeros(0, np.intp)  # the window of the current decision (arrival numbers)
        self.started: list = []  # jobs started since the owner last emptied it (rewards)
        self._pick = None
        self._waiting = SortedList()  # arrival numbers (Job.seq) of the queued jobs
        self._jobs: dict = {}  # seq -> job, while queued
        cap = 1024
        self._submit = np.zeros(cap)
        # per job: estimate, cores, log_cores features, requested cores (arrival number -> row)
        self._rows = np.zeros((cap, 4))

    # ------------------------------------------------------------ lifecycle
    def on_simulation_begins(self, nb_cores: int) -> None:
        self.nb_cores = nb_cores

    def begin_pass(self, ctx) -> None:
        """A new scheduling pass: the agent chooses afresh."""
        self._pick = None
        self.now = ctx.now
        self.machine = ctx.machine

    def add(self, job, now: float) -> None:
        super().add(job, now)
        seq = job.seq
        if seq >= len(self._submit):
            self._grow(seq)
        self._submit[seq] = job.submission_time
        self._set_static(job)
        self._waiting.add(seq)
        self._jobs[seq] = job

    def remove(self, job) -> None:
        """The job leaves the queue: in these schedulers, it starts now."""
        super().remove(job)
        self._waiting.remove(job.seq)
        del self._jobs[job.seq]
        self.started.append(job)

    def rekey(self, job, now: float) -> None:
        super().rekey(job, now)
        if job in self:
            self._set_static(job)

    def _set_static(self, job) -> None:
        fraction, log_size = size_features_scalar(job.res, self.nb_cores)
        self._rows[job.seq] = (time_feature_scalar(job.estimate), fraction, log_size, job.res)

    def _grow(self, seq: int) -> None:
        cap = max(2 * len(self._submit), seq + 1)
        for name in ("_submit", "_rows"):
            old = getattr(self, name)
            new = np.zeros((cap,) + old.shape[1:])
            new[:len(old)] = old
            setattr(self, name, new)

    # ------------------------------------------------------------- choosing
    def first(self, now: float):
        pick = self._pick
        if pick is not None and pick in self:
            return pick
        if not self._waiting:
            return None
        if len(self._waiting) == 1:
            pick = self._jobs[self._waiting[0]]
        else:
            self.now = now
            self.slots = slots = self.window_seqs()
            slot = self.chooser(self, now)
            self.decisions += 1
            if not (isinstance(slot, (int, np.integer)) and 0 <= slot < len(slots)):
                self.invalid_actions += 1  # never executed: the oldest job instead
                slot = 0
            pick = self._jobs[int(slots[slot])]
        self._pick = pick
        return pick

    def window_seqs(self) -> np.ndarray:
        """Arrival numbers of the oldest ``window`` queued jobs, oldest first (the action slots)."""
        waiting = self._waiting
        k = min(self.window, len(waiting))
        return np.fromiter(waiting.islice(0, k), np.intp, k)

    def window_jobs(self) -> list:
        return [self._jobs[int(s)] for s in self.window_seqs()]

    def features(self, seqs, now: float) -> np.ndarray:
        """The scoring features (``policies.network.FEATURES``) of the jobs ``seqs``, float64:
        the values ``policies.network.job_features`` computes for them."""
        x = self._rows[seqs]
        x[:, 3] = x[:, 2]
        x[:, 2] = x[:, 1]
        x[:, 1] = x[:, 0]
        x[:, 0] = self.wait_feature(seqs, now)
        return x

    def wait_feature(self, seqs, now: float) -> np.ndarray:
        wait = np.subtract(now, self._submit[seqs])  # >= 0: a queued job was submitted by now
        np.log1p(wait, out=wait)
        wait *= TIME_SCALE
        return np.minimum(wait, 1.0, out=wait)

    @property
    def submit_times(self) -> np.ndarray:
        """Submission time by arrival number (read only: rows of queued jobs are current)."""
        return self._submit

    @property
    def job_rows(self) -> np.ndarray:
        """``(estimate, cores, log_cores features, requested cores)`` by arrival number (read only)."""
        return self._rows


class _AgentScheduling:
    """What the agent versions of ``fcfs`` and ``easy`` add: the agent's queue, told the machine
    size, and a fresh choice at each pass."""

    def __init__(self, queue: AgentQueue, estimator=None, **kwargs):
        super().__init__(policy=FCFS(), estimator=estimator, **kwargs)
        self.queue = queue

    def on_simulation_begins(self, nb_cores: int, ctx) -> None:
        self.queue.on_simulation_begins(nb_cores)
        super().on_simulation_begins(nb_cores, ctx)

    def schedule(self, ctx) -> None:
        self.queue.begin_pass(ctx)
        super().schedule(ctx)


class AgentFCFS(_AgentScheduling, StrictFCFS):
    """Strict FCFS: the agent's job starts when it fits; nothing passes it."""

    name = "agent-fcfs"


class AgentEasy(_AgentScheduling, EasyBackfilling):
    """EASY: the agent's job holds the reservation; the others backfill around it in FCFS order."""

    name = "agent-easy"


def agent_scheduler(chooser, backfill: str = "none", window: int = 128, estimator=None):
    """The scheduler of the environment (``backfill``: ``none`` or ``easy``)."""
    if backfill not in BACKFILL:
        raise ValueError(f"backfill must be one of {', '.join(BACKFILL)}, got {backfill!r}")
    cls = AgentFCFS if backfill == "none" else AgentEasy
    return cls(AgentQueue(chooser, window), estimator=estimator)
