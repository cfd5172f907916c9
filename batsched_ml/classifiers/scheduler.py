"""Small/large classification around any queue scheduler (Zrigui et al. 2022, Algorithms 1 and 2).

:class:`ClassifyingScheduler` wraps the scheduler (composition: it forwards every hook) and
:class:`SmallFirst` wraps its queue order.

* At each submission the job gets its Table 4 features and is classified small
  or large (``job.info['small']``); the queue order is ``(large?, policy key)``,
  i.e. the small queue then the large one, each in policy order (Algorithm 1).
* The learning itself (features, the weekly divider and retraining, the scores) is
  :class:`.online.OnlineClassification`, which this class drives; during the first
  week every job is large.
* With ``kill_false_small`` (Algorithm 2), a small job still running when its
  elapsed time reaches the divider in force at its start is killed once
  (CALL_ME_LATER at start + divider) and requeued as ``<id>#1``, which is large.
"""

from __future__ import annotations

import copy
import heapq
import math

from ..config.validate import check_number, finite, positive
from ..core.job import QUEUED, RUNNING
from ..core.scheduler import Scheduler
from ..policies.orders import Policy
from ..protocol import events as ev
from .features import CalendarClock, parse_zone_option
from .online import WEEK, OnlineClassification

KILLED = "COMPLETED_KILLED"


class SmallFirst(Policy):
    """Small jobs first, then large ones; each class in the order of ``base``.

    ``starvation_threshold`` (seconds): within each class, jobs that have waited longer go
    first, oldest first (the thresholding of Zrigui et al., section 5.1, read as part of the
    policy that orders each of the two queues, Algorithm 1); a starving large job stays behind
    the small ones. Unlike the scheduler's own ``--starvation-threshold``, which moves it
    ahead of every class. The order then depends on the time: sorted at each pass.

    ``by_probability``: ``none``; ``small`` (the small class by decreasing P(small), the
    classifier's ``job.info["p_small"]``, then ``base``: the jobs it is least sure of wait
    behind the others, so a false small one delays fewer true small ones) or ``both`` (the
    large class too: a small job the classifier missed by a little goes first among the
    large ones), or ``one-queue`` (with ``head_start``: both classes in one queue by the
    head-start key below, so a job whose P(small) crosses the threshold moves by a few hours of
    head start instead of jumping from one queue to the other; the class still decides which jobs
    are killed at the divider).

    ``head_start`` (seconds, with ``by_probability``): instead of P(small) alone, the classes it
    orders go by ``submission time - head_start x P(small)``, as if a job had been submitted
    ``head_start x P(small)`` earlier. Likely-small jobs still pass the others, but a job is only
    ever passed by jobs submitted less than ``head_start`` after it: the wait a large job can
    lose is bounded without a starvation threshold, and the key stays static (no re-sort).
    """

    BY_PROBABILITY = ("none", "small", "both", "one-queue")

    def __init__(self, base: Policy, starvation_threshold: float | None = None, by_probability: str = "none",
                 head_start: float | None = None):
        if by_probability not in self.BY_PROBABILITY:
            raise ValueError(f"order_by_probability must be one of {', '.join(self.BY_PROBABILITY)}, "
                             f"not {by_probability!r}")
        head_start = positive(head_start, "probability_head_start",
                              "seconds of submission time a job gains per unit of P(small)", allow_none=True)
        if head_start is not None and by_probability == "none":
            raise ValueError("probability_head_start needs order_by_probability=small or both (it sets how the "
                             "classes are ordered by P(small))")
        if by_probability == "one-queue" and head_start is None:
            raise ValueError("order_by_probability=one-queue needs probability_head_start (without it, one queue "
                             "by P(small) is the order of 'both')")
        self.base = base
        self.starvation_threshold = starvation_threshold
        self.by_probability = by_probability
        self.head_start = head_start
        self.dynamic = base.dynamic or starvation_threshold is not None
        self.name = f"small-first-{base.name}"

    @classmethod
    def around(cls, base: Policy, options: dict) -> "SmallFirst":
        """``base`` small-first, with the classification options that shape the order
        (``class_starvation_threshold``, ``order_by_probability``; checked again by
        :class:`ClassifyingScheduler`, which takes them too)."""
        return cls(base, options.get("class_starvation_threshold"), options.get("order_by_probability", "none"),
                   options.get("probability_head_start"))

    def key(self, job, now):
        large = 0 if job.info.get("small") or self.by_probability == "one-queue" else 1
        inner = self.base.key(job, now)
        if self.by_probability in ("both", "one-queue") or (large == 0 and self.by_probability == "small"):
            p = job.info.get("p_small", 0.0)
            inner = (-p if self.head_start is None else job.submission_time - self.head_start * p, inner)
        threshold = self.starvation_threshold
        if threshold is None:
            return (large, inner)
        if now - job.submission_time > threshold:
            return (large, 0, (job.submission_time, job.id))
        return (large, 1, inner)

    def on_simulation_begins(self, nb_cores: int) -> None:
        begins = getattr(self.base, "on_simulation_begins", None)
        if begins is not None:
            begins(nb_cores)

    def __repr__(self) -> str:
        extra = "" if self.starvation_threshold is None else f", starvation_threshold={self.starvation_threshold!r}"
        extra += "" if self.by_probability == "none" else f", by_probability={self.by_probability!r}"
        extra += "" if self.head_start is None else f", head_start={self.head_start!r}"
        return f"SmallFirst({self.base!r}{extra})"


