"""Searches of the compiled pass: the first window of free cores for a job (``first_window``),
passing over whole blocks with their run caches (``block_runs``, ``compact_block``)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .blocks import locate
from .layout import BMAX, CNT, COUNTERS, ORDER, SLACK, SPLIT, STAMP, USED, VERSION, WALK


@njit(cache=True, nogil=True)
def block_runs(T, F, B, inner, suffix_start, level, thresholds, left, stack, b):
    """``inner[b, level]``: the longest time a level's threshold of free cores lasts from
    a slice of block ``b`` until a slice of the block with fewer, or until its last slice
    begins. All levels in one pass: the stretch around each slice in which it has the
    fewest free cores (a stack of slices with increasing free cores; ``left``: where
    each slice's stretch begins), then the longest stretch at or above each level. Only
    the levels up to the block's most free cores: above, no slice has enough (callers check
    ``B[BMAX]`` first)."""
    # one block's rows as 1-D views: numba indexes them faster than the 2-D arrays (0.76 -> 0.46 us per call);
    # max() rather than ifs: stores without a branch that the data decides (6-8% of a pass)
    c = B[CNT, b]
    Tb = T[b]
    Fb = F[b]
    ib = inner[b]
    nlevels = 0
    for k in range(c):
        nlevels = max(nlevels, level[Fb[k]])
    nlevels += 1
    for lv in range(nlevels):
        ib[lv] = 0.0
    top = 0
    last = Tb[c - 1]
    for k in range(c + 1):
        f = Fb[k] if k < c else -1
        tk = Tb[k] if k < c else last
        while top > 0:
            j = stack[top - 1]
            fj = Fb[j]
            if fj <= f:
                break
            top -= 1
            duration = tk - Tb[left[j]]
            lv = level[fj]
            ib[lv] = max(ib[lv], duration)
        if top > 0 and Fb[stack[top - 1]] == f:
            left[k] = left[stack[top - 1]]
        else:
            left[k] = stack[top - 1] + 1 if top > 0 else 0
        stack[top] = k
        top += 1
    running = 0.0
    for lv in range(nlevels - 1, -1, -1):
        running = max(running, ib[lv])
        ib[lv] = running
    # where the last stretch of each level begins (inf: the block ends with too few cores).
    # Where the first one ends is read from the slices when needed (``first_window``): the
    # stretch then runs from the block's first slice, and few searches follow one.
    ss = suffix_start[b]
    top = nlevels - 1
    for k in range(c - 1, -1, -1):
        f = Fb[k]
        while top >= 0 and thresholds[top] > f:
            ss[top] = Tb[k + 1] if k + 1 < c else math.inf
            top -= 1
    for lv in range(top + 1):
        ss[lv] = Tb[0]


@njit(cache=True, nogil=True)
def compact_block(T, F, B, b):
    """Merge the equal neighbouring slices of block ``b``, before its runs are recomputed.
    A move leaves its old start and end as boundaries between equal slices (half the
    slices by the end of a pass, when nothing merges them): the searches, moves and run
    caches then read twice as many. Merging never changes a first fit (see the module's
    docstring), and a block's first slice stays."""
    Tb = T[b]
    Fb = F[b]
    c = B[CNT, b]
    w = 1
    for k in range(1, c):
        if Fb[k] != Fb[w - 1]:
            Tb[w] = Tb[k]
            Fb[w] = Fb[k]
            w += 1
    B[CNT, b] = w


