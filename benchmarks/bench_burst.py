"""Time a burst: N jobs submitted at one instant (t=0) on a small machine.

The whole burst sits in the queue at once, so any per-pass work linear in the
queue length makes the run quadratic (issue 13 section 2). The workload is
generated (seeded): sizes uniform in 1..cores, runtimes log-uniform in
[10 s, 10 h], walltimes 1x..5x the runtime. No shared data needed.

Usage: python benchmarks/bench_burst.py --jobs 100000 --scheduler easy [--cores 64]
       [--policy fcfs] [--reservations count|cores] [--backfill-order queue|sjbf]
       [--starvation-threshold S] [--seed 0] [--prefix PREFIX] [--profile]
"""

from __future__ import annotations

import argparse
import random
import sys

from batsched_ml.runner import simulate
from benchsched import add_scheduler_arguments, scheduler_from, timed


def burst_workload(nb_jobs: int, cores: int, seed: int) -> dict:
    """A Batsim workload of ``nb_jobs`` delay jobs all submitted at t=0."""
    rng = random.Random(seed)
    jobs, profiles = [], {}
    for i in range(nb_jobs):
        runtime = round(10 * 3600 ** rng.random(), 1)  # 10 s .. 10 h, log-uniform
        walltime = round(runtime * rng.uniform(1.0, 5.0), 1)
        name = f"d{runtime}"
        profiles[name] = {"type": "delay", "delay": runtime}
        jobs.append({"id": i, "subtime": 0.0, "res": rng.randint(1, cores),
                     "walltime": walltime, "profile": name})
    return {"nb_res": cores, "jobs": jobs, "profiles": profiles}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=10_000)
    add_scheduler_arguments(parser)
    parser.add_argument("--cores", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prefix", help="output prefix of the run (default /tmp/bench-...-SCHEDULER)")
    parser.add_argument("--profile", action="store_true", help="print the 25 costliest calls (cProfile)")
    args = parser.parse_args(argv)
    workload = burst_workload(args.jobs, args.cores, args.seed)
    sched = scheduler_from(args)
    (result, _), wall, cpu = timed(lambda: simulate(args.cores, workload, sched,
                                                    prefix=args.prefix or f"/tmp/bench-burst-{args.config.scheduler}"),
                                   args.profile)
    print(f"burst jobs={args.jobs} cores={args.cores} {args.config.label()}: wall {wall:.2f} s (cpu {cpu:.2f} s), {args.jobs / wall:,.0f} jobs/s, "
          f"decision core {result.scheduling_time:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
