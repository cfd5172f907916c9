"""Speed of the predictor machinery: plain EASY vs the E-Loss triple on a full trace.

Usage: ``python benchmarks/bench_predictors.py [--trace KTH-SP2] [--max-jobs N] [--repeat R]``
(traces and configurations of ``experiments/gaussier2015.toml``)

Needs: the traces experiments/gaussier2015.toml names, from the Parallel Workloads Archive
(KTH-SP2-1996-2.1-cln.swf.gz, ...), where that file points (../shared/traces) or in --traces-dir DIR.

Target: the E-Loss triple (``--predictor eloss --correction incremental
--backfill-order sjbf``) within 3x the time of plain EASY. Both correction
timings are timed: ``immediate`` (the default: a CALL_ME_LATER round trip per
correction) and ``next-event`` (pyss's, no extra messages). Reported: the best
wall time of ``--repeat`` runs and the process CPU time of that run (steadier
on a shared machine); the verdict uses CPU time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from batsched_ml import runner  # noqa: E402
from benchdata import add_data_arguments, reports_missing_data  # noqa: E402
from predictors_experiment import build, campaign, load_trace, use_traces_dir  # noqa: E402

TARGET_RATIO = 3.0


def time_config(workload: dict, config: str, repeat: int, timing: str = "immediate") -> tuple[float, float]:
    """(wall s, CPU s) of the fastest of ``repeat`` runs."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        sched = build(config, timing)
        t0, c0 = time.perf_counter(), time.process_time()
        runner.simulate(int(workload["nb_res"]), workload, sched)
        best = min(best, (time.perf_counter() - t0, time.process_time() - c0))
    return best


@reports_missing_data
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", default="KTH-SP2", help="a trace of experiments/gaussier2015.toml")
    add_data_arguments(ap)
    ap.add_argument("--max-jobs", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    use_traces_dir(args.traces_dir)
    if args.trace not in campaign().traces:
        ap.error(f"unknown trace {args.trace!r}; choose from {list(campaign().traces)}")
    workload = load_trace(args.trace, args.max_jobs)
    print(f"{args.trace}: {len(workload['jobs'])} jobs, {workload['nb_res']} cores")
    times = {}
    runs = [("easy", "immediate"), ("easy++", "immediate"), ("eloss-triple", "immediate"),
            ("easy++", "next-event"), ("eloss-triple", "next-event")]
    for config, timing in runs:
        label = config if timing == "immediate" else f"{config} ({timing})"
        times[label] = wall, cpu = time_config(workload, config, args.repeat, timing)
        base_wall, base_cpu = times["easy"]
        print(f"  {label:28} wall {wall:7.2f} s ({wall / base_wall:.2f}x EASY)   "
              f"CPU {cpu:7.2f} s ({cpu / base_cpu:.2f}x EASY)")
    ok = True
    for label in ("eloss-triple", "eloss-triple (next-event)"):
        ratio = times[label][1] / times["easy"][1]
        verdict = "OK" if ratio <= TARGET_RATIO else "TOO SLOW"
        ok &= ratio <= TARGET_RATIO
        print(f"{label} / EASY (CPU) = {ratio:.2f} (target <= {TARGET_RATIO}): {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
