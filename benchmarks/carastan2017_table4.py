"""Table 4 of Carastan-Santos & de Camargo (2017) from a carastan2017 campaign's results:
the MEDIAN over the sequences (windows) of AVEbsld (tau = 10 s), ours beside the paper's.

    python benchmarks/carastan2017_table4.py results/carastan2017 [--figures OUT_DIR]

``--figures`` also draws the paper's Figures 4-8 as box plots (one PNG per trace, a panel per
setting, log scale, the paper's median as a cross).

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


def sequence_values(results_dir: Path) -> dict:
    """(trace, config) -> the per-sequence AVEbsld values."""
    values = defaultdict(list)
    with open(results_dir / "results.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["status"] == "ok" and row["avebsld10"]:
                values[(row["trace"], row["config"])].append(float(row["avebsld10"]))
    return values


def medians(results_dir: Path) -> dict:
    return {key: (statistics.median(v), len(v)) for key, v in sequence_values(results_dir).items()}


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
    parser.add_argument("--figures", type=Path, metavar="OUT_DIR", help="also draw Figures 4-8 there")
    args = parser.parse_args()
    print(table(args.results_dir.resolve()))
    if args.figures:
        for path in figures(args.results_dir.resolve(), args.figures):
            print(f"wrote {path}")
