"""What-if branches from one system state (issue 42, docs/snapshots.md's example): forks of a
snapshot compared on the same jobs, paired.

Each branch is a ``simulate --fork SNAPSHOT ... --fork-window D`` run. The jobs compared are those
of the window in every branch: not started at the fork (``starting_time`` at or after it, or never
started) and submitted before its end, requeued attempts merged (``metrics.merge_attempts``). For
each branch against the reference: the reduction of the cumulative bounded slowdown (tau = 60 s)
over those jobs, ``100 * (1 - sum(branch) / sum(reference))``, with the 95% bootstrap interval of
the jobs resampled together (``uncertainty.paired_job_reduction``), and the mean wait of each.

Usage: python benchmarks/fork_example.py SNAPSHOT REFERENCE_PREFIX BRANCH_PREFIX... [--window 7d]
(the prefixes given to ``-e`` of the forks; the branch names are their file names)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from batsched_ml.analysis.metrics import merge_attempts, per_job_bsld, read_jobs_csv
from batsched_ml.analysis.uncertainty import paired_job_reduction
from batsched_ml.snapshot_files import Snapshot
from batsched_ml.config.validate import duration

TAU = 60.0


def window_records(prefix: str, at: float, end: float):
    """The branch's merged job records of the window, by job id."""
    records = merge_attempts(read_jobs_csv(f"{prefix}_jobs.csv"))
    started = records.start
    keep = (records.submission < end) & ((started >= at) | np.isnan(started))
    return records.subset(keep)


def compare(snapshot: str, reference: str, branches: list[str], window: float) -> dict:
    at = Snapshot.load(snapshot).sim_time
    end = at + window
    runs = {Path(p).name: window_records(p, at, end) for p in [reference, *branches]}
    common = set.intersection(*(set(r.full_id) for r in runs.values()))
    out = {"snapshot": snapshot, "at_days": at / 86400, "window_days": window / 86400, "jobs": len(common),
           "branches": {}}
    aligned = {}
    for name, records in runs.items():
        chosen = records.select_ids(sorted(common))
        order = np.argsort(chosen.full_id)
        aligned[name] = (per_job_bsld(chosen, TAU)[order], chosen.wait[order])
    ref_bsld, ref_wait = aligned[Path(reference).name]
    for name, (bsld, wait) in aligned.items():
        interval = paired_job_reduction(bsld, ref_bsld)
        out["branches"][name] = {"cum_bsld60": float(np.nansum(bsld)), "mean_wait_h": float(np.nanmean(wait) / 3600),
                                 "reduction_vs_reference": [interval.estimate, interval.low, interval.high]}
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
