"""Algorithm 2 of Nissimov & Feitelson: the probability that backfilling delays the head job.

``ReleaseOutlook`` holds, for one scheduling pass, the running jobs' termination
events (time, job, P(job ended by then)) in time order and computes lazily, after
each distinct event time ``t_g``,

    D_g(r) = M_t[n][c_q] - M_t[n][c_q + r] = P(c_q <= c(t_g) < c_q + r)

where ``c(t)`` is the number of cores the running jobs have released by ``t``,
``c_q`` the cores the head job still lacks and ``r`` a candidate's size. The
paper's recursion ``M[n][c] = M[n-1][c] + (M[n-1][c-c_n] - M[n-1][c]) P_t[n]``
is run on the probability mass function of ``c(t)``, one running job at a time,
vectorised with numpy over every event time of a chunk and every core count at
once; counts above ``c_q + max r`` are never needed, so the vectors stop there,
and counts are taken in units of the gcd of the running jobs' sizes (8 cores on
SDSC-BLUE). States are only recorded once *all* events of a time are applied
(several jobs ending at the same instant release their cores together: this is
what makes point masses everywhere exactly EASY).

A candidate with runtime-bin probabilities ``q_j`` ending at ``T_j`` is refused
when ``sum_j q_j max_{t_g < T_j} D_g(r) >= tau`` (and is positive: with tau = 0
exactly the jobs that cannot delay the head are backfilled), with both of the
paper's early exits (the partial sum already reaches tau; or it will, since the
running max can only grow).
"""

from __future__ import annotations

import numpy as np

MIN_CHUNK = 32  # event times computed at once (grows geometrically with what candidates need)


class ReleaseOutlook:
    def __init__(self, times, jobs, cum, cores, missing: int, sizes):
        """``times``/``jobs``/``cum``: one entry per termination event, sorted by time (stable);
        ``cum`` is P(job ``jobs[e]`` ended by ``times[e]``), reaching exactly 1 at its last event.
        ``cores[i]``: cores of running job i; ``missing`` = c_q >= 1; ``sizes``: candidate sizes."""
        times = np.asarray(times, dtype=np.float64)
        jobs = np.asarray(jobs, dtype=np.int64)
        n = len(cores)
        new = np.empty(len(times), dtype=bool)  # times are sorted: distinct ones start a group
        if len(times):
            new[0] = True
            np.not_equal(times[1:], times[:-1], out=new[1:])
        group = np.cumsum(new) - 1
        self.times = times[new]
        prob = np.zeros((n, len(self.times)))
        prob[jobs, group] = cum
        self.prob = np.maximum.accumulate(prob, axis=1) if prob.size else prob  # P(i ended by t_g)
        cores = np.asarray(cores, dtype=np.int64)
        self.unit = int(np.gcd.reduce(cores)) if n else 1
        self.units = cores // self.unit
        self.missing = int(missing)
        self.sizes = sorted(set(int(s) for s in sizes))
        self.column = {s: k for k, s in enumerate(self.sizes)}
        unit = self.unit
        self.lo = -(-self.missing // unit)  # released units u with u * unit >= c_q ...
        self.hi = np.array([(self.missing + s - 1) // unit for s in self.sizes], dtype=np.int64)  # ... < c_q + r
        self.width = max(int(self.hi.max()) if self.sizes else 0, self.lo) + 1
        self.done = 0  # event times computed so far
        self.runmax = np.zeros((len(self.times), len(self.sizes)))  # max over t_h <= t_g of D_h(r)

    def _compute(self, a: int, b: int) -> None:
        """D for event times [a, b), then the running max."""
        width, prob = self.width, self.prob
        pmf = np.zeros((b - a, width))
        pmf[:, 0] = 1.0
        for i, u in enumerate(self.units.tolist()):
            p = prob[i, a:b]
            if p[-1] == 0.0:
                continue  # not ended by any of these times
            if u >= width:
                pmf *= (1.0 - p)[:, None]  # its release overshoots every count we need
            elif p[0] == 1.0:
                pmf[:, u:] = pmf[:, :width - u].copy()  # surely ended: a pure shift
                pmf[:, :u] = 0.0
            else:
                moved = pmf[:, :width - u] * p[:, None]
                pmf *= (1.0 - p)[:, None]
                pmf[:, u:] += moved
        cdf = np.cumsum(pmf, axis=1)
        below = cdf[:, self.lo - 1] if self.lo > 0 else 0.0
        d = cdf[:, self.hi] - (below[:, None] if self.lo > 0 else 0.0)
        d[:, self.hi < self.lo] = 0.0
        np.maximum(d, 0.0, out=d)  # rounding
        if a > 0:
            d[0] = np.maximum(d[0], self.runmax[a - 1])
        self.runmax[a:b] = np.maximum.accumulate(d, axis=0)
        self.done = b

    def _ensure(self, k: int) -> None:
        if k > self.done:
            self._compute(self.done, min(len(self.times), max(k, 2 * self.done, self.done + MIN_CHUNK)))

    def risk(self, size: int, q, ends, tau: float) -> tuple[bool, float]:
        """``(accepted, risk)`` of a candidate of ``size`` cores ending in bin j (probability
        ``q[j]``) no later than ``ends[j]`` (non-decreasing). When refused early, ``risk`` is
        the lower bound that reached ``tau``."""
        col = self.column[int(size)]
        runmax = self.runmax
        idx = np.searchsorted(self.times, ends, side="left")  # event times strictly before each end
        total, left = 0.0, 1.0
        for qj, k in zip(np.asarray(q, dtype=np.float64).tolist(), idx.tolist()):
            if k > 0:
                self._ensure(k)
                pmax = runmax[k - 1, col]
            else:
                pmax = 0.0
            total += qj * pmax
            left -= qj
            bound = total + max(left, 0.0) * pmax  # pmax can only grow: the final sum reaches this
            if bound >= tau and bound > 0.0:
                return False, bound
        return True, total


