"""RLScheduler's heuristic orders: the sort key of each queued job (lowest first).

Each key is computed with the float operations of their ``HPCSimPickJobs.py`` (numpy scalar
functions on integer fields), so that Python's stable sort puts ties where theirs does:

* ``fcfs``: the submission time;
* ``sjf``: (requested time, submission time);
* ``f1``: ``log10(r) * n + 870 * log10(s)``, ``r`` the requested time, ``n`` the processors, ``s``
  the *absolute* submission time in the trace (0.1 for a non-positive ``r`` or ``s``);
* ``wfp3``: ``-(w / r)^3 * n`` and ``unicef``: ``-(w + 1e-15) / (log2(n + 1e-15) * r)``, ``w`` the
  job's wait so far;
* ``wfp3-published`` / ``unicef-published``: the same formulas as their code computes them, with
  the wait taken from a start time that is -1 for every queued job, ``w = -(s + 1)``: their WFP3
  and UNICEF columns come from this. Both keys are then static: WFP3 runs the job with the lowest
  ``((s + 1) / r)^3 * n`` first (earliest, longest-requested, smallest), UNICEF the one with the
  lowest ``(s + 1) / (log2(n) * r)``; a 1-processor job's ``log2(1 + 1e-15)`` is about 1.6e-15,
  which puts single-processor jobs last.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["ORDERS", "STATIC_ORDERS", "order_keys"]


def _f1(s: int, r: int, n: int) -> float:
    return np.log10(r if r > 0 else 0.1) * n + 870 * np.log10(s if s > 0 else 0.1)


def _wfp3(w: int, r: int, n: int) -> float:
    return -np.power(_div(float(w), r), 3) * n


def _unicef(w: int, r: int, n: int) -> float:
    return -_div(w + 1e-15, np.log2(n + 1e-15) * r)


def _div(a, b):
    """``a / b`` with IEEE results for a zero ``b`` (their code would stop on a division by zero)."""
    return a / b if b != 0 else np.float64(a) / np.float64(b)


# name -> key(submit, requested time, processors, now) of one job
ORDERS = {
    "fcfs": lambda s, r, n, now: s,
    "sjf": lambda s, r, n, now: (r, s),
    "f1": lambda s, r, n, now: _f1(s, r, n),
    "wfp3": lambda s, r, n, now: _wfp3(now - s, r, n),
    "unicef": lambda s, r, n, now: _unicef(now - s, r, n),
    "wfp3-published": lambda s, r, n, now: _wfp3(-1 - s, r, n),
    "unicef-published": lambda s, r, n, now: _unicef(-1 - s, r, n),
}
STATIC_ORDERS = ("fcfs", "sjf", "f1", "wfp3-published", "unicef-published")  # keys that do not depend on now


def order_keys(name: str, submit, request_time, procs, now: int = 0) -> list:
    """The keys of ``name`` for the jobs given by three lists of Python integers."""
    key = ORDERS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log of 0, overflow of a cube: IEEE values, as theirs
        return [key(s, r, n, now) for s, r, n in zip(submit, request_time, procs)]
