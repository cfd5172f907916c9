"""Issue 43 section 3's whole-trace tables from results directories of experiments/rlscheduler-whole.toml
(and of experiments/rlscheduler.toml's section 3, for the network trained under the bound).

Per trace: AVEbsld (tau 10 s), cumulative bsld (tau 60 s) and the longest wait of EASY-FCFS, EASY-F1,
EASY++, the recommended classification config (mean of its seeds; the longest wait: the largest) and
each bounded network seed; and per seed whether the section's goal holds there: AVEbsld below
EASY-F1's by more than 0.1 % (closer is a tie) with a longest wait at most twice EASY-FCFS's.

The classification config is the expensive one, and issue 44's validation campaign
(experiments/validation.toml, its ``ci-head-start2w``) ran it with three seeds on the same traces and
machines: when no directory has a classification run on a trace, its column is derived from
validation.md's committed reductions vs EASY-FCFS (means over seeds 0-2, to 0.1 point) applied to
this EASY-FCFS, with validation.md's longest wait (whole hours), and only where the two campaigns'
EASY-FCFS cumulative bsld agree.

    python benchmarks/rlscheduler_whole_summary.py RESULTS_DIR [MORE_RESULTS_DIRS ...]
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path

TRACES = ("KTH-SP2", "CTC-SP2", "SDSC-SP2", "SDSC-BLUE",  # the paper traces (SDSC-SP2 trained the networks)
          "LANL-CM5", "LLNL-Atlas", "LPC-EGEE", "METACENTRUM", "NASA-iPSC", "OSC-Clust", "SDSC-Par")
BASELINES = (("easy", "EASY-FCFS"), ("easy-fcfs", "EASY-FCFS"), ("easy-f1", "EASY-F1"), ("easy++", "EASY++"))
CLASSIFICATION = "classification"
# (config, seed, column): the SDSC-SP2 networks bounded at 24 h (rlscheduler-whole.toml), one config per
# seed; the networks trained under the bound on the paper traces (rlscheduler.toml's easy-rl-24h), seeds as runs
BOUNDED = (("easy-rl-s0-starve24h", 0, "RL s0"), ("easy-rl-s1-starve24h", 0, "RL s1"),
           ("easy-rl-s2-starve24h", 0, "RL s2"),
           ("easy-rl-24h", 0, "P24 s0"), ("easy-rl-24h", 1, "P24 s1"), ("easy-rl-24h", 2, "P24 s2"))
WAIT_FACTOR = 2.0
TIE = 0.001  # AVEbsld within 0.1 % of EASY-F1's is a tie, not a win (validation_summary's 0.1 point)

# benchmarks/results/validation.md (run 2026-12-07; ci-head-start2w is this campaign's classification config):
# EASY-FCFS cumulative bsld; ci-head-start2w's mean reductions (%) of the cumulative bsld and of AVEbsld10,
# and its longest wait over seeds 0-2 (h)
VALIDATION = {
    "KTH-SP2": (917_342, 60.1, 64.7, 169), "CTC-SP2": (3_095_911, 71.6, 75.0, 325),
    "SDSC-SP2": (3_893_455, 60.1, 62.6, 214), "SDSC-BLUE": (7_568_657, 72.2, 73.7, 184),
    "LANL-CM5": (1_073_562, 61.4, 65.5, 40), "LLNL-Atlas": (39_027, -1.9, 0.3, 15),
    "LPC-EGEE": (714_023, 34.4, 51.1, 16), "METACENTRUM": (241_494, 38.4, 67.9, 30),
    "NASA-iPSC": (18_280, -0.0, 0.0, 7), "OSC-Clust": (35_593, -0.0, -0.0, 13),
    "SDSC-Par": (1_194_081, 76.7, 79.8, 68),
}


def load(results_dirs: list) -> dict:
    """(trace, config) -> {seed: row} of the finished runs, over the directories (a later one wins)."""
    by = defaultdict(dict)
    for d in results_dirs:
        with open(Path(d) / "results.csv", newline="") as f:
            for r in csv.DictReader(f):
                if r["status"] == "ok":
                    by[(r["trace"], r["config"])][int(r["seed"])] = r
    return by


def figures(rows: list, source: str = "run") -> dict:
    """Mean AVEbsld10 and cumulative bsld over the rows (seeds), the largest longest wait (h)."""
    n = len(rows)
    return {"avebsld10": sum(float(r["avebsld10"]) for r in rows) / n,
            "cum_bsld60": sum(float(r["cum_bsld60"]) for r in rows) / n,
            "max_wait_h": max(float(r["max_wait"]) for r in rows) / 3600, "n": n, "source": source}


def classification(by: dict, trace: str, fcfs: dict) -> dict | None:
    if by.get((trace, CLASSIFICATION)):
        return figures(list(by[(trace, CLASSIFICATION)].values()))
    if trace not in VALIDATION:
        return None
    cum, red_cum, red_ave, wait_h = VALIDATION[trace]
    if round(fcfs["cum_bsld60"]) != cum:
        return None  # not the same EASY-FCFS: the reductions do not carry over
    return {"avebsld10": fcfs["avebsld10"] * (1 - red_ave / 100), "cum_bsld60": fcfs["cum_bsld60"] * (1 - red_cum / 100),
            "max_wait_h": float(wait_h), "n": 3, "source": "validation"}


def goal(order: dict, row: dict) -> str:
    """'yes', or 'no' with what fails: AVEbsld not below EASY-F1's (a tie within TIE), the longest wait."""
    f1 = row["EASY-F1"]["avebsld10"]
    beats = order["avebsld10"] < f1 * (1 - TIE)
    tie = not beats and order["avebsld10"] <= f1 * (1 + TIE)
    bounded = order["max_wait_h"] <= WAIT_FACTOR * row["EASY-FCFS"]["max_wait_h"]
    if beats and bounded:
        return "yes"
    return "no: " + ", ".join(w for w, bad in (("tie" if tie else "AVEbsld", not beats), ("wait", not bounded)) if bad)


