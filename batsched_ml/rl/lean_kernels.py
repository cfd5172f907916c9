"""The lean core's compiled kernels (``lean``): the queue's two min-trees over the episode's arrival
order (cores and walltime of the queued jobs, inf elsewhere), the running jobs' planned ends for EASY,
and EASY's pass after the head job did not fit. Compiled by numba on first use, cached on disk."""

from __future__ import annotations

import numpy as np
from numba import njit

from .observation import fill_kernel

fill = fill_kernel()  # the observation's own compiled rows, callable from the kernels below

__all__ = ["backfill", "decision", "first_fit", "plan", "reserve", "set_flag", "set_leaf", "unplan", "window"]


@njit(cache=True, nogil=True)
def set_leaf(min_res, min_span, leaves, leaf, res, span):
    """Set a leaf of the cores and walltime min-trees (inf: no queued job there) and the minima above it."""
    i = leaves + leaf
    min_res[i] = res
    min_span[i] = span
    i //= 2
    while i >= 1:
        a, b = 2 * i, 2 * i + 1
        r = min(min_res[a], min_res[b])
        s = min(min_span[a], min_span[b])
        if min_res[i] == r and min_span[i] == s:
            break
        min_res[i] = r
        min_span[i] = s
        i //= 2


@njit(cache=True, nogil=True)
def set_flag(tree, leaves, job, value):
    """Set a job's leaf of a min-tree (0: queued, inf: not) and the minima above it."""
    i = leaves + job
    tree[i] = value
    i //= 2
    while i >= 1:
        m = min(tree[2 * i], tree[2 * i + 1])
        if tree[i] == m:
            break
        tree[i] = m
        i //= 2


@njit(cache=True, nogil=True)
def first_fit(min_res, min_span, leaves, free, extra, now, reserved):
    """The first leaf (queued job, in the trees' order) with ``res <= free`` and (``now + span <= reserved`` or
    ``res <= extra``); -1 if none. A subtree is entered only if its minima allow such a job."""
    stack = np.empty(64, np.int64)
    top = 0
    stack[0] = 1
    top = 1
    while top > 0:
        top -= 1
        i = stack[top]
        r = min_res[i]
        if r > free or (r > extra and now + min_span[i] > reserved):
            continue
        if i >= leaves:
            return i - leaves
        stack[top] = 2 * i + 1
        stack[top + 1] = 2 * i
        top += 2
    return -1


@njit(cache=True, nogil=True)
def window(arrived, leaves, count, out):
    """The first ``count`` queued jobs in arrival order (finite leaves of the ``arrived`` tree) into ``out``;
    returns how many there are."""
    stack = np.empty(64, np.int64)
    stack[0] = 1
    top = 1
    k = 0
    inf = np.inf
    while top > 0 and k < count:
        top -= 1
        i = stack[top]
        if arrived[i] == inf:
            continue
        if i >= leaves:
            out[k] = i - leaves
            k += 1
            continue
        stack[top] = 2 * i + 1
        stack[top + 1] = 2 * i
        top += 2
    return k


@njit(cache=True, nogil=True)
def plan(ends, res, jobs, count, end, r, job):
    """Insert a running job's planned end into the sorted arrays; returns the new count."""
    i = count
    while i > 0 and ends[i - 1] > end:
        ends[i] = ends[i - 1]
        res[i] = res[i - 1]
        jobs[i] = jobs[i - 1]
        i -= 1
    ends[i] = end
    res[i] = r
    jobs[i] = job
    return count + 1


@njit(cache=True, nogil=True)
def unplan(ends, res, jobs, count, end, job):
    """Remove an ended job's planned end (``end``) from the sorted arrays; returns the new count."""
    i = np.searchsorted(ends[:count], end)
    while jobs[i] != job:
        i += 1
    for k in range(i, count - 1):
        ends[k] = ends[k + 1]
        res[k] = res[k + 1]
        jobs[k] = jobs[k + 1]
    return count - 1


@njit(cache=True, nogil=True)
def backfill(min_res, min_span, arrived, leaves, rank, order, ends, ends_res, ends_job, count, free, head, res, span,
             now, out):
    """EASY's pass after the head did not fit: its reservation (``reserve``), then every other queued
    job that fits now without delaying it, in FCFS order (``first_fit`` over the leaves ``rank``-ed by
    FCFS's key; ``order`` is the inverse), started: taken off the queue's trees, planned, written to
    ``out``. Returns (jobs started, running jobs planned, free cores)."""
    reserved, extra = reserve(ends, ends_res, count, free, res[head])
    set_leaf(min_res, min_span, leaves, rank[head], np.inf, np.inf)
    started = 0
    while free > 0:
        leaf = first_fit(min_res, min_span, leaves, free, extra, now, reserved)
        if leaf < 0:
            break
        job = order[leaf]
        set_leaf(min_res, min_span, leaves, leaf, np.inf, np.inf)
        set_flag(arrived, leaves, job, np.inf)
        end = now + span[job]
        count = plan(ends, ends_res, ends_job, count, end, res[job], job)
        free -= res[job]
        if end > reserved:
            extra -= res[job]
        out[started] = job
        started += 1
    set_leaf(min_res, min_span, leaves, rank[head], float(res[head]), span[head])
    return started, count, free


@njit(cache=True, nogil=True)
def reserve(ends, res, count, free, need):
    """The head's reservation: the earliest planned end by which ``need`` cores are free (inf if
    never), and the cores left over then once the head has its own."""
    acc = free
    i = 0
    while i < count:
        acc += res[i]
        end = ends[i]
        i += 1
        if acc >= need:
            while i < count and ends[i] == end:
                acc += res[i]
                i += 1
            return end, acc - need
    return np.inf, acc - need


@njit(cache=True, nogil=True)
def decision(arrived, leaves, count, slots, jobs, machine, submit, rows, now, free, nb_cores, queued, time_scale,
             queue_scale):
    """A decision's window (``window``) and observation (``observation.fill_kernel``) in one call; returns the
    number of jobs in the window."""
    k = window(arrived, leaves, count, slots)
    fill(jobs, machine, slots[:k], submit, rows, now, free, nb_cores, queued, time_scale, queue_scale)
    return k
