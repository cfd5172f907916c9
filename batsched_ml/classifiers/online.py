"""The learning side of Zrigui et al. 2022: features at submission, a weekly divider and
retraining, per-week learning scores. It knows nothing of queues or kills, so the scheduler
(:mod:`.scheduler`) and an offline replay of a trace (``benchmarks/classification_replay.py``)
drive the very same object: ``tick(now)`` at every event, ``classify(job)`` at a first
submission, ``completed(job, runtime)`` at a logical job's final completion.

At every week boundary of simulated time (the first event at or after ``k * period``) the
divider becomes the median actual runtime of the jobs completed during the previous week (or
of all completions) and the classifier is retrained on every job completed so far, labelled
small when its runtime is below the new divider. During the first week every job is large.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..incremental import Incremental, JournaledDict
from ..stopwatch import Stopwatch
from .features import FEATURE_NAMES, LAG_SHARE_SLICE, RUNTIME_FEATURE_NAMES, FeatureTable

WEEK = 604800.0


def scores(tp: int, fp: int, tn: int, fn: int) -> dict:
    """TS=tp, FS=fp, TL=tn, FL=fn (Zrigui et al., Tables 5-6)."""
    n = tp + fp + tn + fn
    return {"TS": tp, "FS": fp, "TL": tn, "FL": fn, "n": n,
            "accuracy": (tp + tn) / n if n else None,
            "precision": tp / (tp + fp) if tp + fp else None,
            "recall": tp / (tp + fn) if tp + fn else None}


class _GrowingArray(Incremental):
    """Rows appended one at a time and read as one numpy array; a read converts only the rows
    added since the previous read, so a weekly retraining does not re-read the whole history
    from Python lists. A snapshot writes each row once (``incremental``)."""

    def __init__(self, dtype=np.float64):
        self.dtype = dtype
        self._done = None
        self._new: list = []

    def version(self) -> int:
        return len(self)

    def changes_since(self, version: int) -> np.ndarray:
        done = 0 if self._done is None else len(self._done)
        new = np.asarray(self._new[max(version - done, 0):], dtype=self.dtype)
        return new if version >= done else np.concatenate([self._done[version:], new]) if len(new) \
            else self._done[version:]

    def incremental_state(self):
        return self.dtype

    @classmethod
    def rebuilt(cls, pieces: list, dtype) -> "_GrowingArray":
        out = cls(dtype)
        pieces = [p for p in pieces if len(p)]
        if pieces:
            out._done = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]
        return out

    def append(self, row) -> None:
        self._new.append(row)

    def __len__(self) -> int:
        return (0 if self._done is None else len(self._done)) + len(self._new)

    def array(self) -> np.ndarray:
        if self._new:
            new = np.asarray(self._new, dtype=self.dtype)
            self._done = new if self._done is None else np.concatenate([self._done, new])
            self._new = []
        return self._done if self._done is not None else np.zeros(0, dtype=self.dtype)


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


class OnlineClassification:
    """Weekly-retrained small/large classification of submitted jobs.

    ``classifier``: a fitted-on-demand model (``models``); ``clock``: the trace's calendar
    (``features.CalendarClock``), which may be given later with :meth:`start`. ``history``:
    ``all`` (lag/aggregation features use every job completed before the submission) or
    ``previous-weeks`` (only jobs completed before the current week, the paper's);
    ``divider_window``: ``week`` (median of the previous week's completions) or ``all``.

    Which divider the training rows are read against: ``feature_divider`` = ``current``
    (default: the lags and shares recomputed at each retraining against the new divider, the
    one the labels and the next week's predictions use) or ``submission`` (as computed when the
    job was submitted, against the divider then in force: features and labels then disagree
    whenever the weekly divider moves);
    ``label_divider`` = ``current`` (every row labelled against the new divider) or
    ``submission`` (against the divider in force at its submission, the class it was scored
    on). ``runtime_features`` adds the user's recent actual runtimes as numbers
    (``features.RUNTIME_FEATURE_NAMES``). ``keep_probabilities``: keep each job's P(small) in
    :attr:`probabilities`; ``probability_on_jobs``: set it as ``job.info["p_small"]`` (for a
    queue order by probability).
    """

    def __init__(self, classifier, clock=None, period: float = WEEK, history: str = "all",
                 divider_window: str = "week", store_classes: bool = True, feature_divider: str = "current",
                 label_divider: str = "current", runtime_features: bool = False, keep_probabilities: bool = False,
                 probability_on_jobs: bool = False):
        if history not in ("all", "previous-weeks"):
            raise ValueError(f"history must be 'all' or 'previous-weeks', not {history!r}")
        if divider_window not in ("week", "all"):
            raise ValueError(f"divider_window must be 'week' or 'all', not {divider_window!r}")
        for name, value in (("feature_divider", feature_divider), ("label_divider", label_divider)):
            if value not in ("submission", "current"):
                raise ValueError(f"{name} must be 'submission' or 'current', not {value!r}")
        self.feature_divider = feature_divider
        self.label_divider = label_divider
        self.runtime_features = bool(runtime_features)
        self.feature_names = FEATURE_NAMES + (RUNTIME_FEATURE_NAMES if self.runtime_features else ())
        self.classifier = classifier
        self.period = period
        self.history = history
        self.divider_window = divider_window
        self.store_classes = store_classes
        # job id -> P(small) at classification
        self.probabilities = JournaledDict() if keep_probabilities else None
        self.probability_on_jobs = probability_on_jobs  # each classified job gets job.info["p_small"]
        self.clock = None
        self.table = None
        self.divider = None
        # the CPU time is this process's: a forest with n_jobs > 1 fits in other threads
        self.training = Stopwatch()
        self.classifying = Stopwatch()
        self._week_index = 0
        self._weeks: list[_Week] = [_Week(0, 0.0)]
        # training data: one row per completed logical job
        self._X = _GrowingArray()
        self._runtimes = _GrowingArray()
        self._order = _GrowingArray(np.int64)  # submission rank of each training row
        self._row_dividers = _GrowingArray()  # divider in force at each row's submission (NaN: first week)
        self._positions = _GrowingArray(np.int64)  # feature_divider="current": FeatureTable.positions
        self._week_runtimes: list = []  # completions of the current week (divider of the next)
        self._pending_history: list = []  # history="previous-weeks": completions not yet visible
        self._records: dict = {}  # original job id -> [x, keys, predicted_small, divider, week]
        self._classes = JournaledDict()  # job id -> [predicted small, true small or None]
        self._latest: dict = {}  # job id -> class given by the last reclassify (while it waits)
        self._start_counts = Counter()  # TS / FS / TL / FL of the classes jobs started with
        self.reclassified = 0  # reclassify calls
        self.reclass_changes = 0  # ... that changed the job's class
        if clock is not None:
            self.start(clock)

    def start(self, clock) -> None:
        """Set the trace's calendar (the feature table reads it)."""
        self.clock = clock
        self.table = FeatureTable(clock, runtimes=self.runtime_features, track=self.feature_divider == "current")

    @property
    def week_index(self) -> int:
        """The current retraining period (0 before the first boundary)."""
        return self._week_index

    # ------------------------------------------------------------ week logic
    def tick(self, now: float) -> None:
        """Start the weeks that began by ``now`` (divider, retraining)."""
        week = int(now // self.period)
        if week > self._week_index:
            self._new_week(week)

    def _new_week(self, week: int) -> None:
        self._week_index = week
        info = _Week(week, week * self.period)
        self._weeks.append(info)
        source = self._runtimes.array() if self.divider_window == "all" else self._week_runtimes
        if len(source):
            self.divider = float(np.median(source))
        self._week_runtimes = []
        if self._pending_history:
            for keys, runtime in self._pending_history:
                self.table.add(keys, runtime)
            self._pending_history = []
        info.divider = self.divider
        if self.divider is None or not self.classifier.needs_training:
            return
        with self.training:
            info.train_size, info.train_small = self._fit()
        info.train_time = self.training.last_wall
        imp = getattr(self.classifier, "feature_importances_", None)
        if imp is not None:
            info.importances = [round(float(v), 6) for v in imp]

    def _fit(self) -> tuple[int, int]:
        """Fit the classifier on every completed job; the number of rows and of small ones."""
        # Rows in submission order, not completion order: jobs ending at the same instant reach
        # Batsim's scheduler in an order set by SimGrid's float rounding, and a seeded forest
        # still depends on the order of its rows.
        order = np.argsort(self._order.array(), kind="stable")
        X = self._X.array()[order]  # a copy: the stored rows keep their submission-time features
        if self.feature_divider == "current":
            X[:, LAG_SHARE_SLICE] = self.table.against(self._positions.array(), self.divider)[order]
        runtimes = self._runtimes.array()[order]
        if self.label_divider == "current":
            y = (runtimes < self.divider).astype(np.int64)
        else:
            dividers = self._row_dividers.array()[order]
            y = (runtimes < np.where(np.isnan(dividers), self.divider, dividers)).astype(np.int64)
        self.classifier.fit(X, y)
        return len(y), int(y.sum())

    # ------------------------------------------------------------ per job
    def classify(self, job) -> bool:
        """Class of a first submission (True = small); large while there is no divider."""
        with self.classifying:
            x, keys = self.table.features(job, self.divider)
            small = False
            if self.divider is not None:
                if self.probabilities is None and not self.probability_on_jobs:
                    small = bool(self.classifier.classify(job, x, self.divider))
                else:
                    small, p = self.classifier.classify_with_probability(job, x, self.divider)
                    small = bool(small)
                    if self.probabilities is not None:
                        self.probabilities[job.id] = p
                    if self.probability_on_jobs:
                        job.info["p_small"] = p
        week = self._weeks[-1]
        positions = self.table.positions(keys) if self.feature_divider == "current" else None
        self._records[job.id] = [x, keys, small, self.divider, week, positions]
        if self.divider is not None:
            week.classified += 1
            week.predicted_small += small
        return small

    def keys_of(self, job_id) -> tuple | None:
        """The feature categories of a classified job not yet completed (None otherwise): a
        completion in one of them changes its lag and share features."""
        record = self._records.get(job_id)
        return None if record is None else record[1]

    def reclassify(self, job) -> tuple[bool, float | None]:
        """Class and P(small) of a waiting first submission, with its features as they are now.

        The calendar features stay those of its submission; the lags and shares see the jobs of
        its categories completed since, and the model is the one in force. The training row
        and the scores at submission keep the submission's features and class; the class a job
        starts with is scored apart (``overall_at_start``)."""
        record = self._records.get(job.id)
        if record is None or self.divider is None:
            return bool(job.info.get("small")), job.info.get("p_small")
        with self.classifying:
            x, _ = self.table.features(job, self.divider)
            small, p = self.classifier.classify_with_probability(job, x, self.divider)
        small = bool(small)
        self.reclassified += 1
        if small != self._latest.get(job.id, record[2]):
            self.reclass_changes += 1
        self._latest[job.id] = small
        if self.probability_on_jobs:
            job.info["p_small"] = p
        return small, p

    def completed(self, job_id, seq: int, runtime: float) -> None:
        """A logical job (its original id and submission rank) ended with ``runtime``: a
        training row, history for the features, and its true class for the scores."""
        record = self._records.pop(job_id, None)
        if record is None:
            return
        x, keys, small, divider, week, positions = record
        self._X.append(x)
        self._runtimes.append(runtime)
        self._order.append(seq)
        self._row_dividers.append(np.nan if divider is None else divider)
        if positions is not None:
            self._positions.append(positions)
        self._week_runtimes.append(runtime)
        if self.history == "all":
            self.table.add(keys, runtime)
        else:
            self._pending_history.append((keys, runtime))
        true_small = None
        if divider is not None:
            true_small = runtime < divider
            week.counts[("T" if small == true_small else "F") + ("S" if small else "L")] += 1
            started = self._latest.pop(job_id, small)
            self._start_counts[("T" if started == true_small else "F") + ("S" if started else "L")] += 1
        else:
            self._latest.pop(job_id, None)
        if self.store_classes:
            self._classes[job_id] = [int(small), None if true_small is None else int(true_small)]

    # ---------------------------------------------------------------- report
    @property
    def classes(self) -> dict:
        """job id -> [predicted small, true small or None] (with ``store_classes``)."""
        return self._classes

    def report(self) -> dict:
        """Learning figures: overall and weekly scores, dividers, training sizes and times."""
        total = Counter()
        weekly = []
        for w in self._weeks:
            total.update(w.counts)
            row = {"week": w.index, "start": w.start, "divider": w.divider, "train_size": w.train_size,
                   "train_small": w.train_small, "train_time": round(w.train_time, 6),
                   "classified": w.classified, "predicted_small": w.predicted_small}
            row.update(scores(w.counts["TS"], w.counts["FS"], w.counts["TL"], w.counts["FL"]))
            if w.importances is not None:
                row["feature_importances"] = dict(zip(self.feature_names, w.importances))
            weekly.append(row)
        clock = self.clock
        out = {
            "history": self.history,
            "divider_window": self.divider_window,
            "period": self.period,
            "calendar": {"source": clock.source if clock else None,
                         "unix_start_time": clock.unix_start_time if clock else None,
                         "subtime_offset": clock.subtime_offset if clock else None,
                         "timezone": clock.timezone if clock else None},
            "divider": self.divider,
            "overall": scores(total["TS"], total["FS"], total["TL"], total["FL"]),
            "retrainings": sum(1 for w in self._weeks if w.train_size),
            "training_time": self.training.wall,
            "classification_time": self.classifying.wall,
            "training_cpu_time": self.training.cpu,
            "classification_cpu_time": self.classifying.cpu,
            "feature_divider": self.feature_divider,
            "label_divider": self.label_divider,
            "runtime_features": self.runtime_features,
            "feature_names": list(self.feature_names),
            "weekly": weekly,
        }
        if self.reclassified:
            out["overall_at_start"] = scores(*(self._start_counts[k] for k in ("TS", "FS", "TL", "FL")))
            out["reclassified"] = self.reclassified
            out["reclass_changes"] = self.reclass_changes
        return out
