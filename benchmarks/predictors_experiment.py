"""AVEbsld (tau = 10 s) of EASY with runtime predictions, beside Gaussier et al. (SC'15) Tables 1, 6, 7.

Usage::

    python benchmarks/predictors_experiment.py [KTH CTC SDSC-SP2 SDSC-BLUE] [--max-jobs N] [--jobs P]
        [--json out.json]

Configurations (all EASY, ``--reservations count``):

* EASY: requested times (walltimes);
* EASY clairvoyant: ``--predictor clairvoyant``;
* EASY-SJBF clairvoyant: ``--predictor clairvoyant --backfill-order sjbf``;
* EASY++: ``--predictor ave2 --correction incremental --backfill-order sjbf``;
* E-Loss triple: ``--predictor eloss --correction incremental --backfill-order sjbf``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from batsched_ml import runner  # noqa: E402
from batsched_ml.analysis import compute_metrics  # noqa: E402
from batsched_ml.workloads import read_swf, swf_to_workload  # noqa: E402

TRACES = {
    "KTH": "KTH-SP2-1996-2.1-cln.swf.gz",
    "CTC": "CTC-SP2-1996-3.1-cln.swf.gz",
    "SDSC-SP2": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "SDSC-BLUE": "SDSC-BLUE-2000-4.2-cln.swf.gz",
}
TRACE_DIR = Path("/work/shared/traces")

CONFIGS = {
    "EASY": dict(),
    "EASY clairvoyant": dict(predictor="clairvoyant"),
    "EASY-SJBF clairvoyant": dict(predictor="clairvoyant", backfill_order="sjbf"),
    "EASY++": dict(predictor="ave2", correction="incremental", backfill_order="sjbf"),
    "E-Loss triple": dict(predictor="eloss", correction="incremental", backfill_order="sjbf"),
}

# Gaussier et al.: Table 1 (EASY, clairvoyant), Table 6 (clairvoyant SJBF, EASY++, best E-Loss-family
# SJBF result), Table 7 (cross-validated triple = E-Loss + incremental + SJBF).
PAPER = {
    "KTH": {"EASY": 92.6, "EASY clairvoyant": 71.7, "EASY-SJBF clairvoyant": 49.8, "EASY++": 63.5,
            "E-Loss triple": 51.4},
    "CTC": {"EASY": 49.6, "EASY clairvoyant": 37.2, "EASY-SJBF clairvoyant": 17.6, "EASY++": 85.8,
            "E-Loss triple": 20.5},
    "SDSC-SP2": {"EASY": 87.9, "EASY clairvoyant": 70.5, "EASY-SJBF clairvoyant": 56.8, "EASY++": 79.4,
                 "E-Loss triple": 75.0},
    "SDSC-BLUE": {"EASY": 36.5, "EASY clairvoyant": 30.6, "EASY-SJBF clairvoyant": 13.2, "EASY++": 21.0,
                  "E-Loss triple": 34.7},
}


def load_trace(name: str, max_jobs: int | None = None) -> dict:
    workload, _ = swf_to_workload(read_swf(TRACE_DIR / TRACES[name]), max_jobs=max_jobs)
    return workload


def run_one(trace: str, config: str, max_jobs: int | None = None) -> dict:
    workload = load_trace(trace, max_jobs)
    sched = runner.build_scheduler("easy", reservations="count", **CONFIGS[config])
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        result, _ = runner.simulate(int(workload["nb_res"]), workload, sched, prefix=Path(tmp) / "run")
        wall = time.perf_counter() - t0
        metrics = compute_metrics(result.jobs_csv)
    report = sched.report().get("predictions", {})
    return {"trace": trace, "config": config, "nb_jobs": len(workload["jobs"]),
            "avebsld": metrics["avebsld_tau10"], "wall_s": wall,
            "prediction": {k: v for k, v in report.items() if not k.startswith("ecdf")}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*", default=["KTH"], help=f"among {list(TRACES)}")
    ap.add_argument("--max-jobs", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=1, help="parallel simulations")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    for t in args.traces:
        if t not in TRACES:
            ap.error(f"unknown trace {t!r}; choose from {list(TRACES)}")
    tasks = [(t, c) for t in args.traces for c in CONFIGS]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            rows = list(pool.map(run_one, *zip(*tasks), [args.max_jobs] * len(tasks)))
    else:
        rows = [run_one(t, c, args.max_jobs) for t, c in tasks]
    print(f"{'trace':10} {'configuration':24} {'AVEbsld':>9} {'vs EASY':>8} {'paper':>7} {'paper vs EASY':>13} "
          f"{'MAE':>8} {'under':>6} {'corr':>7} {'wall s':>7}")
    by = {(r["trace"], r["config"]): r for r in rows}
    for r in rows:
        base = by[(r["trace"], "EASY")]["avebsld"]
        paper = PAPER.get(r["trace"], {}).get(r["config"])
        pbase = PAPER.get(r["trace"], {}).get("EASY")
        change = 100 * (r["avebsld"] / base - 1)
        pred = "" if paper is None else f"{100 * (paper / pbase - 1):+.0f}%"
        p = r["prediction"]
        print(f"{r['trace']:10} {r['config']:24} {r['avebsld']:9.1f} {change:+7.0f}% "
              f"{'' if paper is None else paper:>7} {pred:>13} "
              f"{p.get('mae', float('nan')):8.0f} {p.get('under_share', float('nan')):6.2f} "
              f"{p.get('nb_corrections', 0):7d} {r['wall_s']:7.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
