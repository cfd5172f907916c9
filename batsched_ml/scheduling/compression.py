"""Conservative backfilling's compression pass for the counting model, compiled with numba.

A burst of n queued jobs makes n compressions, each of which moves most of the
queue a little (about 0.4 n^2 moves in all, issue 13 section 2): hours in Python
at n = 10,000. Here the whole pass runs on arrays, step for step as
``ConservativeBackfilling.schedule`` with ``CountProfile``, so the schedules are
the same (tests/test_compression.py runs both):

* Each job is re-placed at its first fit in queue order, with the same float
  operations. Where a search *starts* does not change what it finds, only what it
  costs: the ``NoFitBefore`` bounds here are sharper (a bound learnt after a job's
  reservation still rules out the starts before ``reservation - d``; freeing cores
  moves a bound back only to the start of the stretch that reaches the freed time).
* The profile is a list of blocks of slices (``FILL`` per block when the pass
  begins, at most ``BLOCK``), so that a split moves a few dozen entries.
* A search passes over a block without reading its slices when no slice has
  enough free cores (``bmax``), or when no stretch of enough free cores from one
  of its slices lasts the job's duration (``_runs``: per block and core-count
  level, cached until the block changes).
* Most of a search's blocks are passed over in ``_clean_blocks``, a loop written for the
  machine (one data-dependent branch per block, unsigned indices).
* A move is one walk from the new start to the old end (``_move``).
* Equal neighbouring slices are merged in a block when its run caches are recomputed
  (``_compact``), and all of them when the profile goes back to Python: a boundary
  inside a run of equal slices never starts a first fit that the run's first slice
  would not.

Queued jobs' reservations live in arrays indexed by ``Job.seq`` (start, end; NaN
when none), not in the profile's ``placed`` dict: a pass changes thousands of
them, and Python objects would cost more than the pass itself.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np

BLOCK = 128  # slices a block holds
FILL = 32  # slices per block when a pass begins (the rest: room for splits)
KEPT = 4  # NoFitBefore.KEPT
WALK = 32  # slices a sharpened bound reads back, blocks a search follows a stretch into
EXACT_LEVELS = 128  # core counts with a run cache of their own
SLACK = 1e-6  # NoFitBefore.SLACK

# numba is imported (0.3 s, and loading the cached kernels as much again) only when a
# pass first needs it: most runs never queue enough jobs (see ``ConservativeBackfilling``).
AVAILABLE = importlib.util.find_spec("numba") is not None
_ALLOCATING: list = []  # functions that allocate arrays (numba's reference-counted runtime)
_HELPERS: list = []  # functions that only read and write the arrays they are given
_COMPILED = False


def _compiled(function):
    _ALLOCATING.append(function.__name__)
    return function


def _helper(function):
    _HELPERS.append(function.__name__)
    return function


def _compile() -> None:
    """Replace the functions of the pass by numba's compiled versions (cached on disk),
    once. The helpers are compiled without the reference-counting runtime, whose atomic
    count updates for the arrays of every call were half the pass's time."""
    global _COMPILED
    if _COMPILED:
        return
    from numba import njit

    module = globals()
    for name in _ALLOCATING + _HELPERS:
        options = dict(cache=True, nogil=True)
        if name in _HELPERS:
            options["_nrt"] = False
        module[name] = njit(**options)(module[name])
    _COMPILED = True


# ---------------------------------------------------------------- blocks
# The profile P (built by ``_profile``): T, F: blocks x BLOCK slice start times and free
# cores; cnt: slices per block; bmax: most free cores of a block; order: block ids in time
# order; bfirst: first time of the block at each position; meta: [blocks in use, blocks
# allocated, clock]; version: the clock when a block last changed; inner, suffix_start:
# per block and core-count level, what ``_runs`` found, and stamp: the
# version it was computed at; level/thresholds: core count -> level -> smallest count of
# the level (``levels``); left, stack: scratch for ``_runs``.

