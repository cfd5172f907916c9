"""Issue 44's eleven-trace table from the validation campaigns' results directories.

Per trace: EASY-FCFS (cumulative bsld, tau = 60 s, and the longest wait) and the headroom (the
most any schedule could cut it: every bsld is at least 1); the recommended learned
configuration's reduction vs EASY-FCFS seed by seed, with its mean, bootstrap 95% interval and
spread, of the cumulative bsld and of AVEbsld (tau = 10 s), and its longest wait against twice
EASY-FCFS's; every deterministic configuration's reduction, over the jitter copies of
``validation-jitter`` when given (each copy against EASY-FCFS on the same copy; else the single run
on the trace); whether the recommended configuration beats EASY-FCFS, EASY-F1 and EASY++ with an
interval that excludes zero (its seeds against the other's copies, ``mean_difference``; against a
single run when no copies were run: the other's noise is then not counted); and the best other
configuration. Other learned configurations (several seeds) are variants, in a table of their own.
Tuning traces and validation traces are printed apart: nothing may be chosen on the validation set.

    python benchmarks/validation_summary.py RESULTS_DIR [--jitter JITTER_DIR] [--recommended NAME]
        [--csv OUT.csv] [--all]
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from batsched_ml.analysis.uncertainty import Interval, mean_difference, mean_interval, paired_reduction  # noqa: E402

TUNING = ("KTH-SP2", "CTC-SP2", "SDSC-SP2", "SDSC-BLUE")
METRICS = ("cum_bsld60", "avebsld10")
COMPARED = ("easy-f1", "easy++")  # besides EASY-FCFS, the configurations the recommended one must beat
WAIT_FACTOR = 2.0  # its longest wait at most this many times EASY-FCFS's
SPREAD_GOAL = 5.0  # points of reduction between the best and the worst seed
TIE = 0.1  # points: an interval must clear this to count as a win (the table's precision; ties are not wins)


def load(results_dir: Path) -> dict:
    """(trace, config) -> {(window, seed): row} of the finished runs."""
    by = defaultdict(dict)
    with open(results_dir / "results.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] in ("ok", "unfinished"):
                by[(r["trace"], r["config"])][(int(r["window"]), int(r["seed"]))] = r
    return by


def reductions(runs: dict, base: dict, metric: str) -> dict:
    """Run key -> 100 * (1 - run / baseline), each run against the baseline on the same window
    (its only run there when seeds differ)."""
    out = {}
    for (window, seed), row in runs.items():
        b = base.get((window, seed)) or next((v for (w, _), v in base.items() if w == window), None)
        if b is not None and float(b[metric]) > 0:
            out[(window, seed)] = 100.0 * (1.0 - float(row[metric]) / float(b[metric]))
    return out


def interval_text(iv: Interval, digits: int = 1) -> str:
    if iv.estimate is None:
        return "-"
    if not iv.has_interval:
        return f"{iv.estimate:.{digits}f}%"
    return f"{iv.estimate:.{digits}f}% [{iv.low:.{digits}f}, {iv.high:.{digits}f}]"


def hours(seconds: float) -> str:
    return f"{seconds / 3600:.0f} h"


def difference(seeds: list, other: list) -> Interval:
    """The recommended config's seeds minus the other's runs. Against one run (no jitter copies) the
    seeds' interval is shifted by it: only the seeds' noise is counted, not the other's."""
    if len(other) == 1 and len(seeds) >= 2:
        iv = mean_interval(seeds)
        return Interval(iv.estimate - other[0], iv.low - other[0], iv.high - other[0], iv.n)
    return mean_difference(seeds, other)


def clears(iv: Interval) -> bool:
    """True when the whole interval lies above the tie margin."""
    return iv.low is not None and iv.low > TIE


def seed_count(runs: dict) -> int:
    return len({seed for _, seed in runs})


def deterministic(trace: str, config: str, plain: dict, jitter: dict | None, metric: str) -> tuple[list, dict]:
    """A deterministic config's reductions (over the jitter copies if run, else its one run) and
    its runs (for the longest wait)."""
    if jitter and (trace, config) in jitter and (trace, "easy-fcfs") in jitter:
        runs = jitter[(trace, config)]
        return list(reductions(runs, jitter[(trace, "easy-fcfs")], metric).values()), runs
    runs = plain.get((trace, config), {})
    return list(reductions(runs, plain.get((trace, "easy-fcfs"), {}), metric).values()), runs


