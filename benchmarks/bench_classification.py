"""Speed of classification-idempotent (EASY-FCFS + random forest + kill of false-small jobs).

Needs: KTH-SP2-1996-2.1-cln.swf.gz (and, with --blue, SDSC-BLUE-2000-4.2-cln.swf.gz) from the
Parallel Workloads Archive in --traces-dir DIR.

Full KTH-SP2 (target < 30 s) and, with ``--blue``, SDSC-BLUE (target < 5 min). Prints the
simulation wall time, the weekly training time (reported separately), the per-job
classification time and the number of retrainings.

    python benchmarks/bench_classification.py [--blue] [--classifier random-forest] [-o n_estimators=50]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import add_data_arguments, reports_missing_data, trace_path  # noqa: E402
from classification_experiment import calendar_options, load_trace  # noqa: E402

from batsched_ml.cli import plugin_options  # noqa: E402
from batsched_ml.runner import build_scheduler, simulate  # noqa: E402

TARGETS = {"KTH": 30.0, "SDSC-BLUE": 300.0}


def bench(tag: str, classifier: str, options: dict, outdir: Path, traces_dir: Path | None = None) -> dict:
    t0 = time.perf_counter()
    workload = load_trace(tag, traces_dir=traces_dir)
    load = time.perf_counter() - t0
    sched = build_scheduler("easy", policy="fcfs", classifier=classifier, kill_false_small=True,
                            seed=0, **calendar_options(workload), **options)
    t0 = time.perf_counter()
    result, _ = simulate(int(workload["nb_res"]), workload, sched, prefix=outdir / tag)
    wall = time.perf_counter() - t0
    rep = sched.report()["classification"]
    return {"trace": tag, "jobs": len(workload["jobs"]), "convert_s": round(load, 2), "simulate_s": round(wall, 2),
            "training_s": round(rep["training_time"], 2), "classification_s": round(rep["classification_time"], 2),
            "other_s": round(wall - rep["training_time"] - rep["classification_time"], 2),
            "retrainings": rep["retrainings"], "kills": rep["kills"], "target_s": TARGETS[tag],
            "within_target": wall <= TARGETS[tag], "precision": rep["overall"]["precision"],
            "recall": rep["overall"]["recall"]}


@reports_missing_data
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blue", action="store_true", help="also SDSC-BLUE (about 250k jobs)")
    add_data_arguments(ap)
    ap.add_argument("--classifier", default="random-forest")
    ap.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    options = plugin_options(args)
    outdir = Path(tempfile.mkdtemp(prefix="bench-classification-"))
    tags = ["KTH"] + (["SDSC-BLUE"] if args.blue else [])
    for tag in tags:
        trace_path(tag, args.traces_dir)  # every input found before the first (long) run
    for tag in tags:
        print(json.dumps(bench(tag, args.classifier, options, outdir, args.traces_dir)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
