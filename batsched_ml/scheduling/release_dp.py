"""Algorithm 2 of Nissimov & Feitelson: the probability that backfilling delays the head job.

``ReleaseOutlook`` holds, for one scheduling pass, the running jobs' termination
events (time, job, P(job ended by then)) in time order and computes lazily, after
each distinct event time ``t_g``,

    D_g(r) = M_t[n][c_q] - M_t[n][c_q + r] = P(c_q <= c(t_g) < c_q + r)

where ``c(t)`` is the number of cores the running jobs have released by ``t``,
``c_q`` the cores the head job still lacks and ``r`` a candidate's size. The
paper's recursion ``M[n][c] = M[n-1][c] + (M[n-1][c-c_n] - M[n-1][c]) P_t[n]``
is run on the probability mass function of ``c(t)`` by ``release_kernel`` (divide
and conquer over the event times, compiled): counts at or above ``c_q + max r``
are never needed, nor counts from which ``c_q`` cannot be reached any more, so the
cost does not grow with the machine's size but with the cores the head lacks and the
candidates ask for; counts are taken in units of the gcd of the running jobs' sizes
(8 cores on SDSC-BLUE). A state is read once *all* events of a time are applied
(several jobs ending at the same instant release their cores together: this is
what makes point masses everywhere exactly EASY).

A candidate with runtime-bin probabilities ``q_j`` ending at ``T_j`` is refused
when ``sum_j q_j max_{t_g < T_j} D_g(r) >= tau`` (and is positive: with tau = 0
exactly the jobs that cannot delay the head are backfilled), with both of the
paper's early exits (the partial sum already reaches tau; or it will, since the
running max can only grow): event times are computed in growing stretches, and
only as far as an undecided candidate needs.
"""

from __future__ import annotations

import math

import numpy as np

from . import release_kernel

MIN_CHUNK = 16  # event times computed at once (grows geometrically with what candidates need)


# The hot paths call ndarray methods and ufunc reductions (``a.cumsum()``, ``np.add.reduce``) rather
# than numpy's module functions (``np.cumsum``, ``a.sum()``): the same C code, without a Python-level
# wrapper per call.


