"""Campaign engine throughput: 16 simulations on a local Dask cluster of N workers vs the same
tasks one after another in this process, with what is needed to tell the engine's costs from
the machine's.

    python benchmarks/bench_campaign.py [--workers 2] [--max-jobs 12000] [--repeat 3]
                                        [--no-pool] [--no-dask-defaults] [--trace FILE.swf.gz]

Needs: nothing beyond the checkout; with KTH-SP2-1996-2.1-cln.swf.gz from the Parallel Workloads
Archive (https://www.cs.huji.ac.il/labs/parallel/workload/l_kth_sp2/, default ../shared/traces) it
times longer tasks.

Tasks: the first ``--max-jobs`` jobs of KTH-SP2 (shared trace; else the bundled 1k sample),
8 EASY configurations x 2 seeds, submitted longest first (as ``campaign run`` does from the
costs of earlier runs; here from the serial pass). Each repeat runs them one after another in
this process, then on a fresh local cluster, on a plain process pool (the ceiling without Dask)
and on a cluster with Dask's default settings and no GC freeze (the engine before the fixes of
session 5). Printed per repeat and as medians:

* wall times and speed-ups (all, and the task phase without cluster start / close);
* per task, summed: simulation wall time, CPU time of the task's thread and the garbage
  collector's share, serial vs on the workers: CPU equal but wall longer means waiting for a
  core (other processes) or the GIL; CPU longer means the worker process itself costs more;
* the engine's CPU during the task phase (this process: client, scheduler, nannies; the workers
  outside their task threads), per task, and its idle CPU per second;
* the tail: how long the first worker to run out of tasks waited for the last one;
* the machine: a pure-Python loop alone vs two side by side (2.0x = two free cores);
* the engine's latency per task: 200 trivial tasks on a running cluster.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from batsched_ml import executor  # noqa: E402
from batsched_ml.executor import dask_client, map_tasks  # noqa: E402
from batsched_ml.campaign.run import build_tasks  # noqa: E402
from batsched_ml.campaign.spec import load_campaign  # noqa: E402
from batsched_ml.campaign.tasks import run_task  # noqa: E402

TRACE = ROOT.parent / "shared" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
CONFIGS = """
[configs.easy]
[configs.spf]
policy = "spf"
[configs.saf]
policy = "saf"
[configs.sjbf]
backfill_order = "sjbf"
[configs.clairvoyant]
predictor = "clairvoyant"
[configs.cons]
scheduler = "conservative"
[configs.cores]
reservations = "cores"
[configs.wfp3]
policy = "wfp3"
"""
DASK_DEFAULTS = {"distributed.worker.profile.enabled": False}  # the engine before LOCAL_CLUSTER_CONFIG


def timed(task, unfreeze: bool = False) -> dict:
    """``run_task`` with its thread's CPU time and the garbage collector's time (in any process).
    ``unfreeze``: undo the worker's GC freeze first (the engine before the fix)."""
    if unfreeze:
        gc.unfreeze()
    spent = [0.0]
    started = []

    def on_gc(phase, info):
        if phase == "start":
            started.append(time.thread_time())
        elif started:
            spent[0] += time.thread_time() - started.pop()

    gc.callbacks.append(on_gc)
    begin, c0, t0 = time.time(), time.thread_time(), time.perf_counter()
    try:
        row = run_task(task)["row"]
    finally:
        gc.callbacks.remove(on_gc)
    return {"metrics": row["metrics"], "sim": row["wall_s"], "wall": time.perf_counter() - t0,
            "cpu": time.thread_time() - c0, "gc": spent[0], "pid": os.getpid(), "begin": begin, "end": time.time()}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _spin(n: int = 6_000_000) -> float:
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i & 7
    return time.perf_counter() - t0


