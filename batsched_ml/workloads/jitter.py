"""Jittered copies of a workload: every submission moved later by a random fraction of a second.

Two schedulers compared on one trace give one number each, with nothing to set the difference
against; a learned scheduler moves with its seed, a deterministic one does not. Both move when
nothing that matters changes: submissions shifted by less than a second change which jobs a
learned model has seen at a retraining and the order of near-simultaneous events, and a loaded
machine's schedule amplifies that (``benchmarks/results/classification.md``: a seed-free
classifier moves by up to 6 points on such copies). N copies, each simulated as a window of the
trace, give any comparison a noise floor, also for schedulers without a seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config.validate import positive, positive_int, seed

__all__ = ["JitterSpec", "jitter_copies", "jittered"]


@dataclass(frozen=True)
class JitterSpec:
    """``copies`` copies, each submission moved by U(0, ``seconds``) drawn from ``seed`` and the copy's
    number (copy k is the same whatever ``copies`` is)."""

    copies: int
    seconds: float = 1.0
    seed: int = 0

    def __post_init__(self):
        positive_int(self.copies, "jitter: copies")
        positive(self.seconds, "jitter: seconds")
        seed(self.seed, "jitter: seed")


def jittered(workload: dict, seconds: float, rng: np.random.Generator) -> dict:
    """A copy of ``workload`` with each job's submission time moved later by U(0, ``seconds``)
    (to the microsecond, Batsim's clock), jobs in the new submission order; ids, profiles and
    the SWF header unchanged."""
    jobs = workload["jobs"]
    shifts = rng.random(len(jobs)) * seconds
    moved = [dict(job, subtime=round(float(job["subtime"]) + float(shift), 6)) for job, shift in zip(jobs, shifts)]
    order = sorted(range(len(moved)), key=lambda k: (moved[k]["subtime"], k))
    return dict(workload, jobs=[moved[k] for k in order])


def jitter_copies(workload: dict, spec: JitterSpec) -> list[tuple[float, dict]]:
    """``[(0.0, copy), ...]``: the ``spec.copies`` jittered copies, as windows that start at 0."""
    out = []
    for k in range(spec.copies):
        copy = jittered(workload, float(spec.seconds), np.random.default_rng([spec.seed, k]))
        copy["jitter"] = {"copy": k, "seconds": float(spec.seconds), "seed": spec.seed}
        out.append((0.0, copy))
    return out
