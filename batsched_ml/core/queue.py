"""The waiting queue, kept in policy order.

Static policies are kept sorted incrementally (O(log n) insert and remove);
dynamic ones (keys that depend on the waiting time) are sorted at each pass.
With a starvation threshold ``T``, jobs that have waited longer than ``T``
move to the head, oldest first.
"""

from __future__ import annotations

from sortedcontainers import SortedList


class JobQueue:
    def __init__(self, policy, starvation_threshold: float | None = None):
        self.policy = policy
        self.starvation_threshold = starvation_threshold
        self._by_arrival: dict = {}  # insertion-ordered: arrival order
        self._sorted = None if policy.dynamic else SortedList()
        self._keys: dict = {}

    def __len__(self) -> int:
        return len(self._by_arrival)

    def __bool__(self) -> bool:
        return bool(self._by_arrival)

    def __contains__(self, job) -> bool:
        return job in self._by_arrival

    def add(self, job, now: float) -> None:
        self._by_arrival[job] = None
        if self._sorted is not None:
            key = (self.policy.key(job, now), job.seq)
            self._keys[job] = key
            self._sorted.add((key, job))

    def remove(self, job) -> None:
        del self._by_arrival[job]
        if self._sorted is not None:
            self._sorted.remove((self._keys.pop(job), job))

    def rekey(self, job, now: float) -> None:
        """Re-insert a job whose key inputs changed (e.g. a new estimate)."""
        if self._sorted is not None and job in self._by_arrival:
            self._sorted.remove((self._keys[job], job))
            key = (self.policy.key(job, now), job.seq)
            self._keys[job] = key
            self._sorted.add((key, job))

    def _starving(self, now: float) -> list:
        limit = now - self.starvation_threshold
        starving = []
        for job in self._by_arrival:
            if job.submission_time >= limit:
                break
            starving.append(job)
        return starving

    def ordered(self, now: float) -> list:
        """All queued jobs, highest priority first."""
        if self._sorted is not None:
            jobs = [job for _, job in self._sorted]
        else:
            key = self.policy.key
            jobs = sorted(self._by_arrival, key=lambda j: (key(j, now), j.seq))
        if self.starvation_threshold is not None and jobs:
            starving = self._starving(now)
            if starving:
                marked = set(starving)
                jobs = starving + [j for j in jobs if j not in marked]
        return jobs

    def first(self, now: float):
        """The highest-priority job, or None; cheaper than ``ordered`` for static orders."""
        if not self._by_arrival:
            return None
        if self.starvation_threshold is not None:
            head = next(iter(self._by_arrival))
            if head.submission_time < now - self.starvation_threshold:
                return head
        if self._sorted is not None:
            return self._sorted[0][1]
        key = self.policy.key
        return min(self._by_arrival, key=lambda j: (key(j, now), j.seq))
