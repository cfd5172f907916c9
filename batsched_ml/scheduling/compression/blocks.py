"""Block operations of the compiled pass: locate a time, change free cores, split slices and blocks,
move a reservation (see ``layout`` for the arrays)."""

from __future__ import annotations

import math

from numba import njit

from .layout import ALLOCATED, BLOCK, BMAX, CLOCK, CNT, COUNTERS, ORDER, SPLIT, USED, VERSION

@njit(cache=True, nogil=True)
def locate(T, B, bfirst, t):
    """(position, index) of the slice containing ``t`` (the first slice if ``t`` precedes it)."""
    lo, hi = 0, B[COUNTERS, USED]
    while lo < hi:
        mid = (lo + hi) // 2
        if t < bfirst[mid]:
            hi = mid
        else:
            lo = mid + 1
    pos = lo - 1 if lo > 0 else 0
    b = B[ORDER, pos]
    lo, hi = 0, B[CNT, b]
    while lo < hi:
        mid = (lo + hi) // 2
        if t < T[b, mid]:
            hi = mid
        else:
            lo = mid + 1
    return pos, (lo - 1 if lo > 0 else 0)


@njit(cache=True, nogil=True)
def touch(B, b):
    """Block ``b`` changed: what ``block_runs`` knows of it is stale."""
    B[COUNTERS, CLOCK] += 1
    B[VERSION, b] = B[COUNTERS, CLOCK]


@njit(cache=True, nogil=True)
def block_changed(F, B, b):
    """Block ``b`` changed: recompute its most free cores; its runs are stale."""
    most = F[b, 0]
    for k in range(1, B[CNT, b]):
        if F[b, k] > most:
            most = F[b, k]
    B[BMAX, b] = most
    touch(B, b)


@njit(cache=True, nogil=True)
def change_free(F, B, b, idx, delta):
    """Add ``delta`` free cores to slice ``idx`` of block ``b``, keeping ``B[BMAX]`` exact."""
    old = F[b, idx]
    F[b, idx] = old + delta
    if delta > 0:
        if old + delta > B[BMAX, b]:
            B[BMAX, b] = old + delta
        touch(B, b)
    elif old == B[BMAX, b]:  # the slice that held the block's most free cores lost some
        block_changed(F, B, b)
    else:
        touch(B, b)


@njit(cache=True, nogil=True)
def split_block(T, F, B, bfirst, pos):
    """Move the upper half of the (full) block at ``pos`` into a new block after it."""
    b = B[ORDER, pos]
    nb, new = B[COUNTERS, USED], B[COUNTERS, ALLOCATED]
    half = BLOCK // 2
    for k in range(half, BLOCK):
        T[new, k - half] = T[b, k]
        F[new, k - half] = F[b, k]
    B[CNT, b] = half
    B[CNT, new] = BLOCK - half
    block_changed(F, B, b)
    block_changed(F, B, new)
    for p in range(nb, pos + 1, -1):
        B[ORDER, p] = B[ORDER, p - 1]
        bfirst[p] = bfirst[p - 1]
    B[ORDER, pos + 1] = new
    bfirst[pos + 1] = T[new, 0]
    B[COUNTERS, USED] = nb + 1
    B[COUNTERS, ALLOCATED] = new + 1
    B[COUNTERS, SPLIT] = 1  # positions and block ids differ from now on (see ``_clean_blocks``)


@njit(cache=True, nogil=True)
def split_at(T, F, B, bfirst, t):
    """Ensure a slice starts at ``t`` (not before the first slice)."""
    pos, idx = locate(T, B, bfirst, t)
    if T[B[ORDER, pos], idx] != t:
        insert_after(T, F, B, bfirst, pos, idx, t)


@njit(cache=True, nogil=True)
def add_free(T, F, B, bfirst, start, end, delta):
    """Add ``delta`` free cores over ``[start, end)`` (``start`` clipped to the present)."""
    origin = T[B[ORDER, 0], 0]
    if end <= origin:
        return
    if end != math.inf:
        split_at(T, F, B, bfirst, end)
    if start > origin:
        split_at(T, F, B, bfirst, start)
    pos, idx = locate(T, B, bfirst, start)
    nb = B[COUNTERS, USED]
    while pos < nb:
        b = B[ORDER, pos]
        c = B[CNT, b]
        while idx < c and T[b, idx] < end:
            change_free(F, B, b, idx, delta)
            idx += 1
        if idx < c:
            return
        pos += 1
        idx = 0


@njit(cache=True, nogil=True)
def insert_after(T, F, B, bfirst, pos, idx, t):
    """Split the slice at ``(pos, idx)`` at ``t`` (inside it); returns the slice's position,
    which moves when its block was full."""
    b = B[ORDER, pos]
    if B[CNT, b] == BLOCK:
        split_block(T, F, B, bfirst, pos)
        if idx >= BLOCK // 2:
            pos += 1
            idx -= BLOCK // 2
        b = B[ORDER, pos]
    c = B[CNT, b]
    for k in range(c, idx + 1, -1):
        T[b, k] = T[b, k - 1]
        F[b, k] = F[b, k - 1]
    T[b, idx + 1] = t
    F[b, idx + 1] = F[b, idx]
    B[CNT, b] = c + 1
    touch(B, b)
    return pos, idx


@njit(cache=True, nogil=True)
def move_reservation(T, F, B, bfirst, pos, idx, n, start, end, res_start, res_end):
    """Move a reservation of ``n`` cores from ``[res_start, res_end)`` to ``[start, end)``
    (``start`` earlier, at the slice ``(pos, idx)``) in one walk forward, splitting slices
    where the two spans begin or end. Returns the most cores then free in the part left,
    ``[max(res_start, end), res_end)``, and the position of its first slice (-1 if none)."""
    stop = max(end, res_end)
    vacated = max(res_start, end)
    most, vpos, vidx, blocks = -1, -1, -1, 0
    while pos < B[COUNTERS, USED]:  # a split may add a block
        nb = B[COUNTERS, USED]
        b = B[ORDER, pos]
        t = T[b, idx]
        if t >= stop:
            break
        if idx + 1 < B[CNT, b]:
            following = T[b, idx + 1]
        elif pos + 1 < nb:
            following = T[B[ORDER, pos + 1], 0]
        else:
            following = math.inf
        cut = math.inf  # the first boundary of the two spans inside this slice
        if t < end < following:
            cut = end
        if t < res_start < following and res_start < cut:
            cut = res_start
        if t < res_end < following and res_end < cut:
            cut = res_end
        if cut != math.inf:
            pos, idx = insert_after(T, F, B, bfirst, pos, idx, cut)
            b = B[ORDER, pos]
        delta = 0
        if start <= t < end:
            delta -= n
        if res_start <= t < res_end:
            delta += n
        if delta != 0:
            change_free(F, B, b, idx, delta)
        if vacated <= t < res_end:
            if vpos < 0:
                vpos, vidx, blocks = pos, idx, B[COUNTERS, USED]
            if F[b, idx] > most:
                most = F[b, idx]
        idx += 1
        if idx == B[CNT, b]:
            pos += 1
            idx = 0
    if vpos >= 0 and B[COUNTERS, USED] != blocks:  # a block split since: find the slice again
        vpos, vidx = locate(T, B, bfirst, vacated)
    return most, vpos, vidx
