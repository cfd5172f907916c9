"""Small/large job classification (Zrigui et al., JPDC 2022).

``build_classification_scheduler(cls, classifier, kill_false_small, seed, ...)``
wraps any queue scheduler class (EASY, conservative, strict FCFS): jobs are
classified small or large at submission by a weekly-retrained classifier
plugin, small jobs go first, and with ``kill_false_small`` a small job that
reaches the divider is killed and requeued as large, once.

Options (``-o key=value``), besides the wrapped scheduler's own:

* ``history``: ``all`` (default: lag/aggregation features use every job
  completed before the submission) or ``previous-weeks`` (the paper's: only
  jobs completed before the current week);
* ``divider_window``: ``week`` (default: median runtime of the previous week's
  completions) or ``all`` (of every completion so far);
* ``period``: the retraining period in seconds (default 604800);
* ``unix_start_time``, ``subtime_offset``: the trace's calendar when the workload
  file carries no ``swf`` object; ``timezone`` (a tz name or seconds east of UTC)
  overrides the zone of either source;
* ``classifier_options``: a dict of classifier hyper-parameters, or directly
  ``n_estimators``, ``max_depth``, ``n_jobs``, ... (see ``models``);
* ``small_threshold``: learned classifiers class a job small when its predicted
  P(small) exceeds this (0 < t < 1; default 0.5 = majority; 0.35 is Zrigui et
  al.'s operating point on KTH-SP2: more recall of small jobs, less precision);
* ``store_classes``: keep every job's class in the report (default true).
"""

from __future__ import annotations

from .features import FEATURE_NAMES, CalendarClock, FeatureTable
from .models import (
    ClairvoyantClassifier,
    GradientBoostingJobClassifier,
    JobClassifier,
    RandomForestJobClassifier,
)
from .scheduler import ClassificationMixin, SmallFirst

__all__ = [
    "FEATURE_NAMES",
    "CalendarClock",
    "ClairvoyantClassifier",
    "ClassificationMixin",
    "FeatureTable",
    "GradientBoostingJobClassifier",
    "JobClassifier",
    "RandomForestJobClassifier",
    "SmallFirst",
    "build_classification_scheduler",
    "build_classifier",
    "class_bsld",
]

_CLASSIFIER_PARAMS = ("n_estimators", "max_depth", "min_samples_leaf", "max_samples", "max_features", "n_jobs",
                      "max_iter", "learning_rate", "max_leaf_nodes", "small_threshold")
_SUBCLASSES: dict = {}


def build_classifier(classifier, seed: int = 0, **params):
    """A classifier instance from a plugin name, a class or an instance."""
    if isinstance(classifier, JobClassifier) or hasattr(classifier, "classify"):
        if not isinstance(classifier, type):
            return classifier
    if isinstance(classifier, str):
        from ..plugins import load

        classifier = load("classifiers", classifier)
    unknown = _unknown_params(classifier, params)
    if unknown:
        from ..options import plugin_options

        valid = ", ".join(sorted(plugin_options("classifiers", classifier) or {})) or "none"
        raise ValueError(f"classifier {getattr(classifier, 'name', classifier.__name__)!r} does not take "
                         f"option(s) {', '.join(unknown)}; its options: {valid}")
    return classifier(random_state=seed, **params)


def _unknown_params(cls, params: dict) -> list:
    """The keys of ``params`` that ``cls``'s constructor does not accept (none if it takes ``**kwargs``)."""
    import inspect

    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return []
    return sorted(k for k in params if k not in sig.parameters)


def classification_class(cls):
    """``cls`` with the classification behaviour mixed in (cached per class)."""
    sub = _SUBCLASSES.get(cls)
    if sub is None:
        sub = type(f"Classifying{cls.__name__}", (ClassificationMixin, cls),
                   {"__doc__": f"{cls.__name__} with small/large job classification.",
                    "__module__": __name__})
        _SUBCLASSES[cls] = sub
    return sub


def build_classification_scheduler(cls, classifier="random-forest", kill_false_small=False, seed=0,
                                   policy="fcfs", reservations="count", backfill_order="queue",
                                   starvation_threshold=None, estimator=None, **options):
    """An instance of ``cls`` (a QueueScheduler subclass) that classifies jobs small/large."""
    params = dict(options.pop("classifier_options", None) or {})
    for name in _CLASSIFIER_PARAMS:
        if name in options:
            params[name] = options.pop(name)
    classifier_name = classifier if isinstance(classifier, str) else None
    model = build_classifier(classifier, seed=seed, **params)
    kwargs = dict(classifier=model, classifier_name=classifier_name, kill_false_small=kill_false_small,
                  seed=seed, policy=policy, backfill_order=backfill_order,
                  reservations=reservations, starvation_threshold=starvation_threshold, estimator=estimator,
                  **options)
    return classification_class(cls)(**kwargs)


def class_bsld(jobs_csv, report: dict, tau: float = 60.0) -> dict:
    """AVEbsld of the jobs classified small vs large (Zrigui et al., Figure 8).

    ``report`` is the scheduler's report (or its ``classification`` part); only jobs
    classified with a divider (after the first week) are counted, by predicted and by true class.
    """
    import numpy as np

    from ..analysis.metrics import merge_attempts, per_job_bsld, read_jobs_csv

    cls = report.get("classification", report)
    jobs = cls["jobs"]
    records = merge_attempts(read_jobs_csv(jobs_csv))
    bsld = per_job_bsld(records, tau)
    full = records.full_id
    index = {j: i for i, j in enumerate(full)}
    out = {}
    for label, pos in (("predicted", 0), ("true", 1)):
        for name, value in (("small", 1), ("large", 0)):
            idx = [index[j] for j, c in jobs.items() if c[pos] == value and j in index]
            vals = bsld[idx] if idx else np.zeros(0)
            vals = vals[~np.isnan(vals)]
            out[f"{label}_{name}"] = {"jobs": int(len(vals)),
                                     "avebsld": float(vals.mean()) if len(vals) else None}
    return out