class ReleaseOutlook:
    def __init__(self, times, jobs, cum, cores, missing: int, sizes):
        """``times``/``jobs``/``cum``: one entry per termination event, sorted by time (stable);
        ``cum`` is P(job ``jobs[e]`` ended by ``times[e]``), reaching exactly 1 at its last event.
        ``cores[i]``: cores of running job i; ``missing`` = c_q >= 1; ``sizes``: candidate sizes."""
        release_kernel.compile_kernels()
        # (contiguous arrays: one compiled version of the kernels; a row of the events table can be strided)
        times = np.ascontiguousarray(times, dtype=np.float64)
        self._jobs = jobs = np.ascontiguousarray(jobs, dtype=np.int64)
        self._cum = np.ascontiguousarray(cum, dtype=np.float64)
        self.missing = int(missing)
        valid = len(times) == len(jobs) == len(self._cum)
        if valid:  # the distinct times, the unit, the window and the walk's state: one compiled call
            (valid, self.times, self._group, unit, self.units, self.sizes, self.lo, self.hi, self.width,
             state) = release_kernel.prepare(times, jobs, self._cum, np.ascontiguousarray(cores, dtype=np.int64),
                                             self.missing, np.ascontiguousarray(sizes, dtype=np.int64))
        # (the compiled walk trusts these: no bounds checks)
        if not valid:
            raise ValueError("one running job's index and one probability per event time")
        self.unit = int(unit)
        self._restart(state)

    def _restart(self, state=None) -> None:
        self.done = 0  # event times computed so far
        self._walk = release_kernel.ReleaseWalk(len(self.times), self.width, self.lo, self.hi, self.units, self._jobs,
                                                self._cum, self._group, state)
        self._columns = len(self.sizes)  # sizes still computed
        # max over t_h <= t_g of D_h(r), after a row of zeros (nothing before the first time)
        self._runmax0 = self._walk.runmax0
        self.runmax = self._runmax0[1:]
        # once later stretches computed only the smaller sizes that undecided candidates still
        # needed, column k of runmax0 holds the running max up to row exact[k] (past the end: all)
        self._exact = np.full(len(self.sizes), len(self.times) + 1)

    def _compute(self, b: int, columns: int | None = None) -> None:
        """D for the event times [done, b) (from now on for the ``columns`` smallest sizes only:
        the counts above theirs are then not needed), then the running max."""
        columns = self._columns if columns is None else min(columns, self._columns)
        if columns < self._columns:
            self._exact[columns:self._columns] = self.done
            self._columns = columns
        self._walk.advance(b, columns)
        self.done = b

    def _ensure(self, k: int, column: int | None = None) -> None:
        if column is not None and k > self._exact[column]:
            self._restart()  # a narrower stretch left this size out: compute again, every size
        if k > self.done:
            self._compute(min(len(self.times), max(k, 2 * self.done, self.done + MIN_CHUNK)))

    def risks(self, sizes, q, ends, tau: float | None = None) -> np.ndarray:
        """The risk of many candidates at once: ``q``/``ends`` are (candidates, bins) arrays padded
        with zero probabilities. With ``tau``, a candidate is decided as soon as the event times
        computed so far show that its risk reaches ``tau`` (the paper's early exit): its value is
        then that lower bound (>= tau), and later times are only computed for the others."""
        q = np.ascontiguousarray(q, dtype=np.float64)
        idx = self.times.searchsorted(ends, side="left")
        cols = self.sizes.searchsorted(sizes)
        if self._columns < len(self.sizes) and (idx > self._exact[cols][:, None]).any():
            self._restart()  # a narrower stretch left out a size needed further
        out = np.empty(len(cols))
        # the walk in growing stretches, until every candidate is settled: one compiled call
        self.done, self._columns = self._walk.settle(q, idx, cols, -1.0 if tau is None else float(tau), MIN_CHUNK,
                                                     self._columns, self.done, self._exact, out)
        return out

    def risk(self, size: int, q, ends, tau: float) -> tuple[bool, float]:
        """``(accepted, risk)`` of a candidate of ``size`` cores ending in bin j (probability
        ``q[j]``) no later than ``ends[j]`` (non-decreasing). When refused early, ``risk`` is
        the lower bound that reached ``tau``."""
        col = int(self.sizes.searchsorted(size))
        idx = np.searchsorted(self.times, ends, side="left")  # event times strictly before each end
        total, left = 0.0, 1.0
        for qj, k in zip(np.asarray(q, dtype=np.float64).tolist(), idx.tolist()):
            if k > 0:
                self._ensure(k, col)  # (may start the walk again: read runmax after it)
                pmax = self.runmax[k - 1, col]
            else:
                pmax = 0.0
            total += qj * pmax
            left -= qj
            bound = total + max(left, 0.0) * pmax  # pmax can only grow: the final sum reaches this
            if bound >= tau and bound > 0.0:
                return False, bound
        return True, total


def point_mass_risks(times, jobs, cores, missing: int, sizes, q, ends) -> np.ndarray:
    """``ReleaseOutlook(times, jobs, cum, cores, missing, sizes).risks(sizes, q, ends)`` when every
    running job has one event left (it surely ends then: ``cum`` = 1): the cores released by each
    time are known, so D_g(r) and its running maximum are 0 or 1, and the risks are the same sums,
    bin by bin in the same order, without the DP (nor numba). The released cores first reach
    ``missing`` at some time t0 (all of its events applied); D is 1 from t0 on while fewer than
    ``missing + r`` are released: the running maximum is 1 after t0, or 0 throughout."""
    times = np.asarray(times, dtype=np.float64)
    order = times.argsort(kind="stable")
    times = times[order]
    released = np.asarray(cores, dtype=np.int64)[np.asarray(jobs, dtype=np.int64)[order]].cumsum()
    q = np.asarray(q, dtype=np.float64)
    first = int(released.searchsorted(missing, side="left"))
    if first == len(times) or q.shape[1] == 0:
        return np.zeros(len(q))
    t0 = times[first]
    at_t0 = released[int(times.searchsorted(t0, side="right")) - 1]
    # a bin ending after t0 reads the running maximum after t0 (the DP's index of its end is past t0's)
    hit = np.asarray(ends, dtype=np.float64) > t0
    hit &= (at_t0 < missing + np.asarray(sizes, dtype=np.int64))[:, None]
    return np.where(hit, q, 0.0).cumsum(axis=1)[:, -1]


