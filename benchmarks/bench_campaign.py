"""Campaign engine throughput: 16 simulations on a local Dask cluster of N workers vs the same
tasks one after another in this process, and the engine's overhead per task.

    python benchmarks/bench_campaign.py [--workers 2] [--max-jobs 6000] [--trace FILE.swf.gz]

Needs: nothing beyond the checkout; with KTH-SP2-1996-2.1-cln.swf.gz from the Parallel Workloads
Archive (https://www.cs.huji.ac.il/labs/parallel/workload/l_kth_sp2/, default ../shared/traces) it
times longer tasks.

Tasks: the first ``--max-jobs`` jobs of KTH-SP2 (shared trace; else the bundled 1k sample),
8 EASY configurations x 2 seeds. Reported with and without starting / stopping the cluster.
Overhead: 200 trivial tasks on an already running cluster, wall time per task.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from batsched_ml.campaign.executor import dask_client, map_tasks  # noqa: E402
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


def main(argv=None) -> int:  # noqa: C901 - a linear script
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-jobs", type=int, default=6000)
    ap.add_argument("--trace", type=Path, default=TRACE, help="SWF trace (default: %(default)s; "
                    "when absent, the bundled 1k-job sample)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.trace.is_file():
            trace = f'[traces.KTH]\nswf = "{args.trace.resolve().as_posix()}"\nmax_jobs = {args.max_jobs}\n'
        else:
            trace = (f'[traces.KTH1k]\nworkload = "{ROOT / "workloads" / "KTH-SP2-1k.json"}"\n'
                     f'platform = "{ROOT / "platforms" / "cluster-100.xml"}"\n')
        path = Path(tmp) / "bench.toml"
        path.write_text("[campaign]\nseeds = [0, 1]\n" + trace + CONFIGS)
        tasks = build_tasks(load_campaign(path), Path(tmp) / "out")
        print(f"{len(tasks)} tasks, {tasks[0].nb_jobs} jobs each")

        t0 = time.perf_counter()
        serial = [run_task(t)["row"] for t in tasks]
        t_serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        with dask_client(workers=args.workers) as client:
            t_start = time.perf_counter() - t0
            t1 = time.perf_counter()
            parallel = [r["row"] for r in map_tasks(run_task, tasks, scheduler_address=client.scheduler.address,
                                                    progress=False)]
            t_tasks = time.perf_counter() - t1
            t1 = time.perf_counter()
        t_parallel = time.perf_counter() - t0
        t_close = time.perf_counter() - t1
        same = all(a["metrics"] == b["metrics"] for a, b in zip(serial, parallel))
        print(f"one after another: {t_serial:.1f} s; {args.workers} workers: {t_parallel:.1f} s in all "
              f"(speed-up {t_serial / t_parallel:.2f}x) = cluster start {t_start:.1f} s + tasks {t_tasks:.1f} s "
              f"(speed-up {t_serial / t_tasks:.2f}x) + close {t_close:.1f} s; same metrics: {same}")
        print(f"simulation time summed over tasks: {sum(r['wall_s'] for r in serial):.1f} s one after another, "
              f"{sum(r['wall_s'] for r in parallel):.1f} s on the workers (equal on an idle machine; more when "
              "the workers compete for cores with other processes)")

    t0 = time.perf_counter()
    with dask_client(workers=args.workers) as client:
        t_start = time.perf_counter() - t0
        address = client.scheduler.address
        map_tasks(abs, range(20), scheduler_address=address, progress=False)  # warm up
        n = 200
        t0 = time.perf_counter()
        map_tasks(abs, range(n), scheduler_address=address, progress=False)
        per_task = (time.perf_counter() - t0) / n
    print(f"cluster start {t_start:.2f} s; overhead {1000 * per_task:.1f} ms per task "
          f"({n} trivial tasks, {args.workers} workers, including connecting a client)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
