"""Throughput of the ZeroMQ path: ``serve`` driven by ``simulate --connect``.

Needs: KTH-5k.json.gz (and, with --full, KTH-SP2-1996-2.1-cln.json.gz) and platform-100.xml in
--golden DIR, made from the Parallel Workloads Archive's KTH-SP2-1996-2.1-cln.swf.gz by
`batsched-ml convert` (the exact commands are printed when a file is missing).

Usage: python benchmarks/bench_socket.py [--golden DIR] [--full] [--transport tcp ipc]
                                         [--scheduler easy] [--split] [--batsim 4 5]

The decision server runs in a child process (like a real deployment: Batsim and
the scheduler are two processes), the embedded simulator acts as Batsim in this
one. Reported per run: messages exchanged, messages per second, and where the
server's time goes — inside ``DecisionCore.handle`` (decisions), in the JSON
codec, and the rest (ZeroMQ transport + waiting for the simulator). The
in-process run (no sockets) is the baseline, and its jobs CSV must equal the
connected one. ``--batsim 5`` runs the same exchange as Batsim 5.0.0-rc2 (``serve --batsim 5`` and
``simulate --connect --batsim 5``, against the in-process ``simulate --batsim 5``: rc2's timing on
both sides, so the same jobs CSV).
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


def _serve(endpoint: str, scheduler: str, conn, batsim: str = "4") -> None:
    stats = ServerStats()
    cpu = {}

    class Ready:
        def set(self):
            cpu["start"] = _cpu_seconds()
            conn.send("ready")

    run_server(build_scheduler(scheduler), endpoint, timeout=120.0, stats=stats, ready=Ready(),
               err=io.StringIO(), batsim=batsim)
    result = stats.as_dict()
    result["cpu"] = _cpu_seconds() - cpu["start"]
    conn.send(result)


def bench(platform, workload, scheduler: str, transport: str, tmp: Path, batsim: str = "4") -> dict:
    t0 = time.perf_counter()
    inproc, _ = simulate(platform, workload, build_scheduler(scheduler), prefix=tmp / "inproc", batsim=batsim)
    inproc_wall = time.perf_counter() - t0
    endpoint = "tcp://127.0.0.1:28765" if transport == "tcp" else f"ipc://{tmp}/bench.ipc"
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(endpoint, scheduler, child, batsim))
    proc.start()
    assert parent.recv() == "ready"
    t0 = time.perf_counter()
    result = run_connected(platform, workload, endpoint, tmp / "remote", timeout=120.0, batsim=batsim)
    wall = time.perf_counter() - t0
    stats = parent.recv()
    proc.join()
    assert filecmp.cmp(result.jobs_csv, inproc.jobs_csv, shallow=False), "jobs CSV differ"
    server_wall = stats["wall_time"]
    return {
        "batsim": batsim,
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


def record_messages(platform, workload, scheduler: str, batsim: str = "4") -> list[bytes]:
    """The Batsim->scheduler frames of a run, as ``simulate --connect`` sends them (for Batsim 5,
    the init frame first), each answered in process by a ``DecisionServer`` through bytes."""
    from batsched_ml.runner import load_inputs
    from batsched_ml.server.peer import BATSIM5_INIT, _Batsim4Peer
    from batsched_ml.protocol.events import Message
    from batsched_ml.protocol.v5.sessions import BatsimSession, EDCSession
    from batsched_ml.server.serve import DecisionServer, edc_hello
    from batsched_ml.simulator.engine import Simulator
    from batsched_ml.simulator.lines import line_of

    nb_hosts, names, loaded = load_inputs(platform, workload)
    server, sent = DecisionServer(build_scheduler(scheduler)), []
    peer = _Batsim4Peer
    if batsim == "5":
        peer, session = BatsimSession(BATSIM5_INIT), EDCSession(edc_hello(server.core.scheduler))
        sent.append(peer.init_frame())
        peer.read_hello(session.handshake(sent[0]))
        server.use(session)

    def exchange(now, events):
        raw = peer.encode(Message(now, events))
        sent.append(raw)
        reply = peer.decode(server.answer(raw))
        return reply.now, reply.events

    Simulator(nb_hosts, loaded, host_names=names, line=line_of(batsim)).run(exchange)
    return sent


def split(messages: list[bytes], scheduler: str, batsim: str = "4", repeat: int = 5) -> dict:
    """serve's CPU time per message without sockets, the whole ``DecisionServer.answer`` (best of
    ``repeat``), and the shares of its wall time in the codec (decode + encode) and in
    ``DecisionCore.handle`` (``ServerStats``, from the best round)."""
    from batsched_ml.protocol.v5.sessions import EDCSession
    from batsched_ml.server.serve import DecisionServer, edc_hello

    clock, best = time.process_time, {}
    for _ in range(repeat):
        server = DecisionServer(build_scheduler(scheduler))
        frames = messages
        if batsim == "5":
            session = EDCSession(edc_hello(server.core.scheduler))
            session.handshake(messages[0])
            server.use(session)
            frames = messages[1:]
        t = clock()
        for raw in frames:
            server.answer(raw)
        seconds = clock() - t
        if seconds < best.get("answer_us", float("inf")):
            stats = server.stats
            wall = stats.codec_time + stats.decide_time
            best = {"answer_us": seconds, "codec_share": stats.codec_time / wall,
                    "decide_share": stats.decide_time / wall}
    best["answer_us"] *= 1e6 / len(frames)
    return best


@reports_missing_data
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(parser, traces=False, golden=True)
    parser.add_argument("--full", action="store_true", help="also the full KTH-SP2 trace (28k jobs)")
    parser.add_argument("--transport", nargs="+", default=["tcp", "ipc"], choices=("tcp", "ipc"))
    parser.add_argument("--scheduler", default="easy")
    parser.add_argument("--split", action="store_true",
                        help="also serve's CPU per message without sockets: answer, codec, decide")
    parser.add_argument("--batsim", nargs="+", default=["4"], choices=("4", "5"),
                        help="the Batsim protocols to run (4.2.1's, Batsim 5's), side by side")
    args = parser.parse_args(argv)
    cases = [("KTH-5k", golden_path("KTH-5k.json.gz", args.golden))]
    if args.full:
        cases.append(("KTH-SP2", golden_path("KTH-SP2-1996-2.1-cln.json.gz", args.golden)))
    platform = golden_path("platform-100.xml", args.golden)
    if args.split:
        for name, workload in cases:
            for batsim in args.batsim:
                r = split(record_messages(platform, workload, args.scheduler, batsim), args.scheduler, batsim)
                print(f"{name} Batsim {batsim}: answer {r['answer_us']:.1f} CPU us per message (no sockets, best "
                      f"of 5); codec {r['codec_share']:.0%}, decide {r['decide_share']:.0%}")
    print(f"{'trace':<8} {'B':<2} {'via':<4} {'msgs':>6} {'msg/s':>7} {'µs/rt':>7} {'decide':>7} {'codec':>6} "
          f"{'rest':>6} {'wall s':>7} {'inproc s':>8} {'serve cpu s':>11} {'µs/msg':>6}")
    for name, workload in cases:
        for transport in args.transport:
            for batsim in args.batsim:
                with tempfile.TemporaryDirectory() as tmp:
                    r = bench(platform, workload, args.scheduler, transport, Path(tmp), batsim)
                print(f"{name:<8} {batsim:<2} {transport:<4} {r['messages']:>6} {r['msg_per_s']:>7.0f} "
                      f"{r['us_per_round_trip']:>7.0f} {r['decide_share']:>6.1%} {r['codec_share']:>6.1%} "
                      f"{r['rest_share']:>6.1%} {r['wall']:>7.2f} {r['inproc_wall']:>8.2f} "
                      f"{r['serve_cpu']:>11.2f} {r['serve_cpu_us_per_msg']:>6.0f}")
    print("decide/codec/rest: share of the server's wall time inside DecisionCore.handle, in the JSON "
          "codec, and in ZeroMQ + waiting for the simulator. serve cpu: the server process's user+sys "
          "time from its first message to its exit (all threads).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
