"""Probabilistic backfilling (Nissimov & Feitelson): EASY with runtime distributions.

The head of the queue gets EASY's treatment (it starts as soon as it fits; its
reservation is kept for EASY's bookkeeping). Any other job that fits now is
backfilled when the probability that it delays the head job is below ``tau``
(0.05, the paper's value), computed from every running job's runtime
distribution re-conditioned on what is known (Algorithm 1: not below its elapsed
time, not above its walltime, log-uniform inside a bin) and the candidate's own
(see ``release_dp``). Distributions come from a plugin of the
``batsched_ml.distributions`` group (``--distribution``); a job without one is
a point mass at its walltime, so without any history this is exactly EASY.
Nothing is killed at a prediction: walltime kills stay Batsim's.

Under ``--reservations cores`` (batsched's model) the head's reservation holds
specific cores, as in EASY's profile: a candidate that can only start on some of
them also risks delaying that reservation, with the probability that it runs
past its start. With point masses everywhere both conditions are EASY's own, so
``--distribution walltime`` gives EASY's schedule in both reservation models.

Options (``-o``): ``tau``; ``rescan`` = ``always`` (default: while a running job
has a distribution, every pass re-examines the whole queue, since re-conditioning
changes the risks as time passes; otherwise the queue is read as EASY reads it)
or ``changes`` (always as EASY reads it: the whole queue at every pass in
``count``, only the new arrivals unless a job ended in ``cores``);
``distribution_<param>`` go to the distribution plugin.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from itertools import accumulate
from operator import attrgetter

import numpy as np

from ..core.job import RUNNING
from ..incremental import AppendOnlyList
from ..core.scheduler import Context
from ..distributions.base import WalltimeOnly
from .candidate_bins import CandidateBins
from .easy import EasyBackfilling
from .release_dp import ReleaseOutlook, RunningTerminations, point_mass_risks
from .reserving import OVERRUN_GRACE

LEARNED_STATES = ("COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED")
RESCANS = ("always", "changes")
LOG_FLOOR = 1e-9  # calibration: probability given to a realised bin predicted impossible


class ProbabilisticBackfilling(EasyBackfilling):
    name = "probabilistic"

    def __init__(self, *args, distribution=None, tau=0.05, rescan="always", **kwargs):
        """``distribution``: the runtime-distribution plugin instance (built and given by the
        composer; None = ``WalltimeOnly``, a point mass at every walltime: plain EASY)."""
        super().__init__(*args, **kwargs)
        if isinstance(tau, bool) or not (isinstance(tau, (int, float)) and 0.0 <= float(tau) <= 1.0):
            raise ValueError(f"tau must be a probability in [0, 1], got {tau!r}")
        if rescan not in RESCANS:
            raise ValueError(f"rescan must be one of {RESCANS}, not {rescan!r}")
        self.tau = float(tau)
        self.rescan = rescan
        self.distribution = WalltimeOnly() if distribution is None else distribution
        self.distribution_name = getattr(self.distribution, "name", type(self.distribution).__name__)
        self._proba: dict = {}  # job -> predicted bin probabilities at submission (None: point mass)
        self._terminations = RunningTerminations(OVERRUN_GRACE)
        self._conditioned: set = set()  # running jobs with a distribution (re-conditioned as they age)
        self._candidates = CandidateBins()  # the queued jobs' bins, one row each
        self._starts = 0
        # did a backfilled job really delay the head? (the paper's event A, with actual end times):
        # per backfill, the start rank it was given, the cores the head lacked, its size, the job,
        # and the cores released since by the jobs that were running then
        self._checks = ([], [], [], [], [])
        self.stats = {"backfilled": 0, "refused": 0, "evaluations": 0, "risk_sum": 0.0, "checked": 0,
                      "delayed": 0, "condition_time": 0.0, "outlooks": 0, "events": 0, "screened": 0}
        # calibration: (log-likelihood of the realised bin, realised bin impossible)
        self._loglik = AppendOnlyList()

    # ----------------------------------------------------------------- hooks
    def on_simulation_begins(self, nb_cores: int, ctx: Context) -> None:
        super().on_simulation_begins(nb_cores, ctx)
        self.distribution.begin(ctx.workloads)
        self._candidates = CandidateBins(self.distribution.n_bins)

    def on_job_submitted(self, job, ctx: Context) -> None:
        super().on_job_submitted(job, ctx)
        if job.state != "QUEUED":
            return
        row = np.asarray(self.distribution.predict_proba([job], ctx.now), dtype=np.float64)[0]
        self._proba[job] = row if row.sum() > 0 else None
        self._add_candidate(job)

    def on_job_adopted(self, job, ctx: Context) -> None:
        """A running job handed over by a fork: its runtime distribution, conditioned on its
        elapsed time from then on, as for a job this scheduler started."""
        super().on_job_adopted(job, ctx)
        if job.state != RUNNING:
            return
        row = np.asarray(self.distribution.predict_proba([job], ctx.now), dtype=np.float64)[0]
        self._proba[job] = row if row.sum() > 0 else None
        self._note_start(job)

    def components(self) -> dict:
        return dict(super().components(), distribution=self.distribution)

    def on_job_completed(self, job, ctx: Context) -> None:
        super().on_job_completed(job, ctx)
        self._terminations.discard(job)
        self._conditioned.discard(job)
        self._candidates.discard(job)
        row = self._proba.pop(job, None)
        learned = job.final_state in LEARNED_STATES and job.start_time >= 0
        cond = self._bins_of(job)[3] if learned and row is not None else None
        # the bins cached in ``job.info`` serve while the job waits and runs: an ended job keeps
        # them no more (each ended job is written once in a snapshot's frames: 0.6-0.8 kB of arrays)
        job.info.pop("runtime_bins", None)
        if not learned:
            return
        runtime = job.end_time - job.start_time
        if cond is not None:
            p = cond[int(self.distribution.bins_.index(runtime))]
            self._loglik.append((math.log(max(p, LOG_FLOOR)), p == 0.0))
        self.distribution.partial_fit(job, runtime, ctx.now)

    def start(self, ctx: Context, job, placement) -> None:
        super().start(ctx, job, placement)
        self._note_start(job)

    def _note_start(self, job) -> None:
        self._starts += 1
        self._candidates.discard(job)
        job.info["start_order"] = self._starts
        bins = self._bins_of(job)
        self._terminations.add(job, job.start_time, self._upper(job), *bins[:3])
        if bins[3] is not None:
            self._conditioned.add(job)

    # -------------------------------------------------------------- schedule
    def schedule(self, ctx: Context) -> None:
        """EASY's pass (``EasyBackfilling.schedule``), except that a full pass offers every queued
        job that fits in the free cores: EASY's narrower reading of the queue (only jobs that
        end before the head's reservation, ``_sizes_that_may_fit``) is not our condition, a job
        that may overlap the reservation is backfilled when the risk is low."""
        if self._checks[0] and self._ended:
            self._resolve_checks()
        # the head's reservation is re-planned when EASY would (a job ended, or the plan changed)
        if not self._reads_whole_queue(self._begin_pass(ctx)):
            self._backfill(ctx, self._new_arrivals(ctx.now))
        elif self.queue and self.profile.available_now() >= self.queue.smallest_request():
            self._backfill(ctx)
            self._ensure_priority(ctx)
        self.end_pass(ctx)

    def _reads_whole_queue(self, full_pass: bool) -> bool:
        """EASY's reading, and with ``rescan=always`` the whole queue while a running job's
        distribution is re-conditioned as it ages (its risks change as time passes; point
        masses do not, and neither do the candidates' own distributions: a job refused
        earlier is refused again until something EASY watches for happens)."""
        return super()._reads_whole_queue(full_pass) or (self.rescan == "always" and bool(self._conditioned))

    def _upper(self, job) -> float:
        """Longest a job can hold its cores: its walltime (plus batsched's RJMS delay in ``cores``)."""
        return job.walltime + self.rjms_delay

    def _backfill(self, ctx: Context, candidates=None) -> None:
        """Weigh ``candidates`` (queued jobs, in the order given; None: the whole queue) that fit
        now, and start each that the condition accepts."""
        profile, head, now = self.profile, self.priority, ctx.now
        if head is None:
            return
        available = profile.available_now()
        table = self._candidates
        if candidates is None and self.backfill_order != "sjbf":
            rows = table.queue_rows(self.queue, now, self._add_candidate)
        else:
            rows = self._rows_of(self.backfill_candidates(
                self.queue.ordered(now) if candidates is None else candidates, now))
        res = table.res[rows]
        keep = (res <= available) & (rows != table.row(head))
        rows, res = rows[keep], res[keep]
        if not len(rows):
            return
        ends = now + table.last_ends[rows]  # the latest each candidate can end
        first = 0
        while first < len(rows):
            t0 = time.perf_counter()
            fits = first + (res[first:] <= available).nonzero()[0]
            chosen = self._first_accepted(now, head, available, rows, res, ends, fits) if len(fits) else None
            self.stats["condition_time"] += time.perf_counter() - t0
            if chosen is None:
                break
            at, risk, used = chosen
            job = table.jobs[rows[at]]
            # the head's reservation is EASY's bookkeeping, not our condition: re-made after the
            # pass (in ``cores`` at once, for the next candidates' pinned cores)
            profile.remove_if_present(head)
            if used is None:
                used = profile.fits_now(job, self.span(job))
            placement = profile.place(job, now, now + self.span(job), used)
            self.start(ctx, job, placement)
            if self.reservations == "cores":  # the head's pinned cores for the next candidates
                self._ensure_priority(ctx)  # (it cannot start: cores were only taken)
            self.stats["backfilled"] += 1
            self.stats["risk_sum"] += risk
            for column, value in zip(self._checks, (self._starts, head.res - available, job.res, job, 0)):
                column.append(value)
            available -= job.res  # a new running job, fewer free cores: every risk changes
            first = at + 1
        self._ensure_priority(ctx)

    def _first_accepted(self, now: float, head, available: int, rows, res, ends, fits):
        """The first candidate of ``fits`` (positions in ``rows``, in order) the condition accepts:
        ``(position, risk, its cores under --reservations cores or None)``, or None. The same
        decisions as weighing them one by one: a candidate that surely ends before the head could
        start has no risk (the screen); the others' risks come from one outlook, made for every
        candidate from the first of them on."""
        missing = head.res - available
        safe = ends[fits] <= self._terminations.earliest_release(now, missing)
        unsafe = (~safe).nonzero()[0]
        first_unsafe = int(unsafe[0]) if len(unsafe) else len(fits)
        pinned = self.reservations == "cores"  # the head's reservation holds specific cores
        chosen, examined = None, len(fits)
        for k, risk in self._accepted_by_risk(now, missing, rows, res, fits, safe, first_unsafe):
            used = None
            if pinned:
                # EASY's fit (the head's reservation in the profile) takes none of the head's
                # cores it would overlap; otherwise the job needs some of them
                job = self._candidates.jobs[rows[fits[k]]]
                used = self.profile.fits_now(job, self.span(job))
                if used is None:
                    risk = max(risk, self._overrun_risk(job, now, self.profile.placed[head].start))
                    if not (risk < self.tau or risk == 0.0):
                        continue
            chosen, examined = (int(fits[k]), risk, used), k + 1
            break
        self.stats["evaluations"] += examined
        self.stats["refused"] += examined - (chosen is not None)
        self.stats["screened"] += int(np.add.reduce(safe[:examined]))
        return chosen

    def _accepted_by_risk(self, now, missing, rows, res, fits, safe, first_unsafe):
        """``(k, risk)`` of the candidates ``fits[k]`` whose risk is below tau (or zero), in order:
        first the screened ones before any that needs the outlook, then, from one outlook for
        all the rest (computed only if reached), the others."""
        for k in range(first_unsafe):
            yield k, 0.0
        if first_unsafe == len(fits):
            return
        rest = fits[first_unsafe:]
        risks = np.zeros(len(fits))
        risks[first_unsafe:] = self._batch_risks(now, missing, res[rest], rows[rest])
        risks[safe] = 0.0  # screened: no risk, whatever the outlook says
        for k in (first_unsafe + ((risks[first_unsafe:] < self.tau) | (risks[first_unsafe:] == 0.0)).nonzero()[0]):
            yield int(k), float(risks[k])

    # ------------------------------------------------------------ the model
    def _overrun_risk(self, job, now: float, until: float) -> float:
        """P(``job``, started at ``now``, still runs at ``until``): the chance that it holds a core
        of the head's reservation (``cores`` model) past the reservation's start."""
        masses, ends = self._bins_of(job)[:2]
        return float(masses[now + ends > until].sum())

    def _bins_of(self, job):
        """``(masses, ends, lower edges, full conditioned row or None)`` of the job's positive
        runtime bins, conditioned on its walltime (ends relative to its start, the last one
        capped at the walltime); a point mass at the walltime without a distribution. Cached."""
        cached = job.info.get("runtime_bins")
        if cached is None:
            upper = self._upper(job)
            cached = (np.ones(1), np.array([upper]), np.array([upper]), None)
            row = self._proba.get(job)
            if row is not None:
                bins = self.distribution.bins_
                cond = bins.condition_on_walltime(row, upper)
                if cond is not None:
                    keep = cond > 0
                    cached = (cond[keep], np.minimum(bins.hi[keep], upper), bins.lo[keep], cond)
            job.info["runtime_bins"] = cached
        return cached

    def _rows_of(self, jobs: list):
        """The candidates' rows in the table of queued jobs' bins (a job seen first here gets one)."""
        table = self._candidates
        try:
            return table.rows(jobs)
        except KeyError:
            for job in jobs:
                self._add_candidate(job)
            return table.rows(jobs)

    def _add_candidate(self, job) -> None:
        self._candidates.add(job, *self._bins_of(job)[:2])

    def _batch_risks(self, now: float, missing: int, sizes, rows) -> np.ndarray:
        """The risks of the candidates of ``sizes`` whose bins are at ``rows``, from one outlook
        (without the DP when every running job has one possible end left: point masses)."""
        times, owners, cum, cores = self._terminations.snapshot(now)
        self.stats["outlooks"] += 1
        self.stats["events"] += len(times)
        table = self._candidates
        masses, ends = table.masses[rows], now + table.ends[rows]
        if len(times) == len(cores):
            return point_mass_risks(times, owners, cores, missing, sizes, masses, ends)
        return ReleaseOutlook(times, owners, cum, cores, missing, sizes).risks(sizes, masses, ends, self.tau)

    # --------------------------------------------------------------- report
    def _resolve_checks(self) -> None:
        """Add the cores released by the jobs each check saw running; once the head could start
        (the cores it lacked are released) the backfilled job delayed it if it was still running
        and the released cores were not enough for both."""
        ended = sorted((j.info.get("start_order", 0), j.res) for j in self._ended)
        ended_orders = [o for o, _ in ended]
        freed = list(accumulate((r for _, r in ended), initial=0))  # integers: plain Python, exact
        orders, missing, sizes, jobs, released = self._checks
        released = [r + freed[bisect_left(ended_orders, o)] for r, o in zip(released, orders)]
        done = [r >= m for r, m in zip(released, missing)]
        if not any(done):
            self._checks = (orders, missing, sizes, jobs, released)
            return
        ended_set = set(self._ended)
        keep = []
        for i, finished in enumerate(done):
            if not finished:
                keep.append(i)
                continue
            job = jobs[i]
            self.stats["checked"] += 1
            self.stats["delayed"] += int(job.state == RUNNING and job not in ended_set
                                         and released[i] < missing[i] + sizes[i])
        self._checks = tuple([column[i] for i in keep] for column in (orders, missing, sizes, jobs, released))

    def report(self) -> dict:
        out = dict(super().report())
        s = self.stats
        ll = np.array([v for v, _ in self._loglik]) if self._loglik else np.zeros(0)
        out["probabilistic"] = {
            "distribution": self.distribution_name,
            "distribution_params": {k: v for k, v in self.distribution.get_params().items()
                                    if isinstance(v, (int, float, str, type(None)))},
            "tau": self.tau, "rescan": self.rescan, "n_bins": self.distribution.n_bins,
            "backfilled": s["backfilled"], "refused": s["refused"], "evaluations": s["evaluations"],
            "mean_predicted_delay": s["risk_sum"] / s["backfilled"] if s["backfilled"] else None,
            "head_delay_checked": s["checked"], "head_delayed": s["delayed"],
            "head_delayed_share": s["delayed"] / s["checked"] if s["checked"] else None,
            "calibration_jobs": len(ll),
            "mean_loglik": float(ll.mean()) if len(ll) else None,
            "impossible_share": float(np.mean([z for _, z in self._loglik])) if len(ll) else None,
            "condition_time": s["condition_time"], "outlooks": s["outlooks"], "screened": s["screened"],
            "mean_events": s["events"] / s["outlooks"] if s["outlooks"] else None,
        }
        extra = getattr(self.distribution, "report", None)
        if callable(extra):
            out["probabilistic"]["model"] = extra()
        return out
