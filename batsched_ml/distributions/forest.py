"""Beyond the paper: a random forest over the runtime bins (a soft small/large classification).

The features are the classification issue's (Zrigui et al. Table 4, see
``classifiers.features``: requested time and cores, calendar, lags and shares of
small jobs per category), with "small" taken against the weekly divider (median
runtime of the previous week's completions), as the small/large classifier does.
The forest (scikit-learn, ``predict_proba``) is retrained at every week boundary
on every job completed so far, rows in submission order; before the first
training a job has no distribution (a point mass at its walltime).
"""

from __future__ import annotations

import numpy as np

from ..classifiers.features import CalendarClock, FeatureTable, parse_zone_option
from ..classifiers.models import leaf_of, tree_lists
from ..classifiers.scheduler import WEEK
from ..config.validate import finite, positive, positive_int
from ..incremental import AppendOnlyList
from ..stopwatch import Stopwatch
from .base import RuntimeDistribution
from .bins import DEFAULT_FACTOR, DEFAULT_MAX_RUNTIME


class _CompiledForest:
    """A fitted forest's trees as plain lists: one-row predictions without scikit-learn's per-call cost.
    Same leaf fractions, summed in tree order, divided by the number of trees."""

    def __init__(self, estimators, n_classes: int):
        self.trees = [tree_lists(est) for est in estimators]
        self.n_classes = n_classes

    def predict_one(self, x) -> np.ndarray:
        out = np.zeros(self.n_classes)
        for tree in self.trees:
            out += tree[4][leaf_of(tree, x)]
        return out / len(self.trees)


class ForestDistribution(RuntimeDistribution):
    name = "forest"

    def __init__(self, n_estimators: int = 30, max_depth: int = 12, min_samples_leaf: int = 3,
                 max_samples: int = 5000, period: float = WEEK, random_state: int = 0,
                 unix_start_time=None, subtime_offset: float = 0.0, timezone=None,
                 bin_factor: float = DEFAULT_FACTOR, max_runtime: float = DEFAULT_MAX_RUNTIME):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_samples = max_samples
        self.period = period
        self.random_state = random_state
        self.unix_start_time = unix_start_time
        self.subtime_offset = subtime_offset
        self.timezone = timezone
        super().__init__(bin_factor, max_runtime)

    def validate_params(self) -> None:
        super().validate_params()
        positive_int(self.n_estimators, "n_estimators", "trees in the forest")
        positive_int(self.max_depth, "max_depth", allow_none=True)
        positive_int(self.min_samples_leaf, "min_samples_leaf")
        positive_int(self.max_samples, "max_samples", "jobs per tree", allow_none=True)
        positive(self.period, "period", "retraining period in seconds")
        finite(self.unix_start_time, "unix_start_time", allow_none=True)
        finite(self.subtime_offset, "subtime_offset")
        parse_zone_option(self.timezone)

    def reset(self):
        super().reset()
        zone = parse_zone_option(self.timezone)
        self.table_ = FeatureTable(CalendarClock(self.unix_start_time or 0, self.subtime_offset, zone or 0))
        self.divider_ = None
        self.week_ = 0
        self.model_ = None
        self.classes_ = None
        self.trainings_ = 0
        self.training_ = Stopwatch()
        self._pending = {}  # job id -> (features, category keys, submission rank)
        # training rows (a snapshot writes each once)
        self._X, self._y, self._order = AppendOnlyList(), AppendOnlyList(), AppendOnlyList()
        self._week_runtimes = []
        return self

    def begin(self, workloads=None, options=None) -> None:
        self.reset()
        clock_options = {"unix_start_time": self.unix_start_time, "subtime_offset": self.subtime_offset,
                         "timezone": parse_zone_option(self.timezone)}
        self.table_ = FeatureTable(CalendarClock.resolve(workloads, clock_options))

    def _tick(self, now: float) -> None:
        week = int(now // self.period)
        if week <= self.week_:
            return
        self.week_ = week
        if self._week_runtimes:
            self.divider_ = float(np.median(self._week_runtimes))
        self._week_runtimes = []
        if not self._y:
            return
        from sklearn.ensemble import RandomForestClassifier

        with self.training_:
            order = np.argsort(np.asarray(self._order), kind="stable")
            X = np.asarray(self._X, dtype=np.float64)[order]
            y = np.asarray(self._y, dtype=np.int64)[order]
            max_samples = self.max_samples if self.max_samples is not None and self.max_samples < len(y) else None
            model = RandomForestClassifier(n_estimators=self.n_estimators, max_depth=self.max_depth,
                                           min_samples_leaf=self.min_samples_leaf, max_samples=max_samples,
                                           n_jobs=1, random_state=self.random_state)
            model.fit(X, y)
            self.model_ = _CompiledForest(model.estimators_, len(model.classes_))
            self.classes_ = model.classes_.astype(np.int64)
            self.trainings_ += 1

    def predict_proba(self, jobs, now: float = 0.0) -> np.ndarray:
        self._tick(now)
        out = np.zeros((len(jobs), self.n_bins))
        for k, job in enumerate(jobs):
            x, keys = self.table_.features(job, self.divider_)
            self._pending[job.id] = (x, keys, job.seq)
            if self.model_ is not None:
                out[k, self.classes_] = self.model_.predict_one(x)
        return out

    def partial_fit(self, job, runtime: float, now: float = 0.0):
        self._tick(now)
        record = self._pending.pop(job.id, None)
        if record is None:
            x, keys = self.table_.features(job, self.divider_)
            record = (x, keys, job.seq)
        x, keys, seq = record
        self._X.append(x)
        self._y.append(int(self.bins_.index(float(runtime))))
        self._order.append(seq)
        self._week_runtimes.append(float(runtime))
        self.table_.add(keys, float(runtime))
        return self

    def report(self) -> dict:
        return {"trainings": self.trainings_, "training_time": self.training_.wall,
                "training_cpu_time": self.training_.cpu, "divider": self.divider_}
