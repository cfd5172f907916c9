"""Runtime predictors and corrections: EASY++ (Tsafrir et al.) and E-Loss regression (Gaussier et al.).

``build_estimator(predictor, correction)`` returns the :class:`Estimator` a
``QueueScheduler`` drives:

* at submission the predictor's prediction, clipped to ``[1 s, walltime]``,
  becomes ``job.estimate`` (queue orders, reservations and backfilling use it)
  and is recorded in ``job.info["prediction"]``;
* when a job starts and a correction is set, a ``CALL_ME_LATER`` is asked at
  its predicted end (if that is before its walltime: Batsim kills it there
  anyway); at that call, a job still running gets a corrected estimate (capped
  at the walltime) and the scheduler re-places it (``reestimate_running``).
  With ``timing="next-event"`` (the paper's simulator, pyss) no call is asked:
  a correction is computed as of the date it fell due, but only takes effect
  at the next scheduling pass (a submission or a completion), so the queue is
  never re-planned at a correction alone. Jobs are never killed at their
  prediction;
* at each completion (successful or walltime-reached) the predictor learns
  the actual runtime ``end - start`` (``partial_fit``).

Named configurations (options of ``batsched-ml`` / ``runner.build_scheduler``):

* EASY++ (Tsafrir, Etsion & Feitelson 2007):
  ``--predictor ave2 --correction incremental --backfill-order sjbf``
* Gaussier et al.'s best heuristic triple (SC'15, eq. (3)):
  ``--predictor eloss --correction incremental --backfill-order sjbf``
* EASY clairvoyant: ``--predictor clairvoyant`` (add ``--backfill-order sjbf``
  for EASY-SJBF clairvoyant).

Predictors: ``requested``, ``clairvoyant``, ``ave2``, ``eloss``; corrections:
``requested``, ``incremental``, ``doubling`` (plugins, see ``plugins.py``).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from .base import Correction, RuntimePredictor
from .eloss import asymmetric_loss, job_weight

LEARNED_STATES = ("COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED")
ECDF_POINTS = 200
# A CALL_ME_LATER reaches Batsim some 0.1 ms per decision after the reply and must still be
# in the future there: a check due sooner is asked this much later.
CALL_MARGIN = 1.0
EXACT_TOL = 0.01  # end - start carries Batsim's latency noise (ms): errors this small count as exact
TIMINGS = ("immediate", "next-event")

__all__ = ["Estimator", "build_estimator", "RuntimePredictor", "Correction"]


class Estimator:
    """Glue between a scheduler and a predictor (+ optional correction)."""

    def __init__(self, predictor: RuntimePredictor, correction: Correction | None = None,
                 timing: str = "immediate"):
        """``timing``: when a correction takes effect, ``immediate`` (a ``CALL_ME_LATER`` at the
        predicted end, the queue re-planned then) or ``next-event`` (at the next pass)."""
        if timing not in TIMINGS:
            raise ValueError(f"unknown correction timing {timing!r}; choose from {', '.join(TIMINGS)}")
        self.predictor = predictor
        self.correction = correction
        self.timing = timing
        self.scheduler = None
        self._running: dict = {}
        self.nb_corrections = 0
        self.nb_corrected_jobs = 0
        self._records: list = []  # (prediction, actual, cores)
        self._due: list = []
        self._calls: list = []
        self._seq = 0

    # ------------------------------------------------------------- hooks
    def attach(self, scheduler, ctx) -> None:
        self.scheduler = scheduler
        self._running = {}
        self._due = []  # (predicted end, seq, job) of the running jobs to check
        self._calls = []  # CALL_ME_LATER dates asked and not yet received (a heap)
        self._seq = 0
        self.nb_corrections = 0
        self.nb_corrected_jobs = 0
        self._records = []

    def on_submission(self, job, ctx) -> None:
        prediction = float(self.predictor.predict(job, ctx.now))
        if not prediction == prediction:  # NaN
            prediction = job.walltime if job.has_walltime else 1.0
        estimate = max(prediction, 1.0)
        if job.has_walltime:
            estimate = min(estimate, job.walltime)
        job.info["prediction"] = estimate
        job.estimate = estimate

    def on_start(self, job, ctx) -> None:
        self._running[job.id] = job
        self.predictor.job_started(job, ctx.now)
        self._ask_call(job, ctx)

    def on_completion(self, job, ctx) -> None:
        if self._running.pop(job.id, None) is None and job.start_time < 0:
            return
        if self.timing == "next-event" and self.correction is not None:
            # corrections that fell due while it ran, though no pass needed them: counted
            # as the immediate timing (and pyss) count them
            while job.start_time + job.estimate < job.end_time and self._correct(job, job.start_time + job.estimate):
                pass
        self.predictor.job_ended(job, ctx.now)
        if job.final_state in LEARNED_STATES and job.start_time >= 0:
            actual = job.end_time - job.start_time
            prediction = job.info.get("prediction")
            if prediction is not None:
                self._records.append((prediction, actual, job.res))
            self.predictor.partial_fit(job, actual, ctx.now)

    def on_call(self, ctx) -> bool:
        """A ``CALL_ME_LATER`` came back: correct the jobs that outlived their estimate."""
        if self.correction is None or self.timing != "immediate":
            return False
        now = ctx.now
        calls = self._calls
        while calls and calls[0] <= now:
            heapq.heappop(calls)
        changed = False
        for job in self._overdue(now):
            if self._correct(job, now):
                changed = True
                self.scheduler.reestimate_running(job, now)
                self._ask_call(job, ctx)
        self._keep_one_call(ctx)
        return changed

    def before_pass(self, now: float) -> None:
        """``next-event`` timing: apply, before a scheduling pass, every correction that fell
        due since the previous one, each as of its own due date (as pyss does at the
        predicted end, without a pass), until the job's estimate lies past ``now``."""
        if self.correction is None or self.timing != "next-event" or not self._due:
            return
        for job in self._overdue(now):
            changed = False
            while job.start_time + job.estimate <= now and self._correct(job, job.start_time + job.estimate):
                changed = True
            if changed:
                self.scheduler.reestimate_running(job, now)
                self._remember(job)

    def _overdue(self, now: float) -> list:
        """Running jobs whose estimate is over at ``now``, in due-date order."""
        due, jobs = self._due, []
        while due and due[0][0] <= now:
            job = heapq.heappop(due)[2]
            if job.id in self._running and job.start_time + job.estimate <= now and job not in jobs:
                jobs.append(job)
        return jobs

    def _correct(self, job, now: float) -> bool:
        """Apply the correction to ``job`` as of ``now`` (capped at its walltime); False if
        the estimate cannot grow."""
        cap = job.walltime if job.has_walltime else math.inf
        if job.estimate >= cap:
            return False
        new = min(float(self.correction.correct(job, now)), cap)
        if new <= job.estimate:
            return False
        if "corrections" not in job.info:
            self.nb_corrected_jobs += 1
        job.info["corrections"] = job.info.get("corrections", 0) + 1
        self.nb_corrections += 1
        job.estimate = new
        return True

    def _remember(self, job) -> bool:
        """Note ``job``'s predicted end as due for a check, unless Batsim's walltime kill
        comes first."""
        at = job.start_time + job.estimate
        limit = job.start_time + job.walltime if job.has_walltime else math.inf
        if at < limit:
            self._seq += 1
            heapq.heappush(self._due, (at, self._seq, job))
            return True
        return False

    def _ask_call(self, job, ctx) -> None:
        """Check ``job`` at its predicted end: a call (``immediate``) or at the next pass."""
        if self.correction is None or job.start_time + job.estimate <= ctx.now:
            return
        if self._remember(job) and self.timing == "immediate":
            self._keep_one_call(ctx)

    def _keep_one_call(self, ctx) -> None:
        """One ``CALL_ME_LATER`` outstanding, at the earliest predicted end of a running job.

        A call cannot be withdrawn, so asking one per job would wake the scheduler
        for every job that ends before its prediction; this way a call is asked
        only when it comes before every call already on its way.
        """
        due, calls = self._due, self._calls
        while due and due[0][2].id not in self._running:
            heapq.heappop(due)
        if not due:
            return
        at = max(due[0][0], ctx.now + CALL_MARGIN)
        if calls and calls[0] <= at:
            return
        ctx.call_me_later(at)
        heapq.heappush(calls, at)

    # ------------------------------------------------------------ report
    def report(self) -> dict:
        """Prediction quality of the initial predictions (Gaussier et al. 6.4, Figures 4-5)."""
        out = {"predictor": type(self.predictor).__name__, "predictor_params": self.predictor.get_params(),
               "correction": None if self.correction is None else type(self.correction).__name__,
               "correction_timing": self.timing,
               "nb_jobs": len(self._records), "nb_corrections": self.nb_corrections,
               "nb_corrected_jobs": self.nb_corrected_jobs}
        if not self._records:
            return out
        rec = np.asarray(self._records, dtype=float)
        pred, actual, cores = rec[:, 0], rec[:, 1], rec[:, 2]
        err = pred - actual  # > 0: over-prediction
        weights = np.array([job_weight("large-area", q, p) for q, p in zip(cores, actual)])
        eloss = asymmetric_loss(pred, actual, weights, over="squared", under="linear")
        idx = np.unique(np.linspace(0, len(err) - 1, min(ECDF_POINTS, len(err))).round().astype(int))
        sorted_err = np.sort(err)
        sorted_pred = np.sort(pred)
        out.update(
            mae=float(np.abs(err).mean()),
            mean_eloss=float(eloss.mean()),
            under_share=float((err < -EXACT_TOL).mean()),
            over_share=float((err > EXACT_TOL).mean()),
            exact_share=float((np.abs(err) <= EXACT_TOL).mean()),
            ecdf_error={"x": sorted_err[idx].tolist(), "p": ((idx + 1) / len(err)).tolist()},
            ecdf_prediction={"x": sorted_pred[idx].tolist(), "p": ((idx + 1) / len(err)).tolist()},
        )
        return out


def build_estimator(predictor: str = "requested", correction: str | None = None, seed: int = 0,
                    timing: str = "immediate", **options) -> Estimator:
    """An :class:`Estimator` from plugin names; ``options`` go to the predictor's constructor
    (``correction_<param>`` options go to the correction's). ``timing``: when corrections
    take effect (``immediate`` or ``next-event``, see the module docstring). ``seed`` is
    accepted for uniformity (every built-in predictor is deterministic)."""
    from ..plugins import load

    corr_opts = {k[len("correction_"):]: options.pop(k) for k in list(options) if k.startswith("correction_")}
    pred_cls = load("predictors", predictor)
    corr = None
    if correction is not None:
        corr = load("corrections", correction)(**corr_opts)
    elif corr_opts:
        raise ValueError("correction options given without --correction")
    return Estimator(pred_cls(**options), corr, timing)
