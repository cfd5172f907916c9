"""Checkpoints on full traces (issue 42): overhead, snapshot size and write time, and runs killed
twice and resumed.

For each case -- the adopted classification configuration on CTC-SP2, probabilistic backfilling
with ``--distribution hmm`` on SDSC-BLUE --:

1. the run uninterrupted, in this process: its CPU time (``time.process_time``);
2. the same with one snapshot per simulated week (``checkpointing.Checkpointer``, as
   ``simulate --checkpoint-every 7d``): its CPU time, and each snapshot's CPU time (pickling,
   framing, signing, writing), size and job counts. The overhead is the snapshots' CPU over
   the uninterrupted run's (also shown: the difference of the two runs' CPU, noisier, and the
   full collections of the run's heap in each run, and those that fell inside a snapshot);
3. ``batsched-ml simulate --checkpoint-every 7d`` killed (SIGKILL) twice at wall-clock moments
   spread over the run, each time resumed (``--resume``) from the latest snapshot it left, to its
   end: its jobs CSV, per-job table and schedule file (but its wall-clock fields) must be those
   of run 2, byte for byte (run 2's are run 1's).

Sizes and write times are fitted per 1,000 queued jobs and per 1,000 ended jobs (least squares
over the snapshots; an ended job is one frame entry written once, then copied). Results as JSON
(``--json FILE``) and a table on stdout; ``benchmarks/results/checkpoints.md`` discusses them.

Usage: python benchmarks/bench_checkpoints.py [--case ctc-classification|blue-hmm ...]
       [--traces-dir DIR] [--work DIR] [--json FILE] [--seed N] [--no-kills] [--pairs N]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import add_data_arguments, reports_missing_data, trace_path  # noqa: E402

CLASSIFICATION = ["--scheduler", "easy", "--policy", "fcfs", "--classifier", "random-forest", "--kill-false-small",
                  "-o", "order_by_probability=both", "-o", "probability_head_start=1209600", "-o",
                  "speculative_backfill=0", "-o", "n_estimators=40", "-o", "min_samples_leaf=50"]
CASES = {
    "ctc-classification": ("CTC", CLASSIFICATION),
    "blue-hmm": ("SDSC-BLUE", ["--scheduler", "probabilistic", "--distribution", "hmm"]),
}
WEEK = 7 * 86400.0
WALL_FIELDS = ("scheduling_time", "simulation_time")


def convert(trace: str, traces_dir: Path, work: Path) -> tuple[Path, Path]:
    """The trace as a Batsim workload and platform (converted once into ``work``)."""
    swf = trace_path(trace, traces_dir)
    stem = work / swf.name.split(".swf")[0]
    workload, platform = stem.with_suffix(".json"), stem.with_suffix(".xml")
    if not workload.exists():
        subprocess.run([sys.executable, "-m", "batsched_ml.cli", "convert", str(swf), "-w", str(workload), "-p",
                        str(platform)], check=True, capture_output=True)
    return platform, workload


class FullCollections:
    """The cyclic collector's full collections of a run (``gc.callbacks``): how many, their CPU, and
    which fell inside a snapshot (its CPU counts them: the run's own heap, collected when due)."""

    def __init__(self):
        self.cpu, self.inside, self.in_snapshot, self._started = [], [], False, 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.process_time()
        else:
            self.cpu.append(time.process_time() - self._started)
            self.inside.append(self.in_snapshot)

    def summary(self) -> dict:
        return {"count": len(self.cpu), "cpu_s": sum(self.cpu), "inside_snapshots": sum(self.inside),
                "inside_cpu_s": sum(c for c, i in zip(self.cpu, self.inside) if i)}


def in_process(platform: Path, workload: Path, flags: list, prefix: Path, every: float | None) -> dict:
    """One run in this process (as ``simulate`` builds it), with weekly snapshots when ``every``."""
    from threadpoolctl import threadpool_limits

    from batsched_ml.checkpointing import CheckpointPolicy, Checkpointer
    from batsched_ml.cli import build_parser
    from batsched_ml.cli.runs import run_config
    from batsched_ml.config.compose import build_scheduler
    from batsched_ml.run_outputs import write_job_details
    from batsched_ml.runner import in_process as transport, prepare

    args = build_parser().parse_args(["simulate", "-p", str(platform), "-w", str(workload), *flags])
    scheduler = build_scheduler(run_config(args))
    sim, core = prepare(str(platform), [str(workload)], scheduler)
    collections = FullCollections()

    class Watched(Checkpointer):
        def write(self, sim, date=None):
            collections.in_snapshot = True
            try:
                return super().write(sim, date)
            finally:
                collections.in_snapshot = False

    watch = None
    if every is not None:
        watch = Watched(CheckpointPolicy(str(prefix) + "_checkpoints", every, None, 2), lambda: {})
    gc.callbacks.append(collections)
    started = time.process_time()
    try:
        with threadpool_limits(1):
            if watch is None:
                sim.run(transport(core), prefix=str(prefix))
            else:
                with watch.watching():
                    sim.run(transport(core), prefix=str(prefix), watch=watch)
        cpu = time.process_time() - started
    finally:
        gc.callbacks.remove(collections)
    write_job_details(scheduler, prefix)
    return {"cpu": cpu, "wall": sim.wall_time(), "snapshots": [] if watch is None else watch.records,
            "full_collections": collections.summary()}


def killed_twice(platform: Path, workload: Path, flags: list, prefix: Path, wall: float, rng) -> dict:
    """``simulate --checkpoint-every 7d`` SIGKILLed twice, resumed each time; the kills at drawn
    moments of the first and second thirds of the run's expected wall time."""
    from batsched_ml.snapshot_files import snapshots_in

    argv = [sys.executable, "-m", "batsched_ml.cli", "simulate", "-p", str(platform), "-w", str(workload), "-e",
            str(prefix), "--quiet", "--checkpoint-every", "7d", *flags]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    kills = []
    for third in (0, 1, None):
        snapshots = snapshots_in(f"{prefix}_checkpoints")
        command = argv if not snapshots else [*argv[:3], "simulate", "--resume", str(snapshots[-1]), "--quiet"]
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if third is None:
            _, err = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"the last resumption failed: {err.strip()[-500:]}")
            break
        delay = rng.uniform(0.2, 0.45) * wall
        while True:
            try:
                proc.wait(delay)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                break
            if proc.returncode != 0 or delay < 1 or snapshots:  # (a resumed run's snapshot may be gone now)
                raise RuntimeError(f"the run ended before its kill at {delay:.0f} s: {proc.stderr.read()[-500:]}")
            delay /= 2  # faster than the in-process run was (less load): again, killed earlier
            proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        latest = snapshots_in(f"{prefix}_checkpoints")
        kills.append({"after_wall_s": delay, "resumed_from_sim_time": None if not latest else
                      float(latest[-1].name.split("-")[1].rstrip("s.snapshot"))})
    return {"kills": kills}


