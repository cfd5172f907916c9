"""Runtime predictors and corrections: EASY++ (Tsafrir et al.) and E-Loss regression (Gaussier et al.).

An :class:`Estimator` joins a predictor and an optional correction; the composer
(``batsched_ml.config.compose``) builds it from ``--predictor`` / ``--correction`` /
``--correction-timing`` and gives it to the scheduler, which drives it:

* at submission the predictor's prediction, clipped to ``[1 s, walltime]``,
  becomes ``job.estimate`` (queue orders, reservations and backfilling use it)
  and is recorded in ``job.info["prediction"]``;
* when a running job outlives its estimate and a correction is set, the
  estimate is corrected (capped at the walltime) as of that date, and the
  scheduler re-places the job (``reestimate_running``). With the default
  ``timing="immediate"`` a ``CALL_ME_LATER`` wakes the scheduler at the
  predicted end, so the queue is re-planned right then -- but only when the
  correction can change a decision: the scheduler names the window that
  matters (``correction_window``; for EASY, the priority job's reservation,
  nothing while the queue is empty), the estimator previews each job's future
  corrections (``Correction.advance``) and asks a call at the first due date
  that reaches the window; the others are applied, as of their due dates, at
  the next pass. Same schedule as a call at every due date (tested with exact
  instants), half the protocol messages on KTH-SP2. With
  ``timing="next-event"`` (the paper's simulator, pyss) no call is asked at
  all: the queue is never re-planned at a correction alone. Jobs are never
  killed at their prediction;
* at each completion (successful or walltime-reached) the predictor learns
  the actual runtime ``end - start`` (``partial_fit``).

Named configurations (flags of ``batsched-ml simulate``, fields of ``config.declare.RunConfig``):

* EASY++ (Tsafrir, Etsion & Feitelson 2007):
  ``--predictor ave2 --correction incremental --backfill-order sjbf``
* Gaussier et al.'s best heuristic triple (SC'15, eq. (3)):
  ``--predictor eloss --correction incremental --backfill-order sjbf``
* EASY clairvoyant: ``--predictor clairvoyant`` (add ``--backfill-order sjbf``
  for EASY-SJBF clairvoyant).

Predictors: ``requested``, ``clairvoyant``, ``ave2``, ``eloss``; corrections:
``requested``, ``incremental``, ``doubling`` (plugins, see ``batsched_ml/config/plugins.py``).
"""

from __future__ import annotations

import bisect
import heapq
import math

import numpy as np

from ..core.decision_core import CALL_STAMP_TOLERANCE
from ..incremental import AppendOnlyList
from .base import Correction, RuntimePredictor
from .eloss import asymmetric_loss, job_weight

LEARNED_STATES = ("COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED")
ECDF_POINTS = 200
EXACT_TOL = 0.01  # end - start carries Batsim's latency noise (ms): errors this small count as exact
TIMINGS = ("immediate", "next-event")

__all__ = ["Estimator", "RuntimePredictor", "Correction"]


