"""The real Batsim 5.0.0-rc2 driving ``batsched-ml serve --batsim 5`` against rc2 driving its own
C++ process scheduler (``process-edc``, an FCFS over ZeroMQ, batprotocol JSON): wall time of whole
runs, side by side, in alternating rounds (issue 41: at most 1.2x).

Needs rc2's ``batsim`` and ``process-edc`` (``--batsim``/``--process-edc``, else ``BATSIM5_BIN`` /
``BATSIM5_PROCESS_EDC``; building them is not part of this repository: ../shared/golden-v5/BUILD.md),
``KTH-5k.v5.json.gz`` in ``--golden-v5 DIR/workloads`` and ``platform-100.xml`` in ``--golden DIR``.

Usage: python benchmarks/bench_serve_vs_process_edc.py [--rounds 10] [--golden DIR] [--golden-v5 DIR]
       [--serve-flags "--scheduler fcfs"] [--only serve]

A run starts the scheduler, waits until it listens (serve's "listening" line; process-edc's port
accepting a connection), then starts Batsim (``-q``). ``total`` runs from the scheduler's launch to
both processes' exit (start-up included). The two jobs.csv of a round must be identical (our fcfs
makes process-edc's choices). ``--only serve`` runs serve alone (for the other configurations of
issue 41: every job must end once).
"""

from __future__ import annotations

import argparse
import csv
import filecmp
import gzip
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import MissingData, add_data_arguments, golden_path, reports_missing_data  # noqa: E402
from real_runs import executable, free_port, report, start_serve, started_listening, timed_run  # noqa: E402


def run_once(kind: str, args, workload: Path, platform: Path, out: Path) -> dict:
    port = free_port()

    def start():
        if kind == "process-edc":
            proc = subprocess.Popen([args.process_edc, "--socket-endpoint", f"tcp://127.0.0.1:{port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return started_listening(proc, port, "process-edc")
        return start_serve(["--batsim", "5", *shlex.split(args.serve_flags)], port)

    return timed_run(kind, start, [args.batsim, "-p", str(platform), "-w", str(workload), "-e", f"{out}/", "-q",
                                   "--edc-socket-str", f"tcp://127.0.0.1:{port}", '{"format_json": true}'])


def ends_once(jobs_csv: Path, workload: Path) -> str:
    """Every static job in jobs.csv once, every row a final state; a one-line summary."""
    import json

    with open(jobs_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    ids = [row["job_id"] for row in rows]
    static = {str(job["id"]) for job in json.loads(workload.read_text())["jobs"]}
    if len(ids) != len(set(ids)) or not static <= set(ids):
        raise RuntimeError(f"{jobs_csv}: a job is missing or ends twice")
    killed = sum(row["final_state"] == "COMPLETED_KILLED" for row in rows)
    requeued = sum("#" in job_id for job_id in ids)
    if killed != requeued:
        raise RuntimeError(f"{jobs_csv}: {killed} kills but {requeued} requeued copies")
    return f"{len(rows)} rows, {len(static)} static jobs each once, {killed} killed and requeued"


@reports_missing_data
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--batsim")
    parser.add_argument("--process-edc")
    parser.add_argument("--serve-flags", default="--scheduler fcfs")
    parser.add_argument("--only", choices=("serve",), default=None)
    parser.add_argument("--golden-v5", default=None, help="the golden-v5 folder (default: beside --golden)")
    add_data_arguments(parser, traces=False, golden=True)
    args = parser.parse_args(argv)
    args.batsim = executable(args.batsim, "BATSIM5_BIN", "batsim", owner="rc2's", search_path=False)
    kinds = ("serve",) if args.only else ("process-edc", "serve")
    if not args.only:
        args.process_edc = executable(args.process_edc, "BATSIM5_PROCESS_EDC", "process-edc", owner="rc2's",
                                      search_path=False)
    platform = golden_path("platform-100.xml", args.golden)
    golden_v5 = Path(args.golden_v5) if args.golden_v5 else platform.parent.parent / "golden-v5"
    source = golden_v5 / "workloads" / "KTH-5k.v5.json.gz"
    if not source.is_file():
        raise MissingData(f"needs {source} (../shared/golden-v5)")
    with tempfile.TemporaryDirectory(prefix="serve-vs-process-edc-") as tmp:
        tmp = Path(tmp)
        workload = tmp / "KTH-5k.v5.json"  # Batsim reads plain JSON only
        workload.write_bytes(gzip.decompress(source.read_bytes()))
        rows = {kind: [] for kind in kinds}
        for i in range(args.rounds):
            for kind in kinds if i % 2 == 0 else tuple(reversed(kinds)):
                rows[kind].append(run_once(kind, args, workload, platform, tmp / kind))
                r = rows[kind][-1]
                print(f"round {i} {kind:11s} " + "  ".join(f"{k} {v:.3f} s" for k, v in r.items()), flush=True)
            print(f"round {i}: serve's jobs.csv: {ends_once(tmp / 'serve' / 'jobs.csv', workload)}", flush=True)
            if not args.only and not filecmp.cmp(tmp / "process-edc" / "jobs.csv", tmp / "serve" / "jobs.csv",
                                                 shallow=False):
                raise RuntimeError(f"round {i}: the two jobs.csv differ")
        shutil.rmtree(tmp / "serve", ignore_errors=True)
    if args.only:
        return 0
    print(f"{args.rounds} rounds, serve --batsim 5 {args.serve_flags!r} vs process-edc; same jobs.csv in every round")
    report(rows, "serve", "process-edc")
    return 0


if __name__ == "__main__":
    sys.exit(main())
