"""RLScheduler's headline comparison (Zhang et al., SC'20, Table V) with our environment and trainer.

    python benchmarks/rl_experiment.py train     [--seeds 0 1 2 3 4] [--generations 40] ...
    python benchmarks/rl_experiment.py evaluate  [--sequences 10]
    python benchmarks/rl_experiment.py report    > table.md
    python benchmarks/rl_experiment.py whole --whole results/rl-whole   # after experiments/rl.toml

``train``: a scoring network per trace (RLScheduler's ``lublin_256.swf`` and SDSC-SP2), per
scheduler (strict FCFS = "without backfilling", EASY = "with") and per seed, by CMA-ES on
256-job sequences starting in the first 80 % of the trace (``train-policy``'s defaults, the
budget below); resumable (checkpoints), each policy written to ``--policies DIR``
(``rl-<trace>-<backfill>-s<seed>.json``, with its training cost in its metadata).

``evaluate``: ``--sequences`` held-back sequences of 1,024 jobs starting in the last 20 % of
each trace (drawn with seed 2020), each run by every order -- FCFS, SJF (``spf``), WFP3, UNICEF,
F1, our learned function (``learned:experiments/policies/lublin256-t32-p16k.json#1``) and every
trained network (and the PPO networks ``ppo-<trace>-<backfill>-s<seed>.json`` present) -- as the
queue order of strict FCFS and of EASY, exact instants; AVEbsld (tau = 10 s) per sequence into
``RESULTS/sequences.csv`` (resumable: rows already there are kept).

``report``: the table: mean AVEbsld over the sequences with a 95 % bootstrap CI
(``scipy.stats.bootstrap``, percentile, 10,000 resamples, seeded); for the networks, per sequence the
mean over the training seeds, each seed's mean and a 95 % Student-t interval across the seeds'
means; RLScheduler's published numbers beside ours; each policy's training cost.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchdata import MissingData, SHARED, trace_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TRACES = {"lublin_256": "lublin_256.swf.gz", "SDSC-SP2": "SDSC-SP2"}
BASELINES = ["fcfs", "spf", "wfp3", "unicef", "f1", "learned:experiments/policies/lublin256-t32-p16k.json#1"]
LABELS = {"fcfs": "FCFS", "spf": "SJF", "wfp3": "WFP3", "unicef": "UNICEF", "f1": "F1",
          "learned:experiments/policies/lublin256-t32-p16k.json#1": "learned #1 (ours, Lublin-256)"}
# RLScheduler (Zhang et al., SC'20) Table V, bounded slowdown (tau = 10 s), as quoted in issue 27 (SDSC-SP2 with
# backfilling); the other cells of their table are not reproduced here from memory.
PUBLISHED = {("SDSC-SP2", "easy", "fcfs"): 1595.0, ("SDSC-SP2", "easy", "rl"): 398.0}


def trace_file(name: str, traces_dir: Path) -> Path:
    if name == "lublin_256":
        path = Path(traces_dir) / TRACES[name]
        if not path.is_file():
            raise MissingData(f"needs RLScheduler's lublin_256.swf(.gz) in {traces_dir} (or pass --traces-dir DIR)")
        return path
    return trace_path(TRACES[name], traces_dir)


def policy_file(policies: Path, trace: str, backfill: str, seed: int, algorithm: str = "rl") -> Path:
    """``rl-...``: trained here by CMA-ES; ``ppo-...``: by ``train-policy --algorithm ppo`` (evaluated if present)."""
    return policies / f"{algorithm}-{trace.lower().replace('_', '-')}-{backfill}-s{seed}.json"


def cmd_train(args) -> int:
    from batsched_ml.rl.es import ESConfig, train_es

    args.policies.mkdir(parents=True, exist_ok=True)
    for trace in args.traces:
        path = trace_file(trace, args.traces_dir)
        for backfill in args.backfill:
            for seed in args.seeds:
                out = policy_file(args.policies, trace, backfill, seed)
                config = ESConfig(workload=str(path), backfill=backfill, sequence_length=args.sequence_length,
                                  sequences=args.sequences_per_generation, population=args.population,
                                  generations=args.generations, seed=seed)
                t0 = time.perf_counter()
                network = train_es(config, out, checkpoint=args.checkpoints / (out.stem + ".checkpoint.pkl"),
                                   log=lambda text: print(f"{out.name}: {text}", file=sys.stderr, flush=True)
                                   if args.verbose else None)
                meta = network.metadata
                print(f"{out.name}: {meta['generations']} generations, fitness {meta['fitness']['mean']:+.3f}, "
                      f"{meta['simulated_jobs']:,} simulated jobs, {meta['cpu_time_s']} CPU-s "
                      f"({time.perf_counter() - t0:.0f} s this session)", flush=True)
    return 0


def _orders(args, trace: str, backfill: str) -> dict:
    """label -> policy spec of the orders evaluated on ``trace`` under ``backfill``."""
    orders = {LABELS.get(b, b): b for b in BASELINES}
    for algorithm, label in (("rl", "RL"), ("ppo", "PPO")):
        for trained_on in args.traces:
            for seed in args.seeds:
                path = policy_file(args.policies, trained_on, backfill, seed, algorithm)
                if path.exists() and _finished(path):
                    spec = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                    orders[f"{label} ({trained_on}) s{seed}"] = f"rl:{spec}"
    return orders


def _finished(path: Path) -> bool:
    """A policy file whose training reached its generations (a run in progress writes one each generation)."""
    meta = json.loads(path.read_text()).get("metadata", {})
    config = meta.get("config", {})
    if meta.get("algorithm") == "maskable-ppo":
        return meta.get("timesteps", 0) >= config.get("timesteps", 1)
    return meta.get("generations", 0) >= config.get("generations", 1)


def cmd_evaluate(args) -> int:
    from batsched_ml.rl.episodes import Sequences, load_trace
    from batsched_ml.rl.evaluate import sequence_bsld

    args.results.mkdir(parents=True, exist_ok=True)
    out = args.results / "sequences.csv"
    done = set()
    if out.exists():
        with open(out, newline="") as f:
            done = {(r["trace"], r["backfill"], r["order"], int(r["start"])) for r in csv.DictReader(f)}
    new = not out.exists()
    with open(out, "a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(["trace", "backfill", "order", "spec", "start", "avebsld", "cpu_s"])
        for trace in args.traces:
            sequences = Sequences(load_trace(str(trace_file(trace, args.traces_dir))), 1024, (0.8, 1.0))
            starts = sequences.starts(args.sequences, 2020)
            for backfill in args.backfill:
                for label, spec in _orders(args, trace, backfill).items():
                    for start in starts:
                        if (trace, backfill, label, start) in done:
                            continue
                        t0 = time.process_time()
                        bsld = sequence_bsld(spec, backfill, sequences, start)
                        writer.writerow([trace, backfill, label, spec, start, f"{bsld:.6f}",
                                         f"{time.process_time() - t0:.3f}"])
                        f.flush()
                    print(f"{trace} {backfill} {label}: done", file=sys.stderr, flush=True)
    return 0


def _ci(values) -> tuple[float, float]:
    from scipy.stats import bootstrap

    values = np.asarray(values, dtype=float)
    if len(values) < 2 or np.all(values == values[0]):
        return float(values.mean()), float(values.mean())
    res = bootstrap((values,), np.mean, n_resamples=10_000, confidence_level=0.95, method="percentile",
                    random_state=np.random.default_rng(0))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _seed_ci(means) -> tuple[float, float]:
    """95 % Student-t interval of the mean of the training seeds' means (each over the same sequences):
    the spread a new training seed would bring, which the per-sequence interval does not show. With a
    few seeds it is wide; its lower end is clipped at 1, the least AVEbsld there is."""
    from scipy.stats import t

    means = np.asarray(means, dtype=float)
    half = t.ppf(0.975, len(means) - 1) * means.std(ddof=1) / np.sqrt(len(means))
    return max(float(means.mean() - half), 1.0), float(means.mean() + half)


def cmd_report(args) -> int:
    rows = list(csv.DictReader(open(args.results / "sequences.csv", newline="")))
    print("| trace | backfilling | order | mean AVEbsld | 95% CI (sequences) | / FCFS | seeds: per-seed means | "
          "95% CI across seeds | RLScheduler (published) |")
    print("|---|---|---|---:|---|---:|---|---|---:|")
    for trace in args.traces:
        for backfill in args.backfill:
            sub = [r for r in rows if r["trace"] == trace and r["backfill"] == backfill]
            by_order: dict = {}
            for r in sub:
                by_order.setdefault(r["order"], {})[int(r["start"])] = float(r["avebsld"])
            groups: dict = {}
            for order, values in by_order.items():
                base = order.rsplit(" s", 1)[0] if order.startswith(("RL (", "PPO (")) else order
                groups.setdefault(base, []).append(values)
            fcfs = np.mean(list(by_order["FCFS"].values())) if "FCFS" in by_order else float("nan")
            for base, seeds in groups.items():
                starts = sorted(set.intersection(*(set(s) for s in seeds)))
                per_sequence = [np.mean([s[start] for s in seeds]) for start in starts]
                lo, hi = _ci(per_sequence)
                seed_means = [float(np.mean([s[start] for start in starts])) for s in seeds]
                spread = ", ".join(f"{m:.1f}" for m in seed_means) if len(seeds) > 1 else ""
                across = _seed_ci(seed_means) if len(seeds) > 1 else None
                across = "" if across is None else f"{across[0]:,.1f} - {across[1]:,.1f}"
                key = "rl" if base.startswith("RL (") and trace in base else "fcfs" if base == "FCFS" else None
                published = PUBLISHED.get((trace, backfill, key))
                print(f"| {trace} | {'EASY' if backfill == 'easy' else 'none'} | {base} | {np.mean(per_sequence):,.1f} | "
                      f"{lo:,.1f} - {hi:,.1f} | {np.mean(per_sequence) / fcfs:.3f} | {spread} | {across} | "
                      f"{'' if published is None else f'{published:,.0f}'} |")
    print()
    print("| policy | trained on | backfilling | generations | simulated jobs | CPU s | wall s | final fitness |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for path in sorted(args.policies.glob("rl-*.json")):
        if not _finished(path):
            continue
        meta = json.loads(path.read_text()).get("metadata", {})
        cfg = meta.get("config", {})
        print(f"| {path.name} | {Path(meta.get('trained_on', '?')).name} | {cfg.get('backfill')} | "
              f"{meta.get('generations')} | {meta.get('simulated_jobs', 0):,} | {meta.get('cpu_time_s')} | "
              f"{meta.get('wall_time_s')} | {meta.get('fitness', {}).get('mean', float('nan')):+.3f} |")
    ppo = [path for path in sorted(args.policies.glob("ppo-*.json")) if _finished(path)]
    if ppo:
        print()
        print("| policy | trained on | backfilling | environment steps | reward | CPU s | wall s |")
        print("|---|---|---|---:|---|---:|---:|")
    for path in ppo:
        meta = json.loads(path.read_text()).get("metadata", {})
        cfg = meta.get("config", {})
        print(f"| {path.name} | {Path(meta.get('trained_on', '?')).name} | {cfg.get('backfill')} | "
              f"{meta.get('timesteps'):,} | {cfg.get('reward')} | {meta.get('cpu_time_s')} | "
              f"{meta.get('wall_time_s')} |")
    return 0


def cmd_whole(args) -> int:
    """The whole-trace table from the ``experiments/rl.toml`` campaign's results directories, beside the
    best non-clairvoyant configuration of ``--others`` (the ``experiments/gaussier2015.toml`` results)."""
    runs: dict = {}
    for directory in args.whole:
        path = Path(directory) / "results.csv"
        if path.is_file():
            for r in csv.DictReader(open(path, newline="")):
                if r["status"] == "ok":
                    runs[(r["trace"], r["config"])] = float(r["avebsld10"])
    best: dict = {}
    for r in csv.DictReader(open(args.others, newline="")):
        if r["status"] == "ok" and "clairvoyant" not in r["config"] and r["config"] != "easy":
            value = float(r["avebsld10"])
            if r["trace"] not in best or value < best[r["trace"]][0]:
                best[r["trace"]] = (value, r["config"])
    configs = ["easy", "easy-f1"] + sorted({c for _, c in runs if c.startswith("easy-rl-")})
    print("| trace | " + " | ".join(configs) + " | best of our other methods (gaussier2015) |")
    print("|---|" + "---:|" * len(configs) + "---|")
    for trace in ("KTH-SP2", "CTC-SP2", "SDSC-BLUE"):
        cells = [f"{runs[(trace, c)]:.1f}" if (trace, c) in runs else "not run" for c in configs]
        value, name = best.get(trace, (float("nan"), "?"))
        print(f"| {trace} | " + " | ".join(cells) + f" | {value:.1f} ({name}) |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("train", "evaluate", "report", "whole"))
    parser.add_argument("--traces", nargs="+", default=list(TRACES), choices=list(TRACES))
    parser.add_argument("--traces-dir", type=Path, default=SHARED / "traces")
    parser.add_argument("--backfill", nargs="+", default=["none", "easy"], choices=["none", "easy"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--policies", type=Path, default=ROOT / "experiments" / "policies" / "rl")
    parser.add_argument("--checkpoints", type=Path, default=Path("results") / "rl-checkpoints")
    parser.add_argument("--results", type=Path, default=Path("results") / "rl")
    parser.add_argument("--generations", type=int, default=40)
    parser.add_argument("--population", type=int, default=8)
    parser.add_argument("--sequences-per-generation", type=int, default=4)
    parser.add_argument("--sequence-length", type=int, default=256)
    parser.add_argument("--sequences", type=int, default=10, help="held-back evaluation sequences")
    parser.add_argument("--whole", nargs="+", default=[Path("results") / "rl-whole"],
                        help="results directories of the experiments/rl.toml campaign (whole)")
    parser.add_argument("--others", type=Path, default=ROOT / "benchmarks" / "results" / "gaussier2015" / "results.csv",
                        help="results.csv of the experiments/gaussier2015.toml campaign (whole: the best other method)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    args.checkpoints.mkdir(parents=True, exist_ok=True)
    try:
        return {"train": cmd_train, "evaluate": cmd_evaluate, "report": cmd_report,
                "whole": cmd_whole}[args.command](args)
    except MissingData as exc:
        print(f"rl_experiment: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
