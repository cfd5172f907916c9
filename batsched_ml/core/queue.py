"""The waiting queue, kept in policy order.

Static policies are kept sorted incrementally (O(log n) insert and remove);
dynamic ones (keys that depend on the waiting time) are sorted at each pass.
With a starvation threshold ``T``, jobs that have waited longer than ``T``
move to the head, oldest first.

For backfilling, the queued jobs of each requested size are also indexed in
the orders a pass reads them (the static policy order, arrival order under a
starvation threshold, and shortest-first for SJBF), with their estimates, so
that ``fit_search`` finds the first job of a pass that fits without reading
the jobs before it that do not (``minindex``).
"""

from __future__ import annotations

import heapq
from functools import partial
from operator import itemgetter

from sortedcontainers import SortedDict, SortedList

from .minindex import MinIndex

INF = float("inf")


def _static_key(key, job) -> tuple:
    """A static order's index entry for ``job`` (a module function, not a closure: queues pickle)."""
    return key(job, 0.0), job.seq


class JobQueue:
    def __init__(self, policy, starvation_threshold: float | None = None, backfill_policy=None):
        """``backfill_policy``: a static policy whose order backfilling also reads (SJBF)."""
        self.policy = policy
        self.starvation_threshold = starvation_threshold
        self._by_arrival: dict = {}  # insertion-ordered: arrival order
        self._sorted = None if policy.dynamic else SortedList()
        self._keys: dict = {}
        self._dynamic_cache = None  # (now, jobs sorted at now): a dynamic order, sorted once per instant
        self.reorders = 0  # ``rekey`` calls: a copy of a static order is stale when this changes
        # requested cores -> (estimate, seq) of the queued jobs of that size: lets a backfilling
        # pass see that no queued job can fit any more without reading the queue
        self._by_size = SortedDict()
        self._estimates: dict = {}  # job -> estimate when queued (the value of its index entries)
        # name -> (key function, {res -> MinIndex}): the orders a backfilling pass reads, by size
        self._indexes: dict = {}
        if self._sorted is not None:
            self._indexes["queue"] = (self._keys.__getitem__, {})
        if starvation_threshold is not None:
            self._arrival_no: dict = {}
            self._arrivals = SortedList()  # (submission time, arrival number)
            self._arrivals_in_time_order = True
            self._nb_arrived = 0
            self._indexes["arrival"] = (self._arrival_no.__getitem__, {})
        if backfill_policy is not None and not backfill_policy.dynamic:
            self._indexes[backfill_policy.name] = (partial(_static_key, backfill_policy.key), {})

    @property
    def static(self) -> bool:
        """Whether the order changes only by arrivals and departures (a static policy and no
        starvation threshold): a caller may then keep a copy up to date."""
        return self._sorted is not None and self.starvation_threshold is None

    def position(self, job) -> int:
        """Where ``job`` stands in a static order (0: the head)."""
        return self._sorted.bisect_left((self._keys[job],))

    def __len__(self) -> int:
        return len(self._by_arrival)

    def __bool__(self) -> bool:
        return bool(self._by_arrival)

    def __contains__(self, job) -> bool:
        return job in self._by_arrival

    def add(self, job, now: float) -> None:
        self._by_arrival[job] = None
        self._dynamic_cache = None
        sized = self._by_size.get(job.res)
        if sized is None:
            sized = self._by_size[job.res] = SortedList()
        sized.add((job.estimate, job.seq))
        self._estimates[job] = job.estimate
        if self._sorted is not None:
            key = (self.policy.key(job, now), job.seq)
            self._keys[job] = key
            self._sorted.add((key, job))
        if self.starvation_threshold is not None:
            if self._arrivals and job.submission_time < self._arrivals[-1][0]:
                self._arrivals_in_time_order = False
            self._nb_arrived += 1
            self._arrival_no[job] = self._nb_arrived
            self._arrivals.add((job.submission_time, self._nb_arrived))
        self._index(job)

    def _index(self, job) -> None:
        estimate = self._estimates[job]
        for key_of, by_size in self._indexes.values():
            index = by_size.get(job.res)
            if index is None:
                index = by_size[job.res] = MinIndex()
            index.add(key_of(job), estimate, job)

    def _unindex(self, job) -> None:
        for key_of, by_size in self._indexes.values():
            index = by_size[job.res]
            index.remove(key_of(job))
            if not index:
                del by_size[job.res]

    def remove(self, job) -> None:
        self._unindex(job)
        del self._by_arrival[job]
        sized = self._by_size[job.res]
        sized.remove((self._estimates.pop(job), job.seq))
        if not sized:
            del self._by_size[job.res]
        if self._sorted is not None:
            self._sorted.remove((self._keys.pop(job), job))
        if self.starvation_threshold is not None:
            self._arrivals.remove((job.submission_time, self._arrival_no.pop(job)))

    def rekey(self, job, now: float) -> None:
        """Re-insert a queued job whose key inputs changed (the classification's ``probe_after``
        promotes a waiting large job to small)."""
        if job not in self._by_arrival:
            return
        self._dynamic_cache = None
        self.reorders += 1
        self._unindex(job)
        sized = self._by_size[job.res]
        sized.remove((self._estimates[job], job.seq))
        sized.add((job.estimate, job.seq))
        self._estimates[job] = job.estimate
        if self._sorted is not None:
            self._sorted.remove((self._keys[job], job))
            key = (self.policy.key(job, now), job.seq)
            self._keys[job] = key
            self._sorted.add((key, job))
        self._index(job)

    def _starving(self, now: float) -> list:
        limit = now - self.starvation_threshold
        starving = []
        for job in self._by_arrival:
            if job.submission_time >= limit:
                break
            starving.append(job)
        return starving

    def _starving_bound(self, now: float):
        """The arrival number of the first job that is not starving (inf if all are): the
        starving jobs are the arrivals before it."""
        limit = now - self.starvation_threshold
        if self._arrivals_in_time_order:
            arrivals = self._arrivals
            k = arrivals.bisect_left((limit, -INF))
            return arrivals[k][1] if k < len(arrivals) else INF
        for job in self._by_arrival:
            if job.submission_time >= limit:
                return self._arrival_no[job]
        return INF

    def ordered(self, now: float) -> list:
        """All queued jobs, highest priority first."""
        if self._sorted is not None:
            jobs = list(map(itemgetter(1), self._sorted))  # no Python step per job: a pass reads it
        else:
            queued = self._by_arrival
            jobs = [job for job in self._dynamic_order(now) if job in queued]
        if self.starvation_threshold is not None and jobs:
            starving = self._starving(now)
            if starving:
                marked = set(starving)
                jobs = starving + [j for j in jobs if j not in marked]
        return jobs

    def in_queue_order(self, jobs: list, now: float) -> list:
        """Some queued ``jobs`` (a pass's new arrivals) sorted in the order ``ordered`` gives
        them: O(k log k) for k jobs with a static policy, a read of the queue with a dynamic one."""
        if len(jobs) < 2:
            return list(jobs)
        if self._sorted is None:
            rank = {job: i for i, job in enumerate(self.ordered(now))}
            return sorted(jobs, key=rank.__getitem__)
        if self.starvation_threshold is None:
            return sorted(jobs, key=self._keys.__getitem__)
        bound = self._starving_bound(now)  # starving jobs first, in arrival order
        number = self._arrival_no
        return sorted(jobs, key=lambda job: (0, number[job]) if number[job] < bound else (1, self._keys[job]))

    def smallest_request(self) -> int | float:
        """The fewest cores any queued job requests (inf when empty): with fewer free,
        no queued job can start, and a backfilling pass can stop."""
        return self._by_size.keys()[0] if self._by_size else INF

    def shortest_by_size(self, max_res: int, exclude=None):
        """``(res, shortest estimate)`` for each requested size up to ``max_res``, smallest
        size first, leaving out ``exclude`` (estimates as when the jobs were queued: they
        change only while jobs run). What a backfilling pass can know without reading the queue:
        if no size fits before the shadow time with its shortest estimate, and none fits in the
        extra cores, nothing can be backfilled and the pass stops."""
        by_size, seq = self._by_size, None if exclude is None else exclude.seq
        for res in by_size.irange(maximum=max_res):
            sized = by_size[res]
            first = sized[0]  # (a SortedList's first items: no slice to build, the queue's hot path)
            if first[1] != seq:
                yield res, first[0]
            elif len(sized) > 1:
                yield res, sized[1][0]

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
            yield from (job for _, job in _read_lazily(self._sorted))
            return
        by_size = self._indexes["queue"][1]
        readers = [_read_index(by_size[res]) for res in sizes if res in by_size]
        yield from (job for _, job in heapq.merge(*readers))

    def fit_search(self, now: float, order: str = "queue"):
        """A `FitSearch` over the jobs in the order a backfilling pass reads them
        (``queue``: the queue order; or the name of the ``backfill_policy``), or None when
        that order is not indexed (a dynamic policy: loop over ``ordered(now)`` instead).

        ``search.next(max_res, limits, exclude)`` returns the first job, in that order, that
        requests at most ``max_res`` cores and whose estimate is within its size's limit;
        ``limits`` is a staircase ``[(n, limit), ...]`` (``n`` increasing: sizes up to ``n``
        may run ``limit`` seconds). For EASY with a head reserved at shadow time ``S`` and
        ``extra`` cores free even then, at ``now`` with ``free`` cores:
        ``[(extra, inf), (free, S - now)]`` (a job on the extra cores may run any time, one
        on the others must end by ``S``). Start the job it returns (the limits only shrink
        during a pass), or ``search.reject(job)`` when it does not fit after all; ``exclude``
        (the head) is never returned."""
        if order != "queue":
            streams = [(self._indexes[order][1], None)]
        elif self._sorted is None:
            return None
        else:
            streams = [(self._indexes["queue"][1], None)]
            if self.starvation_threshold is not None and self._by_arrival:
                bound = self._starving_bound(now)
                if bound != self._arrival_no[next(iter(self._by_arrival))]:
                    streams.insert(0, (self._indexes["arrival"][1], bound))
        return FitSearch(self._by_arrival, self._by_size, streams)

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
        queued = self._by_arrival
        return next(job for job in self._dynamic_order(now) if job in queued)

    def _dynamic_order(self, now: float) -> list:
        """The jobs in a dynamic order at ``now`` (some may have left since): sorted once per
        instant, as a pass asks for the head and the order several times."""
        cache = self._dynamic_cache
        if cache is None or cache[0] != now:
            order = getattr(self.policy, "order", None)  # a policy may score the queue in one call
            if order is not None:
                jobs = order(list(self._by_arrival), now)
            else:
                key = self.policy.key
                jobs = sorted(self._by_arrival, key=lambda j: (key(j, now), j.seq))
            cache = self._dynamic_cache = (now, jobs)
        return cache[1]


