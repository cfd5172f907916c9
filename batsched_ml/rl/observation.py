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


def build(queue, now: float) -> tuple[dict, np.ndarray, np.ndarray]:
    """``(observation, action mask, float64 scoring features of the window)`` of an
    :class:`~batsched_ml.rl.agent.AgentQueue` at a decision."""
    window = queue.window
    seqs = queue.window_seqs()
    k = len(seqs)
    features = queue.features(seqs, now)
    jobs = np.zeros((window, len(JOB_COLUMNS)), np.float32)
    jobs[:k, :4] = features
    jobs[:k, 4] = queue.fits_now(seqs)
    jobs[:k, 5] = 1.0
    machine = np.array((queue.machine.nb_free / queue.nb_cores,
                        min(np.log2(1.0 + len(queue)) / QUEUE_BITS, 1.0)), np.float32)
    mask = np.zeros(window, bool)
    mask[:k] = True
    return {"jobs": jobs, "machine": machine}, mask, features
