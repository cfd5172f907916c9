"""The compiled searches and slice updates of ``ArrayCoreProfile`` (batsched's model of specific
cores), with numba: each slice's free cores are a row of 64-bit words in a pool (``pool[rows[k]]``),
so an intersection or a popcount is a loop over machine words instead of a Python big integer
made anew at each step. The algorithms are ``CoreProfile``'s (``profile.py``), step for step where
the steps decide what is read (counts first, the two-stack window queue, the bisection after a
fragmented window), so the answers are the same: the first start whose window keeps ``n`` cores
free throughout, and the lowest-numbered such cores. Where they skip more, each skip is a proof:
a window's masks are folded only on the chunks with a core free throughout it (``_fold_words``),
the bisection after a failing window uses a bound that is exact there and the chunk bound
elsewhere (``_upper``), and the conservative pass (``scan``) re-examines a reservation only when
what was freed since its last check could move it.

All kernels are in this one file: numba checks a cached kernel against its own source file only.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
CHUNK = 16  # words per chunk of the chunk counts (1,024 cores)
_MANY = 1 << 14  # above any chunk count (``CHUNK`` * 64 cores, twice that with a reservation's own), in an int16
AROUND = 64  # slices read on each side of a freed interval (``free_around``)
STEPS = 8  # steps kept of a reservation's bound on its earlier windows (``_raise``)


@njit(cache=True, nogil=True)
def popcount(x):
    """Set bits of one uint64 word (LLVM turns this pattern into the machine's popcount)."""
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


@njit(cache=True, nogil=True)
def _recount(row, chunks):
    """The set bits of ``row``, and of each chunk of ``CHUNK`` words into ``chunks``."""
    total = 0
    for c in range(len(chunks)):
        part = 0
        for w in range(c * CHUNK, min((c + 1) * CHUNK, len(row))):
            part += popcount(row[w])
        chunks[c] = part
        total += part
    return total


@njit(cache=True, nogil=True)
def take(pool, cpool, rows, counts, i, j, used):
    """Slices ``[i, j)`` lose the cores ``used`` (words); their counts follow (only the words of
    ``used`` are read: a job's cores, not the machine's)."""
    held = np.flatnonzero(used).astype(np.uint64)  # the words that hold a core
    for k in range(i, j):
        r = rows[k]  # rows indexed in place: a view per slice costs two atomic reference counts
        for w in held:
            lost = popcount(pool[r, w] & used[w])
            if lost:
                pool[r, w] &= ~used[w]
                cpool[r, w // CHUNK] -= lost
                counts[k] -= lost


@njit(cache=True, nogil=True)
def give_back(pool, cpool, rows, counts, i, j, used):
    """Slices ``[i, j)`` get the cores ``used`` (words) back; their counts follow."""
    held = np.flatnonzero(used).astype(np.uint64)
    for k in range(i, j):
        r = rows[k]
        for w in held:
            gained = popcount(used[w] & ~pool[r, w])
            if gained:
                pool[r, w] |= used[w]
                cpool[r, w // CHUNK] += gained
                counts[k] += gained


@njit(cache=True, nogil=True)
def free_around(times, pool, rows, i, j, used):
    """``(pre, ext)`` for cores ``used`` about to be freed in slices ``[i, j)``: ``ext`` the start of
    the first slice from ``j`` on where none of them is free (inf: none), ``pre`` the end of the
    last slice before ``i`` where none is (-inf: none). A window that these cores can have made
    fit lies within ``[pre, ext)`` (one of them is free throughout it), at least while the slice
    that bounds it comes before the reservation searched (see ``_window_bounds``). At most
    ``AROUND`` slices are read on each side (beyond: unbounded, which only loosens the bound)."""
    held = np.flatnonzero(used)
    k = _first_without(pool, rows, j, min(len(rows), j + AROUND), 1, used, held)
    ext = np.inf if k < 0 else times[k]
    k = _first_without(pool, rows, i - 1, max(i - 1 - AROUND, -1), -1, used, held)
    pre = -np.inf if k < 0 else times[k + 1]
    return pre, ext


@njit(cache=True, nogil=True)
def _first_without(pool, rows, start, stop, step, used, held):
    """The first slice of ``range(start, stop, step)`` from which on (in that order) none of the
    cores ``used`` has stayed free, -1 if there is none; ``held``: the indices of ``used``'s
    non-zero words."""
    common = used[held].copy()
    for k in range(start, stop, step):
        r, alive = rows[k], False
        for a in range(len(held)):
            common[a] &= pool[r, uint64(held[a])]
            alive = alive or common[a] != 0
        if not alive:
            return k
    return -1


@njit(cache=True, nogil=True)
def chunk_mask(words, mask):
    """``mask``: a bit per chunk, set for the chunks where ``words`` has a core."""
    mask[:] = 0
    for w in range(len(words)):
        if words[w]:
            c = w // CHUNK
            mask[c >> 6] |= np.uint64(1) << np.uint64(c & 63)


@njit(cache=True, nogil=True)
def chunk_counts(words, chunks):
    """``words``' set bits per chunk into ``chunks``."""
    _recount(words, chunks)


@njit(cache=True, nogil=True)
def recount(pool, cpool, rows):
    """Every slice's chunk counts (``cpool``)."""
    for k in range(len(rows)):
        _recount(pool[rows[k]], cpool[rows[k]])


@njit(cache=True, nogil=True)
def same_as_previous(pool, rows, counts, lo, hi):
    """The slices ``k`` of ``[lo, hi]`` whose free cores are those of slice ``k - 1``."""
    out = np.empty(max(hi - lo + 1, 0), dtype=np.int64)
    m = 0
    for k in range(lo, hi + 1):
        if counts[k] != counts[k - 1]:
            continue
        a, b = pool[rows[k]], pool[rows[k - 1]]
        equal = True
        for w in range(len(a)):
            if a[w] != b[w]:
                equal = False
                break
        if equal:
            out[m] = k
            m += 1
    return out[:m]


@njit(cache=True, nogil=True)
def free_throughout(pool, rows):
    """For each slice k, how many cores are free in every slice from the first to k."""
    out = np.zeros(len(rows), dtype=np.int64)
    common = pool[rows[0]].copy()
    for k in range(len(rows)):
        row = pool[rows[k]]
        c = 0
        for w in range(len(common)):
            v = common[w] & row[w]
            common[w] = v
            c += popcount(v)
        out[k] = c
        if c == 0:
            break
    return out


@njit(cache=True, nogil=True)
def _lowest(common, n, out):
    """``out`` = the ``n`` lowest set bits of ``common`` (all of them if fewer): ``lowest_bits``."""
    left = n
    for w in range(len(common)):
        x = common[w]
        if left <= 0:
            out[w] = 0
            continue
        c = popcount(x)
        if c <= left:
            out[w] = x
            left -= c
            continue
        y = np.uint64(0)
        while left > 0:
            bit = x & (~x + np.uint64(1))
            y |= bit
            x ^= bit
            left -= 1
        out[w] = y


@njit(cache=True, nogil=True)
def _chunk_bound(csuffix, d, ctail):
    """An upper bound on the cores free throughout a window: per chunk, the fewest free in one
    of its slices (``csuffix[d]`` for the slices up to the split, ``ctail`` after), summed. The
    row is indexed in place (a view costs two atomic reference counts, and the bisections take
    several bounds per window)."""
    bound = 0
    for c in range(len(ctail)):
        bound += min(csuffix[d, c], ctail[c])
    return bound


@njit(cache=True, nogil=True)
def _fold_chunks(cpool, rows, i, k, stop, owncc, csuffix, ctail, fresh, end):
    """The chunk level's window queue (as the words' one in ``find``): fold ``[i, k)``
    backwards into ``csuffix`` when ``fresh``, else extend ``ctail`` over ``[end, k)``. The
    rows are indexed in place, not as views (a view costs two atomic reference counts, per
    slice), and each loop writes a row other than the ones it reads, so it vectorizes."""
    nchunks = len(ctail)
    if fresh:
        ctail[:] = _MANY
        for m in range(k - 1, i - 1, -1):
            r, d = rows[m], m - i
            if m == k - 1:  # min(_MANY, x) = x
                if m >= stop:
                    for c in range(nchunks):
                        csuffix[d, c] = cpool[r, c] + owncc[c]
                else:
                    for c in range(nchunks):
                        csuffix[d, c] = cpool[r, c]
            elif m >= stop:
                for c in range(nchunks):
                    csuffix[d, c] = min(csuffix[d + 1, c], cpool[r, c] + owncc[c])
            else:
                for c in range(nchunks):
                    csuffix[d, c] = min(csuffix[d + 1, c], cpool[r, c])
    else:
        for m in range(end, k):
            r = rows[m]
            if m >= stop:
                for c in range(nchunks):
                    ctail[c] = min(ctail[c], cpool[r, c] + owncc[c])
            else:
                for c in range(nchunks):
                    ctail[c] = min(ctail[c], cpool[r, c])


@njit(cache=True, nogil=True)
def _fold_words(pool, rows, i, k, stop, own, chunks, nchunks, suffix, tail, fresh, end):
    """The words' window queue (as ``_Windows``), on the words of the ``nchunks`` chunks ``chunks``
    only: fold ``[i, k)`` backwards into ``suffix`` when ``fresh``, else extend ``tail`` over
    ``[end, k)``. Slice by slice (each row read once), rows indexed in place, word indices
    unsigned (no negative-index wraparound in the loops, which vectorize: ``_and_words``)."""
    nwords = len(tail)
    if fresh:  # the tail is empty: all ones on these chunks
        for a in range(nchunks):
            for w in range(chunks[a] * CHUNK, min((chunks[a] + 1) * CHUNK, nwords)):
                tail[w] = _ALL
        for m in range(k - 1, i - 1, -1):
            r, d = rows[m], m - i
            for a in range(nchunks):
                _and_words(suffix, d, m == k - 1, pool, r, own, chunks[a] * CHUNK,
                           min((chunks[a] + 1) * CHUNK, nwords), m >= stop)
    else:
        for m in range(end, k):
            r = rows[m]
            for a in range(nchunks):
                lo, hi = chunks[a] * CHUNK, min((chunks[a] + 1) * CHUNK, nwords)
                if m >= stop:
                    for x in range(hi - lo):
                        w = uint64(lo + x)
                        tail[w] &= pool[r, w] | own[w]
                else:
                    for x in range(hi - lo):
                        w = uint64(lo + x)
                        tail[w] &= pool[r, w]


@njit(cache=True, nogil=True, inline="always")
def _and_words(suffix, d, first, pool, r, own, lo, hi, with_own):
    """Words ``[lo, hi)`` of ``suffix[d]``: row ``r`` of ``pool`` (or'ed with ``own`` when
    ``with_own``), and'ed with ``suffix[d + 1]`` unless ``first``."""
    if first and with_own:
        for x in range(hi - lo):
            w = uint64(lo + x)
            suffix[d, w] = pool[r, w] | own[w]
    elif first:
        for x in range(hi - lo):
            w = uint64(lo + x)
            suffix[d, w] = pool[r, w]
    elif with_own:
        for x in range(hi - lo):
            w = uint64(lo + x)
            suffix[d, w] = suffix[d + 1, w] & (pool[r, w] | own[w])
    else:
        for x in range(hi - lo):
            w = uint64(lo + x)
            suffix[d, w] = suffix[d + 1, w] & pool[r, w]


@njit(cache=True, nogil=True)
def _upper(suffix, d, tail, chunks, nchunks, folded, csuffix, cd, ctail):
    """An upper bound on the cores free throughout a window: exact on the words of the folded
    ``chunks`` (``suffix[d] & tail``), the chunk bound (``csuffix[cd]``, ``ctail``) on the others
    (rows indexed in place, as in ``_chunk_bound``)."""
    nwords = len(tail)
    size = 0
    for a in range(nchunks):
        lo, hi = chunks[a] * CHUNK, min((chunks[a] + 1) * CHUNK, nwords)
        for x in range(hi - lo):
            w = uint64(lo + x)
            size += popcount(suffix[d, w] & tail[w])
    for c in range(len(ctail)):
        if not folded[c]:
            size += min(csuffix[cd, c], ctail[c])
    return size


@njit(cache=True, nogil=True)
def _raise(most, value, before, steps_t, steps_m, nsteps):
    """``max(most, value)``, recording the step when it grows: the windows that start before
    ``before`` are bounded by ``most`` (as the bound only grows from start to start, the steps
    make it a non-decreasing function of the window's start). When ``STEPS`` are kept the last
    one is overwritten: its windows take the next step's larger bound (looser, still a bound)."""
    if value <= most:
        return most
    k = nsteps[0]
    if k > 0 and steps_t[k - 1] >= before:  # the same start: the earlier step says nothing more
        k -= 1
    if k == len(steps_t):
        k -= 1
    steps_t[k], steps_m[k] = before, most
    nsteps[0] = k + 1
    return value


@njit(cache=True, nogil=True)
def find(times, counts, rows, pool, cpool, origin, n, duration, stop, own, own_size, scratch, first=0, most0=0,
         limit=np.inf):
    """``CoreProfile._find``: the first slice ``i < stop`` from which ``n`` cores stay free for
    ``duration`` (-1 if none), its lowest such cores in ``out``; from slice ``stop`` on the cores
    of ``own`` (``own_size`` of them) count as free too. ``scratch``: ``(suffix, tail, out,
    csuffix, ctail, owncc, steps_t, steps_m, nsteps, chunks, folded)``, the window queues' rows
    (``suffix``, ``csuffix``: a row per slice at least), ``own``'s chunk counts, the bound's steps
    and room for the chunks the words' queue folds (a chunk each: kept, not allocated per search).

    A window that passes the counts is first bounded by the chunk counts (``_chunk_bound``;
    most windows of a fragmented machine fail there, at a sixteenth of the cost), with a window
    queue of its own: a failing bound skips every start whose window holds the failing part, as
    the words' ``after_failing`` does. Only a window whose bound passes is intersected.

    Returns ``(i, most)``, ``most`` an upper bound on the cores free throughout each window tried or
    skipped before ``i`` (each skip rule bounds the windows it skips: a slice's count, a chunk bound,
    an intersection's size), so below ``n`` when none fits. ``first``: the starts before that slice
    are known to fail, with at most ``most0`` cores (where ``most`` starts); so are the starts from
    ``limit`` on (-1 when none before fits; ``most`` leaves them out). The bound as a function
    of the window's start goes to ``scratch``'s steps (``_raise``): ``steps_t[j]``, ``steps_m[j]``
    for ``j < nsteps[0]``, "the windows that start before ``steps_t[j]`` keep at most ``steps_m[j]``
    cores free"."""
    suffix, tail, out, csuffix, ctail, owncc, steps_t, steps_m, nsteps, chunks, folded = scratch
    nsteps[0] = 0
    last = len(times)
    nwords, nchunks = len(tail), len(ctail)
    folded[:] = False  # ``chunks``: the chunks whose words the words' queue folds (set with ``folded``)
    nfolded = 0
    base = split = end = 0  # the words' window queue: suffix[j - base] = slices j .. split-1
    cbase = csplit = cend = 0  # the chunks' one
    i, passed, most = first, 0, most0
    while i < stop:
        begin = origin if i == 0 else times[i]  # the windows examined from here on start at ``begin`` or later
        if begin >= limit:
            break
        if counts[i] < n:
            most = _raise(most, counts[i], begin, steps_t, steps_m, nsteps)
            i += 1
            continue
        window_end = begin + duration
        k = max(i + 1, passed)
        broke = False
        while k < last and times[k] < window_end:
            if counts[k] + (own_size if k >= stop else 0) < n:
                broke = True
                break
            k += 1
        if broke:  # every start up to k has slice k in its window
            most = _raise(most, counts[k] + (own_size if k >= stop else 0), begin, steps_t, steps_m, nsteps)
            i = k + 1
            continue
        passed = k
        fresh = i >= csplit
        _fold_chunks(cpool, rows, i, k, stop, owncc, csuffix, ctail, fresh, cend)
        if fresh:
            cbase, csplit, cend = i, k, k
        else:
            cend = max(cend, k)
        bound = _chunk_bound(csuffix, i - cbase, ctail)
        if bound < n:
            lo, hi = i, csplit - 1  # the last start up to hi whose bound still fails
            top = _chunk_bound(csuffix, hi - cbase, ctail)
            if top < n:  # the bounds grow with the start: the last one bounds the windows skipped
                most = _raise(most, top, begin, steps_t, steps_m, nsteps)
                i = hi + 1
                continue
            while hi - lo > 1:
                mid = (lo + hi) // 2
                middle = _chunk_bound(csuffix, mid - cbase, ctail)
                if middle < n:
                    lo, bound = mid, middle
                else:
                    hi = mid
            most = _raise(most, bound, begin, steps_t, steps_m, nsteps)
            i = lo + 1
            continue
        # only the chunks with a core free in every slice of the window can hold its cores: the
        # words' queue folds those (its chunks), and is folded anew when a window needs others
        ci = i - cbase  # the window's row of the chunks' queue (rows indexed in place)
        fresh = i >= split
        for c in range(nchunks):
            if not folded[c] and min(csuffix[ci, c], ctail[c]) > 0:
                fresh = True
                break
        if fresh:
            nfolded = 0
            for c in range(nchunks):
                folded[c] = min(csuffix[ci, c], ctail[c]) > 0
                if folded[c]:
                    chunks[nfolded] = c
                    nfolded += 1
        _fold_words(pool, rows, i, k, stop, own, chunks, nfolded, suffix, tail, fresh, end)
        if fresh:
            base, split, end = i, k, k
        else:
            end = max(end, k)
        di = i - base  # the window's row of the words' queue
        size = _upper(suffix, di, tail, chunks, nfolded, folded, csuffix, ci, ctail)  # exact: no other chunk has a core
        if size >= n:
            out[:] = 0
            for a in range(nfolded):
                for w in range(chunks[a] * CHUNK, min((chunks[a] + 1) * CHUNK, nwords)):
                    out[w] = suffix[di, w] & tail[w]
            _lowest(out.copy(), n, out)
            return i, most
        # _Windows.after_failing on that bound: the last start up to both queues' split whose bound fails
        lo, hi = i, min(split, csplit) - 1
        top = _upper(suffix, hi - base, tail, chunks, nfolded, folded, csuffix, hi - cbase, ctail)
        if top < n:
            most = _raise(most, top, begin, steps_t, steps_m, nsteps)
            i = hi + 1
            continue
        while hi - lo > 1:
            mid = (lo + hi) // 2
            middle = _upper(suffix, mid - base, tail, chunks, nfolded, folded, csuffix, mid - cbase, ctail)
            if middle < n:
                lo, size = mid, middle
            else:
                hi = mid
        most = _raise(most, size, begin, steps_t, steps_m, nsteps)
        i = lo + 1
    return -1, most


@njit(cache=True, nogil=True)
def _keeps_its_cores(pool, cpool, rows, first, stop, own, n, tail, allowed, active):
    """Whether a reservation on the ``n`` cores ``own`` over slices ``[first, stop)`` keeps them
    at its start (``CoreProfile.reinsertion``): it does unless a core below its highest, not
    its own, is free throughout. Only the chunks with a core free in the first and in the last
    slice are read (their chunk counts), and of them only those set in ``allowed`` (a bit per
    chunk: the others are known to hold no such core, see ``scan``); the words of the cores free
    in both are intersected slice by slice, each dropped once empty, until none is left (usually
    within a few slices; the last slice is read first, as a reservation's two ends differ most).
    ``active``: room for the indices of those words in its row 0 (unsigned: no wraparound), as
    many as ``own`` has words; rows are indexed in place, not as views."""
    top = len(own) - 1
    while top >= 0 and own[top] == 0:
        top -= 1
    if top < 0:
        return False
    smear = own[top]  # every bit up to own's highest one in its word
    for shift in (1, 2, 4, 8, 16, 32):
        smear |= smear >> np.uint64(shift)
    live = 0
    r0, r1 = rows[first], rows[stop - 1]
    for c in range(top // CHUNK + 1):
        if cpool[r0, c] == 0 or cpool[r1, c] == 0 or not (allowed[c >> 6] >> np.uint64(c & 63)) & np.uint64(1):
            continue
        for w in range(c * CHUNK, min((c + 1) * CHUNK, top + 1)):
            below = ~own[w] if w < top else (smear >> np.uint64(1)) & ~own[w]
            v = below & pool[r0, w] & pool[r1, w]
            tail[w] = v
            if v:
                active[0, live] = w
                live += 1
    for k in range(first + 1, stop):
        if live == 0:
            return True
        r = rows[k]  # indexed in place: a view per slice costs two atomic reference counts
        kept = 0
        for a in range(live):
            w = active[0, a]
            v = tail[w] & pool[r, w]
            tail[w] = v
            if v:
                active[0, kept] = w
                kept += 1
        live = kept
    return live == 0


@njit(cache=True, nogil=True)
def reinsertion(times, counts, rows, pool, cpool, origin, n, duration, start, reserved_end, own, scratch, first=0,
                most0=0, limit=np.inf, own_size=-1):
    """``CoreProfile.reinsertion`` for a future reservation ``[start, reserved_end)`` on the cores
    ``own``: ``(0, -1, most)`` when it stays as it is, ``(1, i, most)`` when it fits earlier from slice
    ``i``, ``(2, -1, most)`` when it keeps its start on other (lower-numbered) cores; the cores in
    ``scratch``'s ``out``; ``most``: ``find``'s bound on the windows before its (new) start.
    ``own_size`` >= 0: ``own``'s size, its chunk counts already in ``scratch``'s ``owncc``."""
    if own_size < 0:
        own_size = _recount(own, scratch[5])
    starts = np.searchsorted(times, start)  # the slices that begin before the reservation
    i, most = find(times, counts, rows, pool, cpool, origin, n, duration, starts, own, own_size, scratch, first,
                   most0, limit)
    if i >= 0:
        return 1, i, most
    every_chunk = np.full((len(scratch[4]) + 63) // 64, _ALL)
    return lower_cores(times, rows, pool, cpool, n, start, reserved_end, own, own_size, scratch, every_chunk), -1, most


@njit(cache=True, nogil=True)
def lower_cores(times, rows, pool, cpool, n, start, reserved_end, own, own_size, scratch, allowed):
    """2 when a reservation ``[start, reserved_end)`` on the cores ``own`` that cannot start earlier
    would be given other (lower-numbered) cores (in ``scratch``'s ``out``), else 0; ``allowed``: the
    chunks (a bit each) that can hold a lower core free throughout it (``_keeps_its_cores``)."""
    tail, out = scratch[1], scratch[2]
    first = np.searchsorted(times, start, side="right") - 1
    stop = max(first + 1, np.searchsorted(times, reserved_end))  # no view of ``times``
    # ``active``: a row of the window queue's scratch (free between searches), not an allocation
    if own_size == n and _keeps_its_cores(pool, cpool, rows, first, stop, own, n, tail, allowed, scratch[0]):
        return 0
    nwords = len(tail)
    for w in range(nwords):
        tail[w] = _ALL
    for k in range(first, stop):
        r = rows[k]  # indexed in place (no view)
        for w in range(nwords):
            tail[w] &= pool[r, w] | own[w]
    _lowest(tail, n, out)
    for w in range(nwords):
        if out[w] != own[w]:
            return 2
    return 0


@njit(cache=True, nogil=True)
def _window_bounds(log_a, log_b, log_n, log_pre, log_ext, first, last, now, start, span, n, row_t, row_m, row, row_k,
                   bound, points, weights, steps_t, steps_m, nsteps):
    """A bound on the cores free throughout each window of ``span`` seconds that starts from ``now``
    to ``start``, as a function of its start ``t``: the reservation's bound at its last check (its
    steps ``row_t[row]``/``row_m[row]``, ``row_k`` of them, then ``bound``) plus the cores that log entries
    ``[first, last)`` freed in intervals the window meets (``a - span < t < b``) and that one of
    them stays free around (``[pre, ext)``, ``free_around``: a window reaching a slice where none of
    them is free cannot hold them; used only where that slice comes before ``start``, as the
    reservation's own cores count as free after it), widened a little against rounding (only the
    bound loosens).

    Why that bounds the cores free throughout a window ``W``: a core free throughout ``W`` now but
    not at the last check was freed in ``W`` since, and when it was last freed there (nothing
    freed it in ``W`` afterwards, nothing took it) it was free in the rest of ``W``: so that entry's
    interval meets ``W`` and ``W`` lies within its ``[pre, ext)``. A sweep over those intervals and steps (at a tie
    the increases come first: a heavier point). Returns ``(most, lowest, below, highest, above)``:
    ``most`` its maximum, ``lowest`` the first start from which it reaches ``n`` (inf: none) and
    ``below`` its maximum before that, ``highest`` the start from which it stays below ``n`` and
    ``above`` its maximum from there; its own steps (a prefix maximum) go to ``steps_*`` (``_raise``).
    Arrays are indexed in place, not sliced (a view costs two atomic reference counts; this runs
    for nearly every reservation of every pass)."""
    m, half = 0, len(points) // 2
    base = row_m[row, 0] if row_k > 0 else bound
    for j in range(row_k):  # the bound's increases, each from its step's time on
        after = row_m[row, j + 1] if j + 1 < row_k else bound
        if after > row_m[row, j]:
            points[m], weights[m] = max(row_t[row, j], now), after - row_m[row, j]
            m += 1
    ends = 0
    for e in range(first, last):
        lo = log_a[e] - span
        if log_pre[e] <= start:
            lo = max(lo, log_pre[e])
        lo -= 1e-9 * abs(lo) + 1e-6
        hi = log_b[e]
        if log_ext[e] < start:
            hi = min(hi, log_ext[e] - span)
            hi += 1e-9 * abs(hi) + 1e-6
        hi = min(hi, start)
        if lo < hi and hi > now:
            points[m], weights[m] = max(lo, now), log_n[e]
            points[half + ends], weights[half + ends] = hi, -log_n[e]
            m += 1
            ends += 1
    # the ends after the increases: a stable sort puts an increase first at a tie
    for a in range(ends):
        points[m + a], weights[m + a] = points[half + a], weights[half + a]
    order = np.argsort(points[:m + ends], kind="mergesort")
    nsteps[0] = 0
    most = load = above = base
    lowest, below, highest = (now, 0, np.inf) if base >= n else (np.inf, base, now)
    for a in range(len(order)):
        r = order[a]
        load += weights[r]
        if load > most:
            before = most
            most = _raise(most, load, points[r], steps_t, steps_m, nsteps)
            if most >= n and lowest == np.inf:
                lowest, below = points[r], before
        if load >= n:  # it holds until the next point
            highest, above = (points[order[a + 1]] if a + 1 < len(order) else np.inf), 0
        else:
            above = max(above, load)
    return most, lowest, below, highest, above


@njit(cache=True, nogil=True)
def _no_fit_before(nofit, kept, n, span, start):
    """``(x, nb)``: the latest ``x`` of the pass's bounds "no window of ``nb`` cores for ``db``
    seconds starts before ``x``" (``nofit`` rows: cores, seconds, x; ``kept`` of them) that
    holds for a job of ``n >= nb`` cores for ``span >= db`` seconds whose reservation begins at
    ``start``: its windows before ``x`` contain one of those, which ends before ``x + db <= start``
    (so before the job's own cores count). ``(-inf, 0)`` when none does."""
    best, cores = -np.inf, 0
    for b in range(kept):
        x, db = nofit[2, b], nofit[1, b]
        if x > best and nofit[0, b] <= n and db <= span and x + db <= start:
            best, cores = x, nofit[0, b]
    return best, int(cores)


@njit(cache=True, nogil=True)
def note_no_fit(nofit, kept, n, span, x):
    """Adds the bound "no window of ``n`` cores for ``span`` seconds starts before ``x``" (the
    oldest goes when ``len(nofit[0])`` are kept); returns how many are kept."""
    if kept == nofit.shape[1]:
        for b in range(kept - 1):  # in place (no views: this runs at every reservation a pass examines)
            nofit[0, b], nofit[1, b], nofit[2, b] = nofit[0, b + 1], nofit[1, b + 1], nofit[2, b + 1]
        kept -= 1
    nofit[0, kept], nofit[1, kept], nofit[2, kept] = n, span, x
    return kept + 1


@njit(cache=True, nogil=True)
def retreat_no_fit(nofit, kept, a):
    """Cores were freed from ``a`` on: a bound holds only for the windows that end before ``a``
    (slightly earlier, against rounding)."""
    for b in range(kept):
        x = a - nofit[1, b]
        x -= 1e-9 * abs(x) + 1e-6
        if nofit[2, b] > x:
            nofit[2, b] = x


@njit(cache=True, nogil=True)
def scan(times, counts, rows, pool, cpool, origin, now, q, cn, cspan, cstart, cend, crow, owned, owned_cc, scratch,
         log_a, log_b, log_n, log_pre, log_ext, log_chunks, log_base, log_count, checked, bound, row_t, row_m, row_k,
         nofit, kept):
    """The conservative pass's candidates from ``q`` on (cores ``cn``, spans, reservations
    ``[cstart, cend)`` on the cores ``owned[crow]``, their chunk counts ``owned_cc[crow]``; NaN: none): each future reservation that
    ``reinsertion`` leaves as it is is passed over. Returns ``(q, code, i, most, earliest)`` at the
    first candidate that is not a future reservation of its span (code -1) or that moves
    (``reinsertion``'s code, slice and bound, cores in ``out``), or ``(len(cn), 0, -1, 0, earliest)``;
    ``earliest``: the earliest start of the reservations passed over.

    Only cores freed since a reservation was last found to be its own first fit can move it
    (taking cores or time passing never makes a window fit, nor frees a lower core). The profile
    logs every interval it frees cores in (``log_a``/``log_b``, ``log_n`` cores, entry ``e`` at
    ``e - log_base``, ``log_count`` entries so far); ``checked[crow[q]]`` is the log's length when
    the reservation was last found to be its first fit (below ``log_base``: unknown) and
    ``bound[crow[q]]`` then bounded the cores free throughout each window before its start, and
    ``row_t``/``row_m`` (``row_k`` steps) that bound as a function of the window's start (windows
    near the present, where most cores are freed, are usually far fuller than the best one). While
    that bound plus the cores freed since in intervals the window meets (``_window_bounds``) stays
    below its size for every window, no earlier window can fit: only lower cores are looked for,
    and only if cores were freed during the reservation; else it is searched anew (``find``)
    over the starts where it reaches the size, which also renews the bound, and when it fits no
    earlier, its lower cores are looked for on the same condition (``reinsertion`` looks always).
    They are looked for only in the chunks those frees touched (``log_chunks``, a bit per chunk
    per entry): a lower core free throughout the reservation now was not at its last check (it
    then had the lowest cores), so an entry since that meets it freed that core; and only entries
    whose ``[pre, ext)`` (``free_around``) holds the whole reservation count, as for a window in
    ``_window_bounds``: after the last entry that freed that core in the reservation, the core was
    free throughout it (only takes since), so no slice around the entry's interval and within the
    reservation lacked all of the entry's cores. A search also
    starts after the starts that the pass's earlier answers rule out (``nofit``, ``kept[0]``
    bounds, as the counting model's ``NoFitBefore``: ``_no_fit_before``), and each answer adds one."""
    earliest = np.inf
    points, weights = np.empty(2 * len(log_a) + 2 * STEPS), np.empty(2 * len(log_a) + 2 * STEPS, dtype=np.int64)
    owncc, steps_t, steps_m, nsteps = scratch[5], scratch[6], scratch[7], scratch[8]
    allowed = np.empty(log_chunks.shape[1], dtype=np.uint64)  # the chunks where a lower core can be free
    while q < len(cn):
        start, end, row, n = cstart[q], cend[q], crow[q], cn[q]
        if not (start > now and end == start + cspan[q]):
            return q, -1, -1, 0, earliest
        since = checked[row]
        code, i, most = 0, -1, bound[row]
        if since < log_count:
            lowest, below, highest, above, during = -np.inf, 0, np.inf, 0, False
            allowed[:] = _ALL
            if since >= log_base:
                most, lowest, below, highest, above = _window_bounds(
                    log_a, log_b, log_n, log_pre, log_ext, since - log_base, log_count - log_base, now, start, cspan[q], n,
                    row_t, row_m, row, row_k[row], bound[row], points, weights, steps_t, steps_m, nsteps)
                allowed[:] = 0
                for e in range(since - log_base, log_count - log_base):
                    # it met the reservation, and one of its cores stayed free around all of it
                    if log_a[e] < end and log_b[e] > start and log_pre[e] <= start and log_ext[e] >= end:
                        during = True
                        for x in range(len(allowed)):
                            allowed[x] |= log_chunks[e, x]
            if since >= log_base and most < n:
                if during:
                    code = lower_cores(times, rows, pool, cpool, n, start, end, owned[row], n, scratch, allowed)
            else:
                # the first start that the frees can have made fit, and the pass's "no fit before" bounds
                x, cores = _no_fit_before(nofit, kept[0], n, cspan[q], start)
                first = 0 if x <= origin else np.searchsorted(times, x)
                from_freed = 0 if lowest <= origin else np.searchsorted(times, lowest)
                most0 = max(cores - 1 if first > 0 else 0, below if from_freed > 0 else 0)
                for c in range(len(owncc)):
                    owncc[c] = owned_cc[row, c]
                i, most = find(times, counts, rows, pool, cpool, origin, n, cspan[q], np.searchsorted(times, start),
                               owned[row], n, scratch, max(first, from_freed), most0, highest)
                if i >= 0:
                    code = 1
                elif during or since < log_base:  # as ``reinsertion``; with no free during it, it keeps its cores
                    code = lower_cores(times, rows, pool, cpool, n, start, end, owned[row], n, scratch, allowed)
                if code != 1 and highest < start:  # the windows from ``highest`` on, left out of the search
                    most = _raise(most, above, highest, steps_t, steps_m, nsteps)
        else:
            nsteps[0] = row_k[row]  # unchanged: its steps stay
            for j in range(row_k[row]):
                steps_t[j], steps_m[j] = row_t[row, j], row_m[row, j]
        kept[0] = note_no_fit(nofit, kept[0], n, cspan[q], (origin if i == 0 else times[i]) if code == 1 else start)
        if code != 0:
            return q, code, i, most, earliest
        checked[row] = log_count
        bound[row] = most
        row_k[row] = nsteps[0]
        for j in range(nsteps[0]):  # indexed in place, not sliced (as in ``_window_bounds``)
            row_t[row, j], row_m[row, j] = steps_t[j], steps_m[j]
        earliest = min(earliest, start)
        q += 1
    return q, 0, -1, 0, earliest


@njit(cache=True, nogil=True)
def _split_at(times, counts, rows, pool, cpool, spare, nspare, t):
    """``ArrayCoreProfile._split`` (a slice starts at ``t``; its new row is the last of ``spare``):
    ``(i, times, counts, rows, nspare)``."""
    i = np.searchsorted(times, t, side="right") - 1
    if times[i] == t:
        return i, times, counts, rows, nspare
    nspare -= 1
    row = spare[nspare]
    pool[row] = pool[rows[i]]
    cpool[row] = cpool[rows[i]]
    n = len(times)
    new_times, new_counts, new_rows = np.empty(n + 1), np.empty(n + 1, dtype=np.int64), np.empty(n + 1, dtype=np.int64)
    new_times[:i + 1], new_counts[:i + 1], new_rows[:i + 1] = times[:i + 1], counts[:i + 1], rows[:i + 1]
    new_times[i + 1], new_counts[i + 1], new_rows[i + 1] = t, counts[i], row
    new_times[i + 2:], new_counts[i + 2:], new_rows[i + 2:] = times[i + 1:], counts[i + 1:], rows[i + 1:]
    return i + 1, new_times, new_counts, new_rows, nspare


@njit(cache=True, nogil=True)
def release(times, counts, rows, pool, cpool, spare, nspare, start, end, words, log_a, log_b, log_n, log_pre, log_ext,
            log_chunks, e, nofit, kept):
    """``ArrayCoreProfile.release`` of a placement on the cores ``words`` from ``start`` to a
    finite ``end`` (after the present's start): slices split at both ends, the freed interval
    logged at entry ``e`` (with ``free_around`` and the retreat of the "no fit before" bounds),
    the cores given back and equal neighbours merged, step for step in one call (about 15
    numpy calls and five kernel calls from Python, for every job that ends). Returns ``(times,
    counts, rows, nspare)``; ``spare`` must hold the 2 rows the splits may take."""
    i = 0
    if start > times[0]:
        i, times, counts, rows, nspare = _split_at(times, counts, rows, pool, cpool, spare, nspare, start)
    j, times, counts, rows, nspare = _split_at(times, counts, rows, pool, cpool, spare, nspare, end)
    log_a[e] = times[i]
    log_b[e] = times[j] if j < len(times) else np.inf
    freed = 0
    for w in range(len(words)):
        freed += popcount(words[w])
    log_n[e] = freed
    chunk_mask(words, log_chunks[e])
    log_pre[e], log_ext[e] = free_around(times, pool, rows, i, j, words)
    if kept[0]:
        retreat_no_fit(nofit, kept[0], log_a[e])
    give_back(pool, cpool, rows, counts, i, j, words)
    lo, hi = max(i, 1), min(j + 1, len(times) - 1)
    if lo <= hi:
        equal = same_as_previous(pool, rows, counts, lo, hi)
        if len(equal):
            keep = np.ones(len(times), dtype=np.bool_)
            for k in equal:
                spare[nspare] = rows[k]
                nspare += 1
                keep[k] = False
            times, counts, rows = times[keep], counts[keep], rows[keep]
    return times, counts, rows, nspare


@njit(cache=True, nogil=True)
def move(times, counts, rows, pool, cpool, spare, nspare, origin, row, old_start, old_end, new_start, new_end,
         new_words, owned, owned_cc, checked, nsteps, log_a, log_b, log_n, log_pre, log_ext, log_chunks, e, nofit,
         kept):
    """A future reservation (cores ``owned[row]`` from ``old_start`` to ``old_end``) moves to
    ``new_words`` from ``new_start`` (or now) to ``new_end``: ``ArrayCoreProfile.remove`` then
    ``place``, step for step in one call (``release``: slices split, the freed interval logged at
    entry ``e``, cores given back, equal neighbours merged; then slices split, cores taken, the placement's words
    kept in ``owned[row]``). Returns ``(times, counts, rows, nspare, i)``, ``i`` the slice where
    it starts; ``spare`` must hold the 4 rows the splits may take."""
    times, counts, rows, nspare = release(times, counts, rows, pool, cpool, spare, nspare, old_start, old_end, owned[row],
                                          log_a, log_b, log_n, log_pre, log_ext, log_chunks, e, nofit, kept)
    i = 0
    if new_start > origin:
        i, times, counts, rows, nspare = _split_at(times, counts, rows, pool, cpool, spare, nspare, new_start)
    j, times, counts, rows, nspare = _split_at(times, counts, rows, pool, cpool, spare, nspare, new_end)
    take(pool, cpool, rows, counts, i, j, new_words)
    owned[row] = new_words
    _recount(owned[row], owned_cc[row])
    checked[row] = -1
    nsteps[row] = 0
    return times, counts, rows, nspare, i


@njit(cache=True, nogil=True)
def scan_moving(times, counts, rows, pool, cpool, spare, nspare, origin, now, q, cn, cspan, cstart, cend, crow, owned,
                owned_cc, scratch, log_a, log_b, log_n, log_pre, log_ext, log_chunks, log_base, log_count, checked, bound,
                row_t, row_m, row_k, nofit, kept, moved_q, moved_start):
    """``scan``, and each reservation it finds a better window for in the future moved here
    (``move``) and confirmed as its first fit with the bound ``scan`` gave (as
    ``ArrayCoreProfile.confirm``): the same steps in the same order as a return to Python for each
    move, without that return (about 115k moves in a 10,000-job run on 93,312 cores). Returns
    ``scan``'s answer at the first candidate it does not move here (a move to the present: the job
    starts; a reservation without one; or too few spare rows in ``pool`` (``spare``, ``nspare``),
    in the scratch, or in the log: ``ArrayCoreProfile`` makes room), then ``(times, counts, rows,
    nspare, log_count, nmoved)``: the moved candidates' positions and new starts are the first
    ``nmoved`` of ``moved_q``/``moved_start``, and ``earliest`` counts their starts too."""
    nmoved = 0
    earliest = np.inf
    steps_t, steps_m, nsteps = scratch[6], scratch[7], scratch[8]
    while True:
        q, code, i, most, passed = scan(times, counts, rows, pool, cpool, origin, now, q, cn, cspan, cstart, cend, crow,
                                        owned, owned_cc, scratch, log_a, log_b, log_n, log_pre, log_ext, log_chunks,
                                        log_base, log_count, checked, bound, row_t, row_m, row_k, nofit, kept)
        earliest = min(earliest, passed)
        if code <= 0:
            return q, code, i, most, earliest, times, counts, rows, nspare, log_count, nmoved
        start = cstart[q] if code == 2 else times[i]
        room = len(times) + 4 <= min(len(scratch[0]), len(scratch[3]))  # a move adds at most 4 slices
        if (code == 1 and i == 0) or nspare < 4 or not room or log_count - log_base == len(log_a) or \
                cend[q] == np.inf or start + cspan[q] == np.inf:
            return q, code, i, most, earliest, times, counts, rows, nspare, log_count, nmoved
        row = crow[q]
        times, counts, rows, nspare, i = move(times, counts, rows, pool, cpool, spare, nspare, origin, row, cstart[q],
                                              cend[q], start, start + cspan[q], scratch[2], owned, owned_cc, checked,
                                              row_k, log_a, log_b, log_n, log_pre, log_ext, log_chunks,
                                              log_count - log_base, nofit, kept)
        log_count += 1
        checked[row] = log_count  # ``confirm``
        bound[row] = most
        row_k[row] = nsteps[0]
        for j in range(nsteps[0]):
            row_t[row, j], row_m[row, j] = steps_t[j], steps_m[j]
        moved_q[nmoved], moved_start[nmoved] = q, times[i]
        nmoved += 1
        earliest = min(earliest, times[i])
        q += 1