def summary(results_dir: Path, jitter_dir: Path | None, recommended: str) -> list[dict]:
    plain = load(results_dir)
    jitter = load(jitter_dir) if jitter_dir else None
    traces = list(dict.fromkeys(t for t, _ in plain))
    configs = list(dict.fromkeys(c for _, c in plain))
    rows = []
    for trace in traces:
        base = plain.get((trace, "easy-fcfs"))
        if not base:
            continue
        base_row = next(iter(base.values()))
        row = {"trace": trace, "set": "tuning" if trace in TUNING else "validation",
               "easy_fcfs_cum_bsld60": round(float(base_row["cum_bsld60"])),
               "easy_fcfs_max_wait_h": round(float(base_row["max_wait"]) / 3600, 1),
               # every bsld is >= 1, so no schedule goes below one per job: the most any config can cut
               "headroom": 100.0 * (1.0 - float(base_row["jobs"]) / float(base_row["cum_bsld60"]))}
        if jitter and (trace, "easy-fcfs") in jitter:
            values = [float(r["cum_bsld60"]) for r in jitter[(trace, "easy-fcfs")].values()]
            row["easy_fcfs_copies_spread_pct"] = round(100 * (max(values) - min(values)) / min(values), 1)
        rec = plain.get((trace, recommended), {})
        rec_red = {m: reductions(rec, base, m) for m in METRICS}
        if rec:
            row.update(learned_figures(rec, rec_red, row["easy_fcfs_max_wait_h"]))
            row["beats_fcfs"] = all(clears(mean_interval(list(rec_red[m].values()))) for m in METRICS)
        row["variants"] = {config: learned_figures(runs, {m: reductions(runs, base, m) for m in METRICS},
                                                   row["easy_fcfs_max_wait_h"])
                           for config in configs if config != recommended
                           and seed_count(runs := plain.get((trace, config), {})) > 1}
        others = {}
        for config in configs:
            if config in ("easy-fcfs", recommended) or config in row["variants"]:
                continue
            red = {m: deterministic(trace, config, plain, jitter, m)[0] for m in METRICS}
            runs = deterministic(trace, config, plain, jitter, "cum_bsld60")[1]
            if not red["cum_bsld60"]:
                continue
            others[config] = {"reduction": mean_interval(red["cum_bsld60"]),
                              "avebsld10_reduction": mean_interval(red["avebsld10"]),
                              "max_wait_h": round(max(float(r["max_wait"]) for r in runs.values()) / 3600, 1)}
            if rec:
                diffs = [difference(list(rec_red[m].values()), red[m]) for m in METRICS]
                others[config]["beaten"] = all(clears(d) for d in diffs)
                others[config]["difference"] = diffs[0]
        row["others"] = others
        if others:
            best = max(others, key=lambda c: others[c]["reduction"].estimate)
            row["best_other"] = best
        rows.append(row)
    return rows


def learned_figures(runs: dict, red: dict, fcfs_max_wait_h: float) -> dict:
    """A learned config's reduction per seed, mean [CI], spread, AVEbsld reduction, longest wait, kills."""
    per_seed = [red["cum_bsld60"][k] for k in sorted(red["cum_bsld60"])]
    out = {"seeds": len(per_seed), "reduction": mean_interval(per_seed),
           "per_seed": " / ".join(f"{v:.1f}" for v in per_seed),
           "spread": round(max(per_seed) - min(per_seed), 1),
           "avebsld10_reduction": mean_interval(list(red["avebsld10"].values())),
           "max_wait_h": round(max(float(r["max_wait"]) for r in runs.values()) / 3600, 1),
           "kills": round(sum(int(float(r["kills"] or 0)) for r in runs.values()) / len(runs))}
    out["wait_ok"] = out["max_wait_h"] <= WAIT_FACTOR * fcfs_max_wait_h
    out["spread_ok"] = out["seeds"] >= 3 and out["spread"] <= SPREAD_GOAL
    return out


def yes(flag) -> str:
    return "yes" if flag else "**no**"


