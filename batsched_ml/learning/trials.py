"""Trial simulations of Carastan-Santos & de Camargo (2017), section 3.2, vectorised across trials.

A tuple is 16 tasks ``S`` followed by 32 tasks ``Q`` (consecutive jobs of a
workload, submission times relative to the first task of ``S``). A trial
dispatches ``S`` in order, then ``Q`` in one permutation's order, by strict list
scheduling on ``cores`` identical cores (as the paper's SimGrid simulator does):
task ``i`` starts at the first instant that is no earlier than its submission
time and than the start of task ``i-1`` at which enough cores are free. No
backfilling, no protocol: only the arithmetic of start times.

The kernel keeps, for every trial of a chunk, the end times of the tasks
already placed sorted in one row (padded with +inf) with their core counts
aligned; the start of the next task is then one suffix sum and one count per
row, and inserting its end keeps the row sorted. ``S`` is the same in every
trial, so it is simulated once and its state broadcast.

``score(t) = sum of AVEbsld(Q) over the trials where t is first / sum over all
trials`` (equation 3).
"""

from __future__ import annotations

import numpy as np

TAU = 10.0
S_SIZE = 16
Q_SIZE = 32


class _State:
    """Sorted end times (``ends``) and aligned core counts (``cores``) of placed tasks, per trial."""

    def __init__(self, trials: int, width: int):
        self.ends = np.full((trials, width), np.inf)
        self.cores = np.zeros((trials, width))
        self.last_start = np.zeros(trials)
        self.cols = np.arange(width)

    def broadcast(self, trials: int) -> _State:
        copy = _State.__new__(_State)
        copy.ends = np.repeat(self.ends, trials, axis=0)
        copy.cores = np.repeat(self.cores, trials, axis=0)
        copy.last_start = np.repeat(self.last_start, trials)
        copy.cols = self.cols
        return copy

    def place(self, runtime, size, submit, capacity: int) -> np.ndarray:
        """Start one task per trial (arrays or scalars), record its end, return the start times."""
        ready = np.maximum(self.last_start, submit)
        # suffix[c] = cores in use just before the c-th end (rows sorted, padding holds 0 cores);
        # the task fits after the last end at which usage still exceeds what it may find
        suffix = np.cumsum(self.cores[:, ::-1], axis=1)[:, ::-1]
        blocked = (suffix > capacity - np.reshape(size, (-1, 1))).sum(axis=1)
        free_at = np.take_along_axis(self.ends, np.maximum(blocked - 1, 0)[:, None], axis=1)[:, 0]
        free_at = np.where(blocked > 0, free_at, -np.inf)
        start = np.maximum(ready, free_at)
        self.last_start = start
        end = start + runtime
        pos = (self.ends <= end[:, None]).sum(axis=1)[:, None]
        src = np.clip(self.cols - (self.cols > pos), 0, self.ends.shape[1] - 1)
        at_pos = self.cols == pos
        self.ends = np.where(at_pos, end[:, None], np.take_along_axis(self.ends, src, axis=1))
        size_col = np.broadcast_to(np.reshape(size, (-1, 1)), at_pos.shape)
        self.cores = np.where(at_pos, size_col, np.take_along_axis(self.cores, src, axis=1))
        return start


def bounded_slowdown(wait, runtime, tau: float = TAU):
    return np.maximum((wait + runtime) / np.maximum(runtime, tau), 1.0)


def simulate_trials(s_tasks: np.ndarray, q_tasks: np.ndarray, permutations: np.ndarray, cores: int,
                    tau: float = TAU) -> np.ndarray:
    """AVEbsld of ``Q`` for every permutation (row of indices into ``q_tasks``).

    ``s_tasks``/``q_tasks`` are ``(k, 3)`` arrays of (runtime, cores, submit time).
    """
    s_tasks = np.asarray(s_tasks, dtype=np.float64).reshape(-1, 3)
    q_tasks = np.asarray(q_tasks, dtype=np.float64).reshape(-1, 3)
    if (s_tasks[:, 1].max(initial=0) > cores) or (q_tasks[:, 1].max(initial=0) > cores):
        raise ValueError(f"a task needs more than the machine's {cores} cores")
    width = len(s_tasks) + len(q_tasks)
    base = _State(1, width)
    for runtime, size, submit in s_tasks:
        base.place(np.array([runtime]), np.array([size]), submit, cores)
    state = base.broadcast(len(permutations))
    runtime, size, submit = (q_tasks[:, j][permutations] for j in range(3))
    total = np.zeros(len(permutations))
    for step in range(permutations.shape[1]):
        start = state.place(runtime[:, step], size[:, step], submit[:, step], cores)
        total += bounded_slowdown(start - submit[:, step], runtime[:, step], tau)
    return total / permutations.shape[1]


def random_permutations(n: int, trials: int, rng: np.random.Generator) -> np.ndarray:
    return rng.permuted(np.tile(np.arange(n, dtype=np.int64), (trials, 1)), axis=1)


def trial_scores(s_tasks, q_tasks, trials: int, cores: int, seed: int = 0, chunk: int = 16384,
                 tau: float = TAU, permutations: np.ndarray | None = None) -> np.ndarray:
    """score(t) for each task of ``Q`` (equation 3), from ``trials`` random permutations
    (or the given ``permutations``), simulated ``chunk`` trials at a time."""
    q_tasks = np.asarray(q_tasks, dtype=np.float64).reshape(-1, 3)
    rng = np.random.default_rng(seed)
    sums = np.zeros(len(q_tasks))
    done = 0
    total_trials = trials if permutations is None else len(permutations)
    while done < total_trials:
        count = min(chunk, total_trials - done)
        perms = (random_permutations(len(q_tasks), count, rng) if permutations is None
                 else np.asarray(permutations[done:done + count]))
        avebsld = simulate_trials(s_tasks, q_tasks, perms, cores, tau)
        sums += np.bincount(perms[:, 0], weights=avebsld, minlength=len(q_tasks))
        done += count
    return sums / sums.sum()


def draw_tuples(jobs: np.ndarray, count: int, seed: int = 0, s_size: int = S_SIZE,
                q_size: int = Q_SIZE) -> list[tuple[np.ndarray, np.ndarray]]:
    """``count`` tuples (S, Q) of consecutive jobs of ``jobs`` ((runtime, cores, submit) rows
    in arrival order) at random offsets; submit times relative to the first task of S."""
    jobs = np.asarray(jobs, dtype=np.float64)
    span = s_size + q_size
    if len(jobs) < span:
        raise ValueError(f"a tuple needs {span} jobs, the workload has {len(jobs)}")
    offsets = np.random.default_rng(seed).integers(0, len(jobs) - span + 1, size=count)
    tuples = []
    for off in offsets.tolist():
        window = jobs[off:off + span].copy()
        window[:, 2] -= window[0, 2]
        tuples.append((window[:s_size], window[s_size:]))
    return tuples
