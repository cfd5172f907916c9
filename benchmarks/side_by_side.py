"""Old and new results of one campaign side by side: per (trace, config), a metric's mean (or
median) over windows and seeds in an older ``results.csv`` and in a re-run, the paper's value
when the campaign file gives one, and how many runs changed at all (any metric).

    python benchmarks/side_by_side.py OLD/results.csv NEW_RESULTS_DIR [--metric avebsld10]
        [--median] [--changed-only]

Used to re-measure the paper tables after a scheduling change (issue 23 §1, textbook EASY:
``benchmarks/results/easy.md``). Rows present in only one of the two files are left out.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

# the numbers a run is judged by (those both files have); a run whose values all agree to 1e-5
# (a compact results.csv keeps 6 significant digits) is "unchanged"
COMPARED = ("jobs", "avebsld10", "avebsld60", "mean_wait", "max_wait", "utilisation", "makespan")


def read_runs(path: Path) -> dict:
    """(trace, config, window, seed) -> the row, finished runs only."""
    with open(path, newline="") as fh:
        return {(r["trace"], r["config"], r["window"], r["seed"]): r
                for r in csv.DictReader(fh) if r["status"] == "ok"}


def paper_values(results_dir: Path, metric: str) -> dict:
    spec_path = results_dir / "campaign.toml"
    if not spec_path.exists():
        return {}
    spec = tomllib.loads(spec_path.read_text())
    return {(p["trace"], p["config"]): p["value"] for p in spec.get("paper", [])
            if p.get("metric") == metric and "value" in p}


def same_run(a: dict, b: dict) -> bool:
    return all(math.isclose(float(a[k]), float(b[k]), rel_tol=1e-5) or a[k] == b[k]
               for k in COMPARED if k in a and k in b)


def table(old_csv: Path, new_dir: Path, metric: str, median: bool, changed_only: bool) -> str:
    old, new = read_runs(old_csv), read_runs(new_dir / "results.csv")
    paper = paper_values(new_dir, metric)
    groups = defaultdict(list)
    for key in sorted(old.keys() & new.keys()):
        groups[key[:2]].append((old[key], new[key]))
    summarise = statistics.median if median else statistics.fmean
    label = "median" if median else "mean"
    lines = [f"| trace | config | runs | changed | old ({label}) | new | change | paper |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (trace, config), pairs in groups.items():
        changed = sum(not same_run(a, b) for a, b in pairs)
        if changed_only and not changed:
            continue
        before = summarise(float(a[metric]) for a, _ in pairs)
        after = summarise(float(b[metric]) for _, b in pairs)
        change = f"{100 * (after / before - 1):+.1f}%" if before else "-"
        ref = paper.get((trace, config))
        lines.append(f"| {trace} | {config} | {len(pairs)} | {changed} | {before:,.2f} | {after:,.2f} | "
                     f"{change if changed else '='} | {'' if ref is None else f'{ref:g}'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old_csv", type=Path, help="the older results.csv")
    parser.add_argument("new_dir", type=Path, help="the re-run's results directory")
    parser.add_argument("--metric", default="avebsld10")
    parser.add_argument("--median", action="store_true", help="median over windows and seeds (default: mean)")
    parser.add_argument("--changed-only", action="store_true", help="only (trace, config) pairs with a changed run")
    args = parser.parse_args()
    for path in (args.old_csv, args.new_dir / "results.csv"):
        if not path.is_file():
            print(f"side_by_side.py: error: no such file: {path}", file=sys.stderr)
            sys.exit(2)
    print(table(args.old_csv, args.new_dir, args.metric, args.median, args.changed_only))
