"""Zrigui et al. 2022, Section 6: cumulative bounded slowdown of EASY with and without
small/large classification, on the paper's SWF traces.

Needs: the Parallel Workloads Archive files KTH-SP2-1996-2.1-cln.swf.gz, CTC-SP2-1996-3.1-cln.swf.gz,
SDSC-SP2-1998-4.2-cln.swf.gz, SDSC-BLUE-2000-4.2-cln.swf.gz (those asked for) in --traces-dir DIR,
or SWF paths given instead of the trace names.

For each trace and policy (FCFS, SPF) it runs: ``base`` (EASY-policy),
``classification`` (random forest, no kill), ``classification-idempotent``
(random forest + kill-and-requeue of false-small jobs) and ``class-clairvoyant``
(true class known in advance), ``runtime-clairvoyant``, and prints the cumulative bsld (tau = 60 s, the
sum over jobs = the end of the Figure 6 curve), its reduction vs the base, the
classifier's overall precision / recall, kills and the wall/training times.

    python benchmarks/classification_experiment.py                 # KTH-SP2
    python benchmarks/classification_experiment.py KTH CTC SDSC-SP2 SDSC-BLUE --json out.json

Probes: ``--reservations cores`` (batsched's EASY), ``--starvation-threshold S``, ``--seed N``,
``-o history=previous-weeks`` or any classifier hyper-parameter (``-o n_estimators=100``), and
``-o small_threshold=P`` (the forest answers small when its mean P(small) is above P; the
library's option, see ``batsched_ml.classifiers.models``). The class-clairvoyant variant has no
model and ignores the model hyper-parameters among the ``-o`` options.
With ``--out DIR`` the jobs CSVs and, per classifying run, ``*_classes.json`` (job id ->
[predicted small, true small]) are kept. Results and their discussion: ``results/classification.md``.

``runtime-clairvoyant`` is EASY with the actual runtimes as estimates (``--predictor clairvoyant``,
the predictor seam of the predictors issue): the paper's other upper bound.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import add_data_arguments, reports_missing_data, trace_label, trace_path  # noqa: E402

from batsched_ml.cli import plugin_options  # noqa: E402
from batsched_ml.analysis.metrics import compute_metrics  # noqa: E402
from batsched_ml.runner import build_scheduler, simulate  # noqa: E402
from batsched_ml.workloads import read_swf, swf_to_workload  # noqa: E402

SHARED = Path(os.environ.get("BATSCHED_ML_SHARED", Path(__file__).resolve().parents[2] / "shared"))
TRACES = {
    "KTH": "KTH-SP2-1996-2.1-cln.swf.gz",
    "CTC": "CTC-SP2-1996-3.1-cln.swf.gz",
    "SDSC-SP2": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "SDSC-BLUE": "SDSC-BLUE-2000-4.2-cln.swf.gz",
}
# Zrigui et al. 2022: reduction of the cumulative bsld, classification-idempotent with the policy
# vs plain EASY-FCFS (as the issue quotes them).
PAPER = {"fcfs": {"KTH": 50, "CTC": 79, "SDSC-SP2": 66, "SDSC-BLUE": 63},
         "spf": {"KTH": 59, "CTC": 85, "SDSC-SP2": 75, "SDSC-BLUE": 74}}
VARIANTS = {
    "base": {},
    "classification": {"classifier": "random-forest"},
    "classification-idempotent": {"classifier": "random-forest", "kill_false_small": True},
    "class-clairvoyant": {"classifier": "clairvoyant"},
    "runtime-clairvoyant": {"predictor": "clairvoyant"},  # EASY on actual runtimes, no classes
}
# options of the learned models (batsched_ml.classifiers.models), meaningless for the clairvoyant one
MODEL_OPTIONS = ("n_estimators", "max_depth", "min_samples_leaf", "max_samples", "max_features", "n_jobs",
                 "max_iter", "learning_rate", "max_leaf_nodes", "small_threshold", "classifier_options")


def load_trace(name: str, max_jobs: int | None = None, traces_dir: Path | None = None) -> dict:
    """A trace by name (KTH, CTC, SDSC-SP2, SDSC-BLUE) or SWF path, cleaned into a workload."""
    workload, _ = swf_to_workload(read_swf(trace_path(name, traces_dir or SHARED / "traces")), max_jobs=max_jobs)
    return workload


def calendar_options(workload: dict) -> dict:
    swf = workload.get("swf") or {}
    if swf.get("UnixStartTime") is None:
        return {}
    return {"unix_start_time": swf["UnixStartTime"], "subtime_offset": swf.get("subtime_offset", 0.0),
            "timezone": swf.get("TimeZone") or 0}


def run_one(workload: dict, policy: str, variant: str, seed: int, outdir: Path, tag: str,
            reservations: str = "count", starvation_threshold: float | None = None,
            options: dict | None = None) -> dict:
    opts = dict(VARIANTS[variant])
    options = dict(options or {})
    if "classifier" in opts:
        opts.update(calendar_options(workload))
        if opts["classifier"] == "clairvoyant":
            options = {k: v for k, v in options.items() if k not in MODEL_OPTIONS}
        opts.update(options)
    sched = build_scheduler("easy", policy=policy, seed=seed, reservations=reservations,
                            starvation_threshold=starvation_threshold, **opts)
    prefix = outdir / f"{tag}-{policy}-{variant}"
    t0 = time.perf_counter()
    result, _ = simulate(int(workload["nb_res"]), workload, sched, prefix=prefix)
    wall = time.perf_counter() - t0
    m = compute_metrics(result.jobs_csv, taus=(60.0,))
    row = {"trace": tag, "policy": policy, "variant": variant, "reservations": reservations,
           "starvation_threshold": starvation_threshold, "options": options if "classifier" in VARIANTS[variant] else {}, "jobs": m["jobs"],
           "avebsld": m["avebsld_tau60"], "cumbsld": m["avebsld_tau60"] * m["jobs"],
           "killed_attempts": m["killed_attempts"], "wasted_core_seconds": m["wasted_core_seconds"],
           "wall": wall, "unfinished": len(result.unfinished)}
    rep = sched.report().get("classification")
    if rep:
        o = rep["overall"]
        row.update(precision=o["precision"], recall=o["recall"], accuracy=o["accuracy"],
                   training_time=rep["training_time"], retrainings=rep["retrainings"], kills=rep["kills"],
                   TS=o["TS"], FS=o["FS"], TL=o["TL"], FL=o["FL"])
        if "jobs" in rep:  # per-job [predicted small, true small] next to the jobs CSV
            Path(f"{prefix}_classes.json").write_text(json.dumps(rep["jobs"]))
    return row


@reports_missing_data
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*", default=["KTH"], help=f"among {list(TRACES)}, or SWF file paths")
    add_data_arguments(ap)
    ap.add_argument("--policy", action="append", default=None, help="fcfs, spf (default both)")
    ap.add_argument("--variant", action="append", default=None, help=f"subset of {list(VARIANTS)}")
    ap.add_argument("--max-jobs", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="directory for the jobs CSVs (default: a temporary one)")
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    ap.add_argument("--reservations", choices=("count", "cores"), default="count",
                    help="EASY's reservation model (default count; cores = batsched's)")
    ap.add_argument("--starvation-threshold", type=float, default=None, metavar="SECONDS")
    ap.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                    help="classification option for the classifying variants, e.g. history=previous-weeks, "
                         "n_estimators=100 (VALUE parsed as JSON when possible)")
    args = ap.parse_args(argv)
    options = plugin_options(args)
    policies = args.policy or ["fcfs", "spf"]
    variants = args.variant or list(VARIANTS)
    outdir = Path(args.out or tempfile.mkdtemp(prefix="classification-"))
    rows = []
    for name in args.traces:
        trace_path(name, args.traces_dir)  # every input found before the first (long) run
    for name in args.traces:
        tag = trace_label(name)
        workload = load_trace(name, args.max_jobs, args.traces_dir)
        fcfs_base = None
        for policy in policies:
            base = None
            for variant in variants:
                row = run_one(workload, policy, variant, args.seed, outdir, tag, args.reservations,
                              args.starvation_threshold, options)
                if variant == "base":
                    base = row["cumbsld"]
                    if policy == "fcfs":
                        fcfs_base = base
                row["reduction_pct"] = None if base is None else 100 * (1 - row["cumbsld"] / base)
                row["reduction_vs_easy_fcfs_pct"] = (None if fcfs_base is None
                                                     else 100 * (1 - row["cumbsld"] / fcfs_base))
                if variant == "classification-idempotent":
                    row["paper_reduction_pct"] = PAPER[policy].get(tag)
                rows.append(row)
                print(json.dumps(row, default=float), flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(rows, indent=1, default=float))
    print()
    print(f"{'trace':<10} {'policy':<5} {'variant':<26} {'cum bsld':>12} {'red.%':>6} {'vsFCFS':>6} {'paper%':>6} "
          f"{'prec':>5} {'rec':>5} {'kills':>6} {'wall s':>7} {'train s':>7}")
    for r in rows:
        def f(v, spec):
            return format(v, spec) if v is not None else "-"
        print(f"{r['trace']:<10} {r['policy']:<5} {r['variant']:<26} {r['cumbsld']:>12.0f} "
              f"{f(r.get('reduction_pct'), '6.1f'):>6} {f(r.get('reduction_vs_easy_fcfs_pct'), '6.1f'):>6} {f(r.get('paper_reduction_pct'), '6.0f'):>6} "
              f"{f(r.get('precision'), '5.2f'):>5} {f(r.get('recall'), '5.2f'):>5} "
              f"{f(r.get('kills'), '6d'):>6} {r['wall']:>7.1f} {f(r.get('training_time'), '7.1f'):>7}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
