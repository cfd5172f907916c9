"""benchmarks/classification_thresholds.py: a week's threshold comes from the previous week only."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("classification_thresholds",
                                              ROOT / "benchmarks/classification_thresholds.py")
thresholds = importlib.util.module_from_spec(spec)
spec.loader.exec_module(thresholds)


def test_weekly_threshold_is_chosen_on_the_previous_week_only():
    # week 0: small jobs at P(small) 0.32, large ones at 0.2 -> the cheapest threshold is 0.2 < t < 0.32;
    # week 1: small jobs at 0.8, large ones at 0.6 -> 0.6 <= t < 0.8; week 2: anything
    p = np.array([0.32, 0.32, 0.2, 0.2, 0.8, 0.8, 0.6, 0.6, 0.5, 0.5])
    small = np.array([1, 1, 0, 0, 1, 1, 0, 0, 1, 0], dtype=bool)
    week = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    chosen = thresholds.weekly_thresholds(p, small, week, ratio=1.0)
    assert chosen[0] == 0.5  # nothing before the first week
    assert chosen[1] == 0.2  # the lowest of the grid's zero-cost thresholds on week 0
    assert chosen[2] == 0.6  # on week 1 alone, whatever week 0 said
    # week 1's jobs are classed by week 0's threshold: both of its large jobs become false small
    predicted = p > np.array([chosen[w] for w in week])
    assert predicted[4:8].tolist() == [True, True, True, True]
    assert thresholds.scores(predicted[4:8], small[4:8]) == (0.5, 1.0, 2)
    # a week's own jobs never move its threshold
    p2 = p.copy()
    p2[4:8] = [0.1, 0.1, 0.9, 0.9]
    assert thresholds.weekly_thresholds(p2, small, week, ratio=1.0)[1] == chosen[1]
    # a false small costing more than a missed small raises the threshold when errors must be traded
    mixed = np.array([0.3, 0.3, 0.3, 0.7])
    truth = np.array([1, 0, 0, 1], dtype=bool)
    cheap = thresholds.weekly_thresholds(np.r_[mixed, 0.5], np.r_[truth, True], np.r_[0, 0, 0, 0, 1], 0.4)[1]
    dear = thresholds.weekly_thresholds(np.r_[mixed, 0.5], np.r_[truth, True], np.r_[0, 0, 0, 0, 1], 4.0)[1]
    assert cheap < 0.3 <= dear
