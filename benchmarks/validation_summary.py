"""Issue 44's eleven-trace table from the validation campaigns' results directories.

Per trace: EASY-FCFS (cumulative bsld, tau = 60 s, and the longest wait); the recommended learned
configuration's reduction vs EASY-FCFS seed by seed, with its mean, bootstrap 95% interval and
spread, of the cumulative bsld and of AVEbsld (tau = 10 s), and its longest wait against twice
EASY-FCFS's; every deterministic configuration's reduction, over the jitter copies of
``validation-jitter`` when given (each copy against EASY-FCFS on the same copy; else the single run
on the trace); whether the recommended configuration beats EASY-FCFS, EASY-F1 and EASY++ with an
interval that excludes zero (its seeds against the other's copies, ``mean_difference``); and the
best other configuration. Tuning traces and validation traces are marked apart: nothing may be
chosen on the validation set.

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
               "easy_fcfs_max_wait_h": round(float(base_row["max_wait"]) / 3600, 1)}
        if jitter and (trace, "easy-fcfs") in jitter:
            values = [float(r["cum_bsld60"]) for r in jitter[(trace, "easy-fcfs")].values()]
            row["easy_fcfs_copies_spread_pct"] = round(100 * (max(values) - min(values)) / min(values), 1)
        rec = plain.get((trace, recommended), {})
        rec_red = {m: reductions(rec, base, m) for m in METRICS}
        if rec:
            per_seed = [rec_red["cum_bsld60"][k] for k in sorted(rec_red["cum_bsld60"])]
            iv = mean_interval(per_seed)
            row.update({"seeds": len(per_seed), "reduction": iv, "per_seed": " / ".join(f"{v:.1f}" for v in per_seed),
                        "spread": round(max(per_seed) - min(per_seed), 1),
                        "avebsld10_reduction": mean_interval(list(rec_red["avebsld10"].values())),
                        "max_wait_h": round(max(float(r["max_wait"]) for r in rec.values()) / 3600, 1),
                        "kills": round(sum(int(float(r["kills"] or 0)) for r in rec.values()) / len(rec))})
            row["wait_ok"] = row["max_wait_h"] <= WAIT_FACTOR * row["easy_fcfs_max_wait_h"]
            row["beats_fcfs"] = all(mean_interval(list(rec_red[m].values())).low is not None
                                    and mean_interval(list(rec_red[m].values())).low > 0 for m in METRICS)
        others = {}
        for config in configs:
            if config in ("easy-fcfs", recommended):
                continue
            red = {m: deterministic(trace, config, plain, jitter, m)[0] for m in METRICS}
            runs = deterministic(trace, config, plain, jitter, "cum_bsld60")[1]
            if not red["cum_bsld60"]:
                continue
            others[config] = {"reduction": mean_interval(red["cum_bsld60"]),
                              "avebsld10_reduction": mean_interval(red["avebsld10"]),
                              "max_wait_h": round(max(float(r["max_wait"]) for r in runs.values()) / 3600, 1)}
            if rec:
                diffs = [mean_difference(list(rec_red[m].values()), red[m]) for m in METRICS]
                others[config]["beaten"] = all(d.low is not None and d.low > 0 for d in diffs)
                others[config]["difference"] = diffs[0]
        row["others"] = others
        if others:
            best = max(others, key=lambda c: others[c]["reduction"].estimate)
            row["best_other"] = best
        rows.append(row)
    return rows


def markdown(rows: list[dict], recommended: str, show_all: bool) -> list[str]:
    lines = [f"| trace | set | EASY-FCFS cum. bsld (longest wait) | `{recommended}`: reduction [95% CI] | per seed | "
             "spread | AVEbsld10 reduction | longest wait | EASY-F1 (longest wait) | EASY++ (longest wait) | "
             "best other (longest wait) | beats FCFS / F1 / EASY++ |",
             "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        o = r.get("others", {})

        def cell(config):
            if config not in o:
                return "-"
            return f"{interval_text(o[config]['reduction'])} ({o[config]['max_wait_h']:.0f} h)"
        best = r.get("best_other")
        verdict = " / ".join("yes" if flag else "no" for flag in
                             (r.get("beats_fcfs", False), o.get("easy-f1", {}).get("beaten", False),
                              o.get("easy++", {}).get("beaten", False)))
        wait = "-"
        if "max_wait_h" in r:
            wait = f"{r['max_wait_h']:.0f} h" + ("" if r["wait_ok"] else " **(> 2x)**")
        lines.append(
            f"| {r['trace']} | {r['set']} | {r['easy_fcfs_cum_bsld60']:,} ({r['easy_fcfs_max_wait_h']:.0f} h) "
            f"| {interval_text(r['reduction']) if 'reduction' in r else '-'} | {r.get('per_seed', '-')} "
            f"| {r.get('spread', '-')} | {interval_text(r['avebsld10_reduction']) if 'reduction' in r else '-'} "
            f"| {wait} | {cell('easy-f1')} | {cell('easy++')} "
            f"| {f'{best}: ' + cell(best) if best else '-'} | {verdict} |")
    if show_all:
        configs = list(dict.fromkeys(c for r in rows for c in r.get("others", {})))
        lines += ["", "| trace | " + " | ".join(configs) + " |", "|---|" + "---:|" * len(configs)]
        for r in rows:
            o = r.get("others", {})
            lines.append(f"| {r['trace']} | " + " | ".join(
                f"{interval_text(o[c]['reduction'])} ({o[c]['max_wait_h']:.0f} h)" if c in o else "-"
                for c in configs) + " |")
    return lines


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
            out = {k: v for k, v in r.items() if k != "others"}
            for k in ("reduction", "avebsld10_reduction"):
                if isinstance(out.get(k), Interval):
                    iv = out[k]
                    out[k], out[k + "_low"], out[k + "_high"] = iv.estimate, iv.low, iv.high
            for c, o in r.get("others", {}).items():
                out[f"{c}_reduction"] = o["reduction"].estimate
                out[f"{c}_max_wait_h"] = o["max_wait_h"]
            flat.append(out)
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in flat for k in r)))
            w.writeheader()
            w.writerows(flat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
