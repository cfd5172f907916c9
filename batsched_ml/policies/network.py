"""Queue orders scored by a small neural network: ``--policy rl:FILE.json``.

A *scoring network* maps each queued job's features to one number; the job with the highest
score runs first (ties: arrival order). It is what ``batsched-ml train-policy`` learns (by
evolution strategies, or by PPO in the ``[rl]`` extra) and what the reinforcement-learning
environment's greedy agent uses, and it runs here in numpy only: no deep-learning library is
needed to *use* a trained policy, so ``simulate``, campaigns and ``serve`` driven by the real
Batsim all run it.

Features (:data:`FEATURES`, each in [0, 1], computed by :func:`job_features` for the
environment's observation and for this policy alike, so that a policy behaves as it was
trained):

* ``wait``: the job's waiting time so far, ``log2(1 + seconds) / 20`` (1 at about 12 days);
* ``estimate``: its runtime estimate (the requested time, or the configured predictor's),
  on the same scale;
* ``cores``: requested cores / the machine's cores;
* ``log_cores``: ``log2(cores) / log2(machine cores)`` (1-core jobs 0, whole-machine jobs 1).

An agent's network may also read ``fits_now`` (:data:`AGENT_FEATURES`: 1 if the job's cores are
free now), which the environment and the ``rlscheduler`` protocol give; a queue order has no
machine state to compute it from, so such a network runs there only (``rl:FILE`` refuses it).

Times are on a fixed logarithmic scale, sizes relative to the machine, so a policy trained on
one trace runs on another machine (the machine size is given by the scheduler at the start
of the simulation; a scheduler that does not pass it on leaves the training machine's size,
which the file records).

The score depends on the waiting time, so the order is *dynamic* (re-sorted at each
scheduling pass, like WFP3); :meth:`NetworkPolicy.order` scores the whole queue in one numpy
call. Scores are computed row by row with the same operations whatever the number of rows,
so a job's score does not depend on which other jobs are scored with it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .orders import Policy

__all__ = ["AGENT_FEATURES", "FEATURES", "FORMAT", "NetworkError", "NetworkPolicy", "ScoringNetwork", "job_features",
           "load_network", "network_policy"]

FORMAT = "batsched-ml-scoring-network"
VERSION = 1
FEATURES = ("wait", "estimate", "cores", "log_cores")
AGENT_FEATURES = FEATURES + ("fits_now",)  # the environment's observation columns an agent may score with
TIME_BITS = 20.0  # log2(1 + seconds) / TIME_BITS: 1.0 at 2**20 s, about 12 days


class NetworkError(ValueError):
    """A policy file that is not a scoring network this version can run (one line)."""


TIME_SCALE = 1.0 / (TIME_BITS * math.log(2.0))  # log1p(s) * TIME_SCALE = log2(1 + s) / TIME_BITS


def time_feature(seconds) -> np.ndarray:
    """``log2(1 + seconds) / 20`` clipped to [0, 1] (negative and infinite times included)."""
    x = np.log1p(np.maximum(np.asarray(seconds, dtype=np.float64), 0.0))
    x *= TIME_SCALE
    return np.minimum(x, 1.0, out=x)


def time_feature_scalar(seconds: float) -> float:
    """:func:`time_feature` of one number, with the same float operations."""
    return min(float(np.log1p(max(seconds, 0.0))) * TIME_SCALE, 1.0)


def size_features(res, nb_cores: int) -> tuple[np.ndarray, np.ndarray]:
    """``(cores / machine, log2(cores) / log2(machine))``, both clipped to [0, 1]."""
    res = np.asarray(res, dtype=np.float64)
    fraction = np.minimum(res / nb_cores, 1.0)
    if nb_cores > 1:
        log_size = np.clip(np.log2(np.maximum(res, 1.0)) / math.log2(nb_cores), 0.0, 1.0)
    else:
        log_size = np.zeros_like(res)
    return fraction, log_size


def size_features_scalar(res: float, nb_cores: int) -> tuple[float, float]:
    """:func:`size_features` of one job, with the same float operations."""
    fraction = min(res / nb_cores, 1.0)
    if nb_cores <= 1:
        return fraction, 0.0
    return fraction, min(max(float(np.log2(max(float(res), 1.0))) / math.log2(nb_cores), 0.0), 1.0)


def job_features(wait, estimate, res, nb_cores: int) -> np.ndarray:
    """The ``(n, 4)`` matrix of :data:`FEATURES` for ``n`` jobs (arrays or sequences)."""
    fraction, log_size = size_features(res, nb_cores)
    return np.column_stack((time_feature(wait), time_feature(estimate), fraction, log_size))


class ScoringNetwork:
    """A multilayer perceptron scoring one job per row: tanh hidden layers, a linear output.

    ``layers`` is a list of ``(weights (in, out), bias (out,))``; the last layer has one output.
    """

    def __init__(self, layers, features=FEATURES, metadata: dict | None = None, machine_cores: int | None = None):
        self.layers = [(np.asarray(w, dtype=np.float64), np.asarray(b, dtype=np.float64)) for w, b in layers]
        self.features = tuple(features)
        self.metadata = dict(metadata or {})
        self.machine_cores = machine_cores  # the training machine's size (a fallback, see the module doc)
        self._check()

    def _check(self) -> None:
        if not self.layers:
            raise NetworkError("a scoring network needs at least one layer")
        if self.features not in (FEATURES, AGENT_FEATURES):
            unknown = [f for f in self.features if f not in AGENT_FEATURES]
            what = f"unknown feature(s) {unknown}" if unknown else f"features {list(self.features)}"
            raise NetworkError(f"{what}; this version computes {', '.join(FEATURES)} in that order (and an agent's "
                               f"network also {AGENT_FEATURES[-1]})")
        width = len(self.features)
        for i, (w, b) in enumerate(self.layers):
            if w.ndim != 2 or b.shape != (w.shape[1],) or w.shape[0] != width:
                raise NetworkError(f"layer {i}: weights {w.shape} and bias {b.shape} do not chain from width {width}")
            if not (np.isfinite(w).all() and np.isfinite(b).all()):
                raise NetworkError(f"layer {i} has non-finite weights")
            width = w.shape[1]
        if width != 1:
            raise NetworkError(f"the last layer has {width} outputs, a score needs 1")

    # ------------------------------------------------------------- building
    @classmethod
    def shaped(cls, hidden=(8,), features=FEATURES) -> "ScoringNetwork":
        """A network of the given hidden widths, all weights zero (see :meth:`with_parameters`)."""
        sizes = [len(features), *hidden, 1]
        return cls([(np.zeros((a, b)), np.zeros(b)) for a, b in zip(sizes, sizes[1:])], features)

    @property
    def hidden(self) -> tuple:
        return tuple(w.shape[1] for w, _ in self.layers[:-1])

    @property
    def nb_parameters(self) -> int:
        return sum(w.size + b.size for w, b in self.layers)

    def parameters(self) -> np.ndarray:
        """All weights and biases as one flat vector (what evolution strategies search)."""
        return np.concatenate([np.concatenate((w.ravel(), b)) for w, b in self.layers])

    def with_parameters(self, flat) -> "ScoringNetwork":
        """A network of the same shape with the weights of ``flat`` (see :meth:`parameters`)."""
        flat = np.asarray(flat, dtype=np.float64)
        if flat.shape != (self.nb_parameters,):
            raise NetworkError(f"{flat.shape} parameters for a network of {self.nb_parameters}")
        layers, at = [], 0
        for w, b in self.layers:
            nw = flat[at:at + w.size].reshape(w.shape)
            at += w.size
            layers.append((nw, flat[at:at + b.size].copy()))
            at += b.size
        return ScoringNetwork(layers, self.features, self.metadata, self.machine_cores)

    # ------------------------------------------------------------ inference
    def scores(self, x) -> np.ndarray:
        """One score per row of ``x`` ``(n, len(features))``. Products are summed per row with
        the same operations whatever ``n`` (no BLAS kernel choice by size): a job's score does
        not depend on the other rows."""
        h = np.asarray(x, dtype=np.float64)
        last = len(self.layers) - 1
        for i, (w, b) in enumerate(self.layers):
            h = (h[:, :, None] * w[None, :, :]).sum(axis=1) + b
            if i < last:
                h = np.tanh(h)
        return h[:, 0]

    def best(self, x, mask=None) -> int:
        """The index of the highest score among the rows allowed by ``mask`` (first on ties)."""
        s = self.scores(x)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        return int(np.argmax(s))

    # ----------------------------------------------------------------- files
    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "features": list(self.features),
                "hidden_activation": "tanh", "machine_cores": self.machine_cores,
                "layers": [{"weights": w.tolist(), "bias": b.tolist()} for w, b in self.layers],
                "metadata": self.metadata}

    def save(self, path) -> None:
        """Write the JSON policy file (atomically: a reader never sees half a file)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        tmp.replace(path)

    @classmethod
    def from_dict(cls, data: dict, name: str = "<network>") -> "ScoringNetwork":
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise NetworkError(f"{name}: not a scoring-network file (format {FORMAT!r})")
        if data.get("version") != VERSION:
            raise NetworkError(f"{name}: version {data.get('version')!r}, this batsched-ml reads {VERSION}")
        if data.get("hidden_activation", "tanh") != "tanh":
            raise NetworkError(f"{name}: hidden activation {data['hidden_activation']!r}, only tanh is supported")
        try:
            layers = [(layer["weights"], layer["bias"]) for layer in data["layers"]]
            return cls(layers, data.get("features", FEATURES), data.get("metadata"), data.get("machine_cores"))
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, NetworkError):
                raise NetworkError(f"{name}: {exc}") from None
            raise NetworkError(f"{name}: malformed layers ({exc})") from None


