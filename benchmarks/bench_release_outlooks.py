"""Time the release DP alone on the outlooks of a real run (less noisy than timing whole runs).

Data: none (``bench_long_queue``'s generated workload). ``--record FILE`` runs probabilistic
backfilling on a long queue once and keeps every batch the DP was asked for (the running jobs'
events, the head's missing cores, the candidates, tau, and the risks it returned);
``--replay FILE`` computes them all again ``--rounds`` times (a fresh ``ReleaseOutlook`` per batch,
as a pass makes it), reports the CPU time, and checks that every decision (accepted = risk < tau
or risk = 0) and every accepted risk is the recorded one, bit for bit. Replaying one recording
with two versions of the code (``PYTHONPATH=OLD_CHECKOUT python benchmarks/bench_release_outlooks.py
--replay FILE``, alternated with this checkout) compares their DP on the same inputs.

``--startup N`` times the DP's start-up instead: in each of ``N`` fresh processes (after importing
``batsched_ml.runner``, as a run has before its first outlook), the CPU of the first outlook (numba's
import and loading of the cached kernels) minus that of the same outlook again; prints each
process's value, their median, and whether ``scipy.linalg`` got imported on the way.

Usage: python benchmarks/bench_release_outlooks.py --record FILE [--jobs 1000] [--cores 93312] [--load 2]
           [--distribution user] [--seed 0]
       python benchmarks/bench_release_outlooks.py --replay FILE [--rounds 3]
       python benchmarks/bench_release_outlooks.py --startup N
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import subprocess
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


STARTUP_PROCESS = """
import sys, time
import numpy as np
import batsched_ml.runner
from batsched_ml.scheduling.release_dp import ReleaseOutlook
def outlook():
    ReleaseOutlook([1.0, 2.0, 2.0, 3.0], [0, 0, 1, 0], [0.3, 0.6, 1.0, 1.0], [4, 2], 2, [1, 3]).risks(
        [1, 3], np.array([[0.5, 0.5], [1.0, 0.0]]), np.array([[2.5, 4.0], [2.5, 0.5]]), 0.05)
start = time.process_time()
outlook()
first = time.process_time() - start
start = time.process_time()
outlook()
print(first - (time.process_time() - start), "scipy.linalg" in sys.modules)
"""


def startup(processes: int) -> int:
    """The DP's start-up (numba's import and loading), once per fresh process."""
    values, scipy_loaded = [], set()
    for _ in range(processes):
        out = subprocess.run([sys.executable, "-c", STARTUP_PROCESS], capture_output=True, text=True, check=True)
        value, loaded = out.stdout.split()
        values.append(float(value))
        scipy_loaded.add(loaded)
    print(f"DP start-up (numba loading), CPU s per process: median {statistics.median(values):.3f} "
          f"({', '.join(f'{v:.3f}' for v in values)}); scipy.linalg imported: {' / '.join(sorted(scipy_loaded))}")
    return 0


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
    parser.add_argument("--startup", type=int, metavar="N", help="time the DP's start-up in N fresh processes")
    args = parser.parse_args(argv)
    if args.startup:
        return startup(args.startup)
    if bool(args.record) == bool(args.replay):
        parser.error("give one of --record FILE, --replay FILE and --startup N")
    if args.record:
        record(args.record, args.jobs, args.cores, args.load, args.distribution, args.seed)
        return 0
    return replay(args.replay, args.rounds)


if __name__ == "__main__":
    sys.exit(main())
