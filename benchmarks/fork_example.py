"""What-if branches from one system state (issue 42, docs/snapshots.md's example): forks of a
snapshot compared on the same jobs, paired.

Each branch is a ``simulate --fork SNAPSHOT ... --fork-window D`` run, compared as
``batsched_ml.analysis.forks`` says (a campaign's ``[[forks]]`` compare theirs the same way).

Usage: python benchmarks/fork_example.py SNAPSHOT REFERENCE_PREFIX BRANCH_PREFIX... [--window 7d]
(the prefixes given to ``-e`` of the forks; the branch names are their file names)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from batsched_ml.analysis.forks import compare_branches, window_records
from batsched_ml.config.validate import duration
from batsched_ml.snapshot_files import Snapshot


def compare(snapshot: str, reference: str, branches: list[str], window: float) -> dict:
    at = Snapshot.load(snapshot).sim_time
    runs = {Path(p).name: window_records(f"{p}_jobs.csv", at, at + window) for p in [reference, *branches]}
    compared = compare_branches(runs, Path(reference).name)
    out = {"snapshot": snapshot, "at_days": at / 86400, "window_days": window / 86400, "jobs": compared["jobs"],
           "branches": {}}
    for name, b in compared["branches"].items():
        out["branches"][name] = {"cum_bsld60": b["cum_bsld60"], "mean_wait_h": b["mean_wait_h"],
                                 "reduction_vs_reference": b["reduction"]}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("snapshot")
    parser.add_argument("reference", help="the reference branch's output prefix")
    parser.add_argument("branches", nargs="+", help="the other branches' output prefixes")
    parser.add_argument("--window", default="7d", help="the forks' --fork-window (default 7d)")
    args = parser.parse_args(argv)
    result = compare(args.snapshot, args.reference, args.branches, duration(args.window, "--window"))
    print(f"fork at day {result['at_days']:.0f}, {result['window_days']:g}-day window: {result['jobs']} jobs "
          f"compared (not started at the fork, submitted before the window's end)")
    print(f"{'branch':<24} {'cum bsld (tau 60)':>18} {'mean wait h':>12} {'reduction vs reference [95% CI]':>34}")
    for name, b in result["branches"].items():
        mean, low, high = b["reduction_vs_reference"]
        cell = "-" if mean is None else f"{mean:+.1f}% [{low:+.1f}, {high:+.1f}]" if low is not None else f"{mean:+.1f}%"
        print(f"{name:<24} {b['cum_bsld60']:>18,.0f} {b['mean_wait_h']:>12.2f} {cell:>34}")
    print(json.dumps(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
