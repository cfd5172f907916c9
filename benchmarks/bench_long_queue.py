"""Time a long queue on a big machine: thousands of jobs waiting on thousands of cores.

Data: none (the workload is generated, seeded): ``--jobs`` jobs on ``--cores``
cores (8,192 by default) arriving as a Poisson process at ``--load`` times the
machine's capacity (1.3: the queue grows for the whole run), sizes log-uniform
1..cores/8 (rounded to a power of two half the time), runtimes log-uniform
1 min..1 day, walltimes 1x..5x the runtime. Reports the wall and CPU time,
seconds per 1,000 jobs and the longest queue seen. ``--split`` separates
the fixed start-up from the per-job cost: the run is made a second time in the same process,
with every import, numba kernel and model library already loaded; start-up = the process's CPU
before the first run (interpreter, imports) + the first run - the second, per job = the second
run. ``--table`` runs every configuration of
``CONFIGS`` (or those named by ``--configs``), each in a fresh process, and prints one
Markdown row per configuration.

Usage: python benchmarks/bench_long_queue.py [--jobs 20000] [--cores 8192] [--load 1.3]
       [--scheduler easy] [--policy fcfs] [--reservations count|cores] [--backfill-order queue|sjbf]
       [--predictor ave2 --correction incremental] [--distribution hmm|user|forest|walltime]
       [--classifier random-forest] [--seed 0] [--profile] [--split]
       python benchmarks/bench_long_queue.py --table [--configs easy "prob hmm" ...] [--jobs N] [--cores N] [--split]
"""

from __future__ import annotations

import argparse
import math
import random
import re
import subprocess
import sys
import time

from batsched_ml.runner import simulate
from benchsched import add_scheduler_arguments, scheduler_from, timed


def long_queue_workload(nb_jobs: int, cores: int, load: float, seed: int) -> dict:
    """A Batsim workload whose offered load is ``load`` times the machine's capacity."""
    rng = random.Random(seed)
    specs = []
    for _ in range(nb_jobs):
        res = max(1, min(cores, int(round(math.exp(rng.uniform(0, math.log(cores / 8)))))))
        if rng.random() < 0.5:
            res = 1 << (res.bit_length() - 1)
        runtime = round(60 * 1440 ** rng.random(), 1)  # 1 min .. 1 day, log-uniform
        specs.append((res, runtime, round(runtime * rng.uniform(1.0, 5.0), 1)))
    mean_area = sum(res * runtime for res, runtime, _ in specs) / nb_jobs
    rate = load * cores / mean_area  # arrivals per second
    jobs, profiles, t = [], {}, 0.0
    for i, (res, runtime, walltime) in enumerate(specs):
        t += rng.expovariate(rate)
        name = f"d{runtime}"
        profiles[name] = {"type": "delay", "delay": runtime}
        jobs.append({"id": i, "subtime": round(t, 3), "res": res, "walltime": walltime, "profile": name})
    return {"nb_res": cores, "jobs": jobs, "profiles": profiles}


# every scheduler family, as bench flags (issue 23 §5: none may cost more as the machine grows)
CONFIGS = {
    "fcfs": ["--scheduler", "fcfs"],
    "easy": ["--scheduler", "easy"],
    "easy cores": ["--scheduler", "easy", "--reservations", "cores"],
    "easy++": ["--scheduler", "easy", "--predictor", "ave2", "--correction", "incremental", "--backfill-order", "sjbf"],
    "easy random-forest": ["--scheduler", "easy", "--classifier", "random-forest"],
    "conservative": ["--scheduler", "conservative"],
    "conservative cores": ["--scheduler", "conservative", "--reservations", "cores"],
    **{f"prob {d}": ["--scheduler", "probabilistic", "--distribution", d]
       for d in ("walltime", "user", "hmm", "forest")},
}
RESULT = re.compile(r"cpu ([0-9.]+) s\), ([0-9.]+) cpu s per 1,000 jobs, longest queue ([0-9,]+) jobs")
SPLIT = re.compile(r"start-up (-?[0-9.]+) cpu s \(imports ([0-9.]+) s\), warm run ([0-9.]+) cpu s per 1,000 jobs")


