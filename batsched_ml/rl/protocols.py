"""Evaluation protocols: where a benchmark's job sequences come from, which simulator runs them and
which orders it knows -- so that a number is always stated with the protocol that produced it.

* ``batsched-ml`` (the default): sequences cut from the trace as ``episodes`` converts it
  (Batsim's job semantics), simulated by the embedded simulator and the decision core at exact
  instants, strict FCFS (``none``) or textbook EASY (``easy``); the evaluation set is ``sequences``
  (10) sequences of ``length`` (1,024) jobs starting in the last 20 % of the trace, drawn with seed
  2020; orders are any ``--policy`` (``sjf`` is ``spf``).
* ``rlscheduler``: RLScheduler's (Zhang et al., SC'20) table, exactly (``rlscheduler``): their
  reading of the trace, their simulator with or without *their* backfilling (``rlscheduler``),
  10 sequences of 1,024 jobs drawn with gym 0.21's ``seeding.np_random(1)`` as theirs, their orders
  (``fcfs``, ``sjf``, ``f1``, ``wfp3``, ``unicef`` and the published ``wfp3-published`` /
  ``unicef-published``), plus ``rl:FILE`` (a scoring network choosing greedily among the jobs an
  agent sees) and ``rlscheduler-model:DIR[#sample=K]`` (their trained TensorFlow policy, in numpy).

``docs/rl.md`` lists every difference between the two and what each does to the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PROTOCOLS", "OrderResult", "Protocol", "evaluate_orders", "get_protocol", "mean_ci"]


@dataclass
class OrderResult:
    """An order's score on each sequence of an evaluation set, and their mean with a 95 % CI."""

    order: str
    starts: list
    values: list
    ci: tuple = field(default=(float("nan"), float("nan")))

    @property
    def mean(self) -> float:
        import numpy as np  # not at import: the command line's parser reads PROTOCOLS

        return float(np.mean(self.values))

    def to_dict(self) -> dict:
        return {"order": self.order, "mean": self.mean, "ci_low": self.ci[0], "ci_high": self.ci[1],
                "sequences": [{"start": int(s), "bsld": float(v)} for s, v in zip(self.starts, self.values)]}


