"""What moves between two runs of the small/large classification (a seed, a calendar shift...).

Given the jobs CSV and classes CSV (``PREFIX_classes.csv``: ``job_id,predicted_small,true_small``)
of two runs of the same trace, prints: how many jobs changed predicted class, the cumulative bsld
(tau = 60 s) each run gives, how much of the bsld moved on the jobs that changed class and how
much on the others (the cascade through the schedule: same class, other waits), how many jobs
carry that movement, the weeks where it happened, and the share of each run's cumulative bsld
held by its worst 1% of jobs.

    python benchmarks/classification_diff.py A_jobs.csv A_classes.csv B_jobs.csv B_classes.csv [--json OUT]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from batsched_ml.analysis.metrics import merge_attempts, per_job_bsld, read_jobs_csv  # noqa: E402
from batsched_ml.analysis.uncertainty import worst_share  # noqa: E402

WEEK = 604800.0


def load(jobs_csv, classes_csv) -> dict:
    """Per logical job, sorted by id: bsld (tau 60), submission, and predicted / true class (-1: none)."""
    records = merge_attempts(read_jobs_csv(jobs_csv))
    order = np.argsort(records.full_id, kind="stable")
    ids = records.full_id[order]
    classes = {}
    with open(classes_csv, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            classes[row["job_id"]] = (int(row["predicted_small"]),
                                      int(row["true_small"]) if row["true_small"] != "" else -1)
    predicted = np.array([classes.get(i, (-1, -1))[0] for i in ids])
    true = np.array([classes.get(i, (-1, -1))[1] for i in ids])
    return {"ids": ids, "bsld": np.nan_to_num(per_job_bsld(records, 60.0))[order],
            "submission": records.submission[order], "predicted": predicted, "true": true}


def compare(a: dict, b: dict) -> dict:
    if len(a["ids"]) != len(b["ids"]) or (a["ids"] != b["ids"]).any():
        raise SystemExit("classification_diff: the two runs do not hold the same jobs")
    delta = b["bsld"] - a["bsld"]
    moved = np.abs(delta)
    changed = (a["predicted"] != b["predicted"]) & (a["predicted"] >= 0) & (b["predicted"] >= 0)
    true_small = a["true"] == 1
    order = np.argsort(-moved)
    total_moved = float(moved.sum())
    k1 = max(1, int(np.ceil(0.01 * len(moved))))
    weeks = np.floor(a["submission"] / WEEK).astype(np.int64)
    by_week = np.bincount(weeks, weights=delta)
    top_weeks = np.argsort(-np.abs(by_week))[:5]
    return {
        "jobs": int(len(delta)),
        "cum_bsld": [float(a["bsld"].sum()), float(b["bsld"].sum())],
        "net_change": float(delta.sum()),
        "net_change_pct": float(100 * delta.sum() / a["bsld"].sum()),
        "moved": total_moved,
        "moved_pct_of_a": float(100 * total_moved / a["bsld"].sum()),
        "class_changed": {"jobs": int(changed.sum()), "true_small": int((changed & true_small).sum()),
                          "net": float(delta[changed].sum()), "moved": float(moved[changed].sum())},
        "class_kept": {"jobs": int((~changed).sum()), "net": float(delta[~changed].sum()),
                       "moved": float(moved[~changed].sum())},
        "moved_by_top_1pct_jobs": float(moved[order[:k1]].sum() / total_moved) if total_moved else None,
        "weeks_of_largest_net_change": [(int(w), float(by_week[w])) for w in top_weeks],
        "worst_1pct_share": [worst_share(a["bsld"]), worst_share(b["bsld"])],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a_jobs")
    ap.add_argument("a_classes")
    ap.add_argument("b_jobs")
    ap.add_argument("b_classes")
    ap.add_argument("--json", help="also write the figures as JSON")
    args = ap.parse_args(argv)
    out = compare(load(args.a_jobs, args.a_classes), load(args.b_jobs, args.b_classes))
    c, k = out["class_changed"], out["class_kept"]
    print(f"cumulative bsld: A {out['cum_bsld'][0]:,.0f}, B {out['cum_bsld'][1]:,.0f} "
          f"(net {out['net_change']:+,.0f}, {out['net_change_pct']:+.1f}% of A)")
    print(f"bsld moved (sum of |B - A| per job): {out['moved']:,.0f} = {out['moved_pct_of_a']:.0f}% of A; "
          f"the 1% of jobs that moved most carry {100 * out['moved_by_top_1pct_jobs']:.0f}% of it")
    print(f"jobs that changed predicted class: {c['jobs']:,} ({c['true_small']:,} truly small): "
          f"net {c['net']:+,.0f}, moved {c['moved']:,.0f}")
    print(f"jobs that kept their class (the cascade): {k['jobs']:,}: net {k['net']:+,.0f}, moved {k['moved']:,.0f}")
    print("weeks of largest net change: " + ", ".join(f"w{w} {v:+,.0f}" for w, v in out["weeks_of_largest_net_change"]))
    print(f"worst 1% of jobs hold {100 * out['worst_1pct_share'][0]:.0f}% (A) and "
          f"{100 * out['worst_1pct_share'][1]:.0f}% (B) of the cumulative bsld")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
