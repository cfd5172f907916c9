"""The orders of the ``rlscheduler`` protocol, each as ``score(sequences, start, backfill) -> float``:
their heuristics (``orders.ORDERS``), a scoring network (``rl:FILE``) and their trained policy
(``rlscheduler-model:DIR``, greedy, or ``#sample=K`` drawing from its softmax with seed ``K``).
Agents choose among the jobs their observation shows (``RLSchedulerEpisode.visible``)."""

from __future__ import annotations

import numpy as np

from .orders import ORDERS

__all__ = ["greedy_network", "run_agent", "scorer"]

MODEL_PREFIX = "rlscheduler-model:"


def run_agent(episode, choose) -> float:
    """Run ``episode`` with ``choose(episode) -> slot`` at every decision; the sequence's score."""
    alive = episode.begin()
    while alive:
        alive = episode.advance(choose(episode))
    return episode.score()


def greedy_network(network, episode) -> float:
    """A scoring network's greedy agent: the visible job with the highest score (first on ties)."""
    fits_now = "fits_now" in network.features
    return run_agent(episode, lambda ep: network.best(ep.features(fits_now)))


def scorer(order: str, backfill_rule: str):
    if order in ORDERS:
        return lambda seqs, start, backfill: seqs.episode(start, backfill == backfill_rule).run_order(order)
    if order.startswith("rl:"):
        from ...policies.network import load_network

        network = load_network(order[3:])
        return lambda seqs, start, backfill: greedy_network(network, seqs.episode(start, backfill == backfill_rule))
    if order.startswith(MODEL_PREFIX):
        from .model import RLSchedulerModel

        path, _, option = order[len(MODEL_PREFIX):].partition("#")
        sample = None
        if option:
            key, _, value = option.partition("=")
            if key != "sample" or not value.isdigit():
                raise ValueError(f"{order}: expected {MODEL_PREFIX}DIR or {MODEL_PREFIX}DIR#sample=K (K a seed)")
            sample = int(value)
        model = RLSchedulerModel.load(path)

        def score(seqs, start, backfill):
            rng = None if sample is None else np.random.default_rng([sample, start])
            return run_agent(seqs.episode(start, backfill == backfill_rule), lambda ep: model.choose(ep, rng))
        return score
    raise ValueError(f"unknown order {order!r} under the rlscheduler protocol; known: {', '.join(ORDERS)}, "
                     f"rl:FILE, {MODEL_PREFIX}DIR[#sample=K]")