def same_outputs(a: Path, b: Path) -> list[str]:
    """Where the outputs of prefixes ``a`` and ``b`` differ (the schedule's wall-clock fields aside)."""
    problems = []
    for suffix in ("_jobs.csv", "_classes.csv", "_predictions.csv", "_schedule.csv"):
        x, y = Path(f"{a}{suffix}"), Path(f"{b}{suffix}")
        if not x.exists() and not y.exists():
            continue
        if not (x.exists() and y.exists()):
            problems.append(f"{suffix}: only one run wrote it")
            continue
        if suffix == "_schedule.csv":
            rows = []
            for path in (x, y):
                header, values = path.read_text().splitlines()
                rows.append({k: v for k, v in zip(header.split(","), values.split(",")) if k not in WALL_FIELDS})
            if rows[0] != rows[1]:
                problems.append(f"{suffix} differs")
        elif x.read_bytes() != y.read_bytes():
            problems.append(f"{suffix} differs")
    return problems


def fit(rows: list, key: str) -> dict:
    """``key`` ~ a + b * queued + c * ended (least squares): b and c per 1,000 jobs."""
    import numpy as np

    if len(rows) < 3:
        return {}
    X = np.array([[1.0, r["queued"], r["ended"]] for r in rows])
    y = np.array([r[key] for r in rows])
    (a, b, c), *_ = np.linalg.lstsq(X, y, rcond=None)
    return {"base": a, "per_1000_queued": b * 1000, "per_1000_ended": c * 1000}


def single(name: str, args, work: Path, mode: str, tag: str) -> dict:
    """One run (``mode`` plain or weekly) in a fresh process: no run inherits another's heap."""
    out = work / f"{name}-{mode}{tag}.result.json"
    command = [sys.executable, __file__, "--single", mode, "--case", name, "--work", str(work), "--json", str(out),
               "--tag", tag]
    if args.traces_dir is not None:
        command += ["--traces-dir", str(args.traces_dir)]
    subprocess.run(command, check=True)
    return json.loads(out.read_text())


