"""Speed of the reinforcement-learning environment (``batsched_ml/Scheduling-v0``): env steps per
CPU-second for a random agent on 1,024-job sequences, and how much of a step is the environment's own.

    python benchmarks/bench_rl_env.py [SDSC-SP2 lublin_256 | lublin:256 | TRACE.swf.gz ...] [--episodes 5]
        [--backfill none easy] [--window 128] [--profile] [--scaling | --lockstep]

Traces by short name (``SDSC-SP2``, ``KTH``...) in ``--traces-dir`` (default
``$BATSCHED_ML_SHARED/traces`` or ``../shared/traces``), ``lublin_256`` (RLScheduler's file, same
directory), paths, or ``lublin:CORES[:JOBS[:SEED]]`` (a Lublin-Feitelson workload generated on the
spot, as the environment reads it: no file needed).
The random agent picks uniformly among the slots holding a job (a few microseconds: numpy's
generator, counted in the figures). CPU time is the figure to read on a shared machine. Each row runs
the same episodes with the same random choices in the environment's lean core (the default) and in
the full path (``simulator="full"``: the embedded simulator, the decision core and the real
schedulers); both must take the same steps. ``--scaling``: the CPU cost of one step against the
number of queued jobs (``scaling_workload``). ``--lockstep``: both cores driven step by step by one
random agent, every observation, mask, reward and summary compared.
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


def lockstep(path: str, backfill: str, episodes: int, window: int) -> int:
    """Run a random agent in the lean and the full core at once on ``episodes`` sequences: every
    observation, mask, reward and episode summary must be equal (an AssertionError says where not).
    Returns the steps taken."""
    from batsched_ml.rl.env import SchedulingEnv

    lean, full = (SchedulingEnv(path, window=window, backfill=backfill, simulator=simulator)
                  for simulator in ("lean", "full"))
    steps = 0
    for episode in range(episodes):
        rng = np.random.default_rng(episode)
        (obs_a, info_a), (obs_b, info_b) = lean.reset(seed=episode), full.reset(seed=episode)
        while True:
            assert (info_a["action_mask"] == info_b["action_mask"]).all(), (episode, steps)
            assert all((obs_a[k] == obs_b[k]).all() for k in obs_a), (episode, steps)
            if "episode" in info_a:
                summaries = [dict(i["episode"], jobs_csv=None, simulator=None) for i in (info_a, info_b)]
                assert summaries[0] == summaries[1], summaries
                break
            action = int(rng.integers(np.count_nonzero(info_a["action_mask"])))
            (obs_a, r_a, _, _, info_a), (obs_b, r_b, _, _, info_b) = lean.step(action), full.step(action)
            assert r_a == r_b, (episode, steps, r_a, r_b)
            steps += 1
    return steps


def scaling_workload(queued: int, nb_cores: int = 1024, seed: int = 0) -> dict:
    """A machine taken by one job for 10^7 s, then ``queued`` jobs of 2-``nb_cores`` cores arriving
    one a second (walltimes 1 min-1 day): every arrival is a decision with one more job waiting."""
    rng = np.random.default_rng(seed)
    walltimes = np.exp(rng.uniform(np.log(60.0), np.log(86_400.0), queued)).round()
    jobs = [{"id": "0", "subtime": 0.0, "walltime": 1e7, "res": nb_cores - 1, "profile": "big"}]
    jobs += [{"id": str(i + 1), "subtime": float(i + 1), "walltime": float(w), "res": int(r), "profile": "small"}
             for i, (w, r) in enumerate(zip(walltimes, rng.integers(2, nb_cores + 1, queued)))]
    return {"nb_res": nb_cores, "jobs": jobs, "profiles": {"big": {"type": "delay", "delay": 1e7},
                                                          "small": {"type": "delay", "delay": 30.0}}}


def step_cost(queue_lengths=(128, 1_000, 10_000, 100_000), backfill="easy", window=128, measured=256):
    """Microseconds (CPU) of one environment step -- the agent's choice applied, the pass, the next
    observation -- with N jobs queued (``scaling_workload``), mean over the ``measured`` steps before
    the queue reaches N."""
    from batsched_ml.rl.env import SchedulingEnv

    rows = []
    for n in queue_lengths:
        env = SchedulingEnv(scaling_workload(n), sequence_length=n + 1, window=window, backfill=backfill)
        obs, info = env.reset(options={"start": 0})
        cpu = 0.0
        while info["queued"] < n:
            timed = info["queued"] >= n - measured
            t0 = time.process_time() if timed else 0.0
            obs, _, _, _, info = env.step(0)
            if timed:
                cpu += time.process_time() - t0
        env.close()
        rows.append((n, cpu / measured * 1e6))
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
    parser.add_argument("--scaling", action="store_true", help="only the cost of a step against the queue length")
    parser.add_argument("--lockstep", action="store_true",
                        help="only check that the lean and full cores take the same steps (--episodes sequences)")
    args = parser.parse_args()
    from batsched_ml.rl.env import SchedulingEnv

    if args.scaling:
        print("| queued jobs | " + " | ".join(f"one step, {b}, CPU us" for b in args.backfill) + " |")
        print("|---:|" + "---:|" * len(args.backfill))
        columns = [step_cost(backfill=b, window=args.window) for b in args.backfill]
        for i, (n, _) in enumerate(columns[0]):
            print(f"| {n:,} | " + " | ".join(f"{c[i][1]:.1f}" for c in columns) + " |")
        return 0

    try:
        paths = [name if name.startswith("lublin:") else
                 str(trace_path(args.traces_dir / "lublin_256.swf.gz" if name == "lublin_256" else name,
                                args.traces_dir))
                 for name in args.traces]
    except MissingData as exc:
        print(f"bench_rl_env: error: {exc}", file=sys.stderr)
        return 2
    if args.lockstep:
        for path in paths:
            for backfill in args.backfill:
                steps = lockstep(path, backfill, args.episodes, args.window)
                print(f"{Path(path).name} {backfill}: {args.episodes} sequences, {steps} steps, the same in both cores")
        return 0

    print("| trace | backfill | episodes | steps | steps/job | lean CPU s | lean steps per CPU-s | full CPU s | "
          "full steps per CPU-s | speed-up | median / max queue |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for path in paths:
        for backfill in args.backfill:
            measured = {}
            for simulator in ("lean", "full"):
                env = SchedulingEnv(path, window=args.window, backfill=backfill, simulator=simulator)
                if args.profile:
                    import cProfile
                    import pstats

                    cProfile.runctx("run_random(env, 1, args.seed)", globals(), locals(), "/tmp/bench_rl_env.prof")
                    pstats.Stats("/tmp/bench_rl_env.prof").sort_stats("tottime").print_stats(25)
                run_random(env, 1, args.seed + 1000)  # warm-up: caches, imports, compilation
                measured[simulator] = run_random(env, args.episodes, args.seed)
            args.profile = False
            (steps, cpu, queues, starts), (full_steps, full_cpu, _, full_starts) = measured["lean"], measured["full"]
            if (steps, starts) != (full_steps, full_starts):
                print(f"bench_rl_env: error: the lean and full cores diverged ({steps} vs {full_steps} steps)",
                      file=sys.stderr)
                return 1
            jobs = args.episodes * env.sequences.length
            print(f"| {Path(path).name} | {backfill} | {args.episodes} | {steps} | {steps / jobs:.2f} | {cpu:.2f} | "
                  f"{steps / cpu:,.0f} | {full_cpu:.2f} | {steps / full_cpu:,.0f} | {full_cpu / cpu:.1f} | "
                  f"{int(np.median(queues))} / {max(queues)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
