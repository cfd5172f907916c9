"""``CoreProfile``: batsched's model of the availability profile, each slice holding the specific
free cores (see ``profile.py`` for the slices both models share)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from ..protocol.coreset import lowest_bits
from .profile import Profile


class CoreProfile(Profile):
    """Specific cores (bitmasks): batsched's availability profile.

    Each slice also keeps its number of free cores (``counts``, the mask's popcount): a
    popcount and an intersection read every word of a mask, i.e. cost in proportion to
    the machine, so the searches compare counts first and intersect only the masks of a
    window whose every slice has enough free cores (a necessary condition: the cores
    free throughout a window are at most the fewest free in one of its slices)."""

    def __init__(self, nb_cores: int, now: float = 0.0):
        super().__init__(nb_cores, now)
        self.counts = [nb_cores]  # free cores per slice: ``free[k].bit_count()``

    def _columns(self) -> tuple:
        return self.free, self.counts

    def _free_throughout(self) -> list:
        """For each slice k, how many cores are free in every slice from now to k. Later
        slices mostly free more cores (jobs end), so the common cores rarely shrink: only
        the cores lost are counted (their popcount reads only up to the highest lost core)."""
        free = self.free
        common, fewest, out = free[0], self.counts[0], []
        for k in range(len(free)):
            if k and common:
                kept = common & free[k]
                if kept != common:
                    fewest -= (common ^ kept).bit_count()
                    common = kept
            out.append(fewest)
        return out

    def _full(self):
        return (1 << self.nb_cores) - 1

    def available_now(self) -> int:
        return self.counts[0]

    def _take(self, i, j, used):
        free, counts = self.free, self.counts
        keep, size = ~used, used.bit_count()
        for k in range(i, j):
            had = free[k]
            free[k] = had & keep
            # a popcount costs ten intersections: count only when not all of ``used`` was free
            counts[k] = counts[k] - size if had & used == used else free[k].bit_count()

    def _give_back(self, i, j, used):
        free, counts = self.free, self.counts
        size = used.bit_count()
        for k in range(i, j):
            had = free[k]
            free[k] = had | used
            counts[k] = counts[k] + size if not had & used else free[k].bit_count()

    def _find(self, n: int, duration: float, first_only: bool = False, *, starts: int | None = None,
              own: int = 0, own_size: int = 0):
        """``(i, cores)``: the first slice ``i`` from which ``n`` cores stay free for ``duration``,
        and the lowest-numbered such cores. Only the first ``starts`` slices may begin the window
        (default all, 1 with ``first_only``); from slice ``starts`` on, the cores of ``own`` (a
        reservation being re-planned, ``own_size`` cores) count as free too.

        Each start is tried as the definition says, but what is known to fail is skipped:
        the counts rule out a window that meets a slice with fewer than ``n`` free (counting
        ``own``'s cores as free there from ``starts`` on: an upper bound), and every start up
        to that slice with it (their windows reach it too), as ``CountProfile._first_window``
        does. A window that passes is intersected (``_Windows``); if its cores are too
        fragmented, so is every later start whose window holds the failing tail."""
        times, counts = self.times, self.counts
        last = len(times)
        stop = (1 if first_only else last) if starts is None else starts
        windows = _Windows(self.free, stop, own)
        i = passed = 0  # the slices after a start and before ``passed`` have been counted
        while i < stop:
            if counts[i] < n:
                i += 1
                continue
            end = (self.origin if i == 0 else times[i]) + duration
            k = max(i + 1, passed)  # a later start's window holds the previous one's end
            while k < last and times[k] < end:
                if counts[k] + (own_size if k >= stop else 0) < n:
                    break
                k += 1
            else:
                passed = k
                common = windows.common(i, k)
                size = common.bit_count()
                if size >= n:
                    return i, lowest_bits(common, n, size)
                i = windows.after_failing(i, n)
                continue
            i = k + 1
        return None

    def reinsertion(self, job, duration: float):
        """None when removing ``job`` (a future reservation for ``duration``) and calling
        ``add_first_fit`` would give back the same start and cores, else ``(start, cores)``
        it would get, without touching the profile: in the slices of its reservation, the
        job's own cores count as free. A job that cannot start earlier may still take
        lower-numbered cores freed since it was placed."""
        placed = self.placed[job]
        start, own = placed.start, placed.used
        if start <= self.origin or placed.end != start + duration:
            raise ValueError("reinsertion needs a future reservation of the same duration")
        times, free, n = self.times, self.free, job.res
        own_size = own.bit_count()
        # a window starting in a slice that begins before the reservation
        earlier = self._find(n, duration, starts=bisect_left(times, start), own=own, own_size=own_size)
        if earlier is not None:
            i, used = earlier
            return (self.origin if i == 0 else times[i]), used
        first = bisect_right(times, start) - 1  # the slice where the reservation begins
        stop = bisect_left(times, placed.end, first + 1)
        if own_size == n:
            # it keeps its cores unless a core below its highest is free (apart from its
            # own) throughout: intersect only that low part, stop once it is empty
            lower = ((1 << own.bit_length()) - 1) & ~own
            for k in range(first, stop):
                if not self.counts[k]:
                    return None
                lower &= free[k]
                if not lower:
                    return None
        avail = free[first] | own
        for k in range(first + 1, stop):
            avail &= free[k] | own
        used = lowest_bits(avail, n)
        return None if used == own else (start, used)


class _Windows:
    """The cores free throughout windows ``[i, k)`` of slices whose both ends only move
    forward (a search's successive windows), by the two-stack queue: the intersections
    from each start ``j`` to ``split`` are kept (``_suffix``), and the slices from ``split``
    to the current end are folded into one mask (``_tail``). Each slice is intersected about
    twice per search instead of once per window holding it. From slice ``stop`` on, the
    cores of ``own`` count as free too (``CoreProfile._find``)."""

    __slots__ = ("_free", "_stop", "_own", "_base", "_split", "_end", "_suffix", "_tail")

    def __init__(self, free: list, stop: int, own: int):
        self._free, self._stop, self._own = free, stop, own
        self._base = self._split = self._end = 0
        self._suffix: list = []  # _suffix[j - _base]: cores free in slices j .. split-1
        self._tail = -1  # cores free in slices split .. end-1 (all: none yet)

    def common(self, i: int, k: int) -> int:
        """The cores free in every slice of ``[i, k)`` (``i`` and ``k`` at least the last call's)."""
        free, stop, own = self._free, self._stop, self._own
        if i >= self._split:  # nothing kept for this start: fold [i, k) backwards
            suffix, common = [], -1
            for m in range(k - 1, i - 1, -1):
                common &= free[m] if m < stop else free[m] | own
                suffix.append(common)
            suffix.reverse()
            self._base, self._split, self._end, self._suffix, self._tail = i, k, k, suffix, -1
            return common
        tail = self._tail
        for m in range(self._end, k):
            tail &= free[m] if m < stop else free[m] | own
        self._end, self._tail = max(self._end, k), tail
        return self._suffix[i - self._base] & tail

    def after_failing(self, i: int, n: int) -> int:
        """The next start worth trying after ``[i, end)`` (the last ``common``) holds fewer than
        ``n`` common cores: a start ``j`` whose ``[j, end)`` holds fewer fails too, as its
        window contains that one; the largest such ``j`` is found by bisection (the kept
        intersections only grow with ``j``)."""
        suffix, base, tail = self._suffix, self._base, self._tail
        lo, hi = i, self._split - 1  # [lo, end) fails; find the last failing start up to hi
        if (suffix[hi - base] & tail).bit_count() < n:
            return hi + 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if (suffix[mid - base] & tail).bit_count() < n:
                lo = mid
            else:
                hi = mid
        return lo + 1
