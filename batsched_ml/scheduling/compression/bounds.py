"""``NoFitBefore`` in the compiled pass: where a search may start, from what the pass's earlier
searches learnt (``bn``, ``bd``, ``bx``: each bound's cores, stretch and start; ``m`` of them)."""

from __future__ import annotations

import math

from numba import njit

from .blocks import locate
from .layout import CNT, KEPT, ORDER, SLACK, WALK

@njit(cache=True, nogil=True)
def run_start(T, F, B, pos, idx, a, n):
    """The start of the run of slices with ``n`` or more free cores that ends at ``a``
    (``a`` itself when the slice before ``a`` has fewer), or -inf after ``WALK`` slices;
    ``(pos, idx)``: the slice containing ``a``."""
    b = B[ORDER, pos]
    if T[b, idx] == a:  # the slice before ``a``
        idx -= 1
    start = a
    for _ in range(WALK):
        if idx < 0:
            if pos == 0:
                return start
            pos -= 1
            b = B[ORDER, pos]
            idx = B[CNT, b] - 1
        if F[b, idx] < n:
            return start
        start = T[b, idx]
        idx -= 1
    return -math.inf


@njit(cache=True, nogil=True)
def bounds_freed(T, F, B, bfirst, bn, bd, bx, m, a, most, pos, idx):
    """``NoFitBefore.freed``, sharper: a start before ``x`` whose stretch of ``n`` cores
    now reaches past ``a`` lies in the run of such slices that ends at ``a``, so the bound
    only moves back to that run's start (``a - d`` when the run is longer than ``WALK``).
    ``(pos, idx)``: the slice containing ``a`` if known (else -1)."""
    for k in range(m):
        if not (bn[k] > most or bx[k] + bd[k] <= a):
            if pos < 0:
                pos, idx = locate(T, B, bfirst, a)
            bound = max(a - bd[k] - SLACK, run_start(T, F, B, pos, idx, a, bn[k]))
            if bound < bx[k]:
                bx[k] = bound


@njit(cache=True, nogil=True)
def bounds_lowest_start(bn, bd, bx, m, n, d, reserved_from):
    """``NoFitBefore.lowest_start``, sharper: a bound learnt after the reservation's start
    still rules out the starts from which the job's window (up to its reservation) lasts
    ``d`` of the bound or longer: those before ``reserved_from - d``."""
    best, shortest = -math.inf, 0.0
    for k in range(m):
        if bn[k] <= n and bd[k] <= d:
            x = min(bx[k], reserved_from - bd[k] - SLACK)
            if x > best:
                best, shortest = x, bd[k]
    return best, shortest


@njit(cache=True, nogil=True)
def bounds_note(bn, bd, bx, m, n, longest, x):
    """Append a bound, dropping the oldest beyond ``KEPT``; returns the new count."""
    if m == KEPT:
        for k in range(1, KEPT):
            bn[k - 1], bd[k - 1], bx[k - 1] = bn[k], bd[k], bx[k]
        m -= 1
    bn[m] = n
    bd[m] = longest * (1 + 1e-12) + SLACK
    bx[m] = x
    return m + 1
