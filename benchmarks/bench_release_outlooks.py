"""Time the release DP alone on the outlooks of a real run (less noisy than timing whole runs).

Data: none (``bench_long_queue``'s generated workload). ``--record FILE`` runs probabilistic
backfilling on a long queue once and keeps every batch the DP was asked for (the running jobs'
events, the head's missing cores, the candidates, tau, and the risks it returned);
``--replay FILE`` computes them all again ``--rounds`` times (a fresh ``ReleaseOutlook`` per batch,
as a pass makes it), reports the CPU time, and checks that every decision (accepted = risk < tau
or risk = 0) and every accepted risk is the recorded one, bit for bit. Replaying one recording
with two versions of the code (``PYTHONPATH=OLD_CHECKOUT python benchmarks/bench_release_outlooks.py
--replay FILE``, alternated with this checkout) compares their DP on the same inputs.

Usage: python benchmarks/bench_release_outlooks.py --record FILE [--jobs 1000] [--cores 93312] [--load 2]
           [--distribution user] [--seed 0]
       python benchmarks/bench_release_outlooks.py --replay FILE [--rounds 3]
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batsched_ml.scheduling import release_kernel  # noqa: E402
from batsched_ml.scheduling.release_dp import ReleaseOutlook  # noqa: E402


def record(path: str, jobs: int, cores: int, load: float, distribution: str, seed: int) -> None:
    from bench_long_queue import long_queue_workload
    from benchsched import add_scheduler_arguments, scheduler_from

    from batsched_ml.runner import simulate

    batches = []
    init, risks = ReleaseOutlook.__init__, ReleaseOutlook.risks

    def keep_inputs(outlook, times, owners, cum, running_cores, missing, sizes):
        outlook.recorded = [np.array(times), np.array(owners), np.array(cum), np.array(running_cores), int(missing)]
        init(outlook, times, owners, cum, running_cores, missing, sizes)

    def recorded_risks(outlook, sizes, q, ends, tau=None):
        got = risks(outlook, sizes, q, ends, tau)
        batches.append((*outlook.recorded, np.array(sizes), np.array(q), np.array(ends), tau, got))
        return got

    ReleaseOutlook.__init__, ReleaseOutlook.risks = keep_inputs, recorded_risks
    parser = argparse.ArgumentParser()
    add_scheduler_arguments(parser)
    args = parser.parse_args(["--scheduler", "probabilistic", "--distribution", distribution])
    workload = long_queue_workload(jobs, cores, load, seed)
    simulate(cores, workload, scheduler_from(args), prefix=str(Path(path).with_suffix("")) + "-run")
    ReleaseOutlook.__init__, ReleaseOutlook.risks = init, risks
    with open(path, "wb") as out:
        pickle.dump({"jobs": jobs, "cores": cores, "load": load, "distribution": distribution, "seed": seed,
                     "batches": batches}, out)
    print(f"{len(batches):,} batches of {jobs:,} jobs on {cores:,} cores ({distribution}) recorded in {path}")


def replay(path: str, rounds: int) -> int:
    with open(path, "rb") as src:
        data = pickle.load(src)
    batches = data["batches"]
    release_kernel.compile_kernels()

    def run():
        return [ReleaseOutlook(times, owners, cum, cores, missing, sizes).risks(sizes, q, ends, tau)
                for times, owners, cum, cores, missing, sizes, q, ends, tau, _ in batches]

    got = run()  # (numba's loading and the first calls outside the timing)
    cpu = []
    for _ in range(rounds):
        start = time.process_time()
        got = run()
        cpu.append(time.process_time() - start)
    differing = 0
    for mine, (*_, tau, recorded) in zip(got, batches):
        accept_mine, accept_rec = (mine < tau) | (mine == 0.0), (recorded < tau) | (recorded == 0.0)
        differing += not (np.array_equal(accept_mine, accept_rec)
                          and np.array_equal(mine[accept_mine], recorded[accept_rec]))
    best = min(cpu)
    print(f"{len(batches):,} batches ({data['jobs']:,} jobs, {data['cores']:,} cores, {data['distribution']}): "
          f"{best:.3f} CPU s per replay (best of {rounds}: {', '.join(f'{c:.3f}' for c in cpu)}), "
          f"{1e3 * best / len(batches):.3f} ms per batch; batches with another decision or accepted risk: "
          f"{differing}")
    return 1 if differing else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", metavar="FILE")
    parser.add_argument("--replay", metavar="FILE")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--cores", type=int, default=93312)
    parser.add_argument("--load", type=float, default=2.0)
    parser.add_argument("--distribution", default="user")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if bool(args.record) == bool(args.replay):
        parser.error("give one of --record FILE and --replay FILE")
    if args.record:
        record(args.record, args.jobs, args.cores, args.load, args.distribution, args.seed)
        return 0
    return replay(args.replay, args.rounds)


if __name__ == "__main__":
    sys.exit(main())
