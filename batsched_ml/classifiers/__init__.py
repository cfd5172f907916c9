"""Small/large job classification (Zrigui et al., JPDC 2022).

``--classifier NAME`` wraps the chosen queue scheduler in a :class:`ClassifyingScheduler`
(built by ``batsched_ml.compose``): jobs are classified small or large at submission by a
weekly-retrained classifier plugin (``models``), small jobs go first (:class:`SmallFirst`),
and with ``--kill-false-small`` a small job that reaches the divider is killed and requeued as
large, once.

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
* the classifier's own parameters, unprefixed: ``n_estimators``, ``max_depth``, ``n_jobs``,
  ... (see ``models``), and ``small_threshold``: learned classifiers class a job small when
  its predicted P(small) exceeds this (0 < t < 1; default 0.5 = majority; 0.35 is Zrigui et
  al.'s operating point on KTH-SP2: more recall of small jobs, less precision);
* ``store_classes``: write every job's class to ``PREFIX_classes.csv`` (true or false;
  default true).
"""

from __future__ import annotations

from .features import FEATURE_NAMES, CalendarClock, FeatureTable
from .models import (
    ClairvoyantClassifier,
    GradientBoostingJobClassifier,
    JobClassifier,
    RandomForestJobClassifier,
)
from .scheduler import ClassifyingScheduler, SmallFirst

__all__ = [
    "FEATURE_NAMES",
    "CalendarClock",
    "ClairvoyantClassifier",
    "ClassifyingScheduler",
    "FeatureTable",
    "GradientBoostingJobClassifier",
    "JobClassifier",
    "RandomForestJobClassifier",
    "SmallFirst",
]
