"""RLScheduler's trained networks, run in numpy from their saved weights.

Their policy (``ppo-pick-jobs.py``'s ``rl_kernel``) scores each visible job with one small MLP,
8 -> 32 -> 16 -> 8 -> 1 (ReLU), over the 8 features of their observation
(``HPCSimPickJobs.build_observation``), in float32 as TensorFlow computes it:

* the wait so far / 12 h, the requested time / the trace's longest run time, the processors / the
  machine's, each capped at 1 - 1e-5;
* requested memory, user, group and executable id over the trace's maxima (1 where the trace has
  -1), likewise capped;
* 1 - 1e-5 if the job fits now, else 1e-5.

Empty slots are ``[0, 1, 1, 1, 1, 1, 1, 0]`` and masked (``logit - 1e6``). Their evaluation
*samples* the action from the softmax (``tf.multinomial``), so their RL row is one draw: here
``greedy`` takes the highest score and ``sample`` draws from the same distribution with a
seeded numpy generator (TensorFlow's own stream cannot be reproduced without it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .checkpoint import read_checkpoint

__all__ = ["MAX_WAIT", "RLSchedulerModel", "their_observation"]

MAX_WAIT = 12 * 60 * 60  # their MAX_WAIT_TIME
CAP = 1.0 - 1e-5
PADDING = (0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0)
LAYERS = ("pi/dense", "pi/dense_1", "pi/dense_2", "pi/dense_3")


class RLSchedulerModel:
    """Their policy network (``layers``: float32 ``(kernel, bias)`` pairs)."""

    def __init__(self, layers, name: str = "rlscheduler-model"):
        self.layers = [(np.asarray(w, np.float32), np.asarray(b, np.float32)) for w, b in layers]
        self.name = name

    @classmethod
    def load(cls, directory) -> "RLSchedulerModel":
        """From a ``simple_save`` folder (or the experiment folder holding it)."""
        directory = Path(directory)
        if (directory / "simple_save").is_dir():
            directory = directory / "simple_save"
        tensors = read_checkpoint(directory)
        missing = [f"{layer}/kernel" for layer in LAYERS if f"{layer}/kernel" not in tensors]
        if missing:
            raise ValueError(f"{directory}: not an RLScheduler policy (no {', '.join(missing)})")
        return cls([(tensors[f"{layer}/kernel"], tensors[f"{layer}/bias"]) for layer in LAYERS], str(directory))

    def logits(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Masked logits of the ``(window, 8)`` observation, float32."""
        h = np.asarray(obs, np.float32)
        last = len(self.layers) - 1
        for i, (w, b) in enumerate(self.layers):
            h = h @ w + b
            if i < last:
                h = np.maximum(h, np.float32(0.0))
        return h[:, 0] + (mask.astype(np.float32) - np.float32(1.0)) * np.float32(1e6)

    def choose(self, episode, rng: np.random.Generator | None = None) -> int:
        """A slot of ``episode``'s pending decision: the highest logit, or (``rng``) a draw from the softmax."""
        obs, mask = their_observation(episode)
        logits = self.logits(obs, mask)[:len(episode.slots)].astype(np.float64)
        if rng is None:
            return int(np.argmax(logits))
        p = np.exp(logits - logits.max())
        return int(rng.choice(len(p), p=p / p.sum()))


def their_observation(episode) -> tuple[np.ndarray, np.ndarray]:
    """Their ``(window, 8)`` observation of the visible jobs of an ``RLSchedulerEpisode`` and its mask."""
    trace, slots, window = episode.trace, episode.slots, episode.window
    obs = np.tile(np.array(PADDING), (window, 1))
    mask = np.zeros(window, bool)
    maxima = trace.maxima
    first = episode.start_index
    for row, job in enumerate(slots):
        index = first + job
        obs[row, 0] = min(float(episode.now - episode.submit[job]) / float(MAX_WAIT), CAP)
        obs[row, 1] = min(float(episode.request[job]) / float(maxima["run_time"]), CAP)
        obs[row, 2] = min(float(episode.procs[job]) / float(trace.max_procs), CAP)
        for column, (values, key) in enumerate(((trace.memory, "memory"), (trace.user, "user"),
                                                (trace.group, "group"), (trace.executable, "executable")), 3):
            value = int(values[index])
            obs[row, column] = 1.0 if value == -1 else min(float(value) / float(maxima[key]), CAP)
        obs[row, 7] = CAP if episode.nodes[job] <= episode.free else 1e-5
        mask[row] = True
    return obs, mask
