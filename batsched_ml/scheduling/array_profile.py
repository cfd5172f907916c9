"""``CountProfile`` with its slices in numpy arrays: the profile of the compiled
conservative pass (``compression/``) between passes."""

from __future__ import annotations

import numpy as np

from .profile import CountProfile


class ArrayCountProfile(CountProfile):
    """``CountProfile`` with its slices in numpy arrays, for the compiled conservative pass
    (``compression/``), which reads and returns arrays: converting thousands of slices
    to and from lists at every pass cost more than the few slice operations between passes
    (a job's release, the present moving on), which are done here on the arrays. Same
    slices as the list version, operation for operation; only the compiled pass searches
    them (the Python first-fit methods are for the lists)."""

    @classmethod
    def from_lists(cls, profile: CountProfile) -> "ArrayCountProfile":
        """The same profile (placements, end heap, present) with its slices as arrays."""
        return cls._copy(profile, cls, np.array(profile.times, dtype=np.float64),
                         np.array(profile.free, dtype=np.int64))

    def to_lists(self) -> CountProfile:
        return self._copy(self, CountProfile, self.times.tolist(), self.free.tolist())

    @staticmethod
    def _copy(profile, cls, times, free):
        copy = cls.__new__(cls)
        copy.__dict__.update(profile.__dict__)
        copy.times, copy.free = times, free
        return copy

    def _split(self, t: float) -> int:
        times = self.times
        i = int(times.searchsorted(t, side="right")) - 1
        if times[i] == t:
            return i
        self.times = np.insert(times, i + 1, t)
        self.free = np.insert(self.free, i + 1, self.free[i])
        return i + 1

    def _merge_around(self, lo: int, hi: int) -> None:
        free = self.free
        lo, hi = max(lo, 1), min(hi, len(free) - 1)
        if lo > hi:
            return
        equal = np.flatnonzero(free[lo:hi + 1] == free[lo - 1:hi]) + lo
        if len(equal):
            self.times = np.delete(self.times, equal)
            self.free = np.delete(free, equal)

    def update_first_slice(self, now: float) -> None:
        self.origin = now
        past = min(int(self.times.searchsorted(now, side="right")) - 1, len(self.times) - 1)
        if past > 0:
            self.times, self.free = self.times[past:].copy(), self.free[past:].copy()
        self.times[0] = now

    def available_now(self) -> int:
        return int(self.free[0])

    def _take(self, i, j, used):
        self.free[i:j] -= used

    def _give_back(self, i, j, used):
        self.free[i:j] += used
