"""Speed of classification-idempotent (EASY-FCFS + random forest + kill of false-small jobs).

Full KTH-SP2 (target < 30 s) and, with ``--blue``, SDSC-BLUE (target < 5 min). Prints the
simulation wall time, the weekly training time (reported separately), the per-job
classification time and the number of retrainings.

    python benchmarks/bench_classification.py [--blue] [--classifier random-forest] [-o n_estimators=50]
        [--traces-dir DIR]

Needs: the traces experiments/zrigui2022.toml names, from the Parallel Workloads Archive
(KTH-SP2-1996-2.1-cln.swf.gz, ...), where that file points (../shared/traces) or in --traces-dir DIR.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import add_data_arguments, campaign_file, reports_missing_data  # noqa: E402

from batsched_ml.campaign.spec import load_campaign  # noqa: E402
from batsched_ml.config.declare import parse_option  # noqa: E402
from batsched_ml.runner import build_scheduler, simulate  # noqa: E402
from batsched_ml.workloads import read_swf, swf_to_workload  # noqa: E402

TARGETS = {"KTH-SP2": 30.0, "SDSC-BLUE": 300.0}
CAMPAIGN = ROOT / "experiments" / "zrigui2022.toml"


def load_trace(name: str) -> dict:
    """A trace of experiments/zrigui2022.toml, converted."""
    path = load_campaign(CAMPAIGN).traces[name].path
    return swf_to_workload(read_swf(path))[0]


def calendar_options(workload: dict) -> dict:
    """The trace calendar as plugin options (the workload is a dict here, not a file)."""
    swf = workload.get("swf") or {}
    if swf.get("UnixStartTime") is None:
        return {}
    return {"unix_start_time": swf["UnixStartTime"], "subtime_offset": swf.get("subtime_offset", 0.0),
            "timezone": swf.get("TimeZone") or 0}


def bench(tag: str, classifier: str, options: dict, outdir: Path) -> dict:
    t0 = time.perf_counter()
    workload = load_trace(tag)
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
    campaign_file(CAMPAIGN, args.traces_dir)  # its traces checked, their directory used from now on
    options = dict(parse_option(item) for item in args.option)
    outdir = Path(tempfile.mkdtemp(prefix="bench-classification-"))
    for tag in ["KTH-SP2"] + (["SDSC-BLUE"] if args.blue else []):
        print(json.dumps(bench(tag, args.classifier, options, outdir)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
