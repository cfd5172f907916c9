"""Where does conservative backfilling lose to EASY? (issue 23 §5)

Reads two jobs CSVs of the same workload (EASY's and conservative's), and prints:
* AVEbsld (tau 10 s) of both, and the share of the gap (sum of bsld) owed to each class of
  job by runtime and by size;
* the weeks where the gap opens (largest difference of the bsld sums of the jobs submitted
  that week), with the job numbers of the week (for a window: ``conservative_reference.py
  --skip``), and the jobs that wait much longer under conservative than under EASY there.

Usage: python benchmarks/conservative_gap.py EASY_jobs.csv CONSERVATIVE_jobs.csv [--weeks 5]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from batsched_ml.analysis.metrics import merge_attempts, per_job_bsld, read_jobs_csv

TAU = 10.0
WEEK = 7 * 86400.0


def records(path: str):
    r = merge_attempts(read_jobs_csv(path))
    order = np.argsort(r.job_id.astype(np.int64), kind="stable")
    return r.subset(order)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("easy")
    parser.add_argument("conservative")
    parser.add_argument("--weeks", type=int, default=5, help="weeks to show")
    args = parser.parse_args(argv)
    easy, cons = records(args.easy), records(args.conservative)
    assert np.array_equal(easy.job_id, cons.job_id), "not the same jobs"
    b_easy, b_cons = per_job_bsld(easy, TAU), per_job_bsld(cons, TAU)
    gap = b_cons - b_easy
    print(f"{len(easy)} jobs: AVEbsld EASY {np.nanmean(b_easy):.2f}, conservative {np.nanmean(b_cons):.2f}; "
          f"mean wait EASY {np.nanmean(easy.wait) / 60:.1f} min, conservative {np.nanmean(cons.wait) / 60:.1f} min")
    total = np.nansum(gap)
    run, res = easy.run, easy.res
    print("share of the bsld gap by class (runtime x cores):")
    for lo, hi, label in ((0, 60, "< 1 min"), (60, 600, "1-10 min"), (600, 3600, "10 min-1 h"), (3600, np.inf, ">= 1 h")):
        row = []
        for small in (True, False):
            mask = (run >= lo) & (run < hi) & ((res <= np.median(res)) == small)
            row.append(f"{'narrow' if small else 'wide'} {100 * np.nansum(gap[mask]) / total:5.1f}% "
                       f"({mask.sum()} jobs)")
        print(f"  runtime {label:>10}: " + ", ".join(row))
    week = ((easy.submission - easy.submission.min()) // WEEK).astype(np.int64)
    sums = np.bincount(week, weights=np.nan_to_num(gap))
    print("weeks where the gap opens (week, jobs, first..last job number, sum of bsld gap, AVEbsld EASY / cons.):")
    for w in np.argsort(sums)[::-1][:args.weeks]:
        mask = week == w
        first, last = np.flatnonzero(mask)[[0, -1]]
        print(f"  week {w}: {mask.sum()} jobs, #{first}..#{last} (ids {easy.job_id[first]}..{easy.job_id[last]}), "
              f"gap {sums[w]:.0f}, {np.nanmean(b_easy[mask]):.1f} / {np.nanmean(b_cons[mask]):.1f}")
    w = int(np.argmax(sums))
    mask = np.flatnonzero(week == w)
    worst = mask[np.argsort(cons.wait[mask] - easy.wait[mask])[::-1][:10]]
    print(f"week {w}: jobs waiting much longer under conservative (id, cores, walltime, runtime, wait EASY, "
          "wait conservative, submitted at):")
    for i in worst:
        print(f"  {easy.job_id[i]:>8} {res[i]:>5} {easy.requested_time[i]:>9.0f} {run[i]:>8.0f} "
              f"{easy.wait[i]:>9.0f} {cons.wait[i]:>9.0f} {easy.submission[i]:>11.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