@_helper
def _locate(T, cnt, order, bfirst, meta, t):
    """(position, index) of the slice containing ``t`` (the first slice if ``t`` precedes it)."""
    lo, hi = 0, meta[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if t < bfirst[mid]:
            hi = mid
        else:
            lo = mid + 1
    pos = lo - 1 if lo > 0 else 0
    b = order[pos]
    lo, hi = 0, cnt[b]
    while lo < hi:
        mid = (lo + hi) // 2
        if t < T[b, mid]:
            hi = mid
        else:
            lo = mid + 1
    return pos, (lo - 1 if lo > 0 else 0)


@_helper
def _touch(meta, version, b):
    """Block ``b`` changed: what ``_runs`` knows of it is stale."""
    meta[2] += 1
    version[b] = meta[2]


@_helper
def _changed(F, cnt, bmax, meta, version, b):
    """Block ``b`` changed: recompute its most free cores; its runs are stale."""
    most = F[b, 0]
    for k in range(1, cnt[b]):
        if F[b, k] > most:
            most = F[b, k]
    bmax[b] = most
    _touch(meta, version, b)


@_helper
def _change_free(F, cnt, bmax, meta, version, b, idx, delta):
    """Add ``delta`` free cores to slice ``idx`` of block ``b``, keeping ``bmax`` exact."""
    old = F[b, idx]
    F[b, idx] = old + delta
    if delta > 0:
        if old + delta > bmax[b]:
            bmax[b] = old + delta
        _touch(meta, version, b)
    elif old == bmax[b]:  # the slice that held the block's most free cores lost some
        _changed(F, cnt, bmax, meta, version, b)
    else:
        _touch(meta, version, b)


@_helper
def _split_block(T, F, cnt, bmax, order, bfirst, meta, version, pos):
    """Move the upper half of the (full) block at ``pos`` into a new block after it."""
    b = order[pos]
    nb, new = meta[0], meta[1]
    half = BLOCK // 2
    for k in range(half, BLOCK):
        T[new, k - half] = T[b, k]
        F[new, k - half] = F[b, k]
    cnt[b] = half
    cnt[new] = BLOCK - half
    _changed(F, cnt, bmax, meta, version, b)
    _changed(F, cnt, bmax, meta, version, new)
    for p in range(nb, pos + 1, -1):
        order[p] = order[p - 1]
        bfirst[p] = bfirst[p - 1]
    order[pos + 1] = new
    bfirst[pos + 1] = T[new, 0]
    meta[0] = nb + 1
    meta[1] = new + 1
    meta[3] = 1  # positions and block ids differ from now on (see ``_clean_blocks``)


@_helper
def _split(T, F, cnt, bmax, order, bfirst, meta, version, t):
    """Ensure a slice starts at ``t`` (not before the first slice)."""
    pos, idx = _locate(T, cnt, order, bfirst, meta, t)
    if T[order[pos], idx] != t:
        _insert_after(T, F, cnt, bmax, order, bfirst, meta, version, pos, idx, t)


@_helper
def _add(T, F, cnt, bmax, order, bfirst, meta, version, start, end, delta):
    """Add ``delta`` free cores over ``[start, end)`` (``start`` clipped to the present)."""
    origin = T[order[0], 0]
    if end <= origin:
        return
    if end != math.inf:
        _split(T, F, cnt, bmax, order, bfirst, meta, version, end)
    if start > origin:
        _split(T, F, cnt, bmax, order, bfirst, meta, version, start)
    pos, idx = _locate(T, cnt, order, bfirst, meta, start)
    nb = meta[0]
    while pos < nb:
        b = order[pos]
        c = cnt[b]
        while idx < c and T[b, idx] < end:
            _change_free(F, cnt, bmax, meta, version, b, idx, delta)
            idx += 1
        if idx < c:
            return
        pos += 1
        idx = 0


@_helper
def _insert_after(T, F, cnt, bmax, order, bfirst, meta, version, pos, idx, t):
    """Split the slice at ``(pos, idx)`` at ``t`` (inside it); returns the slice's position,
    which moves when its block was full."""
    b = order[pos]
    if cnt[b] == BLOCK:
        _split_block(T, F, cnt, bmax, order, bfirst, meta, version, pos)
        if idx >= BLOCK // 2:
            pos += 1
            idx -= BLOCK // 2
        b = order[pos]
    c = cnt[b]
    for k in range(c, idx + 1, -1):
        T[b, k] = T[b, k - 1]
        F[b, k] = F[b, k - 1]
    T[b, idx + 1] = t
    F[b, idx + 1] = F[b, idx]
    cnt[b] = c + 1
    _touch(meta, version, b)
    return pos, idx


@_helper
def _move(T, F, cnt, bmax, order, bfirst, meta, version, pos, idx, n, start, end, res_start, res_end):
    """Move a reservation of ``n`` cores from ``[res_start, res_end)`` to ``[start, end)``
    (``start`` earlier, at the slice ``(pos, idx)``) in one walk forward, splitting slices
    where the two spans begin or end. Returns the most cores then free in the part left,
    ``[max(res_start, end), res_end)``, and the position of its first slice (-1 if none)."""
    stop = max(end, res_end)
    vacated = max(res_start, end)
    most, vpos, vidx, blocks = -1, -1, -1, 0
    while pos < meta[0]:  # a split may add a block
        nb = meta[0]
        b = order[pos]
        t = T[b, idx]
        if t >= stop:
            break
        if idx + 1 < cnt[b]:
            following = T[b, idx + 1]
        elif pos + 1 < nb:
            following = T[order[pos + 1], 0]
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
            pos, idx = _insert_after(T, F, cnt, bmax, order, bfirst, meta, version, pos, idx, cut)
            b = order[pos]
        delta = 0
        if start <= t < end:
            delta -= n
        if res_start <= t < res_end:
            delta += n
        if delta != 0:
            _change_free(F, cnt, bmax, meta, version, b, idx, delta)
        if vacated <= t < res_end:
            if vpos < 0:
                vpos, vidx, blocks = pos, idx, meta[0]
            if F[b, idx] > most:
                most = F[b, idx]
        idx += 1
        if idx == cnt[b]:
            pos += 1
            idx = 0
    if vpos >= 0 and meta[0] != blocks:  # a block split since: find the slice again
        vpos, vidx = _locate(T, cnt, order, bfirst, meta, vacated)
    return most, vpos, vidx


@_helper
def _runs(T, F, cnt, inner, suffix_start, level, thresholds, left, stack, b):
    """``inner[b, level]``: the longest time a level's threshold of free cores lasts from
    a slice of block ``b`` until a slice of the block with fewer, or until its last slice
    begins. All levels in one pass: the stretch around each slice in which it has the
    fewest free cores (a stack of slices with increasing free cores; ``left``: where
    each slice's stretch begins), then the longest stretch at or above each level. Only
    the levels up to the block's most free cores: above, no slice has enough (callers check
    ``bmax`` first)."""
    # one block's rows as 1-D views: numba indexes them faster than the 2-D arrays (0.76 -> 0.46 us per call);
    # max() rather than ifs: stores without a branch that the data decides (6-8% of a pass)
    c = cnt[b]
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
    # Where the first one ends is read from the slices when needed (``_first_window``): the
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


@_helper
def _compact(T, F, cnt, b):
    """Merge the equal neighbouring slices of block ``b``, before its runs are recomputed.
    A move leaves its old start and end as boundaries between equal slices (half the
    slices by the end of a pass, when nothing merges them): the searches, moves and run
    caches then read twice as many. Merging never changes a first fit (see the module's
    docstring), and a block's first slice stays."""
    Tb = T[b]
    Fb = F[b]
    c = cnt[b]
    w = 1
    for k in range(1, c):
        if Fb[k] != Fb[w - 1]:
            Tb[w] = Tb[k]
            Fb[w] = Fb[k]
            w += 1
    cnt[b] = w


@_helper
def _clean_blocks(F, bmax, bfirst, stamp, version, inner, suffix_start, nb, pos, lv, thr, n, duration, stop,
                  longest):
    """``_first_window``'s usual walk, over the blocks from ``pos`` that it passes over: those
    without ``n`` free cores, and the clean ones whose runs (with the last stretch, when
    it ends at the next block's first slice) are too short. Returns the first other block
    and ``longest``. Only while no block has split in the pass, so that a block's position
    is its id.

    Two thirds of a search's blocks come through here, so it is written for the machine:
    one data-dependent branch per block, and unsigned indices, for which numba leaves out
    its check for negative ones (10% of a mid-burst pass, measured)."""
    one = np.uint64(1)
    p = np.uint64(pos)
    q = p + one
    end = np.uint64(nb)
    ulv = np.uint64(lv)
    while q < end:
        following = bfirst[q]
        if following > stop:
            break
        if bmax[p] < n:
            p = q
            q = q + one
            continue
        runs, begin = inner[p, ulv], suffix_start[p, ulv]
        runs = max(runs, following - begin)  # -inf when the block ends with too few cores
        ruled_out = ((runs * (1 + 1e-12) + SLACK < duration) & (stamp[p] == version[p])
                     & ((begin == math.inf) | ((F[q, np.uint64(0)] < thr) & (following < stop))))
        if not ruled_out:
            break
        longest = max(longest, runs)
        p = q
        q = q + one
    return np.int64(p), longest


@_helper
def _first_window(T, F, cnt, bmax, order, bfirst, meta, version, inner, suffix_start, stamp, level,
                  thresholds, left, stack, n, duration, not_before, stop):
    """``CountProfile._first_window`` by times: the first slice starting at or after
    ``not_before`` and before ``stop`` from which ``n`` cores are free for ``duration``
    (slices from ``stop`` on are known to fit). Returns ``(start, longest, position,
    index)``, start NaN when none; ``longest`` bounds the stretches of ``n`` free cores
    from the starts tried.

    A block is passed over without reading its slices when none has ``n`` free cores, or
    when no stretch of ``n`` free cores from one of its slices lasts ``duration``: those
    that end inside the block (``_runs``), and the one that goes on into the next blocks."""
    origin = T[order[0], 0]
    nb = meta[0]
    if not_before > origin:
        pos, idx = _locate(T, cnt, order, bfirst, meta, not_before)
        if T[order[pos], idx] < not_before:  # bisect_left: the first slice at or after
            idx += 1
            if idx == cnt[order[pos]]:
                pos += 1
                idx = 0
    else:
        pos, idx = 0, 0
    longest = 0.0
    lv = level[n]
    thr = thresholds[lv]
    while pos < nb:
        if idx == 0 and meta[3] == 0:
            pos, longest = _clean_blocks(F, bmax, bfirst, stamp, version, inner, suffix_start, nb, pos, lv,
                                         thr, n, duration, stop, longest)
        b = order[pos]
        c = cnt[b]
        if bmax[b] < n:  # no slice of this block can start a window
            pos += 1
            idx = 0
            continue
        if pos + 1 < nb and bfirst[pos + 1] <= stop:
            if stamp[b] != version[b]:
                if idx == 0:  # (a search that begins inside the block keeps its slice index)
                    _compact(T, F, cnt, b)
                    c = cnt[b]
                _runs(T, F, cnt, inner, suffix_start, level, thresholds, left, stack, b)
                stamp[b] = version[b]
            runs, begin = inner[b, lv], suffix_start[b, lv]
            if begin != math.inf:  # the last stretch goes on into the next blocks: where does it end?
                ends = math.inf
                for later in range(pos + 1, min(pos + 1 + WALK, nb)):
                    b2 = order[later]
                    if bmax[b2] < thr:  # no slice has enough: the stretch ends here
                        ends = T[b2, 0]
                        break
                    Fb2 = F[b2]  # the stretch ends at the block's first slice with too few cores
                    c2 = cnt[b2]
                    k = 0
                    while k < c2 and Fb2[k] >= thr:
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
            kb = order[kpos]
            if kidx == cnt[kb]:
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
        if idx == cnt[order[pos]]:
            pos += 1
            idx = 0
    return math.nan, longest, -1, -1


@_helper
def _run_start(T, F, cnt, order, pos, idx, a, n):
    """The start of the run of slices with ``n`` or more free cores that ends at ``a``
    (``a`` itself when the slice before ``a`` has fewer), or -inf after ``WALK`` slices;
    ``(pos, idx)``: the slice containing ``a``."""
    b = order[pos]
    if T[b, idx] == a:  # the slice before ``a``
        idx -= 1
    start = a
    for _ in range(WALK):
        if idx < 0:
            if pos == 0:
                return start
            pos -= 1
            b = order[pos]
            idx = cnt[b] - 1
        if F[b, idx] < n:
            return start
        start = T[b, idx]
        idx -= 1
    return -math.inf


# ---------------------------------------------------------------- NoFitBefore
@_helper
def _freed(T, F, cnt, order, bfirst, meta, bn, bd, bx, m, a, most, pos, idx):
    """``NoFitBefore.freed``, sharper: a start before ``x`` whose stretch of ``n`` cores
    now reaches past ``a`` lies in the run of such slices that ends at ``a``, so the bound
    only moves back to that run's start (``a - d`` when the run is longer than ``WALK``).
    ``(pos, idx)``: the slice containing ``a`` if known (else -1)."""
    for k in range(m):
        if not (bn[k] > most or bx[k] + bd[k] <= a):
            if pos < 0:
                pos, idx = _locate(T, cnt, order, bfirst, meta, a)
            bound = max(a - bd[k] - SLACK, _run_start(T, F, cnt, order, pos, idx, a, bn[k]))
            if bound < bx[k]:
                bx[k] = bound


@_helper
def _lowest_start(bn, bd, bx, m, n, d, reserved_from):
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


@_helper
def _note(bn, bd, bx, m, n, longest, x):
    """Append a bound, dropping the oldest beyond ``KEPT``; returns the new count."""
    if m == KEPT:
        for k in range(1, KEPT):
            bn[k - 1], bd[k - 1], bx[k - 1] = bn[k], bd[k], bx[k]
        m -= 1
    bn[m] = n
    bd[m] = longest * (1 + 1e-12) + SLACK
    bx[m] = x
    return m + 1


# ---------------------------------------------------------------- the pass
@_compiled
def _profile(times, free, spare, level, thresholds):
    """The blocks of a profile, ``FILL`` slices each, with room for ``spare`` more slices."""
    length = len(times)
    half = FILL
    nbmax = length // FILL + spare // (BLOCK // 2) + 4
    T = np.empty((nbmax, BLOCK))
    F = np.empty((nbmax, BLOCK), dtype=np.int64)
    cnt = np.zeros(nbmax, dtype=np.int64)
    bmax = np.zeros(nbmax, dtype=np.int64)
    order = np.empty(nbmax, dtype=np.int64)
    bfirst = np.empty(nbmax)
    version = np.zeros(nbmax, dtype=np.int64)
    inner = np.empty((nbmax, len(thresholds)))
    suffix_start = np.empty((nbmax, len(thresholds)))
    stamp = np.full(nbmax, -1, dtype=np.int64)
    nb = (length + half - 1) // half
    meta = np.array([nb, nb, 0, 0], dtype=np.int64)
    scratch = np.empty(BLOCK + 1, dtype=np.int64), np.empty(BLOCK + 1, dtype=np.int64)
    P = (T, F, cnt, bmax, order, bfirst, meta, version, inner, suffix_start, stamp, level,
         thresholds) + scratch
    for b in range(nb):
        lo = b * half
        hi = min(lo + half, length)
        for k in range(lo, hi):
            T[b, k - lo] = times[k]
            F[b, k - lo] = free[k]
        cnt[b] = hi - lo
        _changed(F, cnt, bmax, meta, version, b)
        order[b] = b
        bfirst[b] = T[b, 0]
    return P


@_compiled
def _pass(times, free, level, thresholds, seqs, rstart, rend, rn, rspan, started, started_end):
    """One pass over the candidates ``seqs`` in queue order (see ``ConservativeBackfilling``).
    Updates the reservations in place, writes the candidates started now (their indices in
    ``seqs``) and their planned ends into ``started``/``started_end``; returns ``(times,
    free, number started, earliest reservation start, earliest reservation end)``."""
    P = _profile(times, free, 8 * len(seqs) + 8, level, thresholds)  # a candidate splits 8 slices at most
    bounds = np.zeros((3, KEPT))  # NoFitBefore: cores, stretch, start
    firsts = np.empty(3)  # number started, earliest reservation start and end
    _candidates(*P, bounds, seqs, rstart, rend, rn, rspan, started, started_end, firsts)
    out_times, out_free = _flatten(P)
    return out_times, out_free, int(firsts[0]), firsts[1], firsts[2]


@_helper
def _candidates(T, F, cnt, bmax, order, bfirst, meta, version, inner, suffix_start, stamp, level,
                thresholds, left, stack, bounds, seqs, rstart, rend, rn, rspan, started, started_end, firsts):
    """The loop of ``_pass`` (no allocation here: see ``_helper``)."""
    now = T[order[0], 0]
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
            lowest, shortest = _lowest_start(bn, bd, bx, m, n, span, res_start)
            start, longest, pos, idx = _first_window(T, F, cnt, bmax, order, bfirst, meta, version, inner,
                                                     suffix_start, stamp, level, thresholds, left,
                                                     stack, n, span, lowest, res_start)
            if math.isnan(start):
                m = _note(bn, bd, bx, m, n, max(shortest, longest), res_start)
                first_start = min(first_start, res_start)
                first_end = min(first_end, res_end)
                continue
            end = start + span
            vacated = max(res_start, end)
            most, vpos, vidx = _move(T, F, cnt, bmax, order, bfirst, meta, version, pos, idx, n,
                                     start, end, res_start, res_end)
            if vacated < res_end:
                _freed(T, F, cnt, order, bfirst, meta, bn, bd, bx, m, vacated, most, vpos, vidx)
            m = _note(bn, bd, bx, m, n, max(shortest, longest), start)
        else:
            if reserved:
                _freed(T, F, cnt, order, bfirst, meta, bn, bd, bx, m, res_start, math.inf, -1, -1)
                _add(T, F, cnt, bmax, order, bfirst, meta, version, res_start, res_end, n)
            start, _, _, _ = _first_window(T, F, cnt, bmax, order, bfirst, meta, version, inner,
                                           suffix_start, stamp, level, thresholds, left, stack, n, span,
                                           -math.inf, math.inf)
            end = start + span
            _add(T, F, cnt, bmax, order, bfirst, meta, version, start, end, -n)
        if start > now and reserved and res_start <= now < res_end:
            # a reservation that has begun starts now, on its own span (see conservative.py)
            _add(T, F, cnt, bmax, order, bfirst, meta, version, start, end, n)
            start, end = now, res_end
            _add(T, F, cnt, bmax, order, bfirst, meta, version, start, end, -n)
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


@_compiled
def _flatten(P):
    """The blocks as one profile, equal neighbouring slices merged."""
    T, F, cnt, order, meta = P[0], P[1], P[2], P[4], P[6]
    total = 0
    for p in range(meta[0]):
        total += cnt[order[p]]
    times = np.empty(total)
    free = np.empty(total, dtype=np.int64)
    length = 0
    for p in range(meta[0]):
        b = order[p]
        for k in range(cnt[b]):
            if length > 0 and F[b, k] == free[length - 1]:
                continue
            times[length] = T[b, k]
            free[length] = F[b, k]
            length += 1
    return times[:length], free[:length]


def levels(nb_cores: int) -> tuple[np.ndarray, np.ndarray]:
    """``(level, thresholds)``: each core count's level in the run caches and each level's
    smallest core count (exact up to ``EXACT_LEVELS`` cores, then 6% apart)."""
    thresholds = list(range(min(nb_cores, EXACT_LEVELS) + 1))
    while thresholds[-1] < nb_cores:
        thresholds.append(min(nb_cores, max(thresholds[-1] + 1, int(thresholds[-1] * 1.06))))
    level = np.searchsorted(np.array(thresholds), np.arange(nb_cores + 1), side="right") - 1
    return level.astype(np.int64), np.array(thresholds, dtype=np.int64)


class ReservationTable:
    """The queued jobs' reservations and requests, by ``Job.seq``, for ``compress``."""

    def __init__(self, size: int = 1024):
        self.start = np.full(size, np.nan)
        self.end = np.full(size, np.nan)
        self.cores = np.zeros(size, dtype=np.int64)
        self.span = np.zeros(size)

    def add(self, seq: int, cores: int, span: float) -> None:
        if seq >= len(self.start):
            size = max(2 * len(self.start), seq + 1)
            for name, fill in (("start", np.nan), ("end", np.nan), ("cores", 0), ("span", 0.0)):
                old = getattr(self, name)
                grown = np.full(size, fill, dtype=old.dtype)
                grown[:len(old)] = old
                setattr(self, name, grown)
        self.start[seq] = np.nan
        self.end[seq] = np.nan
        self.cores[seq] = cores
        self.span[seq] = span

    def reserved(self, seq: int):
        """``(start, end)`` of a queued job's reservation, or None."""
        start = self.start[seq]
        return None if math.isnan(start) else (float(start), float(self.end[seq]))

    def drop(self, seq: int) -> None:
        self.start[seq] = np.nan
        self.end[seq] = np.nan


def compress(times: np.ndarray, free: np.ndarray, seqs: np.ndarray, table: ReservationTable, levels: tuple):
    """Run one pass (see ``_pass``) on the profile's slices (float and int64 arrays, as
    ``ArrayCountProfile`` keeps them). Returns ``(times, free, started (indices in
    ``seqs``), their planned ends, earliest reservation start, earliest reservation end)``."""
    _compile()
    started = np.empty(len(seqs), dtype=np.int64)
    started_end = np.empty(len(seqs))
    out_times, out_free, nstarted, first_start, first_end = _pass(
        np.asarray(times, dtype=np.float64), np.asarray(free, dtype=np.int64), *levels, seqs,
        table.start, table.end, table.cores, table.span, started, started_end)
    return (out_times, out_free, started[:nstarted].tolist(),
            started_end[:nstarted].tolist(), float(first_start), float(first_end))