def load_network(path) -> ScoringNetwork:
    """The scoring network of a policy file (a :class:`NetworkError` naming the file otherwise)."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise NetworkError(f"rl:{path}: cannot read the policy file ({exc.strerror or exc})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise NetworkError(f"rl:{path}: not a JSON policy file ({exc})") from None
    return ScoringNetwork.from_dict(data, f"rl:{path}")


class NetworkPolicy(Policy):
    """The queue order of a scoring network: highest score first, then arrival order."""

    dynamic = True  # the waiting time is a feature

    def __init__(self, network: ScoringNetwork, name: str = "rl"):
        if network.features != FEATURES:
            raise NetworkError(f"{name}: the network reads {', '.join(network.features)}: an agent's network (the "
                               "environment, the rlscheduler protocol), not a queue order")
        self.network = network
        self.name = name
        self.nb_cores = network.machine_cores

    def on_simulation_begins(self, nb_cores: int) -> None:
        """The machine's size (features are relative to it)."""
        self.nb_cores = nb_cores

    def _machine(self) -> int:
        if not self.nb_cores:
            raise NetworkError(f"{self.name}: the machine size is unknown (the file records none and the "
                               "scheduler did not give it)")
        return self.nb_cores

    def features(self, jobs, now: float) -> np.ndarray:
        n = len(jobs)
        sub = np.fromiter((j.submission_time for j in jobs), np.float64, n)
        est = np.fromiter((j.estimate for j in jobs), np.float64, n)
        res = np.fromiter((j.res for j in jobs), np.float64, n)
        return job_features(now - sub, est, res, self._machine())

    def key(self, job, now):
        return (-float(self.network.scores(self.features([job], now))[0]),)

    def order(self, jobs, now: float) -> list:
        """``jobs`` sorted as :meth:`key` sorts them (ties by arrival), scored in one call."""
        if not jobs:
            return []
        scores = self.network.scores(self.features(jobs, now))
        seqs = np.fromiter((j.seq for j in jobs), np.int64, len(jobs))
        return [jobs[i] for i in np.lexsort((seqs, -scores))]

    def __repr__(self) -> str:
        return f"NetworkPolicy({self.name!r})"


def network_policy(path: str) -> NetworkPolicy:
    """``--policy rl:FILE.json``."""
    return NetworkPolicy(load_network(path), name=f"rl:{path}")
