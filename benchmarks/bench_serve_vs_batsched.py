"""The real Batsim driving ``batsched-ml serve`` against the real Batsim driving the C++ batsched
(issue 13 §5): wall time of whole runs, side by side, in alternating rounds.

Needs Batsim 4.2.1 and batsched 1.4.0 executables (``--batsim``/``--batsched``, else
``BATSIM_BIN``/``BATSCHED_BIN``, else ``batsim``/``batsched`` on PATH; building them is not part
of this repository) and KTH-5k.json.gz + platform-100.xml in ``--golden DIR``.

Usage: python benchmarks/bench_serve_vs_batsched.py [--rounds 10] [--golden DIR]
       [--serve-flags "--scheduler easy --policy fcfs --reservations cores"] [--batsched-variant easy_bf]

A run starts the scheduler, waits until it listens (serve's "listening" line; batsched's port
accepting a connection), then starts Batsim. Reported per run: ``total`` (scheduler launch to
both processes' exit: start-up included, as a user sees it), Batsim's own wall time, and the
CPU time of each process (every thread: ZeroMQ's I/O thread too). The two jobs CSVs of a
round must be identical (and equal to the golden run's when ``outputs/`` has it). The machine's
noise is large: compare medians and minima over rounds, not one run.
"""

from __future__ import annotations

import argparse
import filecmp
import gzip
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import add_data_arguments, golden_path, reports_missing_data  # noqa: E402
from real_runs import executable, free_port, report, start_serve, started_listening, timed_run  # noqa: E402

SERVE_FLAGS = "--scheduler easy --policy fcfs --reservations cores"  # what batsched's easy_bf does


def _start_batsched(batsched: str, variant: str, port: int) -> subprocess.Popen:
    proc = subprocess.Popen([batsched, "-s", f"tcp://*:{port}", "-v", variant, "--verbosity", "quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return started_listening(proc, port, "batsched")


def run_once(kind: str, args, workload: Path, platform: Path, prefix: Path) -> dict:
    port = free_port()
    if kind == "batsched":
        start = lambda: _start_batsched(args.batsched, args.batsched_variant, port)  # noqa: E731
    else:
        start = lambda: start_serve(shlex.split(args.serve_flags), port)  # noqa: E731
    return timed_run(kind, start, [args.batsim, "-p", str(platform), "-w", str(workload), "-e", str(prefix),
                                   "-s", f"tcp://127.0.0.1:{port}", "-q"])


@reports_missing_data
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--batsim")
    parser.add_argument("--batsched")
    parser.add_argument("--batsched-variant", default="easy_bf")
    parser.add_argument("--serve-flags", default=SERVE_FLAGS)
    add_data_arguments(parser, traces=False, golden=True)
    args = parser.parse_args(argv)
    args.batsim = executable(args.batsim, "BATSIM_BIN", "batsim")
    args.batsched = executable(args.batsched, "BATSCHED_BIN", "batsched")
    platform = golden_path("platform-100.xml", args.golden)
    golden_jobs = Path(args.golden) / "outputs" / "KTH-5k.easy_jobs.csv.gz"
    with tempfile.TemporaryDirectory(prefix="serve-vs-batsched-") as tmp:
        tmp = Path(tmp)
        workload = tmp / "KTH-5k.json"  # Batsim reads plain JSON only
        workload.write_bytes(gzip.decompress(golden_path("KTH-5k.json.gz", args.golden).read_bytes()))
        if golden_jobs.is_file() and args.batsched_variant == "easy_bf" and args.serve_flags == SERVE_FLAGS:
            (tmp / "golden_jobs.csv").write_bytes(gzip.decompress(golden_jobs.read_bytes()))
        rows = {"batsched": [], "serve": []}
        for i in range(args.rounds):
            for kind in ("batsched", "serve") if i % 2 == 0 else ("serve", "batsched"):
                rows[kind].append(run_once(kind, args, workload, platform, tmp / kind))
                r = rows[kind][-1]
                print(f"round {i} {kind:8s} " + "  ".join(f"{k} {v:.3f} s" for k, v in r.items()), flush=True)
            if not filecmp.cmp(tmp / "batsched_jobs.csv", tmp / "serve_jobs.csv", shallow=False):
                raise RuntimeError(f"round {i}: the two jobs CSVs differ")
            if (tmp / "golden_jobs.csv").is_file() and not filecmp.cmp(tmp / "serve_jobs.csv",
                                                                       tmp / "golden_jobs.csv", shallow=False):
                raise RuntimeError(f"round {i}: serve's jobs CSV differs from the golden run")
    print(f"{args.rounds} rounds, serve {args.serve_flags!r} vs batsched -v {args.batsched_variant}; "
          "same jobs CSV in every round")
    report(rows, "serve", "batsched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