def machine_check() -> tuple[float, float]:
    """Seconds of a pure-Python loop alone, and each of two run side by side (processes)."""
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        list(pool.map(_spin, [100_000] * 2))  # start both
        alone = pool.submit(_spin).result()
        both = list(pool.map(_spin, [6_000_000] * 2))
    return alone, max(both)


def _tail(results: list[dict]) -> float:
    """From the moment the first worker finished its last task to the end of the last task."""
    last = {}
    for r in results:
        last[r["pid"]] = max(last.get(r["pid"], 0.0), r["end"])
    return max(last.values()) - min(last.values()) if len(last) > 1 else 0.0


def run_dask(tasks, workers: int, defaults: bool) -> dict:
    saved = executor.LOCAL_CLUSTER_CONFIG
    if defaults:
        executor.LOCAL_CLUSTER_CONFIG = DASK_DEFAULTS
    try:
        t0 = time.perf_counter()
        with dask_client(workers=workers) as client:
            t_start = time.perf_counter() - t0
            client.wait_for_workers(workers)
            w0, p0, t1 = client.run(_cpu), _cpu(), time.perf_counter()
            results = _map_timed(client, tasks, defaults)
            t_tasks = time.perf_counter() - t1
            w1, p1 = client.run(_cpu), _cpu()
            idle0 = time.perf_counter()
            time.sleep(3)  # the engine's idle CPU: a measurement, not part of the campaign's time
            w2, p2 = client.run(_cpu), _cpu()
            t2 = time.perf_counter()
            t_idle = t2 - idle0
        t_close = time.perf_counter() - t2
    finally:
        executor.LOCAL_CLUSTER_CONFIG = saved
    worker_cpu = sum(w1[k] - w0[k] for k in w0)
    task_cpu = sum(r["cpu"] for r in results)
    return {"results": results, "all": time.perf_counter() - t0 - t_idle, "start": t_start, "tasks": t_tasks,
            "close": t_close, "engine_cpu": (p1 - p0) + (worker_cpu - task_cpu),
            "idle_cpu_per_s": ((p2 - p1) + sum(w2[k] - w1[k] for k in w1)) / 3.0, "tail": _tail(results)}


def _map_timed(client, tasks, unfreeze: bool) -> list[dict]:
    return map_tasks(_Timed(unfreeze), tasks, scheduler_address=client.scheduler.address, progress=False)


class _Timed:
    """Picklable ``timed`` with its flag (map_tasks passes one item)."""

    def __init__(self, unfreeze: bool):
        self.unfreeze = unfreeze

    def __call__(self, task):
        return timed(task, self.unfreeze)


def run_pool(tasks, workers: int) -> dict:
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        t1 = time.perf_counter()
        results = list(pool.map(timed, tasks, chunksize=1))
        t_tasks = time.perf_counter() - t1
    return {"results": results, "all": time.perf_counter() - t0, "tasks": t_tasks, "tail": _tail(results)}


def _sums(results) -> str:
    sim, cpu, gcs = (sum(r[k] for r in results) for k in ("sim", "cpu", "gc"))
    return f"simulation {sim:6.1f} s, task CPU {cpu:6.1f} s (GC {gcs:4.1f} s)"


