"""The compiled pass: build the blocks from the profile's slices, re-place every candidate in
queue order, flatten the blocks back into slices."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .blocks import add_free, block_changed, move_reservation
from .bounds import bounds_freed, bounds_lowest_start, bounds_note
from .layout import ALLOCATED, BLOCK, CNT, COUNTERS, FILL, KEPT, ORDER, ROWS, STAMP, USED
from .search import first_window

@njit(cache=True, nogil=True)
def build_profile(times, free, spare, level, thresholds):
    """The blocks of a profile, ``FILL`` slices each, with room for ``spare`` more slices."""
    length = len(times)
    half = FILL
    nbmax = length // FILL + spare // (BLOCK // 2) + 4
    T = np.empty((nbmax, BLOCK))
    F = np.empty((nbmax, BLOCK), dtype=np.int64)
    B = np.zeros((ROWS, nbmax), dtype=np.int64)
    B[STAMP] = -1
    bfirst = np.empty(nbmax)
    inner = np.empty((nbmax, len(thresholds)))
    suffix_start = np.empty((nbmax, len(thresholds)))
    nb = (length + half - 1) // half
    B[COUNTERS, USED] = nb
    B[COUNTERS, ALLOCATED] = nb
    scratch = np.empty(BLOCK + 1, dtype=np.int64), np.empty(BLOCK + 1, dtype=np.int64)
    P = (T, F, B, bfirst, inner, suffix_start, level, thresholds) + scratch
    for b in range(nb):
        lo = b * half
        hi = min(lo + half, length)
        for k in range(lo, hi):
            T[b, k - lo] = times[k]
            F[b, k - lo] = free[k]
        B[CNT, b] = hi - lo
        block_changed(F, B, b)
        B[ORDER, b] = b
        bfirst[b] = T[b, 0]
    return P


@njit(cache=True, nogil=True)
def run_pass(times, free, level, thresholds, seqs, rstart, rend, rn, rspan, started, started_end):
    """One pass over the candidates ``seqs`` in queue order (see ``ConservativeBackfilling``).
    Updates the reservations in place, writes the candidates started now (their indices in
    ``seqs``) and their planned ends into ``started``/``started_end``; returns ``(times,
    free, number started, earliest reservation start, earliest reservation end)``."""
    P = build_profile(times, free, 8 * len(seqs) + 8, level, thresholds)  # a candidate splits 8 slices at most
    bounds = np.zeros((3, KEPT))  # NoFitBefore: cores, stretch, start
    firsts = np.empty(3)  # number started, earliest reservation start and end
    _candidates(*P, bounds, seqs, rstart, rend, rn, rspan, started, started_end, firsts)
    out_times, out_free = flatten(P)
    return out_times, out_free, int(firsts[0]), firsts[1], firsts[2]


@njit(cache=True, nogil=True)
def _candidates(T, F, B, bfirst, inner, suffix_start, level, thresholds, left, stack, bounds, seqs, rstart, rend,
                rn, rspan, started, started_end, firsts):
    """The loop of ``run_pass``."""
    now = T[B[ORDER, 0], 0]
    bn, bd, bx = bounds[0], bounds[1], bounds[2]
    m = 0
    nstarted = 0
    first_start, first_end = math.inf, math.inf
    for q in range(len(seqs)):
        s = seqs[q]
        n, span = rn[s], rspan[s]
        res_start, res_end = rstart[s], rend[s]
        reserved = not math.isnan(res_start)
        if reserved and res_start > now and res_end == res_start + span:
            lowest, shortest = bounds_lowest_start(bn, bd, bx, m, n, span, res_start)
            start, longest, pos, idx = first_window(T, F, B, bfirst, inner, suffix_start, level, thresholds,
                                                    left, stack, n, span, lowest, res_start)
            if math.isnan(start):
                m = bounds_note(bn, bd, bx, m, n, max(shortest, longest), res_start)
                first_start = min(first_start, res_start)
                first_end = min(first_end, res_end)
                continue
            end = start + span
            vacated = max(res_start, end)
            most, vpos, vidx = move_reservation(T, F, B, bfirst, pos, idx, n, start, end, res_start, res_end)
            if vacated < res_end:
                bounds_freed(T, F, B, bfirst, bn, bd, bx, m, vacated, most, vpos, vidx)
            m = bounds_note(bn, bd, bx, m, n, max(shortest, longest), start)
        else:
            if reserved:
                bounds_freed(T, F, B, bfirst, bn, bd, bx, m, res_start, math.inf, -1, -1)
                add_free(T, F, B, bfirst, res_start, res_end, n)
            start, _, _, _ = first_window(T, F, B, bfirst, inner, suffix_start, level, thresholds, left, stack,
                                          n, span, -math.inf, math.inf)
            end = start + span
            add_free(T, F, B, bfirst, start, end, -n)
        if start > now and reserved and res_start <= now < res_end:
            # a reservation that has begun starts now, on its own span (see conservative.py)
            add_free(T, F, B, bfirst, start, end, n)
            start, end = now, res_end
            add_free(T, F, B, bfirst, start, end, -n)
        if start <= now:
            started[nstarted] = q
            started_end[nstarted] = end
            nstarted += 1
            rstart[s] = math.nan
            rend[s] = math.nan
        else:
            rstart[s] = start
            rend[s] = end
            first_start = min(first_start, start)
            first_end = min(first_end, end)
    firsts[0], firsts[1], firsts[2] = nstarted, first_start, first_end


@njit(cache=True, nogil=True)
def flatten(P):
    """The blocks as one profile, equal neighbouring slices merged."""
    T, F, B = P[0], P[1], P[2]
    total = 0
    for p in range(B[COUNTERS, USED]):
        total += B[CNT, B[ORDER, p]]
    times = np.empty(total)
    free = np.empty(total, dtype=np.int64)
    length = 0
    for p in range(B[COUNTERS, USED]):
        b = B[ORDER, p]
        for k in range(B[CNT, b]):
            if length > 0 and F[b, k] == free[length - 1]:
                continue
            times[length] = T[b, k]
            free[length] = F[b, k]
            length += 1
    return times[:length], free[:length]
