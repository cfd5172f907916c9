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

from ..policies.network import FEATURES

__all__ = ["JOB_COLUMNS", "MACHINE_COLUMNS", "build", "empty", "observation_space"]

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


def build(queue, now: float) -> tuple[dict, np.ndarray]:
    """``(observation, action mask)`` of an :class:`~batsched_ml.rl.agent.AgentQueue` at a
    decision (its window is ``queue.slots``). Built with a dozen numpy calls, whatever the
    queue's length (a step's budget is tens of microseconds)."""
    window = queue.window
    seqs = queue.slots
    k = len(seqs)
    rows = queue.rows(seqs)
    jobs = np.zeros((window, len(JOB_COLUMNS)), np.float32)
    jobs[:k, 0] = queue.wait_feature(seqs, now)
    jobs[:k, 1:4] = rows[:, :3]
    jobs[:k, 4] = rows[:, 3] <= queue.machine.nb_free
    jobs[:k, 5] = 1.0
    machine = np.array((queue.machine.nb_free / queue.nb_cores,
                        min(math.log2(1.0 + len(queue)) / QUEUE_BITS, 1.0)), np.float32)
    masks = _MASKS.get(window)
    if masks is None:
        masks = _MASKS[window] = np.tri(window + 1, window, -1, dtype=bool)
    return {"jobs": jobs, "machine": machine}, masks[k].copy()
