"""The release DP of ``release_dp``, compiled with numba.

For every event time ``g``, the probability that the running jobs have released
between ``lo`` and ``hi_k`` units (one ``hi`` per candidate size) is read from the distribution
of released units at ``g``, the product of one factor ``1 - p_i(g) + p_i(g) z^u_i`` per running
job (``p_i(g)``: P(job i ended by ``t_g``)). A job's factor only changes at its own events, so
its life in the stretch is a few intervals of constant ``p``: divide and conquer over time (a
segment tree) multiplies each interval's factor into the nodes that cover it, and each leaf is
an event time whose distribution is its root-to-leaf product. Only multiplications by
non-negative factors, never a division: no cancellation, and a probability that is zero is
exactly zero. Cost O(events x log(times) x window), and the window is narrow:

* counts at or above ``W`` (= the largest ``hi`` + 1) are never needed, a job of ``W`` units
  or more only scales the distribution, and the cores surely released (``p = 1``) are an
  offset, not a shift of the data;
* at a node, counts below ``lo - M`` cannot reach ``lo`` any more, ``M`` being the most units
  the jobs of the node's descendants can still add before a leaf: they are not computed;
* a node whose upper bound (the mass in ``[lo - M, hi_k]``) cannot raise the running maximum
  of any size is not descended into (``runmax`` is all that the risks read);
* counts above the most units the factors applied so far can have released are zero and stay
  zero through a factor's update (both of its terms are zero): they are not updated (a fifth
  to a third of the counts of the recorded 93,312-core batches).

The tree is walked left to right, as far as the undecided candidates need (``ReleaseWalk``:
the walk resumes where it stopped); ``decide`` settles each candidate as soon as the times
walked so far give its risk, or show that it reaches tau (the paper's early exit). The
functions run as plain Python when numba is missing (tests, slowly).
"""

from __future__ import annotations

import importlib.util

import numpy as np

from .numba_loading import load_numba_without_blas

AVAILABLE = importlib.util.find_spec("numba") is not None
# a subtree is skipped only when its bound is this far below the running maximum: far above the
# rounding of the sums (up to ~10^5 terms), so a skipped leaf could not have raised it
MARGIN = 1e-9
_KERNELS: list = []
_COMPILED = False


def _kernel(function):
    _KERNELS.append(function.__name__)
    return function


def compile_kernels() -> None:
    """Replace the functions below by numba's compiled versions (cached on disk), once."""
    global _COMPILED
    if _COMPILED or not AVAILABLE:
        return
    load_numba_without_blas()
    from numba import njit

    module = globals()
    for name in _KERNELS:
        module[name] = njit(cache=True, nogil=True)(module[name])
    _COMPILED = True


@_kernel
def _intervals(m, p_before, ev_job, ev_p, ev_rel):
    """The stretches ``[first, last)`` (relative event times) over which a job's P(ended) is a
    constant ``p > 0``: ``p_before`` holds each job's value when the stretch of ``m`` times
    begins, then its events (sorted by time) change it."""
    n = len(p_before)
    cur_p = p_before.copy()
    cur_first = np.zeros(n, np.int64)
    cap = len(ev_job) + n
    job = np.empty(cap, np.int64)
    first = np.empty(cap, np.int64)
    last = np.empty(cap, np.int64)
    prob = np.empty(cap)
    k = 0
    for e in range(len(ev_job)):
        i = ev_job[e]
        g = ev_rel[e]
        if g > cur_first[i]:
            if cur_p[i] > 0.0:
                job[k], first[k], last[k], prob[k] = i, cur_first[i], g, cur_p[i]
                k += 1
            cur_first[i] = g
        if ev_p[e] > cur_p[i]:
            cur_p[i] = ev_p[e]
    for i in range(n):
        if cur_p[i] > 0.0 and cur_first[i] < m:
            job[k], first[k], last[k], prob[k] = i, cur_first[i], m, cur_p[i]
            k += 1
    return job[:k], first[:k], last[:k], prob[:k]