def markdown(rows: list[dict], recommended: str, show_all: bool) -> list[str]:
    lines = []
    for subset, title in (("tuning", "Tuned on (the paper traces)"), ("validation", "Validation only")):
        lines += ["", f"**{title}**", "",
                  f"| trace | EASY-FCFS cum. bsld (longest wait) | headroom | `{recommended}` reduction [95% CI] | per seed | "
                  "spread | AVEbsld10 reduction | longest wait | EASY-F1 | EASY++ | best other | "
                  "> FCFS | > F1 | > EASY++ | wait <= 2x | spread <= 5 |",
                  "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|---|---|---|"]
        for r in (r for r in rows if r["set"] == subset):
            o = r.get("others", {})

            def cell(config):
                if config not in o:
                    return "-"
                return f"{interval_text(o[config]['reduction'])} ({o[config]['max_wait_h']:.0f} h)"
            best = r.get("best_other")
            if "reduction" in r:
                goals = " | ".join(yes(flag) for flag in (
                    r["beats_fcfs"], o.get("easy-f1", {}).get("beaten"), o.get("easy++", {}).get("beaten"),
                    r["wait_ok"], r["spread_ok"]))
                learned = (f"{interval_text(r['reduction'])} | {r['per_seed']} | {r['spread']} "
                           f"| {interval_text(r['avebsld10_reduction'])} | {r['max_wait_h']:.0f} h")
            else:
                goals, learned = " | ".join("-" * 5), " | ".join("-" * 5)
            lines.append(
                f"| {r['trace']} | {r['easy_fcfs_cum_bsld60']:,} ({r['easy_fcfs_max_wait_h']:.0f} h) | {r['headroom']:.1f}% "
                f"| {learned} "
                f"| {cell('easy-f1')} | {cell('easy++')} | {f'{best}: ' + cell(best) if best else '-'} | {goals} |")
    variants = [(r, name, v) for r in rows for name, v in r.get("variants", {}).items()]
    if variants:
        lines += ["", "**Variants** (other learned configurations, beside the recommended one on the same traces)", "",
                  "| trace | config | reduction [95% CI] | per seed | spread | AVEbsld10 reduction | longest wait "
                  "| kills per run |", "|---|---|---:|---|---:|---:|---:|---:|"]
        for r, name, v in variants:
            for label, f in ((recommended, r), (name, v)):
                if "reduction" in f:
                    lines.append(f"| {r['trace']} | `{label}` | {interval_text(f['reduction'])} | {f['per_seed']} "
                                 f"| {f['spread']} | {interval_text(f['avebsld10_reduction'])} | {f['max_wait_h']:.0f} h "
                                 f"| {f['kills']:,} |")
    if show_all:
        configs = list(dict.fromkeys(c for r in rows for c in r.get("others", {})))
        lines += ["", "| trace | " + " | ".join(configs) + " |", "|---|" + "---:|" * len(configs)]
        for r in rows:
            o = r.get("others", {})
            lines.append(f"| {r['trace']} | " + " | ".join(
                f"{interval_text(o[c]['reduction'])} ({o[c]['max_wait_h']:.0f} h)" if c in o else "-"
                for c in configs) + " |")
    return lines[1:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results_dir", type=Path, help="the validation campaign's results directory")
    ap.add_argument("--jitter", type=Path, help="the validation-jitter campaign's results directory")
    ap.add_argument("--recommended", default="ci-head-start2w")
    ap.add_argument("--all", action="store_true", help="also every deterministic configuration on every trace")
    ap.add_argument("--csv", type=Path, help="also write the rows as CSV")
    args = ap.parse_args(argv)
    for d in (args.results_dir, args.jitter):
        if d is not None and not (d / "results.csv").is_file():
            print(f"validation_summary: error: no results.csv in {d}", file=sys.stderr)
            return 2
    rows = summary(args.results_dir, args.jitter, args.recommended)
    print("\n".join(markdown(rows, args.recommended, args.all)))
    if args.csv:
        flat = []
        for r in rows:
            out = {k: v for k, v in r.items() if k not in ("others", "variants")}
            for k in ("reduction", "avebsld10_reduction"):
                if isinstance(out.get(k), Interval):
                    iv = out[k]
                    out[k], out[k + "_low"], out[k + "_high"] = iv.estimate, iv.low, iv.high
            for c, o in r.get("others", {}).items():
                out[f"{c}_reduction"] = o["reduction"].estimate
                out[f"{c}_max_wait_h"] = o["max_wait_h"]
                if "beaten" in o:
                    out[f"{c}_beaten"] = o["beaten"]
            flat.append(out)
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in flat for k in r)))
            w.writeheader()
            w.writerows(flat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
