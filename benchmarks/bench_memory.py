"""Memory per job: peak resident memory (RSS) of one simulation divided by its jobs.

Data: a Batsim workload and platform, e.g. `batsched-ml convert
../shared/traces/SDSC-BLUE-2000-4.2-cln.swf.gz -w blue.json -p blue.xml` (or any
`simulate` inputs). Each figure comes from this process alone (run one
configuration per process): RSS of the interpreter, after building the scheduler
(the modules it imports: a fixed cost), after loading the workload (the parsed
JSON), and the peak of the whole run (``resource.getrusage``); ``kb_per_job`` is
(peak - after building) / jobs: what the jobs cost. ``--tracemalloc`` also lists the allocation sites that
hold the most memory at the end of the run (slower: about 2x). ``growth_kb_per_ended_job``: within
the run, the resident memory gained from the sample where a quarter of the jobs had ended to the
last sample, divided by the jobs ended in between (samples every few thousand messages): what an
*ended* job keeps, the inputs (loaded before) aside; 0 when the memory does not grow with the jobs
finished.

Usage: python benchmarks/bench_memory.py -w WORKLOAD.json -p PLATFORM.xml [--scheduler easy]
       [--policy fcfs] [--reservations count|cores] [--backfill-order queue|sjbf]
       [--predictor ave2] [--correction incremental] [--tracemalloc] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
import tracemalloc

from batsched_ml.runner import load_inputs, simulate
from benchsched import add_scheduler_arguments, scheduler_from


def rss_mb() -> float:
    """Current resident set size (Linux /proc), in MB."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-w", "--workload", required=True)
    parser.add_argument("-p", "--platform", required=True)
    add_scheduler_arguments(parser)
    parser.add_argument("--prefix", default="/tmp/bench-memory", help="output prefix of the run")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    base = rss_mb()
    sched = scheduler_from(args)
    ready = rss_mb()  # interpreter + the modules the configuration imports (numpy, scikit-learn...)
    if args.tracemalloc:
        tracemalloc.start(4)
    nb_hosts, names, loaded = load_inputs(args.platform, args.workload)
    nb_jobs = sum(len(w["jobs"]) for _, w in loaded)
    gc.collect()
    after_load = rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    samples = []  # (jobs ended, RSS MB), every few thousand messages

    def progress(finished, total):
        samples.append((finished, rss_mb()))

    result, core = simulate(args.platform, [w for _, w in loaded], sched, prefix=args.prefix, progress=progress)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = peak_rss_mb()
    out = {"jobs": nb_jobs, "cores": nb_hosts, "rss_base_mb": round(base, 1), "rss_ready_mb": round(ready, 1),
           "rss_after_load_mb": round(after_load, 1), "peak_rss_mb": round(peak, 1),
           "peak_kb_per_job": round(peak * 1024 / nb_jobs, 2),
           "kb_per_job": round((peak - ready) * 1024 / nb_jobs, 2),
           "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
           "s_per_1000_jobs_cpu": round(1000 * cpu / nb_jobs, 3),
           "growth_kb_per_ended_job": growth(samples, nb_jobs)}
    if args.json:
        print(json.dumps(out))
    else:
        config = " ".join(f"{k}={v}" for k, v in vars(args).items()
                          if k in ("scheduler", "policy", "reservations", "backfill_order", "predictor",
                                   "correction") and v is not None)
        print(f"{args.workload}: {config}")
        print("  " + ", ".join(f"{k} {v}" for k, v in out.items()))
    if args.tracemalloc:
        snapshot = tracemalloc.take_snapshot()
        current, traced_peak = tracemalloc.get_traced_memory()
        print(f"tracemalloc: current {current / 2**20:.1f} MB, peak {traced_peak / 2**20:.1f} MB; top sites now:")
        for stat in snapshot.statistics("lineno")[:20]:
            print(f"  {stat.size / 2**20:8.1f} MB {stat.count:>9,} blocks  {stat.traceback[0]}")
    del result, core
    return 0


def growth(samples: list, nb_jobs: int):
    """KB of resident memory gained per job ended, from a quarter of the jobs ended to the last sample."""
    samples = [s for s in samples if s[0] < nb_jobs]  # (the final call counts every job as ended)
    start = next((s for s in samples if s[0] >= nb_jobs // 4), None)
    if start is None or samples[-1][0] <= start[0]:
        return None
    end = samples[-1]
    return round((end[1] - start[1]) * 1024 / (end[0] - start[0]), 3)


if __name__ == "__main__":
    sys.exit(main())