def median(values: list) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def run_case(name: str, args, work: Path, rng) -> dict:
    trace, flags = CASES[name]
    platform, workload = convert(trace, args.traces_dir, work)
    pairs = []
    for i in range(args.pairs):  # in alternating order, so that a drift of the machine's load cancels out
        tag = "" if i == 0 else f"-{i}"
        order = ("plain", "weekly") if i % 2 == 0 else ("weekly", "plain")
        pair = {mode: single(name, args, work, mode, tag) for mode in order}
        pairs.append(pair)
        snapshots = sum(r["cpu"] for r in pair["weekly"]["snapshots"])
        print(f"[{name}] pair {i + 1}: uninterrupted {pair['plain']['cpu']:.1f} CPU s, weekly "
              f"{pair['weekly']['cpu']:.1f} CPU s, of which {len(pair['weekly']['snapshots'])} snapshots "
              f"{snapshots:.2f}", file=sys.stderr, flush=True)
    plain, weekly = pairs[0]["plain"], pairs[0]["weekly"]
    rows = weekly["snapshots"]
    killed = {}
    if not args.no_kills:
        print(f"[{name}] killed twice", file=sys.stderr, flush=True)
        killed = killed_twice(platform, workload, flags, work / f"{name}-killed", weekly["wall"], rng)
    snapshot_cpu = sum(r["cpu"] for r in rows)
    inside = weekly["full_collections"]["inside_cpu_s"]
    shares = [sum(r["cpu"] for r in p["weekly"]["snapshots"]) / p["plain"]["cpu"] for p in pairs]
    differences = [(p["weekly"]["cpu"] - p["plain"]["cpu"]) / p["plain"]["cpu"] for p in pairs]
    return {
        "pairs": len(pairs), "snapshots_over_run_per_pair": shares, "run_difference_per_pair": differences,
        "median_snapshots_over_run": median(shares), "median_run_difference": median(differences),
        "case": name, "trace": trace, "flags": flags, "uninterrupted_cpu_s": plain["cpu"],
        "weekly_cpu_s": weekly["cpu"], "snapshots": len(rows), "snapshots_cpu_s": snapshot_cpu,
        "overhead_snapshots_over_run": snapshot_cpu / plain["cpu"],
        "overhead_without_full_collections": (snapshot_cpu - inside) / plain["cpu"],
        "full_collections_uninterrupted": plain["full_collections"],
        "full_collections_weekly": weekly["full_collections"],
        "overhead_run_difference": (weekly["cpu"] - plain["cpu"]) / plain["cpu"],
        "largest_snapshot_bytes": max((r["bytes"] for r in rows), default=0),
        "bytes_fit": fit(rows, "bytes"), "cpu_fit": fit(rows, "cpu"), "rows": rows,
        "weekly_equals_uninterrupted": same_outputs(work / f"{name}-plain", work / f"{name}-weekly") or "yes",
        "killed": killed,
        "killed_equals_uninterrupted": "not run" if args.no_kills else
        same_outputs(work / f"{name}-plain", work / f"{name}-killed") or "yes",
    }


@reports_missing_data
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", choices=sorted(CASES), default=None)
    add_data_arguments(parser)
    parser.add_argument("--work", type=Path, default=None, help="folder of the runs (default: a temporary one)")
    parser.add_argument("--json", type=Path, default=None, help="write the results there")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill moments")
    parser.add_argument("--no-kills", action="store_true", help="overhead and sizes only (no run killed twice)")
    parser.add_argument("--pairs", type=int, default=1, help="uninterrupted and weekly runs, each in a fresh process, "
                        "this many times in alternating order (the overheads' medians and spreads)")
    parser.add_argument("--single", choices=("plain", "weekly"), help=argparse.SUPPRESS)
    parser.add_argument("--tag", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("BATSCHED_ML_SNAPSHOT_KEY", "bench_checkpoints")
    if args.single:  # one run for run_case, in this fresh process
        trace, flags = CASES[args.case[0]]
        platform, workload = convert(trace, args.traces_dir, args.work)
        result = in_process(platform, workload, flags, args.work / f"{args.case[0]}-{args.single}{args.tag}",
                            WEEK if args.single == "weekly" else None)
        args.json.write_text(json.dumps(result))
        return 0
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        results = [run_case(name, args, work, rng) for name in (args.case or list(CASES))]
    for r in results:
        spread = ", ".join(f"{100 * d:+.1f}%" for d in r["run_difference_per_pair"])
        print(f"{r['case']}: {r['snapshots']} weekly snapshots, {r['snapshots_cpu_s']:.2f} CPU s = "
              f"{100 * r['overhead_snapshots_over_run']:.2f}% of the run's {r['uninterrupted_cpu_s']:.1f} CPU s; over "
              f"{r['pairs']} pairs of fresh processes: snapshots {100 * r['median_snapshots_over_run']:.2f}% (median), "
              f"weekly run minus uninterrupted {100 * r['median_run_difference']:+.2f}% (median; {spread}); full "
              f"collections of the run's heap: {r['full_collections_uninterrupted']['count']} uninterrupted, "
              f"{r['full_collections_weekly']['count']} weekly, "
              f"{r['full_collections_weekly']['inside_snapshots']} inside snapshots; largest "
              f"{r['largest_snapshot_bytes'] / 1e6:.1f} MB; size per 1,000 queued / ended jobs "
              f"{r['bytes_fit'].get('per_1000_queued', 0) / 1e3:.0f} / "
              f"{r['bytes_fit'].get('per_1000_ended', 0) / 1e3:.0f} kB, CPU per 1,000 queued / ended "
              f"{1e3 * r['cpu_fit'].get('per_1000_queued', 0):.1f} / "
              f"{1e3 * r['cpu_fit'].get('per_1000_ended', 0):.1f} ms; weekly = uninterrupted: "
              f"{r['weekly_equals_uninterrupted']}; killed twice and resumed = uninterrupted: "
              f"{r['killed_equals_uninterrupted']}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
