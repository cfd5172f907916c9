"""Speed of the reinforcement-learning environment (``batsched_ml/Scheduling-v0``): env steps per
CPU-second for a random agent on 1,024-job sequences, and how much of a step is the environment's own.

    python benchmarks/bench_rl_env.py [SDSC-SP2 lublin_256 | TRACE.swf.gz ...] [--episodes 5]
        [--backfill none easy] [--window 128] [--profile]

Traces by short name (``SDSC-SP2``, ``KTH``...) in ``--traces-dir`` (default
``$BATSCHED_ML_SHARED/traces`` or ``../shared/traces``), ``lublin_256`` (RLScheduler's file, same
directory), or paths.
The random agent picks uniformly among the slots holding a job (a few microseconds: numpy's
generator). CPU time is the figure to read on a shared machine. Also printed: steps per job, and the
same episodes with the same random choices *without* the environment (the simulator, the decision
core and the scheduler asking an in-process chooser): the difference is the environment's own cost
per step (observation, greenlet switches, step bookkeeping).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchdata import MissingData, add_data_arguments, trace_path  # noqa: E402


def run_random(env, episodes: int, seed: int):
    """The environment with a random agent: (steps, CPU s, queue lengths, sequence starts)."""
    rng = np.random.default_rng(seed)
    steps, queue_lengths, starts = 0, [], []
    obs, info = env.reset(seed=seed)
    done = 0
    t0 = time.process_time()
    while done < episodes:
        k = int(np.count_nonzero(info["action_mask"]))
        obs, reward, terminated, truncated, info = env.step(int(rng.integers(k)))
        steps += 1
        if terminated:
            done += 1
            starts.append(info["episode"]["start"])
            if done < episodes:
                obs, info = env.reset()
        else:
            queue_lengths.append(info["queued"])
    return steps, time.process_time() - t0, queue_lengths, starts


def without_environment(env, starts, seed: int) -> float:
    """CPU s of the same episodes, same random choices, without the environment: the simulator, the
    decision core and the scheduler asking an in-process chooser (no observation, no greenlet)."""
    from batsched_ml.rl.agent import agent_scheduler
    from batsched_ml.runner import simulate
    from batsched_ml.simulator.engine import NO_LATENCY

    rng = np.random.default_rng(seed)
    workloads = [env.sequences.workload(start) for start in starts]
    t0 = time.process_time()
    for workload in workloads:
        scheduler = agent_scheduler(lambda queue, now: int(rng.integers(len(queue.slots))), env.backfill, env.window)
        simulate(env.nb_cores, workload, scheduler, latency=NO_LATENCY)
    return time.process_time() - t0


def decision_cost(queue_lengths=(10, 128, 1_000, 10_000, 100_000), window=128, repeats=2000):
    """Microseconds (wall, best of 7) of one decision's own work -- the agent queue's choice with the
    observation built -- with N jobs queued: flat in N (O(window))."""
    from types import SimpleNamespace

    from batsched_ml.core.job import Job
    from batsched_ml.core.machine import Machine
    from batsched_ml.rl import observation
    from batsched_ml.rl.agent import AgentQueue

    rows = []
    for n in queue_lengths:
        queue = AgentQueue(lambda q, now: (observation.build(q, now), 0)[1], window)
        queue.on_simulation_begins(1024)
        rng = np.random.default_rng(0)
        for seq in range(1, n + 1):
            res = int(rng.integers(1, 1025))
            queue.add(Job(id=f"w0!{seq}", workload="w0", name=str(seq), subtime=float(seq), walltime=3600.0,
                          res=res, profile="p", data={}, submission_time=float(seq), seq=seq, estimate=3600.0),
                      float(seq))
        ctx = SimpleNamespace(now=float(n + 10), machine=Machine(1024))
        best = float("inf")
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(repeats):
                queue.begin_pass(ctx)
                queue.first(ctx.now)
            best = min(best, (time.perf_counter() - t0) / repeats * 1e6)
        rows.append((n, best))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="*", default=["SDSC-SP2", "lublin_256"])
    add_data_arguments(parser)
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--backfill", nargs="+", default=["none", "easy"])
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="cProfile summary of the first configuration")
    parser.add_argument("--scaling", action="store_true", help="only the cost of a decision against the queue length")
    args = parser.parse_args()
    from batsched_ml.rl.env import SchedulingEnv

    if args.scaling:
        print("| queued jobs | one decision (choice + observation), us |")
        print("|---:|---:|")
        for n, us in decision_cost(window=args.window):
            print(f"| {n:,} | {us:.1f} |")
        return 0

    print("| trace | backfill | episodes | steps | steps/job | CPU s | steps per CPU-s | same choices without the "
          "environment, CPU s | environment's own cost per step (us) | median / max queue |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in args.traces:
        try:
            path = trace_path(args.traces_dir / "lublin_256.swf.gz" if name == "lublin_256" else name,
                              args.traces_dir)
        except MissingData as exc:
            print(f"bench_rl_env: error: {exc}", file=sys.stderr)
            return 2
        for backfill in args.backfill:
            env = SchedulingEnv(str(path), window=args.window, backfill=backfill)
            if args.profile:
                import cProfile
                import pstats

                cProfile.runctx("run_random(env, 1, args.seed)", globals(), locals(), "/tmp/bench_rl_env.prof")
                pstats.Stats("/tmp/bench_rl_env.prof").sort_stats("tottime").print_stats(25)
                args.profile = False
            run_random(env, 1, args.seed + 1000)  # warm-up: caches, imports
            steps, cpu, queues, starts = run_random(env, args.episodes, args.seed)
            bare = without_environment(env, starts, args.seed)
            jobs = args.episodes * env.sequences.length
            overhead = (cpu - bare) / steps * 1e6
            print(f"| {path.name} | {backfill} | {args.episodes} | {steps} | {steps / jobs:.2f} | {cpu:.2f} | "
                  f"{steps / cpu:,.0f} | {bare:.2f} | {overhead:.0f} | {int(np.median(queues))} / {max(queues)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
