"""The waiting queue, kept in policy order.

Static policies are kept sorted incrementally (O(log n) insert and remove);
dynamic ones (keys that depend on the waiting time) are sorted at each pass.
With a starvation threshold ``T``, jobs that have waited longer than ``T``
move to the head, oldest first.
"""

from __future__ import annotations

import heapq

from sortedcontainers import SortedDict, SortedList


class JobQueue:
    def __init__(self, policy, starvation_threshold: float | None = None):
        self.policy = policy
        self.starvation_threshold = starvation_threshold
        self._by_arrival: dict = {}  # insertion-ordered: arrival order
        self._sorted = None if policy.dynamic else SortedList()
        self._keys: dict = {}
        self._ordered_by_size: dict = {}  # res -> the static-order entries of that size
        # requested cores -> (estimate, seq) of the queued jobs of that size: lets a backfilling
        # pass see that no queued job can fit any more without reading the queue
        self._by_size = SortedDict()
        self._estimates: dict = {}  # job -> estimate when queued (its key in _by_size)

    def __len__(self) -> int:
        return len(self._by_arrival)

    def __bool__(self) -> bool:
        return bool(self._by_arrival)

    def __contains__(self, job) -> bool:
        return job in self._by_arrival

    def add(self, job, now: float) -> None:
        self._by_arrival[job] = None
        sized = self._by_size.get(job.res)
        if sized is None:
            sized = self._by_size[job.res] = SortedList()
        sized.add((job.estimate, job.seq))
        self._estimates[job] = job.estimate
        if self._sorted is not None:
            key = (self.policy.key(job, now), job.seq)
            self._keys[job] = key
            self._sorted.add((key, job))
            self._ordered_by_size.setdefault(job.res, SortedList()).add((key, job))

    def remove(self, job) -> None:
        del self._by_arrival[job]
        sized = self._by_size[job.res]
        sized.remove((self._estimates.pop(job), job.seq))
        if not sized:
            del self._by_size[job.res]
        if self._sorted is not None:
            key = self._keys.pop(job)
            self._sorted.remove((key, job))
            self._ordered_by_size[job.res].remove((key, job))

    def rekey(self, job, now: float) -> None:
        """Re-insert a job whose key inputs changed (e.g. a new estimate)."""
        if self._sorted is not None and job in self._by_arrival:
            self._sorted.remove((self._keys[job], job))
            self._ordered_by_size[job.res].remove((self._keys[job], job))
            key = (self.policy.key(job, now), job.seq)
            self._keys[job] = key
            self._sorted.add((key, job))
            self._ordered_by_size[job.res].add((key, job))

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

    def smallest_request(self) -> int | float:
        """The fewest cores any queued job requests (inf when empty): with fewer free,
        no queued job can start, and a backfilling pass can stop."""
        return self._by_size.keys()[0] if self._by_size else float("inf")

    def shortest_by_size(self, max_res: int, exclude=None):
        """``(res, shortest estimate)`` for each requested size up to ``max_res``, smallest
        size first, leaving out ``exclude`` (estimates as when the jobs were queued: they
        change only while jobs run)."""
        for res in self._by_size.irange(maximum=max_res):
            sized = self._by_size[res]
            for estimate, seq in sized.islice(0, 2):
                if exclude is None or seq != exclude.seq:
                    yield res, estimate
                    break

    def iter_ordered(self, now: float, sizes=None):
        """Like ``ordered``, but lazily, and only the jobs requesting one of ``sizes`` cores
        (with a static order and no starvation threshold; otherwise all jobs): a pass
        that stops early, or only needs some sizes, reads no more of the queue.
        Jobs may be started (leave the queue) while it is read."""
        if self._sorted is None:
            yield from self.ordered(now)
            return
        if self.starvation_threshold is not None and self._by_arrival:
            starving = self._starving(now)
            if starving:
                yield from starving
                marked = set(starving)
                yield from (job for _, job in _read_lazily(self._sorted) if job not in marked)
                return
        if sizes is None:
            lists = [self._sorted]
        else:
            by_size = self._ordered_by_size
            lists = [by_size[res] for res in sizes if by_size.get(res)]
        if len(lists) == 1:
            yield from (job for _, job in _read_lazily(lists[0]))
        else:
            yield from (job for _, job in heapq.merge(*map(_read_lazily, lists)))

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


def _read_lazily(entries, chunk: int = 4):
    """The entries of a SortedList in order, robust to removals of entries already read;
    read in growing chunks, as most passes stop after a few."""
    pos = 0
    while True:
        items = list(entries.islice(pos, pos + chunk))
        if not items:
            return
        yield from items
        pos = entries.bisect_right(items[-1])
        chunk = min(2 * chunk, 256)
