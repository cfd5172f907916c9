"""Speed of the predictor machinery: plain EASY vs the E-Loss triple on a full trace.

Usage: ``python benchmarks/bench_predictors.py [--trace KTH] [--max-jobs N] [--repeat R]``

Target: the E-Loss triple (``--predictor eloss --correction incremental
--backfill-order sjbf``) within 3x the wall time of plain EASY.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from batsched_ml import runner  # noqa: E402
from predictors_experiment import CONFIGS, TRACES, load_trace  # noqa: E402

TARGET_RATIO = 3.0


def time_config(workload: dict, config: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        sched = runner.build_scheduler("easy", reservations="count", **CONFIGS[config])
        t0 = time.perf_counter()
        runner.simulate(int(workload["nb_res"]), workload, sched)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", default="KTH", choices=list(TRACES))
    ap.add_argument("--max-jobs", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    workload = load_trace(args.trace, args.max_jobs)
    print(f"{args.trace}: {len(workload['jobs'])} jobs, {workload['nb_res']} cores")
    times = {}
    for config in ("EASY", "EASY++", "E-Loss triple"):
        times[config] = time_config(workload, config, args.repeat)
        print(f"  {config:16} {times[config]:7.2f} s  ({times[config] / times['EASY']:.2f}x EASY)")
    ratio = times["E-Loss triple"] / times["EASY"]
    verdict = "OK" if ratio <= TARGET_RATIO else "TOO SLOW"
    print(f"E-Loss triple / EASY = {ratio:.2f} (target <= {TARGET_RATIO}): {verdict}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