class Estimator:
    """Glue between a scheduler and a predictor (+ optional correction)."""

    def __init__(self, predictor: RuntimePredictor, correction: Correction | None = None,
                 timing: str = "immediate"):
        """``timing``: when a correction takes effect, ``immediate`` (a ``CALL_ME_LATER`` at the
        predicted end, the queue re-planned then) or ``next-event`` (at the next pass).
        A call due too soon is asked for later by the core (``core.scheduler.CALL_MARGIN``)."""
        if timing not in TIMINGS:
            raise ValueError(f"unknown correction timing {timing!r}; choose from {', '.join(TIMINGS)}")
        if correction is not None:
            correction.validate_params()
        self.predictor = predictor
        self.correction = correction
        self.timing = timing
        # corrections that can be previewed (``advance``) let calls be skipped when irrelevant
        self._pure = correction is not None and type(correction).advance is not Correction.advance
        self.scheduler = None
        self._running: dict = {}
        self.nb_corrections = 0
        self.nb_corrected_jobs = 0
        self._records = AppendOnlyList()  # (prediction, actual, cores); a snapshot writes each once
        self._record_ids = AppendOnlyList()  # (job id, corrections) of each record
        self._due: list = []
        self._calls: list = []
        self._seq = 0

    # ------------------------------------------------------------- hooks
    def attach(self, scheduler, ctx) -> None:
        """A simulation begins: ``scheduler`` is the one whose ``correction_window()`` says which
        corrections get a call and whose ``reestimate_running()`` re-plans a corrected job. The
        predictor starts learning from scratch (``reset``)."""
        self.predictor.reset()
        self.scheduler = scheduler
        self._running = {}
        self._due = []  # (predicted end, seq, job) of the running jobs to check, sorted
        self._calls = []  # CALL_ME_LATER dates asked and not yet received (a heap)
        self._reach = {}  # job id -> (window, due date, first due date reaching the window)
        self._seq = 0
        self.nb_corrections = 0
        self.nb_corrected_jobs = 0
        self._records = AppendOnlyList()
        self._record_ids = AppendOnlyList()

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
        if self.correction is not None:
            self._remember(job)

    def on_completion(self, job, ctx) -> None:
        self._reach.pop(job.id, None)
        if self._running.pop(job.id, None) is None and job.start_time < 0:
            return
        if self.correction is not None:
            # corrections that fell due while it ran but that no pass needed (skipped calls,
            # next-event timing): counted as calls at every due date would count them
            while job.expected_end < job.end_time and self._correct(job, job.expected_end):
                pass
        self.predictor.job_ended(job, ctx.now)
        if job.final_state in LEARNED_STATES and job.start_time >= 0:
            actual = job.end_time - job.start_time
            prediction = job.info.get("prediction")
            if prediction is not None:
                self._records.append((prediction, actual, job.res))
                self._record_ids.append((job.id, job.info.get("corrections", 0)))
            self.predictor.partial_fit(job, actual, ctx.now)

    def on_call(self, ctx) -> bool:
        """A ``CALL_ME_LATER`` came back: correct the jobs that outlived their estimate."""
        calls = self._calls
        while calls and calls[0] <= ctx.now + CALL_STAMP_TOLERANCE:  # (dates sent to the microsecond)
            heapq.heappop(calls)
        return self.before_pass(ctx.now)

    def before_pass(self, now: float) -> bool:
        """Apply every correction that fell due by ``now``, each as of its own due date (the
        same estimates as a call at each due date would give, and as pyss computes them),
        then let the scheduler re-place the jobs whose estimate grew."""
        if self.correction is None or not self._due or self._due[0][0] > now:
            return False
        changed = False
        for job in self._overdue(now):
            grew = False
            while job.expected_end <= now and self._correct(job, job.expected_end):
                grew = True
            if grew:
                changed = True
                self.scheduler.reestimate_running(job, now)
                self._remember(job)
        return changed

    def after_pass(self, ctx) -> None:
        """``immediate`` timing: make sure a ``CALL_ME_LATER`` comes at the first due date of a
        correction that could change the scheduler's next pass.

        The scheduler says which window of time matters (``correction_window``: for EASY,
        the priority job's reservation; nothing while the queue is empty). A correction whose
        extension of the job stays outside it cannot change any decision, so no call is
        asked for it: it is applied, as of its due date, at the next pass. One call is kept
        outstanding (a call cannot be withdrawn).
        """
        if self.correction is None or self.timing != "immediate" or not self._due:
            return
        window = self.scheduler.correction_window()
        if window is None:
            return
        at = self._first_relevant(window, ctx.now)
        if at is None:
            return
        calls = self._calls
        if calls and calls[0] <= at:
            return
        heapq.heappush(calls, ctx.call_me_later(at))

    def _first_relevant(self, window, now: float) -> float | None:
        """The earliest due date of a correction whose extension of its job reaches into
        ``window`` = (lo, hi): the job would then be planned past ``lo`` and the correction
        happens before ``hi``."""
        lo, hi = window
        running, best, reach = self._running, None, self._reach
        for at, _, job in self._due:
            if at >= hi or (best is not None and at >= best):
                break
            if job.id not in running or at != job.expected_end:
                continue  # ended, or an older due date of a job corrected since
            cached = reach.get(job.id)
            if cached is not None and cached[0] == window and cached[1] == at:
                due = cached[2]
            else:
                due = self._first_due_reaching(job, lo, hi)
                reach[job.id] = (window, at, due)
            if due is not None and (best is None or due < best):
                best = due
        return best

    def _first_due_reaching(self, job, lo: float, hi: float) -> float | None:
        """Walk ``job``'s future corrections (without applying them) to the first one that
        plans it past ``lo``, if it is due before ``hi``."""
        start, estimate = job.start_time, job.estimate
        if start + estimate > lo:
            return start + estimate  # already planned into the window: any growth matters
        if not self._pure:
            return start + estimate
        cap = job.walltime_cap
        state = job.info.get("correction_state")
        while True:
            due = start + estimate
            if due >= hi or estimate >= cap:
                return None
            new, state = self.correction.advance(estimate, state, job, due)
            new = min(new, cap)
            if new <= estimate:
                return None
            if start + new > lo:
                return due
            estimate = new

    def _overdue(self, now: float) -> list:
        """Running jobs whose estimate is over at ``now``, in due-date order (their entries
        leave the due list)."""
        due = self._due
        k = bisect.bisect_right(due, (now, math.inf))
        jobs, seen, running = [], set(), self._running
        for at, _, job in due[:k]:
            if job.id in running and job.expected_end <= now and job.id not in seen:
                seen.add(job.id)
                jobs.append(job)
        del due[:k]
        return jobs

    def _correct(self, job, now: float) -> bool:
        """Apply the correction to ``job`` as of ``now`` (capped at its walltime); False if
        the estimate cannot grow."""
        cap = job.walltime_cap
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

    def _remember(self, job) -> None:
        """Note ``job``'s predicted end as due for a correction, unless Batsim's walltime
        kill comes first."""
        at = job.expected_end
        if at < job.start_time + job.walltime_cap:
            self._seq += 1
            bisect.insort(self._due, (at, self._seq, job))

    # ------------------------------------------------------------ report
    def job_predictions(self) -> tuple:
        """``(columns, rows)``: each learned job's initial prediction, actual run time (end - start
        as the scheduler saw it), cores and number of corrections, in completion order."""
        rows = [(job_id, pred, actual, int(cores), corrections)
                for (job_id, corrections), (pred, actual, cores) in zip(self._record_ids, self._records)]
        return ("job_id", "prediction", "actual_runtime", "res", "corrections"), rows

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
