"""Availability profiles: what is free from now on, given running jobs and reservations.

The profile is a list of consecutive time slices ``[times[i], times[i+1])``
(the last one is unbounded), each with what is free during it. Two models:

* ``CoreProfile`` (``core_profile.py``) — batsched's model: each slice holds the *specific* free cores
  (an int bitmask) and a job placed in the profile pins the lowest-id cores free
  over its whole duration. Reproduces batsched's ``Schedule``.
* ``CountProfile`` — the textbook model of the papers (Mu'alem & Feitelson): a
  slice holds only a *number* of free cores. With EASY it gives exactly the
  classic shadow-time / extra-cores rule.

``first_fit`` finds the earliest slice start where a job fits for its whole
estimated duration; ``started_now`` tells whether that is the present.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from itertools import count


INF = float("inf")


class Placement:
    __slots__ = ("start", "end", "used", "started_now")

    def __init__(self, start, end, used, started_now):
        self.start = start
        self.end = end
        self.used = used  # bitmask (CoreProfile) or core count (CountProfile)
        self.started_now = started_now


class Profile:
    """Slice bookkeeping shared by both models; subclasses define the resource algebra."""

    def __init__(self, nb_cores: int, now: float = 0.0):
        self.nb_cores = nb_cores
        self.times = [now]
        self.free = [self._full()]
        self.placed: dict = {}  # job -> Placement
        self.origin = now  # the present: start of the first slice
        self._ends: list = []  # heap of (end, tie, job, placement): finds overdue jobs cheaply
        self._tie = count()

    # -- resource algebra (overridden)
    def _full(self):
        raise NotImplementedError

    # -- slices
    def _columns(self) -> tuple:
        """The lists holding one entry per slice besides ``times``, kept in step."""
        return (self.free,)

    def _split(self, t: float) -> int:
        """Ensure a slice starts at ``t``; return its index."""
        i = bisect_right(self.times, t) - 1
        if self.times[i] == t:
            return i
        self.times.insert(i + 1, t)
        for column in self._columns():
            column.insert(i + 1, column[i])
        return i + 1

    def _merge_around(self, lo: int, hi: int) -> None:
        """Merge equal neighbouring slices in index range [lo, hi] (batsched merges on removal)."""
        times, free, columns = self.times, self.free, self._columns()
        i = min(hi, len(times) - 1)
        lo = max(lo, 1)
        while i >= lo:
            if free[i] == free[i - 1]:
                del times[i]
                for column in columns:
                    del column[i]
            i -= 1

    def update_first_slice(self, now: float) -> None:
        """Move the present to ``now``; slices entirely in the past disappear.

        Jobs that outlived their planned end must have been re-placed first
        (see ``overdue``), so nothing placed spans a dropped slice.
        """
        self.origin = now
        times = self.times
        past = bisect_right(times, now, 1) - 1  # slices entirely in the past
        if past > 0:
            del times[:past]
            for column in self._columns():
                del column[:past]
        times[0] = now

    def overdue(self, now: float) -> list:
        """Placed jobs whose planned end is not after ``now``."""
        ends, placed, late = self._ends, self.placed, []
        while ends and ends[0][0] <= now:
            _, _, job, placement = heapq.heappop(ends)
            if placed.get(job) is placement:
                late.append(job)
        return late

    def __contains__(self, job) -> bool:
        return job in self.placed

    def remove(self, job) -> None:
        self.release(self.placed.pop(job))

    def release(self, p: Placement) -> None:
        """Give back what ``p`` holds from now on."""
        if p.end <= self.times[0]:
            return  # entirely in the past: nothing left to give back
        # Splitting re-creates a boundary a merge may have folded away.
        i = self._split(p.start) if p.start > self.times[0] else 0
        j = self._split(p.end) if p.end != INF else len(self.times)
        self._give_back(i, j, self._held(p))
        self._merge_around(i, j + 1)

    def _held(self, p: Placement):
        """The cores ``p`` holds, in the form ``_give_back`` takes (its ``used``)."""
        return p.used

    def remove_if_present(self, job) -> None:
        if job in self.placed:
            self.remove(job)

    def _place_at(self, job, i: int, end: float, used) -> Placement:
        start = self.times[i]
        j = self._split(end) if end != INF else len(self.times)
        self._take(i, j, used)
        return self._register(job, Placement(start, end, used, i == 0))

    def adopt(self, job, start: float, end: float, used) -> Placement:
        """Record a placement whose cores the caller already took from the slices (the
        compiled compression pass works on the slices directly)."""
        return self._register(job, Placement(start, end, used, start <= self.origin))

    def _register(self, job, p: Placement) -> Placement:
        self.placed[job] = p
        if p.end != INF:
            ends = self._ends
            heapq.heappush(ends, (p.end, next(self._tie), job, p))
            if len(ends) > 2 * len(self.placed) + 64:
                # entries of placements removed since (EASY re-places its priority job at
                # every pass) would otherwise stay until their end passes: drop them
                ends[:] = [e for e in ends if self.placed.get(e[2]) is e[3]]
                heapq.heapify(ends)
        return p

    def place(self, job, start: float, end: float, used) -> Placement:
        """Reserve ``used`` from ``start`` (the present or later) to ``end``."""
        i = 0 if start <= self.origin else self._split(start)
        return self._place_at(job, i, end, used)

    def move(self, job, start: float, end: float, used) -> Placement:
        """Re-place ``job``'s reservation: ``remove`` then ``place``."""
        self.remove(job)
        return self.place(job, start, end, used)

    def add_first_fit(self, job, duration: float) -> Placement | None:
        """Place ``job`` (``job.res`` cores for ``duration``) at the earliest fitting slice."""
        found = self._find(job.res, duration)
        if found is None:
            return None
        i, used = found
        start = self.origin if i == 0 else self.times[i]
        return self._place_at(job, i, start + duration, used)

    def fits_now(self, job, duration: float):
        """What ``add_first_fit`` would allocate if the job can start now, else None."""
        found = self._find(job.res, duration, first_only=True)
        return None if found is None else found[1]

    def available_now(self) -> int:
        raise NotImplementedError

    def _slice_starts(self) -> list:
        """``times`` as a list of Python floats."""
        return self.times

    def horizons(self):
        """A function ``n -> t``: until when at least ``n`` cores are counted free from now
        on (``origin`` if not now; inf if ever after). A job of ``n`` cores, ``n`` at most
        ``available_now()``, fits now exactly when its planned end is not later (``_find``
        checks the slices that begin before the end)."""
        times = self._slice_starts()
        bounds = [-n for n in self._free_throughout()]  # -(cores free from now to slice k)
        def horizon(n: int) -> float:
            k = bisect_right(bounds, -n)  # first slice with fewer than n free so far
            if k == 0:
                return self.origin
            return times[k] if k < len(times) else INF
        return horizon

    def horizon_steps(self) -> list:
        """``horizons`` as a staircase ``[(n, t), ...]``, ``n`` increasing: for sizes above the
        previous step's ``n`` and up to this one, the horizon is ``t``."""
        counts, times = self._free_throughout(), self._slice_starts()
        last = len(counts) - 1
        steps = [(counts[last], INF)] if counts[last] > 0 else []
        for k in range(last, 0, -1):
            if counts[k - 1] > counts[k]:
                steps.append((counts[k - 1], times[k]))
        return steps


