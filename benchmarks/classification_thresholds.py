"""Decision thresholds on P(small), scored offline from a replay's dump.

``classification_replay.py --dump PREFIX`` writes every classified job's P(small) and true class.
Neither depends on the threshold (features and training labels come from actual runtimes, never
from predicted classes), so any threshold rule can be scored on that file exactly as a replay
with the rule would score it:

* ``static t``: small when P(small) > t;
* ``weekly r``: each week's threshold is the one of a grid (0.10, 0.15, ..., 0.90) that minimises
  ``missed small + r x false small`` over the previous week's submissions (their P(small) from
  the model then in force: out of sample), i.e. a threshold chosen each week on last week's data
  by expected cost, with a false small costing ``r`` missed small jobs (ties: the lower threshold;
  the first week: 0.5). Offline it knows the true class of every job of last week, some of which
  an online rule would still see running: an upper bound on what the rule can do.

    python benchmarks/classification_thresholds.py DUMP.s0.csv [--static 0.5 0.35] [--weekly 0.5 1 2]
"""

from __future__ import annotations

import argparse
import csv

import numpy as np

WEEK = 604800.0
GRID = np.round(np.arange(0.10, 0.901, 0.05), 2)


def read_dump(path):
    """P(small), true small (bool) and week index of every scored job of a replay dump."""
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    p = np.array([float(r["p_small"]) for r in rows])
    small = np.array([r["true_small"] in ("1", "True") for r in rows])
    week = np.array([int(float(r["subtime"]) // WEEK) for r in rows])
    return p, small, week


def scores(predicted, small) -> tuple[float, float, int]:
    """precision, recall, false small."""
    tp = int((predicted & small).sum())
    fp = int((predicted & ~small).sum())
    fn = int((~predicted & small).sum())
    return tp / max(tp + fp, 1), tp / max(tp + fn, 1), fp


def weekly_thresholds(p, small, week, ratio: float) -> dict:
    """week -> threshold chosen on the previous week's jobs (0.5 for the first scored week)."""
    out, previous = {}, None
    for w in np.unique(week):
        t = 0.5
        if previous is not None:
            pp, yy = p[previous], small[previous]
            cost = [((pp <= g) & yy).sum() + ratio * ((pp > g) & ~yy).sum() for g in GRID]
            t = float(GRID[int(np.argmin(cost))])
        out[int(w)] = t
        previous = week == w
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dump")
    ap.add_argument("--static", type=float, nargs="+", default=[0.5, 0.45, 0.4, 0.35, 0.3])
    ap.add_argument("--weekly", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    args = ap.parse_args(argv)
    p, small, week = read_dump(args.dump)
    for t in args.static:
        prec, rec, fs = scores(p > t, small)
        print(f"static t={t:.2f}: precision {prec:.3f} recall {rec:.3f} false small {fs}")
    for ratio in args.weekly:
        chosen = weekly_thresholds(p, small, week, ratio)
        t = np.array([chosen[int(w)] for w in week])
        prec, rec, fs = scores(p > t, small)
        print(f"weekly r={ratio:g}: precision {prec:.3f} recall {rec:.3f} false small {fs}"
              f" (median threshold {np.median(list(chosen.values())):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