def table(configs, jobs: int, cores: int, load: float, seed: int, prefix: str | None = None,
          split: bool = False) -> None:
    """One fresh process per configuration (imports and numba's loading counted, as in a real run);
    each run's outputs at ``PREFIX-CONFIGURATION-CORES`` (``/tmp/bench-long-queue`` by default).
    With ``split``, also the start-up (CPU s, of which imports) and the warm run's CPU s per 1,000 jobs."""
    extra = " start-up CPU s (imports) | warm CPU s per 1,000 jobs |" if split else ""
    print(f"| configuration | cores | jobs | CPU s | CPU s per 1,000 jobs | longest queue |{extra}")
    print("|---|---:|---:|---:|---:|---:|" + "---:|---:|" * split)
    for name in configs:
        argv = [sys.executable, __file__, *CONFIGS[name], "--jobs", str(jobs), "--cores", str(cores), "--load",
                str(load), "--seed", str(seed), "--prefix", f"{prefix or '/tmp/bench-long-queue'}-{name.replace(' ', '-')}-{cores}"]
        out = subprocess.run(argv + ["--split"] * split, capture_output=True, text=True).stdout
        found, parts = RESULT.search(out), SPLIT.search(out)
        if found is None or (split and parts is None):
            print(f"| {name} | {cores:,} | {jobs:,} | failed | | |" + " |" * (2 * split))
            continue
        cpu, per_1000, longest = found.groups()
        row = f"| {name} | {cores:,} | {jobs:,} | {float(cpu):.1f} | {float(per_1000):.2f} | {longest} |"
        if split:
            startup, imports, warm = (float(v) for v in parts.groups())
            row += f" {startup:.2f} ({imports:.2f}) | {warm:.2f} |"
        print(row, flush=True)


def longest_queue(jobs) -> int:
    """The most jobs waiting at once (submitted, not yet started)."""
    events = []
    for job in jobs:
        events.append((job.submission_time, 1))
        if job.start_time >= 0:
            events.append((job.start_time, -1))
    events.sort(key=lambda e: (e[0], e[1]))  # starts before submissions at the same instant
    depth = most = 0
    for _, step in events:
        depth += step
        most = max(most, depth)
    return most


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--cores", type=int, default=8192)
    parser.add_argument("--load", type=float, default=1.3)
    add_scheduler_arguments(parser)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prefix", help="output prefix of the run (default /tmp/bench-...-SCHEDULER)")
    parser.add_argument("--profile", action="store_true", help="print the 25 costliest calls (cProfile)")
    parser.add_argument("--split", action="store_true",
                        help="run twice in this process: report the start-up and the warm per-job cost")
    parser.add_argument("--table", action="store_true", help="run the configurations of CONFIGS, one row each")
    parser.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=list(CONFIGS))
    args = parser.parse_args(argv)
    if args.table:
        table(args.configs, args.jobs, args.cores, args.load, args.seed, args.prefix, args.split)
        return 0
    imports = time.process_time()  # interpreter and imports, before the workload is generated
    workload = long_queue_workload(args.jobs, args.cores, args.load, args.seed)
    sched = scheduler_from(args)
    prefix = args.prefix or f"/tmp/bench-long-queue-{args.config.scheduler}"
    (result, core), wall, cpu = timed(lambda: simulate(args.cores, workload, sched, prefix=prefix), args.profile)
    config = f"jobs={args.jobs} cores={args.cores} load={args.load} seed={args.seed} {args.config.label()}"
    print(f"long queue {config}: wall {wall:.2f} s (cpu {cpu:.2f} s), {1000 * cpu / args.jobs:.3f} cpu s "
          f"per 1,000 jobs, longest queue {longest_queue(core.jobs.values()):,} jobs, "
          f"decision core {result.scheduling_time:.2f} s")
    if args.split:  # the same run again: everything a process loads once is loaded now
        sched = scheduler_from(args)
        _, _, warm = timed(lambda: simulate(args.cores, workload, sched, prefix=f"{prefix}-warm"))
        print(f"start-up {imports + cpu - warm:.3f} cpu s (imports {imports:.3f} s), warm run "
              f"{1000 * warm / args.jobs:.3f} cpu s per 1,000 jobs ({warm:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
