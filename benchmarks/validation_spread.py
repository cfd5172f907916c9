"""Where a learned configuration's seed spread comes from, on one trace of a validation campaign.

Reads the jobs CSVs and reports the campaign keeps (``RESULTS_DIR/runs``) of the seeds of
CONFIG and of EASY-FCFS, and prints: per seed the cumulative bsld (tau = 60 s), its kills and
the classifier's weekly predictions; how many jobs were killed in one seed and not another (a
job is killed only when the forest called it small); which submission weeks carry the gap
between the best and the worst seed (with EASY-FCFS's bsld that week: how congested it was);
and which jobs carry it.

    python benchmarks/validation_spread.py RESULTS_DIR TRACE [--config NAME] [--top N]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from batsched_ml.analysis.metrics import merge_attempts, per_job_bsld, read_jobs_csv  # noqa: E402

TAU = 60.0
WEEK = 7 * 86400.0


def run_files(runs: Path, trace: str, config: str) -> dict[int, Path]:
    """Seed -> jobs CSV of ``config`` on ``trace`` (window 0)."""
    out = {}
    for path in runs.glob(f"{trace}.w0.{config}.s*_jobs.csv.gz"):
        out[int(path.name.split(".s")[-1].split("_")[0])] = path
    return dict(sorted(out.items()))


def aligned(path: Path, ids: np.ndarray | None = None):
    """A run's merged records sorted by job id (checked against ``ids``)."""
    r = merge_attempts(read_jobs_csv(path))
    order = np.argsort(r.job_id.astype(np.int64), kind="stable")
    if ids is not None and not np.array_equal(r.job_id[order], ids):
        raise SystemExit(f"validation_spread: error: {path.name} holds other jobs")
    return r, order


def weekly_predictions(report: Path) -> np.ndarray:
    """Jobs predicted small, week by week, from the classifier's report."""
    weekly = json.loads(report.read_text())["classification"]["weekly"]
    return np.array([w.get("predicted_small", 0) for w in weekly], dtype=np.int64)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("trace")
    ap.add_argument("--config", default="ci-head-start2w")
    ap.add_argument("--top", type=int, default=8, help="weeks and jobs listed")
    args = ap.parse_args(argv)
    runs = args.results_dir / "runs"
    seeds = run_files(runs, args.trace, args.config)
    base_files = run_files(runs, args.trace, "easy-fcfs")
    if len(seeds) < 2 or not base_files:
        print(f"validation_spread: error: need >= 2 seeds of {args.config} and EASY-FCFS on {args.trace} "
              f"in {runs}", file=sys.stderr)
        return 2
    base, border = aligned(next(iter(base_files.values())))
    ids = base.job_id[border]
    base_bsld = per_job_bsld(base, TAU)[border]
    first = np.nanmin(base.submission)
    week = ((base.submission[border] - first) // WEEK).astype(np.int64)
    n_weeks = int(week.max()) + 1
    base_week = np.bincount(week, weights=np.nan_to_num(base_bsld), minlength=n_weeks)

    bsld, killed, kills = {}, {}, {}
    print(f"{args.trace}, {args.config}: {len(ids):,} jobs, {n_weeks} weeks; EASY-FCFS cum. bsld {np.nansum(base_bsld):,.0f}")
    print("\n| seed | cum. bsld | reduction | jobs requeued | kills | weeks whose predicted-small count differs from seed "
          f"{next(iter(seeds))} |\n|---|---:|---:|---:|---:|---:|")
    preds = {}
    for seed, path in seeds.items():
        r, order = aligned(path, ids)
        bsld[seed] = per_job_bsld(r, TAU)[order]
        killed[seed] = r.attempts[order] > 1
        kills[seed] = int((r.attempts - 1).sum())
        report = path.with_name(path.name.replace("_jobs.csv.gz", "_report.json"))
        preds[seed] = weekly_predictions(report) if report.is_file() else None
    ref = next(iter(seeds))
    for seed in seeds:
        total = np.nansum(bsld[seed])
        p, q = preds[seed], preds[ref]
        differ = "-" if p is None or q is None else f"{int((p != q).sum())} (|diff| {int(np.abs(p - q).sum()):,} jobs)"
        print(f"| {seed} | {total:,.0f} | {100 * (1 - total / np.nansum(base_bsld)):.1f}% | {int(killed[seed].sum()):,} "
              f"| {kills[seed]:,} | {differ} |")
    totals = {s: np.nansum(v) for s, v in bsld.items()}
    best, worst = min(totals, key=totals.get), max(totals, key=totals.get)
    gap = totals[worst] - totals[best]
    ks = [set(np.flatnonzero(killed[s])) for s in seeds]
    union, common = set.union(*ks), set.intersection(*ks)
    print(f"\nRequeued in some seed but not in all: {len(union - common):,} jobs of {len(union):,} requeued in any "
          f"(a first attempt is killed when called small, probed or started speculatively).")
    diff = np.nan_to_num(bsld[worst]) - np.nan_to_num(bsld[best])
    per_week = np.bincount(week, weights=diff, minlength=n_weeks)
    order = np.argsort(-np.abs(per_week))
    cum = np.cumsum(np.abs(per_week[order])) / max(np.abs(per_week).sum(), 1e-12)
    print(f"\nGap worst (seed {worst}) - best (seed {best}): {gap:,.0f} bsld = "
          f"{100 * gap / np.nansum(base_bsld):.1f} points of reduction. Weeks carrying half of |gap| by week: "
          f"{int(np.searchsorted(cum, 0.5)) + 1} of {n_weeks}; 80%: {int(np.searchsorted(cum, 0.8)) + 1}.")
    print("\n| week | gap (bsld) | share of gap | EASY-FCFS bsld that week | its rank among weeks |\n|---:|---:|---:|---:|---:|")
    rank = np.empty(n_weeks, dtype=np.int64)
    rank[np.argsort(-base_week)] = np.arange(1, n_weeks + 1)
    for w in order[: args.top]:
        print(f"| {w} | {per_week[w]:+,.0f} | {100 * per_week[w] / gap:.0f}% | {base_week[w]:,.0f} | {rank[w]} |")
    jorder = np.argsort(-np.abs(diff))
    top_share = 100 * np.abs(diff[jorder[:100]]).sum() / max(np.abs(diff).sum(), 1e-12)
    print(f"\nThe 100 jobs with the largest |bsld difference| hold {top_share:.0f}% of the summed |difference| "
          f"({np.abs(diff).sum():,.0f}); the first {args.top}:")
    r0, o0 = aligned(seeds[best], ids)
    print("\n| job | week | cores | run (s) | bsld best / worst | requeued best / worst |\n|---|---:|---:|---:|---:|---|")
    for j in jorder[: args.top]:
        print(f"| {ids[j]} | {week[j]} | {int(r0.res[o0][j])} | {r0.run[o0][j]:,.0f} | {bsld[best][j]:,.0f} / "
              f"{bsld[worst][j]:,.0f} | {'yes' if killed[best][j] else 'no'} / {'yes' if killed[worst][j] else 'no'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