def main(argv=None) -> int:  # noqa: C901 - a linear script
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-jobs", type=int, default=12000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-pool", dest="pool", action="store_false",
                    help="skip the plain process pool (no Dask: the machine's ceiling)")
    ap.add_argument("--no-dask-defaults", dest="dask_defaults", action="store_false",
                    help="skip the cluster with Dask's defaults and no GC freeze (the engine before the fixes)")
    ap.add_argument("--trace", type=Path, default=TRACE, help="SWF trace (default: %(default)s; "
                    "when absent, the bundled 1k-job sample)")
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC", flush=True)
    alone, both = machine_check()
    print(f"machine: pure-Python loop {alone:.2f} s alone, {both:.2f} s each with two side by side "
          f"(capacity {2 * alone / both:.2f} of 2 cores)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        if args.trace.is_file():
            trace = f'[traces.KTH]\nswf = "{args.trace.resolve().as_posix()}"\nmax_jobs = {args.max_jobs}\n'
        else:
            trace = (f'[traces.KTH1k]\nworkload = "{ROOT / "workloads" / "KTH-SP2-1k.json"}"\n'
                     f'platform = "{ROOT / "platforms" / "cluster-100.xml"}"\n')
        path = Path(tmp) / "bench.toml"
        path.write_text("[campaign]\nseeds = [0, 1]\n" + trace + CONFIGS)
        tasks = build_tasks(load_campaign(path), Path(tmp) / "out")
        print(f"{len(tasks)} tasks, {tasks[0].nb_jobs} jobs each, {args.workers} workers", flush=True)
        timed(tasks[0])  # imports, so that the serial pass starts warm like a worker's second task

        engines = ["dask"] + (["pool"] if args.pool else []) + (["dask-defaults"] if args.dask_defaults else [])
        ratios: dict[str, list[tuple[float, float]]] = {e: [] for e in engines}
        for rep in range(1, args.repeat + 1):
            print(f"\nrepeat {rep}: load average {os.getloadavg()[0]:.1f}", flush=True)
            t0 = time.perf_counter()
            serial = [timed(t) for t in tasks]
            t_serial = time.perf_counter() - t0
            order = sorted(range(len(tasks)), key=lambda i: -serial[i]["sim"])
            if rep == 1:
                print("  serial simulation s per config (seed 0): " + ", ".join(
                    f"{t.config} {r['sim']:.2f}" for t, r in zip(tasks, serial) if t.seed == 0))
            ordered = [tasks[i] for i in order]
            print(f"  one after another:   {t_serial:6.1f} s   {_sums(serial)}", flush=True)
            for engine in engines:
                if engine == "pool":
                    out = run_pool(ordered, args.workers)
                else:
                    out = run_dask(ordered, args.workers, engine == "dask-defaults")
                same = all(a["metrics"] == serial[i]["metrics"] for a, i in zip(out["results"], order))
                ratios[engine].append((t_serial / out["all"], t_serial / out["tasks"]))
                line = (f"  {engine + ':':20s} {out['all']:6.1f} s   {_sums(out['results'])}; "
                        f"speed-up {t_serial / out['all']:.2f}x (tasks only {t_serial / out['tasks']:.2f}x); "
                        f"tail {out['tail']:.1f} s; same metrics: {same}")
                if "engine_cpu" in out:
                    per_task = 1000 * out["engine_cpu"] / len(tasks)
                    background = 1000 * out["idle_cpu_per_s"] * out["tasks"] / len(tasks)
                    line += (f"\n  {'':20s} cluster start {out['start']:.1f} s, tasks {out['tasks']:.1f} s, "
                             f"close {out['close']:.1f} s; engine CPU {per_task:.0f} ms per task during the tasks "
                             f"= {background:.0f} ms of background ({1000 * out['idle_cpu_per_s']:.0f} ms/s, as when "
                             f"idle) + {per_task - background:.0f} ms handling the task")
                print(line, flush=True)
        print("\nmedian speed-ups (all / tasks only; issue 12 asks >= 1.7x all): " + "; ".join(
            f"{e} {statistics.median(a for a, _ in r):.2f}x / {statistics.median(b for _, b in r):.2f}x"
            for e, r in ratios.items()))

    with dask_client(workers=args.workers) as client:
        address = client.scheduler.address
        map_tasks(abs, range(20), scheduler_address=address, progress=False)  # warm up
        n = 200
        t0 = time.perf_counter()
        map_tasks(abs, range(n), scheduler_address=address, progress=False)
        per_task = (time.perf_counter() - t0) / n
    print(f"engine latency {1000 * per_task:.1f} ms per task ({n} trivial tasks, {args.workers} workers, "
          f"including connecting a client); load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
