"""Throughput of the ZeroMQ path: ``serve`` driven by ``simulate --connect``.

Needs: KTH-5k.json.gz (and, with --full, KTH-SP2-1996-2.1-cln.json.gz) and platform-100.xml in
--golden DIR, made from the Parallel Workloads Archive's KTH-SP2-1996-2.1-cln.swf.gz by
`batsched-ml convert` (the exact commands are printed when a file is missing).

Usage: python benchmarks/bench_socket.py [--golden DIR] [--full] [--transport tcp ipc]
                                         [--scheduler easy] [--split]

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
import io
import resource
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


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread, ZeroMQ's I/O thread included
    return usage.ru_utime + usage.ru_stime


def _serve(endpoint: str, scheduler: str, conn) -> None:
    stats = ServerStats()
    cpu = {}

    class Ready:
        def set(self):
            cpu["start"] = _cpu_seconds()
            conn.send("ready")

    run_server(build_scheduler(scheduler), endpoint, timeout=120.0, stats=stats, ready=Ready(),
               err=io.StringIO())
    result = stats.as_dict()
    result["cpu"] = _cpu_seconds() - cpu["start"]
    conn.send(result)


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
        "serve_cpu": stats["cpu"],
        "serve_cpu_us_per_msg": stats["cpu"] / stats["messages"] * 1e6,
    }


def record_messages(platform, workload, scheduler: str) -> list[bytes]:
    """The Batsim->scheduler messages of a run, as ``simulate --connect`` sends them."""
    from batsched_ml.core.decision_core import DecisionCore
    from batsched_ml.protocol.codec import encode
    from batsched_ml.protocol.events import Message, SimulationBegins
    from batsched_ml.runner import load_inputs
    from batsched_ml.server.peer import batsim_like_begins
    from batsched_ml.simulator.engine import Simulator

    nb_hosts, names, loaded = load_inputs(platform, workload)
    core, sent = DecisionCore(build_scheduler(scheduler)), []

    def exchange(now, events):
        if events and type(events[0]) is SimulationBegins:
            events = [batsim_like_begins(events[0]), *events[1:]]
        sent.append(encode(Message(now, events)))
        return now, core.handle(now, events)

    Simulator(nb_hosts, loaded, host_names=names).run(exchange)
    return sent


def split(messages: list[bytes], scheduler: str, repeat: int = 5) -> dict:
    """serve's CPU time per message without sockets: decode, decide (DecisionCore.handle), encode,
    and the whole ``DecisionServer.answer``; best of ``repeat``."""
    from batsched_ml.core.decision_core import DecisionCore
    from batsched_ml.protocol.codec import decode, encode
    from batsched_ml.protocol.events import Message
    from batsched_ml.server.serve import DecisionServer

    clock, best = time.process_time, {}

    def keep(name, seconds):
        best[name] = min(best.get(name, seconds), seconds)

    for _ in range(repeat):
        t = clock()
        decoded = [decode(raw) for raw in messages]
        keep("decode", clock() - t)
        core = DecisionCore(build_scheduler(scheduler))
        t = clock()
        replies = [(m.now, core.handle(m.now, m.events)) for m in decoded]
        keep("decide", clock() - t)
        t = clock()
        for now, decisions in replies:
            encode(Message(now, decisions))
        keep("encode", clock() - t)
        server = DecisionServer(build_scheduler(scheduler))
        t = clock()
        for raw in messages:
            server.answer(raw)
        keep("answer", clock() - t)
    return {name: seconds / len(messages) * 1e6 for name, seconds in best.items()}


@reports_missing_data
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(parser, traces=False, golden=True)
    parser.add_argument("--full", action="store_true", help="also the full KTH-SP2 trace (28k jobs)")
    parser.add_argument("--transport", nargs="+", default=["tcp", "ipc"], choices=("tcp", "ipc"))
    parser.add_argument("--scheduler", default="easy")
    parser.add_argument("--split", action="store_true",
                        help="also serve's CPU per message without sockets: decode / decide / encode")
    args = parser.parse_args(argv)
    cases = [("KTH-5k", golden_path("KTH-5k.json.gz", args.golden))]
    if args.full:
        cases.append(("KTH-SP2", golden_path("KTH-SP2-1996-2.1-cln.json.gz", args.golden)))
    platform = golden_path("platform-100.xml", args.golden)
    if args.split:
        for name, workload in cases:
            r = split(record_messages(platform, workload, args.scheduler), args.scheduler)
            print(f"{name}: CPU us per message (no sockets, best of 5): " +
                  ", ".join(f"{key} {value:.1f}" for key, value in r.items()))
    print(f"{'trace':<8} {'via':<4} {'msgs':>6} {'msg/s':>7} {'µs/rt':>7} {'decide':>7} {'codec':>6} "
          f"{'rest':>6} {'wall s':>7} {'inproc s':>8} {'serve cpu s':>11} {'µs/msg':>6}")
    for name, workload in cases:
        for transport in args.transport:
            with tempfile.TemporaryDirectory() as tmp:
                r = bench(platform, workload, args.scheduler, transport, Path(tmp))
            print(f"{name:<8} {transport:<4} {r['messages']:>6} {r['msg_per_s']:>7.0f} "
                  f"{r['us_per_round_trip']:>7.0f} {r['decide_share']:>6.1%} {r['codec_share']:>6.1%} "
                  f"{r['rest_share']:>6.1%} {r['wall']:>7.2f} {r['inproc_wall']:>8.2f} {r['serve_cpu']:>11.2f} "
                  f"{r['serve_cpu_us_per_msg']:>6.0f}")
    print("decide/codec/rest: share of the server's wall time inside DecisionCore.handle, in the JSON "
          "codec, and in ZeroMQ + waiting for the simulator. serve cpu: the server process's user+sys "
          "time from its first message to its exit (all threads).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