@_kernel
def _tree(m, width, units, job, first, last, prob):
    """Each interval's factor on the canonical nodes of a segment tree over ``m`` leaves
    (node ``v``'s factors: ``units[start[v]:start[v + 1]]``, ``probs[...]``) and, per node,
    ``reach[v]``: the most units its descendants' factors can add before a leaf (jobs of
    ``width`` units or more never count: their release leaves the window)."""
    size = 1
    while size < m:
        size *= 2
    start = np.zeros(2 * size + 1, np.int64)
    added = np.zeros(2 * size, np.int64)  # units of the node's own factors
    for k in range(len(job)):
        u = units[job[k]]
        lo_, hi_ = first[k] + size, last[k] + size
        while lo_ < hi_:
            if lo_ & 1:
                start[lo_ + 1] += 1
                if u < width:
                    added[lo_] += u
                lo_ += 1
            if hi_ & 1:
                hi_ -= 1
                start[hi_ + 1] += 1
                if u < width:
                    added[hi_] += u
            lo_ >>= 1
            hi_ >>= 1
    for v in range(1, 2 * size + 1):
        start[v] += start[v - 1]
    fill = start.copy()
    f_units = np.empty(start[2 * size], np.int64)
    f_probs = np.empty(start[2 * size])
    for k in range(len(job)):
        u = units[job[k]]
        p = prob[k]
        lo_, hi_ = first[k] + size, last[k] + size
        while lo_ < hi_:
            if lo_ & 1:
                f_units[fill[lo_]] = u
                f_probs[fill[lo_]] = p
                fill[lo_] += 1
                lo_ += 1
            if hi_ & 1:
                hi_ -= 1
                f_units[fill[hi_]] = u
                f_probs[fill[hi_]] = p
                fill[hi_] += 1
            lo_ >>= 1
            hi_ >>= 1
    reach = np.zeros(2 * size, np.int64)
    for v in range(size - 1, 0, -1):
        reach[v] = max(reach[2 * v] + added[2 * v], reach[2 * v + 1] + added[2 * v + 1])
    return size, start, f_units, f_probs, added, reach


@_kernel
def _multiply(a, scratch, u, p, i0, i1):
    """``a[i] = (1 - p) a[i] + p a[i - u]`` for ``i0 <= i < i1`` (0 below index 0), in place.
    Written so that the compiler vectorises it: descending blocks of ``u`` counts (a block
    reads only counts below it, not yet updated), or through ``scratch`` for small ``u``."""
    q = 1.0 - p
    lo = max(i0, u)
    if u >= 8:
        hi = i1
        while hi > lo:
            start = max(lo, hi - u)
            dst = a[start:hi]
            src = a[start - u:hi - u]
            for k in range(hi - start):
                dst[k] = dst[k] * q + src[k] * p
            hi = start
    elif i1 > lo:
        n = i1 - lo
        dst = a[lo:i1]
        src = a[lo - u:i1 - u]
        tmp = scratch[:n]
        for k in range(n):
            tmp[k] = dst[k] * q + src[k] * p
        for k in range(n):
            dst[k] = tmp[k]
    if i0 < u:
        low = a[i0:min(i1, u)]
        for k in range(len(low)):
            low[k] *= q


@_kernel
def _window_sum(a, c0, c1):
    """``a[c0:c1].sum()`` in a fixed order (four running sums: vectorised, and the same
    rounding on every machine)."""
    s0 = s1 = s2 = s3 = 0.0
    c = c0
    while c + 4 <= c1:
        s0 += a[c]
        s1 += a[c + 1]
        s2 += a[c + 2]
        s3 += a[c + 3]
        c += 4
    while c < c1:
        s0 += a[c]
        c += 1
    return (s0 + s1) + (s2 + s3)


