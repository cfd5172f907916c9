"""RLScheduler's Table V (their README's bsld table) under their own protocol: every cell of Lublin-1,
SDSC-SP2 and Lublin-2, theirs beside ours, then their trained models and ours.

    python benchmarks/rlscheduler_table.py run [--their-data DIR] [--their-models DIR] [--samples 20] \
        [--policies experiments/policies/rlscheduler]
    python benchmarks/rlscheduler_table.py report > table.md

``run`` scores, on the protocol's ten 1,024-job sequences per trace, with and without their
backfilling (``evaluate_orders(protocol="rlscheduler")``, the code of ``batsched-ml evaluate-policy``):

* the heuristics (FCFS, SJF, F1, WFP3 and UNICEF as published and with the correct wait);
* their trained policies (``--their-models``: their ``trained_models/bsld`` folder), greedy and
  ``--samples`` draws from the softmax (their evaluation samples; each draw a seed);
* our networks (``--policies``: ``es-<trace>-<backfill>-s<seed>.json`` and ``ppo-...``, trained by
  ``train-policy --protocol rlscheduler``), each seed its own row.

Rows go to ``RESULTS/rlscheduler.csv`` (resumable; this run's:
``benchmarks/results/rlscheduler-sequences.csv``). ``report``: the tables of
``benchmarks/results/rlscheduler.md``. Lublin-2 is their ``data/lublin_256_new2``, not in
``../shared``: give their data folder with ``--their-data`` (else its rows are skipped).
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
from benchdata import SHARED  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# name -> (file, folder it is looked for in: shared traces or their data, their model's folder)
TRACES = {"Lublin-1": ("lublin_256.swf.gz", "shared", "lublin256"),
          "SDSC-SP2": ("SDSC-SP2-1998-4.2-cln.swf.gz", "shared", "sdsc_sp2"),
          "Lublin-2": ("lublin_256_new2", "theirs", "Lublin256new")}
HEURISTICS = ["fcfs", "wfp3-published", "unicef-published", "sjf", "f1", "wfp3", "unicef"]
# their README: FCFS, WFP3, UNI, SJF, F1, RL
PUBLISHED = {("Lublin-1", False): (7273.77, 19753.53, 22274.74, 277.35, 258.37, 254.67),
             ("SDSC-SP2", False): (1727.54, 3000.88, 1848.45, 2680.55, 1232.06, 466.44),
             ("Lublin-2", False): (7842.47, 9523.18, 11265.31, 787.89, 698.34, 724.51),
             ("Lublin-1", True): (235.82, 133.87, 307.23, 73.31, 75.07, 58.64),
             ("SDSC-SP2", True): (1595.12, 1083.12, 548.01, 2167.84, 1098.22, 397.82),
             ("Lublin-2", True): (247.61, 318.35, 379.59, 91.99, 148.25, 118.79)}
FILE_KEYS = {"Lublin-1": "lublin1", "SDSC-SP2": "sdsc-sp2", "Lublin-2": "lublin2"}


def trace_file(name: str, args) -> Path | None:
    file, where, _ = TRACES[name]
    folder = args.traces_dir if where == "shared" else args.their_data
    if folder is None:
        return None
    path = Path(folder) / file
    return path if path.is_file() else None


def orders_for(name: str, backfill: bool, args) -> dict:
    """label -> order spec."""
    orders = {h: h for h in HEURISTICS}
    if args.their_models is not None:
        folder = Path(args.their_models) / TRACES[name][2]
        runs = sorted(p for p in folder.glob("*/simple_save")) if folder.is_dir() else []
        if runs:
            model = runs[-1].parent
            orders["their RL, greedy"] = f"rlscheduler-model:{model}"
            for k in range(args.samples):
                orders[f"their RL, sample {k}"] = f"rlscheduler-model:{model}#sample={k}"
    mode = "rlscheduler" if backfill else "none"
    for path in sorted(Path(args.policies).glob(f"*-{FILE_KEYS[name]}-{mode}-s*.json")):
        meta = json.loads(path.read_text()).get("metadata", {})
        if meta.get("generations", 0) >= meta.get("config", {}).get("generations", 1) or "timesteps" in meta:
            spec = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            orders[path.stem] = f"rl:{spec}"
    return orders


def cmd_run(args) -> int:
    from batsched_ml.rl.protocols import evaluate_orders

    args.results.mkdir(parents=True, exist_ok=True)
    out = args.results / "rlscheduler.csv"
    done = set()
    if out.exists():
        done = {(r["trace"], r["backfill"], r["order"]) for r in csv.DictReader(open(out, newline=""))}
    new = not out.exists()
    with open(out, "a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(["trace", "backfill", "order", "spec", "start", "bsld", "cpu_s"])
        for name in args.traces:
            path = trace_file(name, args)
            if path is None:
                print(f"{name}: {TRACES[name][0]} not found, skipped", file=sys.stderr)
                continue
            for backfill in (False, True):
                for label, spec in orders_for(name, backfill, args).items():
                    if (name, str(backfill), label) in done:
                        continue
                    t0 = time.process_time()
                    [result] = evaluate_orders(path, [spec], protocol="rlscheduler", backfill=backfill)
                    cpu = (time.process_time() - t0) / len(result.values)
                    for start, value in zip(result.starts, result.values):
                        writer.writerow([name, backfill, label, spec, start, repr(value), f"{cpu:.3f}"])
                    f.flush()
                    print(f"{name} {'backfill' if backfill else 'none'} {label}: {result.mean:.2f}", file=sys.stderr)
    return 0


def _seed_interval(means) -> str:
    from scipy.stats import t

    means = np.asarray(means, float)
    if len(means) < 2:
        return ""
    half = t.ppf(0.975, len(means) - 1) * means.std(ddof=1) / np.sqrt(len(means))
    return f"{max(means.mean() - half, 1.0):,.2f} - {means.mean() + half:,.2f}"


def cmd_report(args) -> int:
    rows = list(csv.DictReader(open(args.results / "rlscheduler.csv", newline="")))
    by: dict = {}
    for r in rows:
        by.setdefault((r["trace"], r["backfill"] == "True", r["order"]), []).append(float(r["bsld"]))
    mean = lambda key: float(np.mean(by[key])) if key in by else None  # noqa: E731
    cell = lambda v: "" if v is None else f"{v:,.2f}"  # noqa: E731
    print("### Heuristics: theirs (README) / ours\n")
    print("| trace | backfilling | FCFS | WFP3 | UNICEF | SJF | F1 | all equal | WFP3, correct wait | "
          "UNICEF, correct wait |")
    print("|---|---|---|---|---|---|---|---|---:|---:|")
    cells_run = [(name, backfill) for backfill in (False, True) for name in args.traces
                 if (name, backfill, "fcfs") in by]
    for name, backfill in cells_run:
        ours = [mean((name, backfill, o)) for o in ("fcfs", "wfp3-published", "unicef-published", "sjf", "f1")]
        theirs = PUBLISHED[(name, backfill)][:5]
        equal = all(round(o, 2) == t for o, t in zip(ours, theirs))
        cells = " | ".join(f"{t:,.2f} / {o:,.2f}" for t, o in zip(theirs, ours))
        print(f"| {name} | {'with' if backfill else 'without'} | {cells} | {'yes' if equal else 'NO'} | "
              f"{cell(mean((name, backfill, 'wfp3')))} | {cell(mean((name, backfill, 'unicef')))} |")
    print("\n### Learned policies (mean over the 10 sequences; for several seeds or draws: their mean, range and "
          "95% Student-t interval across them)\n")
    print("| trace | backfilling | their RL (README) | their model, greedy | their model, sampled draws: mean "
          "[min, max] | ours: policy | seeds' means | mean [95% CI across seeds] | best heuristic |")
    print("|---|---|---:|---:|---|---|---|---|---:|")
    for name, backfill in cells_run:
        draws = [float(np.mean(v)) for (t, b, o), v in by.items()
                 if t == name and b == backfill and o.startswith("their RL, sample")]
        sampled = f"{np.mean(draws):,.2f} [{min(draws):,.2f}, {max(draws):,.2f}] ({len(draws)})" if draws else ""
        families: dict = {}
        for (t, b, o), v in by.items():
            if t == name and b == backfill and o.startswith(("es", "ppo-")):
                families.setdefault(o.rsplit("-s", 1)[0], []).append(float(np.mean(v)))
        best = min((mean((name, backfill, h)), h) for h in HEURISTICS)
        ours = families or {"": []}
        for family, means in ours.items():
            seeds = ", ".join(f"{m:,.2f}" for m in means)
            summary = f"{np.mean(means):,.2f} [{_seed_interval(means)}]" if means else ""
            print(f"| {name} | {'with' if backfill else 'without'} | {PUBLISHED[(name, backfill)][5]:,.2f} | "
                  f"{cell(mean((name, backfill, 'their RL, greedy')))} | {sampled} | {family} | {seeds} | "
                  f"{summary} | {best[0]:,.2f} ({best[1]}) |")
    print("\n### Training budgets\n")
    print("| policy | algorithm | generations or steps | simulated jobs | CPU s | wall s |")
    print("|---|---|---:|---:|---:|---:|")
    for path in sorted(Path(args.policies).glob("*.json")):
        meta = json.loads(path.read_text()).get("metadata", {})
        budget = meta.get("generations", meta.get("timesteps"))
        print(f"| {path.stem} | {meta.get('algorithm')} | {budget:,} | {meta.get('simulated_jobs', 0):,} | "
              f"{meta.get('cpu_time_s')} | {meta.get('wall_time_s')} |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "report"))
    parser.add_argument("--traces", nargs="+", default=list(TRACES), choices=list(TRACES))
    parser.add_argument("--traces-dir", type=Path, default=SHARED / "traces")
    parser.add_argument("--their-data", type=Path, default=None, help="their data/ folder (Lublin-2)")
    parser.add_argument("--their-models", type=Path, default=None, help="their trained_models/bsld folder")
    parser.add_argument("--samples", type=int, default=20, help="draws of their sampled policy")
    parser.add_argument("--policies", type=Path, default=ROOT / "experiments" / "policies" / "rlscheduler")
    parser.add_argument("--results", type=Path, default=Path("results") / "rlscheduler")
    args = parser.parse_args()
    return {"run": cmd_run, "report": cmd_report}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
