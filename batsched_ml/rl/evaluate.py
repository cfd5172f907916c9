"""A queue order on job sequences: the figures training optimises and the comparison reports.

A policy (a plugin name such as ``fcfs`` or ``wfp3``, ``expr:...``, ``learned:FILE#k``,
``rl:FILE``, or a ``Policy`` object) runs as the queue order of the real ``fcfs`` (no
backfilling) or ``easy`` scheduler in the embedded simulator with exact instants
(``NO_LATENCY``, as RLScheduler's simulator and the environment), on a sequence workload of
``episodes``; the result is the sequence's AVEbsld (bounded slowdown, ``tau`` = 10 s).
"""

from __future__ import annotations

import numpy as np

from ..runner import simulate
from ..simulator.engine import NO_LATENCY

__all__ = ["BACKFILL_SCHEDULERS", "avebsld", "run_policy", "sequence_bsld"]

BACKFILL_SCHEDULERS = {"none": "fcfs", "easy": "easy"}


def avebsld(jobs, tau: float = 10.0) -> float:
    """Mean bounded slowdown ``max((wait + run) / max(run, tau), 1)`` of the decision core's jobs that
    ran (``core.jobs.values()``)."""
    ran = [j for j in jobs if j.start_time >= 0]
    if not ran:
        return 0.0
    run = np.fromiter((j.runtime or 0.0 for j in ran), np.float64, len(ran))
    wait = np.fromiter((j.start_time - j.submission_time for j in ran), np.float64, len(ran))
    return float(np.maximum((wait + run) / np.maximum(run, tau), 1.0).mean())


def _scheduler(policy, backfill: str):
    from ..config.compose import build_policy
    from ..scheduling.easy import EasyBackfilling
    from ..scheduling.fcfs import StrictFCFS

    if backfill not in BACKFILL_SCHEDULERS:
        raise ValueError(f"backfill must be one of {', '.join(BACKFILL_SCHEDULERS)}, got {backfill!r}")
    if isinstance(policy, str):
        policy = build_policy(policy)
    return (StrictFCFS if backfill == "none" else EasyBackfilling)(policy=policy)


def run_policy(policy, backfill: str, nb_cores: int, workload: dict, prefix=None):
    """Simulate ``workload`` with ``policy`` as the queue order; returns ``(result, decision core)``."""
    return simulate(nb_cores, workload, _scheduler(policy, backfill), prefix, latency=NO_LATENCY)


def sequence_bsld(policy, backfill: str, sequences, start: int, tau: float = 10.0) -> float:
    """AVEbsld of ``policy`` on the sequence of ``sequences`` (an ``episodes.Sequences``) at ``start``."""
    _, core = run_policy(policy, backfill, sequences.trace.nb_cores, sequences.workload(start))
    return avebsld(core.jobs.values(), tau)