class RunningTerminations:
    """The running jobs' possible termination events, kept in time order between passes.

    Each job is registered once, when it starts, with its distribution conditioned on its
    walltime only: per positive bin, its mass, its end (relative to the start; the last one
    capped at the walltime) and its lower edge. At a pass, Algorithm 1's conditioning on the
    elapsed time only removes the bins already over and the log-uniform part of the current
    one, then renormalises, so ``snapshot`` needs no per-job work beyond a few vector
    operations over the remaining events. A job whose predicted bins are all past is a point mass
    at its walltime; one that outlived its walltime (Batsim's kill is
    on its way) releases its cores right after now.
    """

    # the rows of the event table: end, owner (registration number), mass, lower edge (relative to
    # the start), log of the relative end, log width of its bin (Algorithm 1's cut), cumulative mass
    _ROWS = ("end", "owner", "mass", "rel_lo", "log_end", "log_width", "cum")

    def __init__(self, grace: float):
        self.grace = grace
        self._ids: dict = {}  # job -> registration number (increasing: ties in time go by start order)
        # per registration number: (cores, start, start + walltime, total mass), and whether it runs
        self._info = np.zeros((64, 4))
        self._alive = np.zeros(64, dtype=bool)
        self._oldest = 0  # no job registered before this one still runs
        self._next = 0
        # every event, one column each, sorted by (time, registration); rows: see ``_ROWS``
        self._ev = np.zeros((len(self._ROWS), 0))
        # registrations and discards since the last merge: merged once, when a pass needs the events
        self._pending: list = []
        self._gone: set = set()
        self._built = None
        self._view = None  # (now, each job's first event after now)
        self._latest = -math.inf  # the latest pass: the events up to it are dropped

    def __len__(self) -> int:
        return len(self._ids)

    def __getstate__(self) -> dict:
        """Without the rows of the jobs registered before the oldest one still running (never read
        again): a snapshot's size follows the running jobs, not every job that ever ran."""
        state = dict(self.__dict__)
        state["_info"] = (len(self._info), self._oldest, self._info[self._oldest:self._next])
        state["_alive"] = self._alive[self._oldest:self._next]
        return state

    def __setstate__(self, state: dict) -> None:
        capacity, oldest, info = state["_info"]
        alive = state["_alive"]
        self.__dict__.update(state)
        self._info = np.zeros((capacity, 4))
        self._info[oldest:oldest + len(info)] = info
        self._alive = np.zeros(capacity, dtype=bool)
        self._alive[oldest:oldest + len(alive)] = alive

    def add(self, job, start: float, upper: float, masses, ends, lows) -> None:
        """``upper``: the longest the job can run (its walltime)."""
        ends = np.asarray(ends, dtype=np.float64)
        oid = self._next
        self._next += 1
        if oid == len(self._alive):
            self._info = np.concatenate((self._info, np.zeros_like(self._info)))
            self._alive = np.concatenate((self._alive, np.zeros_like(self._alive)))
        block = np.empty((len(self._ROWS), len(ends)))  # one column per event, rows as ``_ROWS``
        end, owner, mass, rel_lo, log_end, log_width, cum = block
        np.add(start, ends, out=end)
        owner[:] = oid
        mass[:] = masses
        rel_lo[:] = lows
        np.log(ends, out=log_end)
        np.subtract(log_end, np.log(rel_lo), out=log_width)
        mass.cumsum(out=cum)
        self._ids[job] = oid
        self._info[oid] = (job.res, start, start + upper, cum[-1])
        self._alive[oid] = True
        self._pending.append(block)
        self._built = None

    def discard(self, job) -> None:
        oid = self._ids.pop(job, None)
        if oid is None:
            return
        self._alive[oid] = False
        self._gone.add(oid)
        self._built = None

    def _merge(self) -> None:
        """Apply the pending registrations and discards: a stable sort by time of the old events
        followed by the new ones in registration order (equal times: the job started later goes
        after), the same order as inserting them one by one."""
        ev = self._ev
        if self._pending:
            ev = np.concatenate([ev, *self._pending], axis=1)
            ev = ev[:, ev[0].argsort(kind="stable")]
            self._pending = []
        if len(self._gone) == 1:  # the usual case: one job ended since the last pass
            ev = ev[:, ev[1] != self._gone.pop()]
        elif self._gone:
            dead = np.zeros(self._next, dtype=bool)
            dead[np.fromiter(self._gone, dtype=np.int64, count=len(self._gone))] = True
            ev = ev[:, ~dead[ev[1].astype(np.int64)]]
            self._gone = set()
        self._ev = ev

    def _build(self):
        """Per-job arrays (job slot = rank of its registration) and the events' owner slots."""
        if self._pending or self._gone:
            self._merge()
        alive = self._alive
        while self._oldest < self._next and not alive[self._oldest]:
            self._oldest += 1
        ids = self._oldest + alive[self._oldest:self._next].nonzero()[0]
        info = self._info[ids]
        cores = info[:, 0].astype(np.int64)
        end, oid, mass, rel_lo, log_end, log_width, cum = self._ev
        self._built = (cores, info[:, 1], info[:, 2], info[:, 3], end, ids.searchsorted(oid.astype(np.int64)),
                       mass, rel_lo, log_end, log_width, cum)
        self._view = None
        return self._built

    def _at(self, now: float):
        """``(built, first)`` with the events up to ``now`` dropped: ``first[i]`` is job i's first
        event after now, -1 if it has none left. Shared by a pass's screen and outlook."""
        built = self._built or self._build()
        view = self._view
        if view is not None and view[0] == now:
            return built, view[1]
        if now < self._latest:
            raise ValueError(f"a pass at {now} after one at {self._latest}: the events before are dropped")
        self._latest = now
        k = int(built[4].searchsorted(now, side="right"))
        if k:  # never read again (time only moves on): the table keeps the later events only
            self._ev = self._ev[:, k:]
            built = self._built = built[:4] + tuple(column[k:] for column in built[4:])
        owner = built[5]
        first = np.full(len(built[0]), -1, dtype=np.int64)
        first[owner[::-1]] = np.arange(len(owner) - 1, -1, -1)  # events are in time order
        self._view = (now, first)
        return built, first

    def earliest_release(self, now: float, missing: int) -> float:
        """The earliest time at which the running jobs can have released ``missing`` cores
        (each job's first possible end after now); infinity if they cannot. A candidate that
        surely ends by then cannot delay the head: no outlook is needed for it."""
        built, pos = self._at(now)
        cores, limits, end = built[0], built[2], built[4]
        n = len(cores)
        if n == 0:
            return math.inf
        if pos.min() >= 0:  # the usual case: every job has a bin left, its first remaining bin end
            first = end[pos]
        else:
            first = np.where(limits > now, limits, now + self.grace)  # no bin left: at the walltime
            alive = pos >= 0
            first[alive] = end[pos[alive]]
        order = first.argsort(kind="stable")
        reached = cores[order].cumsum().searchsorted(missing, side="left")
        return float(first[order[reached]]) if reached < n else math.inf

    def snapshot(self, now: float):
        """``(times, owners, cum, cores)`` of the events after ``now``, for :class:`ReleaseOutlook`."""
        built, first = self._at(now)
        cores, starts, limits, totals, end, owner, mass, rel_lo, log_end, log_width, cum = built
        n = len(cores)
        # first remaining event of each job: the bin holding its elapsed time, cut log-uniformly
        alive = first >= 0
        every = bool(alive.all())  # the usual case: no per-job selection needed
        f = first if every else first[alive]
        elapsed = now - (starts if every else starts[alive])
        keep = mass[f]
        cut = rel_lo[f] < elapsed
        if cut.all():
            keep *= (log_end[f] - np.log(elapsed)) / log_width[f]
        else:
            cut_at = f[cut]
            keep[cut] *= (log_end[cut_at] - np.log(elapsed[cut])) / log_width[cut_at]
        if every:
            base = cum[f] - keep
            total = totals - base
        else:
            base = np.zeros(n)
            base[alive] = cum[f] - keep
            total = np.ones(n)
            total[alive] = totals[alive] - base[alive]
        empty = alive & ~(total > 0)  # elapsed time within rounding of its last bin's end
        if empty.any():
            alive &= ~empty
            total[empty] = 1.0
            kept = ~empty[owner]
            end, owner, cum = end[kept], owner[kept], cum[kept]
            every = False
        # each job's last event has cum = its total mass: p = x / x, exactly 1 (surely ended by then)
        p = (cum - base[owner]) / total[owner]
        if every:
            return end, owner, p, cores
        gone = (~alive).nonzero()[0]
        if len(gone):  # predicted bins all past: at the walltime, or right after now if over it
            at = limits[gone]
            end = np.concatenate((np.where(at > now, at, now + self.grace), end))
            owner = np.concatenate((gone, owner))
            p = np.concatenate((np.ones(len(gone)), p))
            order = np.lexsort((owner, end))
            end, owner, p = end[order], owner[order], p[order]
        return end, owner, p, cores