class FitSearch:
    """One backfilling pass's search for "the first job, in the pass's order, that fits".

    The order is a sequence of *streams* (the starving jobs in arrival order, then the
    queue order), each indexed by size. ``next`` takes, per size, a limit on the
    estimate; limits may only decrease during the pass (starting jobs only takes cores
    away), so what was found once is where the next search of that size starts, and a
    job ``reject``-ed (it does not fit after all) is skipped, with every job before it of
    its size and stream, for the rest of the pass.
    """

    def __init__(self, queued, by_size, streams):
        self._queued = queued  # the queue's jobs (membership: a job found may have started)
        self._by_size = by_size  # the queue's res -> (estimate, seq) list: which sizes are queued
        self._streams = streams  # [(res -> MinIndex, bound on the keys or None)]
        self._after: dict = {}  # (stream, res) -> key of the last job known not to fit
        self._found: dict = {}  # (stream, res) -> (key, estimate, job) found by the last search
        self._last = None

    def next(self, max_res: int, limits: list, exclude=None):
        """The first job requesting at most ``max_res`` cores whose estimate is within its
        size's limit, leaving out ``exclude``; None if there is none. ``limits`` is a
        staircase ``[(n, limit), ...]``, ``n`` increasing: sizes above the previous ``n`` and
        up to this one have this limit (larger sizes: none fits)."""
        after, cache, queued = self._after, self._found, self._queued
        for s, (by_size, bound) in enumerate(self._streams):
            best = None
            steps = iter(limits)
            n_hi, limit = next(steps, (0, None))
            for res in self._by_size.irange(maximum=max_res):
                while res > n_hi:
                    n_hi, limit = next(steps, (INF, None))
                if limit is None:
                    break
                index = by_size.get(res)
                if index is None or index.min_value() > limit:
                    continue
                found = cache.get((s, res))
                if found is None or found[1] > limit or found[2] not in queued:
                    # what was found earlier no longer fits or has started: search on from it
                    start = after.get((s, res)) if found is None else found[0]
                    found = index.first(limit, start)
                    if found is not None and found[2] is exclude:  # never a candidate
                        found = index.first(limit, found[0])
                    if found is None:
                        cache.pop((s, res), None)
                        after[s, res] = start
                        continue
                    cache[s, res] = found
                if bound is not None and found[0] >= bound:
                    continue
                if best is None or found[0] < best[0]:
                    best = found
            if best is not None:
                self._last = s
                return best[2]
        return None

    def reject(self, job) -> None:
        """The job ``next`` just returned does not fit after all: skip it from now on."""
        key = (self._last, job.res)
        self._after[key] = self._found.pop(key)[0]


def _read_index(index):
    """``(key, job)`` of a MinIndex in key order, robust to removals of entries already read."""
    key = None
    while True:
        found = index.first(INF, key)
        if found is None:
            return
        key = found[0]
        yield key, found[2]


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
