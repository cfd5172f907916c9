"""A static queue order kept as an array of integer keys from pass to pass.

A static order changes only by arrivals and starts, so the array is updated with the
arrivals (inserted where the queue puts them, O(arrivals log n)) instead of being rebuilt
from the jobs, which would cost O(n) Python work per pass and O(n^2) per burst. Used by the
compiled conservative pass (keys: ``Job.seq``) and by probabilistic backfilling's bins table
(keys: table rows).
"""

from __future__ import annotations

import numpy as np


class KeptOrder:
    def __init__(self, key):
        self._key = key  # job -> its integer key
        self.keys = None  # the order at the last read, started or removed jobs taken out
        self._reorders = 0  # the queue's ``reorders`` then: a re-keyed job makes the copy stale
        self._new: list = []  # jobs queued since

    def arrived(self, job) -> None:
        self._new.append(job)

    def current(self, queue, now: float, reading=None) -> np.ndarray:
        """The keys of the queued jobs, highest priority first (``queue.ordered(now)``). When
        the copy cannot be trusted it is read again, and ``reading(jobs)`` sees the jobs first."""
        new, self._new = [j for j in self._new if j in queue], []
        kept = queue.static and self.keys is not None and queue.reorders == self._reorders
        if kept and new:
            placed = sorted((queue.position(job), self._key(job)) for job in new)
            self.keys = np.insert(self.keys, [p - i for i, (p, _) in enumerate(placed)],
                                  [key for _, key in placed])
        if not kept or len(self.keys) != len(queue):
            jobs = queue.ordered(now)
            if reading is not None:
                reading(jobs)
            self.keys = np.fromiter(map(self._key, jobs), np.int64, len(jobs))
            self._new = []
            self._reorders = queue.reorders
        return self.keys

    def drop_positions(self, indices: list) -> None:
        """The jobs at these positions of the last ``current`` order left the queue."""
        self.keys = np.delete(self.keys, indices)

    def drop_key(self, key: int) -> None:
        """The job with this key left the queue (its key may be reused)."""
        if self.keys is not None:
            self.keys = self.keys[self.keys != key]
