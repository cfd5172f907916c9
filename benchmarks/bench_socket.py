"""Throughput of the ZeroMQ path: ``serve`` driven by ``simulate --connect``.

Needs: KTH-5k.json.gz (and, with --full, KTH-SP2-1996-2.1-cln.json.gz) and platform-100.xml in
--golden DIR, made from the Parallel Workloads Archive's KTH-SP2-1996-2.1-cln.swf.gz by
`batsched-ml convert` (the exact commands are printed when a file is missing).

Usage: python benchmarks/bench_socket.py [--golden DIR] [--full] [--transport tcp ipc]
                                         [--scheduler easy]

The decision server runs in a child process (like a real deployment: Batsim and
the scheduler are two processes), the embedded simulator acts as Batsim in this
one. Reported per run: messages exchanged, messages per second, and where the
server's time goes — inside ``DecisionCore.handle`` (decisions), in the JSON
codec, and the rest (ZeroMQ transport + waiting for the simulator). The
in-process run (no sockets) is the baseline, and its jobs CSV must equal the
connected one.
"""

from __future__ import annotations

import argparse
import filecmp
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import add_data_arguments, golden_path, reports_missing_data  # noqa: E402

from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.server.peer import run_connected
from batsched_ml.server.serve import ServerStats, run_server


def _serve(endpoint: str, scheduler: str, conn) -> None:
    stats = ServerStats()

    class Ready:
        def set(self):
            conn.send("ready")

    run_server(build_scheduler(scheduler), endpoint, timeout=120.0, stats=stats, ready=Ready())
    conn.send(stats.as_dict())


def bench(platform, workload, scheduler: str, transport: str, tmp: Path) -> dict:
    t0 = time.perf_counter()
    inproc, _ = simulate(platform, workload, build_scheduler(scheduler), prefix=tmp / "inproc")
    inproc_wall = time.perf_counter() - t0
    endpoint = "tcp://127.0.0.1:28765" if transport == "tcp" else f"ipc://{tmp}/bench.ipc"
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(endpoint, scheduler, child))
    proc.start()
    assert parent.recv() == "ready"
    t0 = time.perf_counter()
    result = run_connected(platform, workload, endpoint, tmp / "remote", timeout=120.0)
    wall = time.perf_counter() - t0
    stats = parent.recv()
    proc.join()
    assert filecmp.cmp(result.jobs_csv, inproc.jobs_csv, shallow=False), "jobs CSV differ"
    server_wall = stats["wall_time"]
    return {
        "transport": transport,
        "messages": stats["messages"],
        "events": stats["events"],
        "decisions": stats["decisions"],
        "inproc_wall": inproc_wall,
        "wall": wall,
        "msg_per_s": stats["messages"] / wall,
        "decide_share": stats["decide_time"] / server_wall,
        "codec_share": stats["codec_time"] / server_wall,
        "rest_share": 1 - (stats["decide_time"] + stats["codec_time"]) / server_wall,
        "us_per_round_trip": wall / stats["messages"] * 1e6,
        "decide_us_per_msg": stats["decide_time"] / stats["messages"] * 1e6,
        "codec_us_per_msg": stats["codec_time"] / stats["messages"] * 1e6,
    }


@reports_missing_data
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(parser, traces=False, golden=True)
    parser.add_argument("--full", action="store_true", help="also the full KTH-SP2 trace (28k jobs)")
    parser.add_argument("--transport", nargs="+", default=["tcp", "ipc"], choices=("tcp", "ipc"))
    parser.add_argument("--scheduler", default="easy")
    args = parser.parse_args(argv)
    cases = [("KTH-5k", golden_path("KTH-5k.json.gz", args.golden))]
    if args.full:
        cases.append(("KTH-SP2", golden_path("KTH-SP2-1996-2.1-cln.json.gz", args.golden)))
    platform = golden_path("platform-100.xml", args.golden)
    print(f"{'trace':<8} {'via':<4} {'msgs':>6} {'msg/s':>7} {'µs/rt':>7} {'decide':>7} {'codec':>6} "
          f"{'rest':>6} {'wall s':>7} {'inproc s':>8}")
    for name, workload in cases:
        for transport in args.transport:
            with tempfile.TemporaryDirectory() as tmp:
                r = bench(platform, workload, args.scheduler, transport, Path(tmp))
            print(f"{name:<8} {transport:<4} {r['messages']:>6} {r['msg_per_s']:>7.0f} "
                  f"{r['us_per_round_trip']:>7.0f} {r['decide_share']:>6.1%} {r['codec_share']:>6.1%} "
                  f"{r['rest_share']:>6.1%} {r['wall']:>7.2f} {r['inproc_wall']:>8.2f}")
    print("decide/codec/rest: share of the server's wall time inside DecisionCore.handle, in the JSON "
          "codec, and in ZeroMQ + waiting for the simulator.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