@njit(cache=True, nogil=True)
def first_window(T, F, B, bfirst, inner, suffix_start, level, thresholds, left, stack, n, duration,
                 not_before, stop):
    """``CountProfile._first_window`` by times: the first slice starting at or after
    ``not_before`` and before ``stop`` from which ``n`` cores are free for ``duration``
    (slices from ``stop`` on are known to fit). Returns ``(start, longest, position,
    index)``, start NaN when none; ``longest`` bounds the stretches of ``n`` free cores
    from the starts tried.

    A block is passed over without reading its slices when none has ``n`` free cores, or
    when no stretch of ``n`` free cores from one of its slices lasts ``duration``: those
    that end inside the block (``block_runs``), and the one that goes on into the next blocks."""
    origin = T[B[ORDER, 0], 0]
    nb = B[COUNTERS, USED]
    if not_before > origin:
        pos, idx = locate(T, B, bfirst, not_before)
        if T[B[ORDER, pos], idx] < not_before:  # bisect_left: the first slice at or after
            idx += 1
            if idx == B[CNT, B[ORDER, pos]]:
                pos += 1
                idx = 0
    else:
        pos, idx = 0, 0
    longest = 0.0
    lv = level[n]
    thr = thresholds[lv]
    one, end, ulv = np.uint64(1), np.uint64(nb), np.uint64(lv)
    while pos < nb:
        if idx == 0 and B[COUNTERS, SPLIT] == 0:
            # The usual walk: pass over the blocks without ``n`` free cores, and the clean ones
            # whose runs (with the last stretch, when it ends at the next block's first slice)
            # are too short; only while no block has split in the pass, so that a block's
            # position is its id. Two thirds of a search's blocks come through here, so it is
            # written for the machine: one data-dependent branch per block, and unsigned
            # indices, for which numba leaves out its check for negative ones (10% of a
            # mid-burst pass, measured). Here rather than in a function of its own: numba counts
            # the references of a function's arrays at each call (a tenth of the pass, measured).
            p = np.uint64(pos)
            q = p + one
            while q < end:
                following = bfirst[q]
                if following > stop:
                    break
                if B[BMAX, p] < n:
                    p = q
                    q = q + one
                    continue
                runs, begin = inner[p, ulv], suffix_start[p, ulv]
                runs = max(runs, following - begin)  # -inf when the block ends with too few cores
                ruled_out = ((runs * (1 + 1e-12) + SLACK < duration) & (B[STAMP, p] == B[VERSION, p])
                             & ((begin == math.inf) | ((F[q, np.uint64(0)] < thr) & (following < stop))))
                if not ruled_out:
                    break
                longest = max(longest, runs)
                p = q
                q = q + one
            pos = np.int64(p)
        b = B[ORDER, pos]
        c = B[CNT, b]
        if B[BMAX, b] < n:  # no slice of this block can start a window
            pos += 1
            idx = 0
            continue
        if pos + 1 < nb and bfirst[pos + 1] <= stop:
            if B[STAMP, b] != B[VERSION, b]:
                if idx == 0:  # (a search that begins inside the block keeps its slice index)
                    compact_block(T, F, B, b)
                    c = B[CNT, b]
                block_runs(T, F, B, inner, suffix_start, level, thresholds, left, stack, b)
                B[STAMP, b] = B[VERSION, b]
            runs, begin = inner[b, lv], suffix_start[b, lv]
            if begin != math.inf:  # the last stretch goes on into the next blocks: where does it end?
                ends = math.inf
                for later in range(pos + 1, min(pos + 1 + WALK, nb)):
                    b2 = B[ORDER, later]
                    if B[BMAX, b2] < thr:  # no slice has enough: the stretch ends here
                        ends = T[b2, 0]
                        break
                    c2 = B[CNT, b2]  # the stretch ends at the block's first slice with too few cores
                    k = 0
                    while k < c2 and F[b2, k] >= thr:
                        k += 1
                    if k < c2:
                        ends = T[b2, k]
                        break
                runs = max(runs, ends - begin) if ends < stop else math.inf
            # every stretch starting here is too short (with NoFitBefore's slack: ``a - b < d``
            # may round differently from ``b + d > a``)
            if runs * (1 + 1e-12) + SLACK < duration:
                if runs > longest:
                    longest = runs
                pos += 1
                idx = 0
                continue
        while idx < c and F[b, idx] < n:
            idx += 1
        if idx == c:
            pos += 1
            idx = 0
            continue
        start = T[b, idx]
        if start >= stop:
            break
        end = start + duration
        kpos, kidx = pos, idx + 1
        fits = True
        tk = math.inf
        while kpos < nb:
            kb = B[ORDER, kpos]
            if kidx == B[CNT, kb]:
                kpos += 1
                kidx = 0
                continue
            tk = T[kb, kidx]
            if tk >= stop or tk >= end:
                break
            if F[kb, kidx] < n:
                fits = False
                break
            kidx += 1
        if fits:
            return start, longest, pos, idx
        if tk - start > longest:
            longest = tk - start
        pos, idx = kpos, kidx + 1
        if idx == B[CNT, B[ORDER, pos]]:
            pos += 1
            idx = 0
    return math.nan, longest, -1, -1