@_kernel
def _walk(m, lo, his, columns, width, stop, size, start, f_units, f_probs, added, reach, buf, offset, top, stack,
          best, scratch, runmax0):
    """Depth first, left to right, until the next leaf is ``stop`` or later (``stack[0]``: how
    many nodes wait, and the leaves done, so that the next call resumes there), then
    ``runmax0[g + 1, k]`` = max over leaves h <= g of P(lo <= released <= his[k]) at leaf
    ``h``, for the ``columns`` first sizes (a subtree that cannot raise ``best``, that
    running maximum, is skipped). ``width`` (the counts that matter: above
    ``his[columns - 1]``) may shrink from one call to the next, never grow."""
    sp = stack[0, 0]
    while sp > 0:
        v, b, parent = stack[sp, 0], stack[sp, 1], stack[sp, 2]
        leftmost = v
        while leftmost < size:
            leftmost *= 2
        if leftmost - size >= stop:
            break
        sp -= 1
        if leftmost - size >= m:
            continue
        need = lo - reach[v] - added[v]  # lowest count this node's state must hold exactly
        if parent >= 0:
            s = offset[parent]
            offset[b] = s
            top[b] = top[parent]
            i0 = max(need - s, 0)
            dst = buf[b, i0:width - s]
            src = buf[parent, i0:width - s]
            for k in range(len(dst)):
                dst[k] = src[k]
        s = offset[b]
        a = buf[b]
        t = top[b]  # a[t:] is zero: nothing released that far yet
        dead = False
        for x in range(start[v], start[v + 1]):
            u = f_units[x]
            p = f_probs[x]
            if u >= width:  # released: beyond every count we need; kept: the counts stay
                if p >= 1.0:
                    dead = True
                    break
                q = 1.0 - p
                kept = a[max(need - s, 0):min(t, width - s)]
                for k in range(len(kept)):
                    kept[k] *= q
                continue
            need += u
            if p >= 1.0:
                s += u
                if s >= width:
                    dead = True
                    break
                continue
            # (above t + u both terms are zero: the counts stay zero, skipped)
            _multiply(a, scratch, u, p, max(need - s, 0), min(t + u, width - s))
            t = min(t + u, width)
        offset[b] = s
        top[b] = t
        if dead:  # every count below ``width`` is passed: P = 0 in the whole subtree
            continue
        if v >= size:
            g = v - size
            acc = 0.0
            c = max(lo, s)
            for k in range(columns):
                if his[k] >= c:
                    acc += _window_sum(a, c - s, his[k] + 1 - s)
                    c = his[k] + 1
                d = acc if his[k] >= lo else 0.0
                runmax0[g + 1, k] = d
                if d > best[k]:
                    best[k] = d
            continue
        # skip the subtree when even the widest range it can reach holds too little mass
        acc = 0.0
        c = max(need, s)
        useful = False
        for k in range(columns):
            if his[k] >= c:
                acc += _window_sum(a, c - s, his[k] + 1 - s)
                c = his[k] + 1
            if his[k] >= lo and acc > 0.0 and acc > best[k] - MARGIN:
                useful = True  # (the wider sizes' sums are not needed to know it)
                break
        if not useful:
            continue
        sp += 1  # the right child after the left one's subtree, in place
        stack[sp, 0], stack[sp, 1], stack[sp, 2] = 2 * v + 1, b, -1
        sp += 1
        stack[sp, 0], stack[sp, 1], stack[sp, 2] = 2 * v, b + 1, b
    stack[0, 0] = sp
    done = stack[0, 1]
    stop = min(stop, m)
    for g in range(done, stop):
        for k in range(columns):
            if runmax0[g, k] > runmax0[g + 1, k]:
                runmax0[g + 1, k] = runmax0[g, k]
    stack[0, 1] = max(done, stop)


