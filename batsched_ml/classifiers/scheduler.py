"""Small/large classification around any queue scheduler (Zrigui et al. 2022, Algorithms 1 and 2).

:class:`ClassifyingScheduler` wraps the scheduler (composition: it forwards every hook) and
:class:`SmallFirst` wraps its queue order.

* At each submission the job gets its Table 4 features and is classified small
  or large (``job.info['small']``); the queue order is ``(large?, policy key)``,
  i.e. the small queue then the large one, each in policy order (Algorithm 1).
* At every week boundary of simulated time (the first event at or after
  ``k * period``) the divider becomes the median actual runtime of the jobs
  completed during the previous week (or in all history) and the classifier is
  retrained on every job completed so far. During the first week every job is large.
* With ``kill_false_small`` (Algorithm 2), a small job still running when its
  elapsed time reaches the divider in force at its start is killed once
  (CALL_ME_LATER at start + divider) and requeued as ``<id>#1``, which is large.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import Counter

import numpy as np

from ..core.job import QUEUED, RUNNING
from ..core.scheduler import Scheduler
from ..policies.orders import Policy
from ..protocol import events as ev
from ..validation import finite, positive
from .features import FEATURE_NAMES, CalendarClock, FeatureTable, parse_zone_option

WEEK = 604800.0
KILLED = "COMPLETED_KILLED"


class SmallFirst(Policy):
    """Small jobs first, then large ones; each class in the order of ``base``."""

    def __init__(self, base: Policy):
        self.base = base
        self.dynamic = base.dynamic
        self.name = f"small-first-{base.name}"

    def key(self, job, now):
        return (0 if job.info.get("small") else 1, self.base.key(job, now))

    def on_simulation_begins(self, nb_cores: int) -> None:
        begins = getattr(self.base, "on_simulation_begins", None)
        if begins is not None:
            begins(nb_cores)

    def __repr__(self) -> str:
        return f"SmallFirst({self.base!r})"


def _scores(tp: int, fp: int, tn: int, fn: int) -> dict:
    """TS=tp, FS=fp, TL=tn, FL=fn (Tables 5-6)."""
    n = tp + fp + tn + fn
    return {"TS": tp, "FS": fp, "TL": tn, "FL": fn, "n": n,
            "accuracy": (tp + tn) / n if n else None,
            "precision": tp / (tp + fp) if tp + fp else None,
            "recall": tp / (tp + fn) if tp + fn else None}


class _Week:
    __slots__ = ("index", "start", "divider", "train_size", "train_small", "train_time", "importances",
                 "counts", "classified", "predicted_small")

    def __init__(self, index, start):
        self.index = index
        self.start = start
        self.divider = None
        self.train_size = 0
        self.train_small = 0
        self.train_time = 0.0
        self.importances = None
        self.counts = Counter()  # TS / FS / TL / FL of jobs classified this week
        self.classified = 0
        self.predicted_small = 0


class ClassifyingScheduler(Scheduler):
    """Small/large classification around a queue scheduler: a decorator, not a subclass.

    The wrapped ``scheduler`` must order its queue with :class:`SmallFirst` (the composer
    builds it so: ``--classifier`` needs a scheduler that takes a ``policy``); this object
    classifies each job before the scheduler queues it, retrains ``classifier`` every
    ``period``, and with ``kill_false_small`` kills a small job still running at the divider
    and requeues it as large. Every hook is forwarded to ``scheduler``.
    """

    def __init__(self, scheduler, classifier, *, kill_false_small=False, period=WEEK, history="all",
                 divider_window="week", unix_start_time=None, subtime_offset=0.0, timezone=None,
                 store_classes=True):
        if not isinstance(getattr(scheduler, "policy", None), SmallFirst):
            raise ValueError("classification needs a scheduler whose queue order is SmallFirst(policy) "
                             "(batsched_ml.compose builds it so)")
        if history not in ("all", "previous-weeks"):
            raise ValueError(f"history must be 'all' or 'previous-weeks', not {history!r}")
        if divider_window not in ("week", "all"):
            raise ValueError(f"divider_window must be 'week' or 'all', not {divider_window!r}")
        for name, value in (("kill_false_small", kill_false_small), ("store_classes", store_classes)):
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false, got {value!r}")
        self.scheduler = scheduler
        self.name = f"{scheduler.name}+classification"
        self.classifier = classifier
        self.classifier_name = getattr(classifier, "name", type(classifier).__name__)
        self.kill_false_small = kill_false_small
        self.may_requeue = kill_false_small or scheduler.may_requeue
        self.period = positive(period, "period", "retraining period in seconds")
        self.history = history
        self.divider_window = divider_window
        self.store_classes = store_classes
        self._clock_options = {"unix_start_time": finite(unix_start_time, "unix_start_time", allow_none=True),
                               "subtime_offset": finite(subtime_offset, "subtime_offset"),
                               "timezone": parse_zone_option(timezone)}
        self.clock = None
        self.table = None
        self.divider = None
        self._static_over = False  # Batsim said every static job was submitted
        self._week_index = 0
        self._weeks: list[_Week] = [_Week(0, 0.0)]
        # training data: one row per completed logical job
        self._X: list = []
        self._runtimes: list = []
        self._order: list = []  # submission rank of each training row
        self._week_runtimes: list = []  # completions of the current week (divider of the next)
        self._pending_history: list = []  # history="previous-weeks": completions not yet visible
        self._records: dict = {}  # original job id -> [x, keys, predicted_small, divider, week]
        self._killable: dict = {}  # job id -> job: small first attempts that may still be killed
        self._kill_heap: list = []  # (kill_at, seq, job)
        self._kills_pending: dict = {}
        self.kills = 0
        self.kill_races = 0  # kills answered without progress (the job had just completed)
        self.training_time = 0.0
        self.classify_time = 0.0
        self._classes: dict = {}  # job id -> [predicted small, true small or None]

    # ------------------------------------------------------------ week logic
    def _tick(self, now: float) -> None:
        week = int(now // self.period)
        if week > self._week_index:
            self._new_week(week)

    def _new_week(self, week: int) -> None:
        self._week_index = week
        info = _Week(week, week * self.period)
        self._weeks.append(info)
        if self.divider_window == "all":
            source = self._runtimes
        else:
            source = self._week_runtimes
        if source:
            self.divider = float(np.median(source))
        self._week_runtimes = []
        if self._pending_history:
            for keys, runtime in self._pending_history:
                self.table.add(keys, runtime)
            self._pending_history = []
        info.divider = self.divider
        if self.divider is None or not self.classifier.needs_training:
            return
        t0 = time.perf_counter()
        # Rows in submission order, not completion order: jobs ending at the same instant reach
        # Batsim's scheduler in an order set by SimGrid's float rounding, and a seeded forest
        # still depends on the order of its rows.
        order = np.argsort(np.asarray(self._order), kind="stable")
        X = np.asarray(self._X, dtype=np.float64)[order]
        y = (np.asarray(self._runtimes, dtype=np.float64)[order] < self.divider).astype(np.int64)
        self.classifier.fit(X, y)
        info.train_time = time.perf_counter() - t0
        self.training_time += info.train_time
        info.train_size = len(y)
        info.train_small = int(y.sum())
        imp = getattr(self.classifier, "feature_importances_", None)
        if imp is not None:
            info.importances = [round(float(v), 6) for v in imp]

    # ----------------------------------------------------------------- hooks
    def on_simulation_begins(self, nb_cores, ctx) -> None:
        self.scheduler.on_simulation_begins(nb_cores, ctx)
        estimator = getattr(self.scheduler, "estimator", None)
        if estimator is not None:
            # corrections are judged against this scheduler's window (every pass matters, below)
            estimator.attach(self, ctx)
        if hasattr(self.classifier, "reset"):
            self.classifier.reset()
        self.clock = CalendarClock.resolve(ctx.workloads, self._clock_options)
        self.table = FeatureTable(self.clock)
        self._tick(ctx.now)

    def on_job_submitted(self, job, ctx) -> None:
        self._tick(ctx.now)
        if job.attempt > 0:  # a requeued false-small job: large for good
            job.info["small"] = False
            self.scheduler.on_job_submitted(job, ctx)
            return
        t0 = time.perf_counter()
        x, keys = self.table.features(job, self.divider)
        small = False
        if self.divider is not None:
            small = bool(self.classifier.classify(job, x, self.divider))
        self.classify_time += time.perf_counter() - t0
        job.info["small"] = small
        week = self._weeks[-1]
        self._records[job.id] = [x, keys, small, self.divider, week]
        if self.divider is not None:
            week.classified += 1
            week.predicted_small += small
        self.scheduler.on_job_submitted(job, ctx)
        if job.state == QUEUED and small and self.kill_false_small:
            self._killable[job.id] = job

    def on_job_completed(self, job, ctx) -> None:
        self._tick(ctx.now)
        self.scheduler.on_job_completed(job, ctx)
        self._killable.pop(job.id, None)
        if job.final_state == KILLED and job.id in self._kills_pending:
            return  # our kill: the requeued attempt will bring the real runtime
        record = self._records.pop(job.original_id or job.id, None)
        if record is None:
            return
        x, keys, small, divider, week = record
        # The actual runtime (the profile's, as in the trace) rather than the observed one, which
        # carries Batsim's message latencies and would blur the divider and the true class.
        runtime = job.runtime if job.runtime is not None else job.end_time - job.start_time
        self._X.append(x)
        self._runtimes.append(runtime)
        self._order.append(job.seq)
        self._week_runtimes.append(runtime)
        if self.history == "all":
            self.table.add(keys, runtime)
        else:
            self._pending_history.append((keys, runtime))
        true_small = None
        if divider is not None:
            true_small = runtime < divider
            week.counts[("T" if small == true_small else "F") + ("S" if small else "L")] += 1
        if self.store_classes:
            self._classes[job.original_id or job.id] = [int(small), None if true_small is None else int(true_small)]

    def on_job_killed(self, job, progress, ctx) -> None:
        self._tick(ctx.now)
        self.scheduler.on_job_killed(job, progress, ctx)
        self._kills_pending.pop(job.id, None)
        if progress is None:  # it completed before the kill: nothing to requeue
            self.kill_races += 1
            return
        self.kills += 1
        new_job = ctx.requeue(job)
        new_job.info["small"] = False
        new_job.info["requeued_from"] = job.id

    def on_requested_call(self, ctx) -> None:
        self._tick(ctx.now)
        self.scheduler.on_requested_call(ctx)

    def on_notify(self, kind, ctx) -> None:
        self._tick(ctx.now)
        if kind == ev.NO_MORE_STATIC_JOB_TO_SUBMIT:
            self._static_over = True
        self.scheduler.on_notify(kind, ctx)

    def reestimate_running(self, job, now: float) -> None:
        self.scheduler.reestimate_running(job, now)

    def _kill_due(self, ctx) -> None:
        heap, now = self._kill_heap, ctx.now
        while heap and heap[0][0] <= now:
            _, _, job = heapq.heappop(heap)
            if job.state == RUNNING and job.id in self._killable:
                del self._killable[job.id]
                self._kills_pending[job.id] = job
                ctx.kill(job)

    def correction_window(self):
        """Weekly retraining and kills happen at whatever pass comes first: every runtime
        correction keeps its call, so the schedule does not depend on which were skipped."""
        return -math.inf, math.inf

    def schedule(self, ctx) -> None:
        self._tick(ctx.now)
        if self.kill_false_small:
            self._kill_due(ctx)
        first = len(ctx.decisions)
        self.scheduler.schedule(ctx)
        if not self.kill_false_small:
            return
        for d in ctx.decisions[first:]:
            if type(d) is not ev.ExecuteJob:
                continue
            job = ctx.jobs[d.job_id]
            if job.id not in self._killable:
                continue
            divider = self.divider
            if divider is None or divider <= 0 or (job.has_walltime and job.walltime <= divider):
                del self._killable[job.id]  # cannot outlive the divider meaningfully
                continue
            kill_at = job.start_time + divider
            job.info["kill_at"] = kill_at
            heapq.heappush(self._kill_heap, (kill_at, job.seq, job))
            ctx.call_me_later(kill_at)

    def registration_finished(self) -> bool:
        if not self.kill_false_small:
            return True
        return self._static_over and not self._killable and not self._kills_pending

    def on_simulation_ends(self, ctx) -> None:
        self.scheduler.on_simulation_ends(ctx)

    # ---------------------------------------------------------------- report
    def report(self) -> dict:
        out = dict(self.scheduler.report())
        total = Counter()
        weekly = []
        for w in self._weeks:
            total.update(w.counts)
            row = {"week": w.index, "start": w.start, "divider": w.divider, "train_size": w.train_size,
                   "train_small": w.train_small, "train_time": round(w.train_time, 6),
                   "classified": w.classified, "predicted_small": w.predicted_small}
            row.update(_scores(w.counts["TS"], w.counts["FS"], w.counts["TL"], w.counts["FL"]))
            if w.importances is not None:
                row["feature_importances"] = dict(zip(FEATURE_NAMES, w.importances))
            weekly.append(row)
        cls = {
            "classifier": self.classifier_name,
            "classifier_params": {k: v for k, v in self.classifier.get_params().items()
                                  if isinstance(v, (int, float, str, type(None)))},
            "kill_false_small": self.kill_false_small,
            "history": self.history,
            "divider_window": self.divider_window,
            "period": self.period,
            "calendar": {"source": self.clock.source if self.clock else None,
                         "unix_start_time": self.clock.unix_start_time if self.clock else None,
                         "subtime_offset": self.clock.subtime_offset if self.clock else None,
                         "timezone": self.clock.timezone if self.clock else None},
            "divider": self.divider,
            "overall": _scores(total["TS"], total["FS"], total["TL"], total["FL"]),
            "kills": self.kills,
            "kill_races": self.kill_races,
            # Batsim's measure, from the jobs CSV (metrics.merge_attempts): the CLI fills it in
            # after the run, so that the report and the metrics give one figure.
            "wasted_core_seconds": None,
            "retrainings": sum(1 for w in self._weeks if w.train_size),
            "training_time": self.training_time,
            "classification_time": self.classify_time,
            "feature_names": list(FEATURE_NAMES),
            "weekly": weekly,
        }
        if self.store_classes:
            # job id (as the scheduler saw it, "w0!12") -> [predicted small, true small or null]
            cls["jobs"] = self._classes
        out["classification"] = cls
        return out

    def job_details(self) -> dict:
        out = dict(self.scheduler.job_details())
        if self.store_classes:
            rows = [(job_id, small, "" if true is None else true) for job_id, (small, true) in self._classes.items()]
            out["classes"] = (("job_id", "predicted_small", "true_small"), rows)
        return out
