"""What the agent sees at a decision: the queue's window of jobs and the machine, normalised.

``jobs`` is a ``(window, 6)`` float32 matrix, one row per slot (the oldest queued jobs first,
rows past the queue's end all zero), columns :data:`JOB_COLUMNS`:

* ``wait``, ``estimate``, ``cores``, ``log_cores``: the scoring features of
  ``policies.network`` (times as ``log2(1 + s) / 20``, sizes relative to the machine);
* ``fits_now``: 1 if the job's cores are free now;
* ``present``: 1 for a real job, 0 for padding.

``machine`` is :data:`MACHINE_COLUMNS`: the free share of the cores and the queue's length
(``log2(1 + jobs) / 16``: also the jobs beyond the window). Every value is in [0, 1].

The action is a slot; ``action_mask`` (in ``info``, and ``env.action_masks()`` for
sb3-contrib's MaskablePPO) marks the slots that hold a job.
"""

from __future__ import annotations

import math

import numpy as np
from gymnasium import spaces

from ..policies.network import FEATURES, TIME_SCALE

__all__ = ["JOB_COLUMNS", "MACHINE_COLUMNS", "build", "empty", "fill_kernel", "mask", "observation_space"]

JOB_COLUMNS = FEATURES + ("fits_now", "present")
MACHINE_COLUMNS = ("free_cores", "queue_length")
QUEUE_BITS = 16.0


def observation_space(window: int) -> spaces.Dict:
    return spaces.Dict({
        "jobs": spaces.Box(0.0, 1.0, (window, len(JOB_COLUMNS)), np.float32),
        "machine": spaces.Box(0.0, 1.0, (len(MACHINE_COLUMNS),), np.float32),
    })


def empty(window: int) -> tuple[dict, np.ndarray]:
    """The observation and mask of a finished episode: no job, nothing to choose."""
    return ({"jobs": np.zeros((window, len(JOB_COLUMNS)), np.float32),
             "machine": np.zeros(len(MACHINE_COLUMNS), np.float32)}, np.zeros(window, bool))


_MASKS: dict = {}  # window -> (window + 1, window) table: row k masks the first k slots
_KERNEL: list = []  # the compiled _fill, once


def build(queue, now: float) -> tuple[dict, np.ndarray]:
    """``(observation, action mask)`` of an :class:`~batsched_ml.rl.agent.AgentQueue` at a
    decision (its window is ``queue.slots``): one compiled pass over the window (numba, cached on
    disk), as a step's whole budget is tens of microseconds and a dozen numpy calls cost that."""
    window = queue.window
    seqs = queue.slots
    jobs = np.zeros((window, len(JOB_COLUMNS)), np.float32)
    machine = np.empty(len(MACHINE_COLUMNS), np.float32)
    fill_kernel()(jobs, machine, seqs, queue.submit_times, queue.job_rows, float(now), queue.machine.nb_free,
                  queue.nb_cores, len(queue), TIME_SCALE, 1.0 / QUEUE_BITS)
    return {"jobs": jobs, "machine": machine}, mask(window, len(seqs))


def fill_kernel():
    """The compiled ``_fill`` (numba, on first use, cached on disk): ``fill_kernel()(jobs, machine, seqs,
    submit, rows, now, free, nb_cores, queued, TIME_SCALE, 1 / QUEUE_BITS)`` writes the rows of the jobs
    ``seqs`` (``submit`` times and static ``rows`` by job number: estimate, cores, log_cores features,
    requested cores) and the machine vector. One dispatcher for ``build`` and the lean core's kernels."""
    if not _KERNEL:
        from numba import njit

        _KERNEL.append(njit(cache=True, nogil=True)(_fill))
    return _KERNEL[0]


def mask(window: int, jobs: int) -> np.ndarray:
    """The action mask of a window holding ``jobs`` jobs (a fresh array: the agent may keep it)."""
    masks = _MASKS.get(window)
    if masks is None:
        masks = _MASKS[window] = np.tri(window + 1, window, -1, dtype=bool)
    return masks[jobs].copy()


def _fill(jobs, machine, seqs, submit, rows, now, free, nb_cores, queued, time_scale, queue_scale):
    """Write the window's rows (see the module doc) and the machine vector; compiled by numba."""
    for i in range(seqs.shape[0]):
        s = seqs[i]
        jobs[i, 0] = min(math.log1p(now - submit[s]) * time_scale, 1.0)
        jobs[i, 1] = rows[s, 0]
        jobs[i, 2] = rows[s, 1]
        jobs[i, 3] = rows[s, 2]
        jobs[i, 4] = 1.0 if rows[s, 3] <= free else 0.0
        jobs[i, 5] = 1.0
    machine[0] = free / nb_cores
    machine[1] = min(math.log2(1.0 + queued) * queue_scale, 1.0)