@_kernel
def _plan(m, width, n_sizes, units, ev_job, ev_p, ev_rel):
    """The tree of ``_tree`` and the state of a walk that has not begun: a buffer per depth
    (row 0: nothing released yet), the units surely released per buffer and where its nonzero
    counts end, the stack, the
    running maximum per size, ``_multiply``'s scratch, and the running maxima per event time
    (after a row of zeros: nothing before the first time)."""
    job, first, last, prob = _intervals(m, np.zeros(len(units)), ev_job, ev_p, ev_rel)
    size, start, f_units, f_probs, added, reach = _tree(max(m, 1), width, units, job, first, last, prob)
    depth = 1
    while (1 << (depth - 1)) < size:
        depth += 1
    buf = np.empty((depth, width))  # a row is written (copied from its parent's) before it is read
    buf[0] = 0.0
    buf[0, 0] = 1.0
    offset = np.zeros(depth, np.int64)
    top = np.ones(depth, np.int64)  # per buffer: the counts from there up are zero
    stack = np.zeros((2 * depth + 2, 3), np.int64)  # row 0: nodes waiting, leaves done; then (node, buffer, copy from)
    if m > 0:
        stack[0, 0] = 1
        stack[1, 0], stack[1, 1], stack[1, 2] = 1, 0, -1
    return (size, start, f_units, f_probs, added, reach, buf, offset, top, stack, np.zeros(n_sizes), np.empty(width),
            np.zeros((m + 1, n_sizes)))


@_kernel
def decide(q, idx, cols, runmax0, done, tau, is_open, out):
    """For each open candidate (``q``/``idx``: its bins' probabilities and event-time indices,
    ``runmax0[k]`` the running max before time k, known up to ``done``): its risk when every
    bin it has is known (``out``, closed); with ``tau >= 0``, a lower bound that already
    reaches ``tau`` (the paper's early exit; ``out`` = the bound, closed). Returns how many
    stay open, the event times they need and how many sizes (columns) they use."""
    n_open, need, columns = 0, 0, 0
    for c in range(len(cols)):
        if not is_open[c]:
            continue
        col = cols[c]
        last = 0
        for b in range(q.shape[1]):
            if q[c, b] > 0.0 and idx[c, b] > last:
                last = idx[c, b]
        if last <= done:
            total = 0.0
            for b in range(q.shape[1]):
                total += q[c, b] * runmax0[idx[c, b], col]
            out[c] = total
            is_open[c] = False
            continue
        if tau >= 0.0:
            total, left = 0.0, 1.0
            for b in range(q.shape[1]):
                if idx[c, b] <= done:
                    total += q[c, b] * runmax0[idx[c, b], col]
                    left -= q[c, b]
            bound = total + max(left, 0.0) * runmax0[done, col]  # the running max can only grow
            if bound >= tau and bound > 0.0:
                out[c] = bound
                is_open[c] = False
                continue
        n_open += 1
        need = max(need, last)
        columns = max(columns, col + 1)
    return n_open, need, columns


@_kernel
def narrowed_width(width, lo, his, columns):
    """The counts a walk for the ``columns`` smallest sizes needs: up to the widest of their
    windows (at least ``lo``), never more than it had (``width``)."""
    return min(width, max(his[columns - 1] + 1 if columns else 0, lo + 1))


