"""Table 4 of Carastan-Santos & de Camargo (2017) from a carastan2017 campaign's results:
the MEDIAN over the sequences (windows) of AVEbsld (tau = 10 s), ours beside the paper's.

    python benchmarks/carastan2017_table4.py results/carastan2017 [--markdown]

Paper numbers come from the campaign file's [[paper]] entries (copied into RESULTS_DIR).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import tomllib
from collections import defaultdict
from pathlib import Path

POLICIES = ["fcfs", "wfp3", "unicef", "spt", "f4", "f3", "f2", "f1", "learned1", "learned2"]
SETTINGS = ["actual", "estimate", "easy"]


def medians(results_dir: Path) -> dict:
    values = defaultdict(list)
    with open(results_dir / "results.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["status"] == "ok" and row["avebsld10"]:
                values[(row["trace"], row["config"])].append(float(row["avebsld10"]))
    return {key: (statistics.median(v), len(v)) for key, v in values.items()}


def paper_values(results_dir: Path) -> dict:
    spec = tomllib.loads((results_dir / "campaign.toml").read_text())
    return {(p["trace"], p["config"]): p["value"] for p in spec.get("paper", [])}


def table(results_dir: Path) -> str:
    ours, paper = medians(results_dir), paper_values(results_dir)
    lines = ["| trace | setting | n | " + " | ".join(POLICIES) + " |",
             "|---|---|---:|" + "---:|" * len(POLICIES)]
    for trace in sorted({t for t, _ in ours}):
        for setting in SETTINGS:
            cells, n = [], 0
            for pol in POLICIES:
                key = (trace, f"{pol}-{setting}")
                got = ours.get(key)
                n = max(n, got[1] if got else 0)
                ref = paper.get(key)
                text = "-" if got is None else f"{got[0]:.1f}"
                if ref is not None:
                    text += f" ({ref:g})"
                cells.append(text)
            if n:
                lines.append(f"| {trace} | {setting} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\nours = median AVEbsld (tau 10 s) over the sequences; (paper's Table 4 median).\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results_dir", type=Path)
    print(table(parser.parse_args().results_dir.resolve()))