def mean_ci(values, resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """95 % percentile bootstrap interval of the mean (``scipy.stats.bootstrap``, seeded): the
    sequences are the sample, and ten of them are too few to assume a normal mean."""
    import numpy as np
    from scipy.stats import bootstrap

    values = np.asarray(values, dtype=float)
    if len(values) < 2 or np.all(values == values[0]):
        return float(values.mean()), float(values.mean())
    res = bootstrap((values,), np.mean, n_resamples=resamples, confidence_level=0.95, method="percentile",
                    random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


class Protocol:
    """What a protocol defines (see the module docstring)."""

    name = ""
    backfill_rule = ""  # the name of the protocol's backfilling (``backfill=`` of the environment)
    seed = 0  # the evaluation set's default seed

    @property
    def backfills(self) -> tuple:
        return ("none", self.backfill_rule)

    def check_backfill(self, backfill: str) -> None:
        if backfill not in self.backfills:
            raise ValueError(f"backfill must be one of {', '.join(self.backfills)} under the {self.name} protocol, "
                             f"got {backfill!r}")

    def load_trace(self, workload, nb_cores=None):
        raise NotImplementedError

    def sequences(self, trace, length: int, start_range=(0.0, 1.0)):
        raise NotImplementedError

    def evaluation_sequences(self, trace, length: int):
        """The sequences an evaluation set is drawn from."""
        raise NotImplementedError

    def episode(self, sequences, start: int, backfill: str, window: int):
        """The environment's episode when the protocol runs its own simulator, else None."""
        return None

    def scorer(self, order: str):
        """``score(sequences, start, backfill) -> float`` of ``order`` (a ValueError if unknown)."""
        raise NotImplementedError

    def network_score(self, network, sequences, start: int, backfill: str, tau: float = 10.0) -> float:
        """The score of a scoring network (``policies.network.ScoringNetwork``) on one sequence, as
        training sees it."""
        raise NotImplementedError


class BatschedMLProtocol(Protocol):
    name = "batsched-ml"
    backfill_rule = "easy"
    seed = 2020
    ALIASES = {"sjf": "spf"}

    def load_trace(self, workload, nb_cores=None):
        from .episodes import load_trace

        return load_trace(workload, nb_cores)

    def sequences(self, trace, length: int, start_range=(0.0, 1.0)):
        from .episodes import Sequences

        return Sequences(trace, length, start_range)

    def evaluation_sequences(self, trace, length: int):
        return self.sequences(trace, length, (0.8, 1.0))

    def scorer(self, order: str):
        from ..config.compose import build_policy
        from .evaluate import sequence_bsld

        spec = self.ALIASES.get(order, order)
        build_policy(spec)  # an unknown order fails here, before any simulation
        return lambda sequences, start, backfill: sequence_bsld(spec, backfill, sequences, start)

    def network_score(self, network, sequences, start: int, backfill: str, tau: float = 10.0) -> float:
        """The network as the queue order of the real ``fcfs`` or ``easy`` (as it will be deployed)."""
        from ..policies.network import NetworkPolicy
        from .evaluate import sequence_bsld

        return sequence_bsld(NetworkPolicy(network), backfill, sequences, start, tau)


class RLSchedulerProtocol(Protocol):
    name = "rlscheduler"
    backfill_rule = "rlscheduler"
    seed = 1

    def load_trace(self, workload, nb_cores=None):
        from .rlscheduler.trace import load_rlscheduler_trace

        return load_rlscheduler_trace(workload, nb_cores)

    def sequences(self, trace, length: int, start_range=(0.0, 1.0)):
        from .rlscheduler.sequences import RLSchedulerSequences

        return RLSchedulerSequences(trace, length, start_range)

    def evaluation_sequences(self, trace, length: int):
        return self.sequences(trace, length)

    def episode(self, sequences, start: int, backfill: str, window: int):
        return sequences.episode(start, backfill == self.backfill_rule, window)

    def scorer(self, order: str):
        from .rlscheduler.scoring import scorer

        return scorer(order, self.backfill_rule)

    def network_score(self, network, sequences, start: int, backfill: str, tau: float = 10.0) -> float:
        """A greedy agent with the network choosing among the visible jobs (their score; ``tau`` is theirs)."""
        from .rlscheduler.scoring import greedy_network

        return greedy_network(network, sequences.episode(start, backfill == self.backfill_rule))


PROTOCOLS = {p.name: p for p in (BatschedMLProtocol(), RLSchedulerProtocol())}


def get_protocol(name) -> Protocol:
    if isinstance(name, Protocol):
        return name
    protocol = PROTOCOLS.get(name)
    if protocol is None:
        raise ValueError(f"unknown protocol {name!r}; known: {', '.join(PROTOCOLS)}")
    return protocol


def evaluate_orders(workload, orders, *, protocol="batsched-ml", backfill: bool = False, sequences: int = 10,
                    length: int = 1024, seed: int | None = None, nb_cores=None, progress=None) -> list[OrderResult]:
    """Each order's score on the protocol's evaluation set of ``workload``: ``sequences`` sequences of
    ``length`` jobs drawn with ``seed`` (the protocol's own by default), with or without the protocol's
    backfilling. ``progress(order)`` is called as each order finishes."""
    protocol = get_protocol(protocol)
    scorers = {order: protocol.scorer(order) for order in orders}  # every order checked before any run
    trace = protocol.load_trace(workload, nb_cores)
    pool = protocol.evaluation_sequences(trace, length)
    starts = pool.starts(sequences, protocol.seed if seed is None else seed)
    mode = protocol.backfill_rule if backfill else "none"
    results = []
    for order, score in scorers.items():
        values = [score(pool, start, mode) for start in starts]
        results.append(OrderResult(order, list(starts), values, mean_ci(values)))
        if progress is not None:
            progress(order)
    return results
