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

__all__ = ["BACKFILL_SCHEDULERS", "avebsld", "max_wait", "run_policy", "sequence_bsld", "sequence_figures"]

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


def max_wait(jobs) -> float:
    """The longest wait of the decision core's jobs that ran (0 when none did)."""
    return max((j.start_time - j.submission_time for j in jobs if j.start_time >= 0), default=0.0)


def _scheduler(policy, backfill: str, starvation_threshold=None):
    from ..config.compose import build_policy
    from ..scheduling.easy import EasyBackfilling
    from ..scheduling.fcfs import StrictFCFS

    if backfill not in BACKFILL_SCHEDULERS:
        raise ValueError(f"backfill must be one of {', '.join(BACKFILL_SCHEDULERS)}, got {backfill!r}")
    if isinstance(policy, str):
        policy = build_policy(policy)
    scheduler = StrictFCFS if backfill == "none" else EasyBackfilling
    return scheduler(policy=policy, starvation_threshold=starvation_threshold)


def run_policy(policy, backfill: str, nb_cores: int, workload: dict, prefix=None, starvation_threshold=None):
    """Simulate ``workload`` with ``policy`` as the queue order (jobs waiting longer than
    ``starvation_threshold`` seconds first); returns ``(result, decision core)``."""
    return simulate(nb_cores, workload, _scheduler(policy, backfill, starvation_threshold), prefix,
                    latency=NO_LATENCY)


def sequence_figures(policy, backfill: str, sequences, start: int, tau: float = 10.0,
                     starvation_threshold=None) -> tuple[float, float]:
    """``(AVEbsld, longest wait)`` of ``policy`` on the sequence of ``sequences`` (an
    ``episodes.Sequences``) at ``start``."""
    _, core = run_policy(policy, backfill, sequences.trace.nb_cores, sequences.workload(start),
                         starvation_threshold=starvation_threshold)
    return avebsld(core.jobs.values(), tau), max_wait(core.jobs.values())


def sequence_bsld(policy, backfill: str, sequences, start: int, tau: float = 10.0, starvation_threshold=None) -> float:
    """AVEbsld of ``policy`` on the sequence of ``sequences`` (an ``episodes.Sequences``) at ``start``."""
    return sequence_figures(policy, backfill, sequences, start, tau, starvation_threshold)[0]