def ave(x: float) -> str:
    return f"{x:.5f}" if x < 1.1 else f"{x:.3f}" if x < 10 else f"{x:.2f}" if x < 100 else f"{x:,.1f}"


def wait(hours: float) -> str:
    return f"{hours * 60:.1f} min" if hours < 1 else f"{hours:.1f} h" if hours < 10 else f"{hours:.0f} h"


def build(by: dict) -> dict:
    table = {}
    for t in TRACES:
        row = {name: figures(list(by[(t, c)].values())) for c, name in BASELINES if by.get((t, c))}
        if "EASY-FCFS" not in row or "EASY-F1" not in row:
            continue
        cls = classification(by, t, row["EASY-FCFS"])
        if cls is not None:
            row["classification"] = cls
        for c, seed, name in BOUNDED:
            if seed in by.get((t, c), {}):
                row[name] = figures([by[(t, c)][seed]])
        table[t] = row
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results_dirs", type=Path, nargs="+")
    args = parser.parse_args()
    table = build(load(args.results_dirs))
    bounded = [n for _, _, n in BOUNDED if any(n in row for row in table.values())]
    orders = ["EASY-FCFS", "EASY-F1", "EASY++", "classification"] + bounded

    def print_table(title: str, columns: list, cell) -> None:
        print(f"\n{title}\n")
        print("| trace | " + " | ".join(columns) + " |")
        print("|---|" + "---:|" * len(columns))
        for t, row in table.items():
            print(f"| {t} | " + " | ".join(short(row) if o == "goal" else cell(row[o], row) if o in row else "--"
                                             for o in columns) + " |")

    def short(row: dict) -> str:
        """The goal per bounded network, in one cell: yes, tie (with F1), F1 (above it), wait (over 2x)."""
        return " / ".join(goal(row[n], row).replace("no: ", "").replace("AVEbsld", "F1").replace(", ", "+")
                          if n in row else "--" for n in bounded)

    print_table("AVEbsld (tau 10 s) and, in parentheses, the longest wait; goal per network: yes, or what "
                "fails (F1: AVEbsld not below EASY-F1's by 0.1 %, tie: within it, wait: over 2x EASY-FCFS's)",
                orders + ["goal"], lambda f, row: f"{ave(f['avebsld10'])} ({wait(f['max_wait_h'])})")
    print_table("Cumulative bsld (tau 60 s)", orders, lambda f, row: f"{f['cum_bsld60']:,.0f}")
    met = {n: sum(goal(row[n], row) == "yes" for row in table.values() if n in row) for n in bounded}
    print("\ngoal met on: " + ", ".join(f"{n} {k} of {sum(n in row for row in table.values())}" for n, k in met.items()))
    sources = [row["classification"]["source"] for row in table.values() if "classification" in row]
    print(f"traces not run: {', '.join(t for t in TRACES if t not in table) or 'none'}; classification from "
          f"validation.md on {sources.count('validation')} traces, run on {sources.count('run')}, missing on "
          f"{', '.join(t for t in table if 'classification' not in table[t]) or 'none'}")


if __name__ == "__main__":
    main()
