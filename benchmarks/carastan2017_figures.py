"""Figures 4-8 of Carastan-Santos & de Camargo (2017) from a carastan2017 campaign's results:
per trace, box plots of the sequences' (windows') AVEbsld (tau = 10 s) per policy, one panel per
setting, log scale, the paper's Table 4 median as a cross.

    python benchmarks/carastan2017_figures.py results/carastan2017 OUT_DIR

Table 4 itself (the median over the sequences, beside the paper's) is the campaign report's
aggregate table (``[[tables]]`` of ``experiments/carastan2017.toml``: ``batsched-ml campaign
report``). Paper numbers come from the campaign file's [[paper]] entries (copied into RESULTS_DIR).
"""

from __future__ import annotations

import argparse
import csv
import tomllib
from collections import defaultdict
from pathlib import Path

POLICIES = ["fcfs", "wfp3", "unicef", "spt", "f4", "f3", "f2", "f1", "learned1", "learned2"]
SETTINGS = ["actual", "estimate", "easy"]


def sequence_values(results_dir: Path) -> dict:
    """(trace, config) -> the per-sequence AVEbsld values."""
    values = defaultdict(list)
    with open(results_dir / "results.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["status"] == "ok" and row["avebsld10"]:
                values[(row["trace"], row["config"])].append(float(row["avebsld10"]))
    return values


def figures(results_dir: Path, out_dir: Path) -> list[Path]:
    """Figures 4-8: per trace, a box plot of the sequences' AVEbsld per policy, one panel per setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values, paper = sequence_values(results_dir), paper_values(results_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for trace in sorted({t for t, _ in values}):
        fig, axes = plt.subplots(1, len(SETTINGS), figsize=(15, 4), sharey=True)
        for ax, setting in zip(axes, SETTINGS):
            pols = [p for p in POLICIES if (trace, f"{p}-{setting}") in values]
            ax.boxplot([values[(trace, f"{p}-{setting}")] for p in pols], showfliers=True)
            ref = [(i + 1, paper[(trace, f"{p}-{setting}")]) for i, p in enumerate(pols)
                   if (trace, f"{p}-{setting}") in paper]
            if ref:
                ax.plot(*zip(*ref), "x", color="crimson", label="paper's median")
            ax.set_xticks(range(1, len(pols) + 1), [p.upper() for p in pols], rotation=45)
            ax.set_yscale("log")
            ax.set_title(f"{trace}, {setting}")
            ax.grid(axis="y", alpha=0.3)
        axes[0].set_ylabel("AVEbsld (tau 10 s) per sequence")
        axes[0].legend(loc="upper right")
        fig.tight_layout()
        path = out_dir / f"{trace}-figure.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def paper_values(results_dir: Path) -> dict:
    spec = tomllib.loads((results_dir / "campaign.toml").read_text())
    return {(p["trace"], p["config"]): p["value"] for p in spec.get("paper", [])}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("out_dir", type=Path, help="where the PNG files go")
    args = parser.parse_args()
    for path in figures(args.results_dir.resolve(), args.out_dir):
        print(f"wrote {path}")
