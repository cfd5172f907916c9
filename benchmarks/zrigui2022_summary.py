"""Issue 25's acceptance figures from a zrigui2022 campaign results directory.

Per trace, for each learned config: the reduction of the cumulative bsld (tau = 60 s) vs the
baseline run by run (seed), its mean with a bootstrap 95% interval and its spread (max - min);
the calendar check (CI-FCFS at the header's fixed offset minus CI-FCFS in the named zone,
seed by seed); precision and recall of the classifier (Zrigui et al., Table 5); and the cost
of the classification per 1,000 jobs (training + classification CPU seconds of the scheduler's
report, wall seconds for runs recorded before it had them; and the run's wall time minus the baseline's).

    python benchmarks/zrigui2022_summary.py RESULTS_DIR [--baseline base-fcfs] [--csv OUT.csv]
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from batsched_ml.analysis.uncertainty import mean_interval  # noqa: E402

# Zrigui et al. 2022, Table 5 (precision, recall of the random forest, %)
TABLE5 = {"KTH-SP2": (79, 90), "CTC-SP2": (82, 86), "SDSC-SP2": (89, 91), "SDSC-BLUE": (78, 83)}
# Table 7: reduction (%) of the cumulative bsld vs EASY-FCFS
TABLE7 = {("KTH-SP2", "ci-fcfs"): 50, ("CTC-SP2", "ci-fcfs"): 79, ("SDSC-SP2", "ci-fcfs"): 66,
          ("SDSC-BLUE", "ci-fcfs"): 63, ("KTH-SP2", "ci-spf"): 59, ("CTC-SP2", "ci-spf"): 85,
          ("SDSC-SP2", "ci-spf"): 75, ("SDSC-BLUE", "ci-spf"): 74}
METRIC = "cum_bsld60"
SPREAD_BOUND = 5.0  # points: issue 25's bound on a five-seed spread


def sets_over_bound(values: list[float], size: int = 5) -> str:
    """Share of the ``size``-run subsets whose spread exceeds the bound, as "k/n" ("" for too few runs)."""
    if len(values) <= size:
        return ""
    spreads = [max(c) - min(c) for c in itertools.combinations(values, size)]
    return f"{sum(x > SPREAD_BOUND for x in spreads)}/{len(spreads)}"


def fmt(iv, digits=1) -> str:
    if iv.estimate is None:
        return ""
    if not iv.has_interval:
        return f"{iv.estimate:.{digits}f}"
    return f"{iv.estimate:.{digits}f} [{iv.low:.{digits}f}, {iv.high:.{digits}f}]"


def load(results_dir: Path):
    rows = [r for r in csv.DictReader(open(results_dir / "results.csv", newline=""))
            if r["status"] in ("ok", "unfinished")]
    by = defaultdict(dict)  # (trace, config) -> {seed: row}
    for r in rows:
        by[(r["trace"], r["config"])][int(r["seed"])] = r
    return by


def classification(results_dir: Path, row) -> dict | None:
    if not row.get("report"):
        return None
    report = json.loads((results_dir / row["report"]).read_text())
    return report.get("classification")


def learning_seconds(info: dict) -> float:
    """Training and classification CPU seconds; runs recorded before the CPU times were (wall
    times only) give their wall seconds, which grow with the machine's load."""
    if "training_cpu_time" in info:
        return info["training_cpu_time"] + info["classification_cpu_time"]
    return info["training_time"] + info["classification_time"]


def summary(results_dir: Path, baseline: str):
    by = load(results_dir)
    traces = list(dict.fromkeys(t for t, _ in by))
    out = []
    for trace in traces:
        base = by.get((trace, baseline), {})
        if not base:
            continue
        base_row = next(iter(base.values()))
        base_value = float(base_row[METRIC])
        for config in sorted({c for t, c in by if t == trace and c != baseline}):
            runs = by[(trace, config)]
            seeds = sorted(runs)
            red = {s: 100 * (1 - float(runs[s][METRIC]) / base_value) for s in seeds}
            iv = mean_interval(list(red.values()))
            row = {"trace": trace, "config": config, "seeds": " ".join(map(str, seeds)), "runs": len(seeds),
                   METRIC: round(sum(float(runs[s][METRIC]) for s in seeds) / len(seeds)),
                   "reduction": round(iv.estimate, 2), "ci_low": iv.low and round(iv.low, 2),
                   "ci_high": iv.high and round(iv.high, 2),
                   "spread": round(max(red.values()) - min(red.values()), 2),
                   "sd": round(statistics.stdev(red.values()), 2) if len(red) > 1 else "",
                   "five_run_sets_over_5": sets_over_bound(list(red.values())),
                   "per_seed": " / ".join(f"{red[s]:.1f}" for s in seeds),
                   "paper": TABLE7.get((trace, config), "")}
            infos = {s: classification(results_dir, runs[s]) for s in seeds}
            infos = {s: i for s, i in infos.items() if i}
            if infos:
                jobs = int(base_row["jobs"])
                prec = mean_interval([i["overall"]["precision"] * 100 for i in infos.values()])
                rec = mean_interval([i["overall"]["recall"] * 100 for i in infos.values()])
                learn = [learning_seconds(i) * 1000 / jobs for i in infos.values()]
                extra = [(float(runs[s]["wall_s"]) - float(base_row["wall_s"])) * 1000 / jobs for s in infos]
                row.update({"precision": fmt(prec), "recall": fmt(rec),
                            "table5_precision_recall": "/".join(map(str, TABLE5.get(trace, ("", "")))),
                            "kills": round(sum(int(runs[s]["kills"]) for s in infos) / len(infos)),
                            "learning_s_per_1000_jobs": round(sum(learn) / len(learn), 2),
                            "extra_wall_s_per_1000_jobs": round(sum(extra) / len(extra), 2)})
            out.append((row, red))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("--baseline", default="base-fcfs")
    ap.add_argument("--csv", type=Path, help="also write the rows as CSV")
    args = ap.parse_args(argv)
    rows = summary(args.results_dir, args.baseline)
    print(f"| trace | config | runs | {METRIC} | reduction vs {args.baseline} [95% CI] | per seed | spread | paper "
          "| sd | 5-run sets over 5 | precision | recall | Table 5 P/R | learning s / 1,000 jobs |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row, _ in rows:
        ci = f" [{row['ci_low']:.1f}, {row['ci_high']:.1f}]" if row["ci_low"] is not None else ""
        print(f"| {row['trace']} | {row['config']} | {row['runs']} | {row[METRIC]:,} | {row['reduction']:.1f}{ci} "
              f"| {row['per_seed']} | {row['spread']:.1f} | {row['paper']} | {row['sd']} "
              f"| {row['five_run_sets_over_5']} | {row.get('precision', '')} "
              f"| {row.get('recall', '')} | {row.get('table5_precision_recall', '')} "
              f"| {row.get('learning_s_per_1000_jobs', '')} |")
    reds = {(r["trace"], r["config"]): red for r, red in rows}
    print("\nCalendar check (X-fixed-offset minus X, reduction points, seed by seed):")
    for (trace, config), red in reds.items():
        zone = config.removesuffix("-fixed-offset")
        if zone == config or (trace, zone) not in reds:
            continue
        named = reds[(trace, zone)]
        diffs = {s: red[s] - named[s] for s in red if s in named}
        iv = mean_interval(list(diffs.values()))
        print(f"  {trace} {zone}: " + " / ".join(f"s{s} {d:+.1f}" for s, d in sorted(diffs.items()))
              + f"; mean {fmt(iv)} points")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r, _ in rows for k in r)))
            w.writeheader()
            for r, _ in rows:
                w.writerow(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