class ClassifyingScheduler(Scheduler):
    """Small/large classification around a queue scheduler: a decorator, not a subclass.

    The wrapped ``scheduler`` must order its queue with :class:`SmallFirst` (the composer
    builds it so: ``--classifier`` needs a scheduler that takes a ``policy``); this object
    classifies each job before the scheduler queues it (:class:`.online.OnlineClassification`
    retrains ``classifier`` every ``period``), and with ``kill_false_small`` kills a small job
    still running at the divider and requeues it as large. Every hook is forwarded to ``scheduler``.

    Beyond the paper (defaults keep it): ``class_starvation_threshold``,
    ``order_by_probability`` and ``probability_head_start`` are :class:`SmallFirst`'s (the
    composer builds it with them);
    ``probe_after = k`` re-classifies small a queued job classified large with P(small) = p once
    it has waited ``k x divider x (1 - p) / p`` (the longer a possibly small job waits, the more
    a probe is worth its cost: at worst divider x cores of work, with ``kill_false_small``);
    ``reclassify_waiting``: a waiting first submission is classified again, with its lags and
    shares as they are now, whenever a job of one of its feature categories completes and at each
    retraining (jobs a user submits in a burst are classified before any of them has run; the
    first completion tells about the others);
    ``speculative_backfill = q`` (0 <= q < 1, EASY only): after each pass, a waiting large
    first submission with P(small) >= q starts in the cores left free if it fits there for one
    divider without delaying the priority job; still running at the divider, it is killed and
    requeued as large at its original place (a missed small job runs in a hole instead of
    waiting behind the large queue; a true large one only used cores nothing else could);
    ``requeue_order``: where a killed false-small job queues among the large ones,
    ``resubmission`` (as the new Batsim job it is, submitted at the kill) or ``original`` (by
    its first submission, as the same job moved from one queue to the other in Algorithm 2);
    ``kill_only_if_waiting``: a job due for its kill at the divider (a false small, a probe, a
    speculative start) runs on when no job waits at that moment: the kill frees cores for queued
    jobs, and with none queued it only throws the attempt away (on an idle machine the requeued
    job restarts at once, having lost a divider of work and of wait).
    """

    def __init__(self, scheduler, classifier, *, kill_false_small=False, period=WEEK, history="all",
                 divider_window="week", unix_start_time=None, subtime_offset=0.0, timezone=None,
                 store_classes=True, feature_divider="current", label_divider="current", runtime_features=False,
                 class_starvation_threshold=None, order_by_probability="none", probability_head_start=None,
                 probe_after=None, requeue_order="resubmission", reclassify_waiting=False,
                 speculative_backfill=None, kill_only_if_waiting=False):
        policy = getattr(scheduler, "policy", None)
        if not isinstance(policy, SmallFirst):
            raise ValueError("classification needs a scheduler whose queue order is SmallFirst(policy) "
                             "(batsched_ml.config.compose builds it so)")
        for name, value in (("kill_false_small", kill_false_small), ("store_classes", store_classes),
                            ("runtime_features", runtime_features), ("reclassify_waiting", reclassify_waiting),
                            ("kill_only_if_waiting", kill_only_if_waiting)):
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false, got {value!r}")
        threshold = positive(class_starvation_threshold, "class_starvation_threshold",
                             "seconds a job waits before it goes first in its class", allow_none=True)
        if ((threshold, order_by_probability, probability_head_start)
                != (policy.starvation_threshold, policy.by_probability, policy.head_start)):
            raise ValueError("class_starvation_threshold, order_by_probability and probability_head_start are the "
                             "queue order's: build it as SmallFirst(policy, class_starvation_threshold, "
                             "order_by_probability, probability_head_start) (batsched_ml.config.compose does)")
        if requeue_order not in ("resubmission", "original"):
            raise ValueError(f"requeue_order must be 'resubmission' or 'original', not {requeue_order!r}")
        self.scheduler = scheduler
        self.name = f"{scheduler.name}+classification"
        self.classifier = classifier
        self.classifier_name = getattr(classifier, "name", type(classifier).__name__)
        self.kill_false_small = kill_false_small
        self.may_requeue = kill_false_small or scheduler.may_requeue
        self.store_classes = store_classes
        self.probe_after = positive(probe_after, "probe_after", "waiting time before a probe, in dividers x "
                                    "(1 - p) / p", allow_none=True)
        self.requeue_order = requeue_order
        if speculative_backfill is not None:
            speculative_backfill = check_number(
                speculative_backfill, "speculative_backfill", low=0, high=1, high_open=True,
                meaning="the least P(small) of a large job started for one divider in a hole")
            if not kill_false_small or not hasattr(scheduler, "start_for"):
                raise ValueError("speculative_backfill needs kill_false_small and the easy scheduler (a job "
                                 "started for one divider is killed at the divider)")
        self.speculative_backfill = speculative_backfill
        self._speculated: set = set()  # original ids of jobs started speculatively and killed
        self._may_speculate: dict = {}  # job id -> queued large first submission (may still be tried)
        self.speculative_starts = 0
        self.learner = OnlineClassification(
            classifier, period=positive(period, "period", "retraining period in seconds"), history=history,
            divider_window=divider_window, store_classes=store_classes, feature_divider=feature_divider,
            label_divider=label_divider, runtime_features=runtime_features,
            probability_on_jobs=(order_by_probability != "none" or probe_after is not None
                                 or speculative_backfill is not None))
        self.reclassify_waiting = reclassify_waiting
        self._waiting: dict = {}  # feature category -> {job id: waiting first submission}
        self._stale: set = set()  # categories with a completion since the last pass
        self._retrainings_seen = 0
        self._clock_options = {"unix_start_time": finite(unix_start_time, "unix_start_time", allow_none=True),
                               "subtime_offset": finite(subtime_offset, "subtime_offset"),
                               "timezone": parse_zone_option(timezone)}
        self._static_over = False  # Batsim said every static job was submitted
        self._killable: dict = {}  # job id -> job: small first attempts that may still be killed
        self._kill_heap: list = []  # (kill_at, seq, job)
        self._kills_pending: dict = {}
        self._probe_heap: list = []  # (probe_at, seq, job)
        self._first_submission: dict = {}  # original id -> submission time of a killed job
        self.kill_only_if_waiting = kill_only_if_waiting
        self.kills = 0
        self.kills_spared = 0  # due kills skipped because no job waited (kill_only_if_waiting)
        self.kill_races = 0  # kills answered without progress (the job had just completed)
        self.probes = 0
        self._inherited = False  # a fork took over the snapshot's classification (fork_from)

    @property
    def divider(self):
        """The divider in force (None during the first week)."""
        return self.learner.divider

    @property
    def clock(self):
        return self.learner.clock

    def _tick(self, now: float) -> None:
        self.learner.tick(now)
        if self.reclassify_waiting and len(self._waiting) and self.learner.week_index != self._retrainings_seen:
            self._retrainings_seen = self.learner.week_index
            self._stale.update(self._waiting)  # a new model and divider: every waiting job

    # ----------------------------------------------------------------- hooks
    def on_simulation_begins(self, nb_cores, ctx) -> None:
        self.scheduler.on_simulation_begins(nb_cores, ctx)
        estimator = getattr(self.scheduler, "estimator", None)
        if estimator is not None:
            # corrections are judged against this scheduler's window (every pass matters, below)
            estimator.attach(self, ctx)
        if hasattr(self.classifier, "reset"):
            self.classifier.reset()
        self.learner.start(CalendarClock.resolve(ctx.workloads, self._clock_options))
        self._tick(ctx.now)

    def on_job_submitted(self, job, ctx) -> None:
        self._tick(ctx.now)
        if job.attempt > 0:  # a requeued false-small job: large for good
            job.info["small"] = False
            first = self._first_submission.pop(job.original_id, None)
            speculated = job.original_id in self._speculated
            if first is not None and (self.requeue_order == "original" or speculated):
                job.submission_time = first
            self.scheduler.on_job_submitted(job, ctx)
            return
        self._admit(job, ctx, self.learner.classify(job))

    def _admit(self, job, ctx, small: bool) -> None:
        """A first submission of class ``small``: queued by the scheduler, followed for kills,
        speculation, re-classification and probes."""
        job.info["small"] = small
        self.scheduler.on_job_submitted(job, ctx)
        if job.state != QUEUED:
            return
        if small and self.kill_false_small:
            self._killable[job.id] = job
        elif self.speculative_backfill is not None:
            self._may_speculate[job.id] = job
        if self.reclassify_waiting:
            for key in self.learner.keys_of(job.id):
                self._waiting.setdefault(key, {})[job.id] = job
        if not small and self.probe_after is not None and self.divider is not None:
            p = job.info.get("p_small", 0.0)
            if p > 0.0:
                probe_at = ctx.now + self.probe_after * self.divider * (1.0 - p) / p
                heapq.heappush(self._probe_heap, (probe_at, job.seq, job))

    # ----------------------------------------------------------------- forks
    def components(self) -> dict:
        return dict(self.scheduler.components(), classifier=self.classifier)

    def _learning_settings(self) -> tuple:
        """What makes two classifications learn the same thing from the same jobs."""
        learner, classifier = self.learner, self.classifier
        params = classifier.get_params() if hasattr(classifier, "get_params") else None
        return (type(classifier), params, learner.period, learner.history, learner.divider_window,
                learner.feature_divider, learner.label_divider, learner.runtime_features, self._clock_options)

    def fork_from(self, previous) -> dict:
        """The wrapped scheduler's components take over as theirs do; the classification takes over the
        snapshot's (its classifier, divider, training rows and per-user history, and the classes of
        the jobs it classified) when the snapshot's run classified with the same classifier and
        learning settings; otherwise it starts fresh (every job large for its first period)."""
        classifying = isinstance(previous, ClassifyingScheduler)
        out = self.scheduler.fork_from(previous.scheduler if classifying else previous)
        if classifying and previous._learning_settings() == self._learning_settings():
            self.learner = copy.deepcopy(previous.learner)
            self.classifier = self.learner.classifier
            self._retrainings_seen = self.learner.week_index
            self._inherited = True
            out["classifier"] = (f"the snapshot's classification (period {self.learner.week_index}'s model and "
                                 f"divider, its training rows and per-user history, the classes given)")
        return out

    def on_job_adopted(self, job, ctx) -> None:
        """A fork's job: a running one is followed for its kill at the divider when the classes
        were taken over; a queued first submission keeps the class it was given when they were,
        else is classified now (as a submission)."""
        self._tick(ctx.now)
        if job.state == RUNNING:
            self.scheduler.on_job_adopted(job, ctx)
            kill_at = job.info.get("kill_at")
            small = job.info.get("small") or job.info.get("speculative")
            if self._inherited and self.kill_false_small and kill_at is not None and small and job.attempt == 0:
                self._killable[job.id] = job
                heapq.heappush(self._kill_heap, (kill_at, job.seq, job))
                ctx.call_me_later(kill_at)
            return
        if job.attempt == 0 and self._inherited and "small" in job.info:
            self._admit(job, ctx, bool(job.info["small"]))
        else:
            self.on_job_submitted(job, ctx)

    def on_job_completed(self, job, ctx) -> None:
        self._tick(ctx.now)
        self.scheduler.on_job_completed(job, ctx)
        self._killable.pop(job.id, None)
        self._may_speculate.pop(job.id, None)  # (no longer queued: kept, it would stay to the run's end)
        if job.final_state == KILLED and job.id in self._kills_pending:
            return  # our kill: the requeued attempt will bring the real runtime
        # The actual runtime (the profile's, as in the trace) rather than the observed one, which
        # carries Batsim's message latencies and would blur the divider and the true class.
        runtime = job.runtime if job.runtime is not None else job.end_time - job.start_time
        original = job.original_id or job.id
        if self.reclassify_waiting:
            for key in self.learner.keys_of(original) or ():
                jobs = self._waiting.get(key)
                if jobs is not None:
                    jobs.pop(original, None)
                    self._stale.add(key)
        self.learner.completed(original, job.seq, runtime)

    def on_job_killed(self, job, progress, ctx) -> None:
        self._tick(ctx.now)
        self.scheduler.on_job_killed(job, progress, ctx)
        self._kills_pending.pop(job.id, None)
        if progress is None:  # it completed before the kill: nothing to requeue
            self.kill_races += 1
            return
        self.kills += 1
        self._first_submission[job.original_id or job.id] = job.submission_time
        if job.info.get("speculative"):
            self._speculated.add(job.original_id or job.id)
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
                if self.kill_only_if_waiting and not self.scheduler.queue:
                    self.kills_spared += 1
                    continue
                self._kills_pending[job.id] = job
                ctx.kill(job)

    def _probe_due(self, ctx) -> None:
        """Re-classify small the queued large jobs whose probe time has come (see ``probe_after``)."""
        heap, now = self._probe_heap, ctx.now
        while heap and heap[0][0] <= now:
            _, _, job = heapq.heappop(heap)
            if job.state != QUEUED or job.info.get("small"):
                continue
            job.info["small"] = True
            job.info["probed"] = True
            self.probes += 1
            self.scheduler.queue.rekey(job, now)
            if self.kill_false_small:
                self._killable[job.id] = job

    def _reclassify_stale(self, ctx) -> None:
        """Classify again the waiting first submissions of the categories marked stale."""
        seen = set()
        for key in sorted(self._stale, key=repr):
            jobs = self._waiting.get(key)
            if not jobs:
                continue
            for job_id in list(jobs):
                job = jobs[job_id]
                if job.state != QUEUED or job.info.get("probed"):
                    del jobs[job_id]
                    continue
                if job_id in seen:
                    continue
                seen.add(job_id)
                was_small, was_p = job.info.get("small"), job.info.get("p_small")
                small, p = self.learner.reclassify(job)
                if small == was_small and p == was_p:
                    continue
                job.info["small"] = small
                self.scheduler.queue.rekey(job, ctx.now)
                if self.kill_false_small:
                    if small:
                        self._killable[job.id] = job
                    else:
                        self._killable.pop(job.id, None)
                        if self.speculative_backfill is not None:
                            self._may_speculate[job.id] = job
            if not jobs:
                del self._waiting[key]
        self._stale.clear()

    def _speculate(self, ctx) -> None:
        """Start waiting large jobs for one divider in the cores the pass left free (see
        ``speculative_backfill``); they become killable at the divider like small ones."""
        divider, scheduler = self.divider, self.scheduler
        if divider is None or divider <= 0:
            return
        sizes = scheduler.sizes_fitting_for(divider)
        if not sizes:
            return
        least = self.speculative_backfill
        for job in scheduler.queue.iter_ordered(ctx.now, sizes):  # lazily: jobs may start as it is read
            if (job.info.get("small") or job.attempt > 0 or job.info.get("p_small", 0.0) < least
                    or (job.has_walltime and job.walltime <= divider)):
                continue
            if scheduler.start_for(ctx, job, divider):
                job.info["speculative"] = True
                self.speculative_starts += 1
                self._killable[job.id] = job
                if scheduler.profile.available_now() < scheduler.queue.smallest_request():
                    return

    def correction_window(self):
        """Weekly retraining and kills happen at whatever pass comes first: every runtime
        correction keeps its call, so the schedule does not depend on which were skipped."""
        return -math.inf, math.inf

    def schedule(self, ctx) -> None:
        self._tick(ctx.now)
        if self._stale:
            self._reclassify_stale(ctx)
        if self._probe_heap:
            self._probe_due(ctx)
        if self.kill_false_small:
            self._kill_due(ctx)
        first = len(ctx.decisions)
        self.scheduler.schedule(ctx)
        if self.speculative_backfill is not None:
            self._speculate(ctx)
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
        return (self._static_over and not self._killable and not self._kills_pending and not self._probe_pending()
                and not self._speculation_pending())

    def _speculation_pending(self) -> bool:
        """A queued large first submission may still be started speculatively (then killed and
        requeued)."""
        waiting = self._may_speculate
        for job_id in [i for i, job in waiting.items() if job.state != QUEUED or job.info.get("small")]:
            del waiting[job_id]
        return bool(waiting)

    def _probe_pending(self) -> bool:
        """A queued large job may still be probed (then perhaps killed and requeued)."""
        return any(job.state == QUEUED and not job.info.get("small") for _, _, job in self._probe_heap)

    def on_simulation_ends(self, ctx) -> None:
        self.scheduler.on_simulation_ends(ctx)

    # ---------------------------------------------------------------- report
    def report(self) -> dict:
        out = dict(self.scheduler.report())
        learned = self.learner.report()
        cls = {
            "classifier": self.classifier_name,
            "classifier_params": {k: v for k, v in self.classifier.get_params().items()
                                  if isinstance(v, (int, float, str, type(None)))},
            "kill_false_small": self.kill_false_small,
        }
        for key in ("history", "divider_window", "period", "calendar", "divider", "overall"):
            cls[key] = learned.pop(key)
        cls["kills"] = self.kills
        cls["kill_races"] = self.kill_races
        if self.kill_only_if_waiting:
            cls["kills_spared"] = self.kills_spared
        if self.probe_after is not None:
            cls["probes"] = self.probes
        if self.speculative_backfill is not None:
            cls["speculative_starts"] = self.speculative_starts
            cls["speculative_kills"] = len(self._speculated)
        # Batsim's measure, from the jobs CSV (metrics.merge_attempts): the CLI fills it in
        # after the run, so that the report and the metrics give one figure.
        cls["wasted_core_seconds"] = None
        cls.update(learned)
        if self.store_classes:
            # job id (as the scheduler saw it, "w0!12") -> [predicted small, true small or null]
            cls["jobs"] = self.learner.classes
        out["classification"] = cls
        return out

    def job_details(self) -> dict:
        out = dict(self.scheduler.job_details())
        if self.store_classes:
            rows = [(job_id, small, "" if true is None else true)
                    for job_id, (small, true) in self.learner.classes.items()]
            out["classes"] = (("job_id", "predicted_small", "true_small"), rows)
        return out
