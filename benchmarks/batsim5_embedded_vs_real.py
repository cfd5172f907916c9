"""The real Batsim 5.0.0-rc2 driving ``serve --batsim 5`` against the embedded ``simulate --batsim 5``
(issue 41: starts within 1e-6 s), for every configuration of the issue, on KTH-5k.

Needs rc2's ``batsim`` (``--batsim`` or ``BATSIM5_BIN``), ``KTH-5k.v5.json.gz`` in
``--golden-v5 DIR/workloads`` and ``platform-100.xml`` in ``--golden DIR``; and the embedded Batsim 5
mode (``simulate --batsim 5`` without ``--connect``, another part of issue 41: until it lands this
script says so and compares nothing).

Usage: python benchmarks/batsim5_embedded_vs_real.py [--configs fcfs easy-cores ...] [--tolerance 1e-6]

Per configuration: every job of both jobs.csv files (rows by ``workload_name``/``job_id``), the largest
start difference, how many starts differ by more than the tolerance, and any final state that
differs; exit 1 when a configuration is off.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import MissingData, add_data_arguments, golden_path, reports_missing_data  # noqa: E402
from real_runs import free_port, start_serve, timed_run  # noqa: E402

# the configurations of issue 41, as scheduler flags
CONFIGS = {
    "fcfs": "--scheduler fcfs",
    "easy-cores": "--scheduler easy --reservations cores",
    "easy-count": "--scheduler easy --reservations count",
    "conservative": "--scheduler conservative",
    "classification-kills": "--scheduler easy --classifier random-forest --kill-false-small "
                            "-o order_by_probability=both -o probability_head_start=1209600 "
                            "-o speculative_backfill=0 -o n_estimators=40 -o min_samples_leaf=50",
    "probabilistic-hmm": "--scheduler probabilistic --distribution hmm",
}


def jobs_of(path: Path) -> dict:
    with open(path, newline="") as f:
        return {(row["workload_name"], row["job_id"]): row for row in csv.DictReader(f)}


def embedded_jobs_csv(prefix: Path) -> Path | None:
    """Where ``simulate --batsim 5 -e PREFIX`` put jobs.csv (Batsim 5's ``PREFIX/jobs.csv``, else ours)."""
    for path in (prefix / "jobs.csv", Path(f"{prefix}_jobs.csv")):
        if path.is_file():
            return path
    return None


def compare(real: dict, embedded: dict, tolerance: float) -> tuple[float, int, int, int]:
    """(largest start difference, starts off by more than ``tolerance``, final states that differ,
    jobs in only one file)."""
    common = set(real) & set(embedded)
    worst = off = states = 0
    for key in common:
        gap = abs(float(real[key]["starting_time"]) - float(embedded[key]["starting_time"]))
        worst = max(worst, gap)
        off += gap > tolerance
        states += real[key]["final_state"] != embedded[key]["final_state"]
    return worst, off, states, len(set(real) ^ set(embedded))


@reports_missing_data
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batsim")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--tolerance", type=float, default=1e-6)
    parser.add_argument("--golden-v5", default=None, help="the golden-v5 folder (default: beside --golden)")
    add_data_arguments(parser, traces=False, golden=True)
    args = parser.parse_args(argv)
    batsim = args.batsim or os.environ.get("BATSIM5_BIN")
    if not batsim or not os.access(batsim, os.X_OK):
        raise MissingData("needs rc2's batsim: --batsim PATH or BATSIM5_BIN (not built by this repository)")
    platform = golden_path("platform-100.xml", args.golden)
    golden_v5 = Path(args.golden_v5) if args.golden_v5 else Path(args.golden).parent / "golden-v5"
    source = golden_v5 / "workloads" / "KTH-5k.v5.json.gz"
    if not source.is_file():
        raise MissingData(f"needs {source} (../shared/golden-v5)")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="batsim5-embedded-vs-real-") as tmp:
        tmp = Path(tmp)
        workload = tmp / "KTH-5k.v5.json"
        workload.write_bytes(gzip.decompress(source.read_bytes()))
        for name in args.configs:
            flags = shlex.split(CONFIGS[name])
            port = free_port()
            run = timed_run(name, lambda: start_serve(["--batsim", "5", *flags], port),
                            [batsim, "-p", str(platform), "-w", str(workload), "-e", f"{tmp / name}/", "-q",
                             "--edc-socket-str", f"tcp://127.0.0.1:{port}", "{}"])
            prefix = tmp / f"{name}-embedded"
            done = subprocess.run([sys.executable, "-m", "batsched_ml.cli", "simulate", "--batsim", "5", "--quiet",
                                   "-p", str(platform), "-w", str(workload), "-e", str(prefix), *flags],
                                  capture_output=True, text=True)
            embedded = embedded_jobs_csv(prefix)
            if done.returncode or embedded is None:
                print(f"{name}: the embedded Batsim 5 mode did not run ({done.stderr.strip()[-300:]}); real rc2 "
                      f"ran in {run['total']:.2f} s")
                failed += 1
                continue
            worst, off, states, unpaired = compare(jobs_of(tmp / name / "jobs.csv"), jobs_of(embedded), args.tolerance)
            ok = off == states == unpaired == 0
            failed += not ok
            print(f"{name}: largest start difference {worst:.2e} s, {off} starts over {args.tolerance:g} s, "
                  f"{states} final states differ, {unpaired} jobs in one file only: {'SAME' if ok else 'DIFFERENT'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
