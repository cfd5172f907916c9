"""Speed of the trial-simulation kernel (Carastan-Santos & de Camargo 2017, section 3.2).

    python benchmarks/bench_trials.py [--trials 256000] [--tuples 3] [--chunk 16384]

Prints trials per second and seconds per tuple for tuples of the Lublin model (256 cores,
|S| = 16, |Q| = 32). The paper: 256,000 trials of one tuple in under 11 minutes on six cores.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from batsched_ml.learning.procedure import workload_jobs
from batsched_ml.learning.trials import draw_tuples, trial_scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=256000)
    parser.add_argument("--tuples", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=16384)
    parser.add_argument("--cores", type=int, default=256)
    args = parser.parse_args()
    tuples = draw_tuples(workload_jobs(args.cores, 10000, 0), args.tuples, seed=0)
    times = []
    for i, (s_tasks, q_tasks) in enumerate(tuples):
        cpu, wall = time.process_time(), time.perf_counter()
        scores = trial_scores(s_tasks, q_tasks, args.trials, args.cores, seed=i, chunk=args.chunk)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        times.append((wall, cpu))
        print(f"tuple {i}: {args.trials} trials in {wall:.1f} s wall, {cpu:.1f} s CPU "
              f"({args.trials / cpu:,.0f} trials/CPU-s); scores {scores.min():.4f}..{scores.max():.4f}")
    wall, cpu = np.mean(times, axis=0)
    print(f"mean per tuple: {wall:.1f} s wall, {cpu:.1f} s CPU; {args.trials / cpu:,.0f} trials per CPU-second; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