@_kernel
def prepare(times, jobs, cum, cores, missing, sizes):
    """``ReleaseOutlook``'s set-up in one call (a few dozen numpy calls per batch otherwise): the
    distinct event times and each event's group, the unit (gcd of the running jobs' cores) and
    their sizes in units, the candidate sizes (sorted, distinct), the window's ``lo`` and ``his``
    in units, its ``width``, and the walk's initial state (``_plan``). ``valid`` is False when
    an event names no running job (the compiled walk trusts the indices)."""
    n_events = len(times)
    valid = True
    for e in range(n_events):
        if jobs[e] < 0 or jobs[e] >= len(cores):
            valid = False
    group = np.empty(n_events, np.int64)
    m = 0
    for e in range(n_events):  # times are sorted: a new value starts a group
        if e == 0 or times[e] != times[e - 1]:
            m += 1
        group[e] = m - 1
    distinct = np.empty(m)
    for e in range(n_events):
        distinct[group[e]] = times[e]
    unit = 0
    for c in cores:  # gcd of every size (Euclid), 1 without running jobs
        a, b = unit, abs(c)
        while b:
            a, b = b, a % b
        unit = a
    if unit == 0:
        unit = 1
    units = cores // unit
    uniq = np.unique(sizes)
    lo = -(-missing // unit)  # released units u with u * unit >= c_q ...
    his = (missing + uniq - 1) // unit  # ... < c_q + r
    width = lo
    for k in range(len(his)):
        if his[k] > width:
            width = his[k]
    width = max(width, 0) + 1
    valid = valid and len(jobs) == n_events and len(cum) == n_events
    state = _plan(m, width, len(uniq), units, jobs, cum, group) if valid else _plan(0, 1, 0, units[:0], jobs[:0],
                                                                                   cum[:0], group[:0])
    return valid, distinct, group, unit, units, uniq, lo, his, width, state


@_kernel
def settle(q, idx, cols, tau, min_chunk, m, lo, his, width, columns, done, exact, tree, walk, runmax0, out):
    """``ReleaseOutlook.risks``'s loop in one call: ``decide`` the candidates with the event times
    walked so far, then walk the stretch the open ones need (growing geometrically from
    ``min_chunk`` with ``tau >= 0``: the early exit may settle them before the end), for the sizes
    they use, until every candidate is settled (``out``). A size left out from ``done`` on gets
    ``exact[k] = done`` (its running max is right up to there). Returns the new ``done``,
    ``columns`` and ``width``."""
    size, start, f_units, f_probs, added, reach = tree
    buf, offset, top, stack, best, scratch = walk
    is_open = np.ones(len(cols), np.bool_)
    n_open, need, wanted = decide(q, idx, cols, runmax0, done, tau, is_open, out)
    while n_open:
        # the stretch they need (all of it without an early exit), for the sizes they have
        stop = need if tau < 0.0 else min(need, max(2 * done, done + min_chunk))
        if wanted < columns:  # the wider sizes are settled: their counts are not needed any more
            for k in range(wanted, columns):
                exact[k] = done
            columns = wanted
        width = narrowed_width(width, lo, his, columns)
        _walk(m, lo, his, columns, width, stop, size, start, f_units, f_probs, added, reach, buf, offset, top,
              stack, best, scratch, runmax0)
        done = stop
        n_open, need, wanted = decide(q, idx, cols, runmax0, done, tau, is_open, out)
    return done, columns, width


class ReleaseWalk:
    """The divide and conquer over ``m`` event times, walked left to right as far as asked:
    ``runmax0[g + 1]`` holds, per size, the largest probability over the times up to ``g``
    once ``advance`` went past ``g``. ``state``: ``_plan``'s, when already made (``prepare``)."""

    def __init__(self, m, width, lo, his, units, ev_job, ev_p, ev_rel, state=None):
        self.m, self.width, self.lo, self.his = m, width, lo, his
        if state is None:
            state = _plan(m, width, len(his), units, ev_job, ev_p, ev_rel)
        self.tree, self.walk, self.runmax0 = state[:6], state[6:12], state[12]

    def advance(self, stop: int, columns: int) -> None:
        """Up to event time ``stop``, for the ``columns`` smallest sizes (the counts above
        theirs are not computed from now on)."""
        self.width = int(narrowed_width(self.width, self.lo, self.his, columns))
        _walk(self.m, self.lo, self.his, columns, self.width, stop, *self.tree, *self.walk, self.runmax0)

    def settle(self, q, idx, cols, tau: float, min_chunk: int, columns: int, done: int, exact, out):
        """``settle``: walks as far as the candidates need; returns the new ``(done, columns)``."""
        done, columns, self.width = settle(q, idx, cols, tau, min_chunk, self.m, self.lo, self.his, self.width,
                                           columns, done, exact, self.tree, self.walk, self.runmax0, out)
        return done, columns
