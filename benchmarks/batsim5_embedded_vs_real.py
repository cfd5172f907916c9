"""Issue 41's acceptance on KTH-5k, for every configuration of the issue: the real Batsim 5.0.0-rc2
driving ``serve --batsim 5`` against the embedded ``simulate --batsim 5`` (starts within 1e-6 s), and
``simulate --connect --batsim 5`` driving ``serve --batsim 5`` against the same in-process run (byte
for byte).

Needs rc2's ``batsim`` (``--batsim`` or ``BATSIM5_BIN``), ``KTH-5k.v5.json.gz`` in
``--golden-v5 DIR/workloads`` and ``platform-100.xml`` in ``--golden DIR``.

Usage: python benchmarks/batsim5_embedded_vs_real.py [--configs fcfs easy-cores ...] [--tolerance 1e-6]

Per configuration: every job of rc2's and the embedded jobs.csv (rows by ``workload_name``/``job_id``),
the largest start difference, how many starts differ by more than the tolerance, any final state
that differs, jobs in one file only; then whether the connected run's jobs.csv is the embedded one
byte for byte (else how many rows differ); the wall time of each run. Exit 1 when one is off.
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
import time
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
    "classification-kills": "--preset recommended-classification",  # kills false small jobs and requeues them
    "probabilistic-hmm": "--scheduler probabilistic --distribution hmm",
}


def jobs_of(path: Path) -> dict:
    with open(path, newline="") as f:
        return {(row["workload_name"], row["job_id"]): row for row in csv.DictReader(f)}


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
        inputs = ["-p", str(platform), "-w", str(workload)]
        for name in args.configs:
            flags = shlex.split(CONFIGS[name])
            port = free_port()
            real = timed_run(name, lambda: start_serve(["--batsim", "5", *flags], port),
                             [batsim, *inputs, "-e", f"{tmp / name}-real/", "-q",
                              "--edc-socket-str", f"tcp://127.0.0.1:{port}", "{}"])
            started = time.perf_counter()
            embedded = simulate([*inputs, "-e", f"{tmp / name}-embedded/", *flags])
            embedded_wall = time.perf_counter() - started
            port = free_port()
            started = time.perf_counter()
            server = start_serve(["--batsim", "5", *flags], port)
            connected = simulate([*inputs, "-e", f"{tmp / name}-connected/", "--connect", f"tcp://127.0.0.1:{port}"])
            server.wait(60)
            connected_wall = time.perf_counter() - started
            if embedded or connected or server.returncode:
                print(f"{name}: a run failed: {embedded or connected or server.stderr.read()[-300:]}")
                failed += 1
                continue
            ours = tmp / f"{name}-embedded" / "jobs.csv"
            real_csv = tmp / f"{name}-real" / "jobs.csv"
            worst, off, states, unpaired = compare(jobs_of(real_csv), jobs_of(ours), args.tolerance)
            rows = ours.read_bytes().splitlines()
            differing = rows_differing(rows, (tmp / f"{name}-connected" / "jobs.csv").read_bytes().splitlines())
            ok = off == states == unpaired == differing == 0
            failed += not ok
            print(f"{name}: rc2 + serve vs embedded: largest start difference {worst:.2e} s, {off} starts over "
                  f"{args.tolerance:g} s, {states} final states differ, {unpaired} jobs in one file only, "
                  f"{same_bytes(rows_differing(rows, real_csv.read_bytes().splitlines()))}; connected vs embedded: "
                  f"{same_bytes(differing)} ({len(rows) - 1} jobs); wall: rc2 + serve {real['total']:.1f} s, "
                  f"embedded {embedded_wall:.1f} s, connected {connected_wall:.1f} s: {'SAME' if ok else 'DIFFERENT'}",
                  flush=True)
    return 1 if failed else 0


def rows_differing(rows: list, other: list) -> int:
    return sum(a != b for a, b in zip(rows, other)) + abs(len(rows) - len(other))


def same_bytes(differing: int) -> str:
    return "byte for byte" if differing == 0 else f"{differing} rows differ"


def simulate(argv: list) -> str:
    """``batsched-ml simulate --batsim 5 --quiet ARGV``: its error text, "" when it ran."""
    done = subprocess.run([sys.executable, "-m", "batsched_ml.cli", "simulate", "--batsim", "5", "--quiet", *argv],
                          capture_output=True, text=True)
    return done.stderr.strip()[-300:] if done.returncode else ""


if __name__ == "__main__":
    sys.exit(main())
