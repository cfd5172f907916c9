"""RLScheduler's job sequences: ``length`` consecutive jobs of their trace list, the start drawn as
their environment draws it, ``randint(length, limit - length - 1)``, ``limit`` the job count, or
10,000 for the traces their table cuts there (SDSC-SP2, HPC2N: ``trace.job_slice``)."""

from __future__ import annotations

from ..legacy_seeding import gym021_np_random
from .simulator import RLSchedulerEpisode

__all__ = ["RLSchedulerSequences"]


class RLSchedulerSequences:
    """Sequences of ``length`` jobs of ``trace``; ``start_range`` narrows their starts (fractions of the
    jobs they are drawn from; the whole range is theirs)."""

    def __init__(self, trace, length: int = 1024, start_range=(0.0, 1.0)):
        lo, hi = (float(x) for x in start_range)
        if not 0.0 <= lo < hi <= 1.0:
            raise ValueError(f"start_range must be two fractions 0 <= lo < hi <= 1, got {start_range!r}")
        if length < 1:
            raise ValueError(f"the sequence length must be >= 1, got {length}")
        self.trace, self.length = trace, int(length)
        self.limit = trace.job_slice() or len(trace)
        self.low, self.high = length, self.limit - length - 1  # randint's [low, high)
        first, last = max(self.low, int(lo * self.limit)), min(self.high - 1, int(hi * self.limit) - length)
        if last < first or self.high > len(trace):
            raise ValueError(f"{trace.name}: {self.limit} jobs, too few for sequences of {length} drawn as "
                             "RLScheduler draws them")
        self.first, self.last = first, last

    def sample_start(self, rng) -> int:
        """A training start (``rng``: a numpy ``Generator``, e.g. the environment's ``np_random``)."""
        return int(rng.integers(self.first, self.last + 1))

    def starts(self, count: int, seed: int) -> list[int]:
        """Their evaluation set: ``count`` draws of ``randint(length, limit - length - 1)`` from gym 0.21's
        ``np_random(seed)`` (seed 1: 1981, 2756, 4299, ... on every trace of at least 10,000 jobs)."""
        rng = gym021_np_random(seed)
        return [int(rng.randint(self.low, self.high)) for _ in range(count)]

    def episode(self, start: int, backfill: bool, window: int = 128) -> RLSchedulerEpisode:
        return RLSchedulerEpisode(self.trace, start, self.length, backfill, window)