class CountProfile(Profile):
    """Core counts only: the classic model of the EASY papers."""

    def _free_throughout(self) -> list:
        """For each slice k, how many cores are free in every slice from now to k."""
        least, out = self.free[0], []
        for free in self.free:
            if free < least:
                least = free
            out.append(least)
        return out

    def _full(self):
        return self.nb_cores

    def available_now(self) -> int:
        return self.free[0]

    def _take(self, i, j, used):
        free = self.free
        for k in range(i, j):
            free[k] -= used

    def _give_back(self, i, j, used):
        free = self.free
        for k in range(i, j):
            free[k] += used

    def _find(self, n: int, duration: float, first_only: bool = False):
        i, _ = self._first_window(n, duration, 1 if first_only else len(self.times), len(self.times))
        return None if i is None else (i, n)

    def _first_window(self, n: int, duration: float, stop: int, limit: int, first: int = 0):
        """``(i, longest)``: the first slice ``first <= i < stop`` from which ``n`` cores are
        free for ``duration`` (None if none), checking only the slices before ``limit``
        (those from ``limit`` on are known to fit); ``longest``: the longest time ``n`` cores
        stay free from a start tried before ``i`` (every one shorter than ``duration``).
        A window that meets a slice with fewer than ``n`` free fails for every start up to
        that slice too, so the search resumes after it: each slice is read about once."""
        times, free = self.times, self.free
        longest, i = 0.0, first
        while i < stop:
            for i in range(i, stop):  # skip the slices with too few free cores
                if free[i] >= n:
                    break
            else:
                break
            start = self.origin if i == 0 else times[i]
            end = start + duration
            k = i + 1
            while k < limit and times[k] < end:
                if free[k] < n:
                    break
                k += 1
            else:
                return i, longest
            if times[k] - start > longest:
                longest = times[k] - start
            i = k + 1
        return None, longest

    def most_free(self, start: float, end: float) -> int:
        """The most cores free at any moment in ``[start, end)``."""
        times = self.times
        i = max(bisect_right(times, start) - 1, 0)
        return max(self.free[i:max(bisect_left(times, end), i + 1)])

    def earlier_fit(self, job, duration: float, not_before: float = -INF):
        """``(start, longest)``: where ``job``, placed in the future for ``duration``, would
        start if re-placed at its earliest fit: a slice start before its reservation (same
        cores, same duration), or None when its reservation is already its earliest fit;
        ``longest`` as in ``_first_window``. Equals removing the job and calling
        ``add_first_fit``, without touching the profile: a window that starts before the
        reservation ends within it, where the job's own cores are free.
        ``not_before``: the caller knows that no window starting earlier fits."""
        placed = self.placed[job]
        start = placed.start
        if start <= self.origin or placed.end != start + duration:
            raise ValueError("earlier_fit needs a future reservation of the same duration")
        times = self.times
        stop = bisect_left(times, start)  # slices that begin before the reservation
        first = bisect_left(times, not_before) if not_before > self.origin else 0
        i, longest = self._first_window(job.res, duration, stop, stop, first)
        return (None if i is None else (self.origin if i == 0 else times[i])), longest
