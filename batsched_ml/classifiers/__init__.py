"""Small/large job classification (Zrigui et al., JPDC 2022).

``--classifier NAME`` wraps the chosen queue scheduler in a :class:`ClassifyingScheduler`
(built by ``batsched_ml.config.compose``): jobs are classified small or large at submission by a
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
  default true);
* ``feature_divider``: ``current`` (default: each retraining recomputes its rows' lag and share
  features against the new divider, the one its labels use) or ``submission`` (as computed at
  submission, against the divider then in force); ``label_divider``: ``current`` (default) or
  ``submission``; ``runtime_features``: also the user's recent actual runtimes as numbers;
* ``timezone=header-offset``: the SWF header's numeric TimeZone instead of its named zone;
* beyond the paper (defaults off): ``class_starvation_threshold`` (seconds: a job waiting longer
  goes first in its own class), ``order_by_probability`` (``small`` / ``both``: classes ordered
  by the classifier's P(small); ``one-queue``: both classes in one queue by the head-start key),
  ``probability_head_start`` (seconds ``H``: those classes by
  ``submission time - H x P(small)`` instead, which bounds how long a job can be passed), ``probe_after`` (re-classify small a waiting large job after
  ``k x divider x (1 - p) / p``), ``reclassify_waiting`` (classify a waiting job again when a
  job of one of its feature categories completes, and at each retraining),
  ``speculative_backfill`` (``q``: a waiting large job with P(small) >= q runs for one divider in
  the cores a pass left free, killed then and requeued at its place), ``requeue_order`` (``original``: a killed false-small job
  queues by its first submission), ``kill_only_if_waiting`` (a job due for its kill at the
  divider runs on when no job waits). Measured in ``benchmarks/results/classification.md`` and
  ``validation.md``.
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
