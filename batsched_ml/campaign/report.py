"""Markdown report of a campaign's results directory, with its PNG figures.

Per trace: each config's metrics (means over windows and seeds) and their reduction vs the
baseline, a bar chart of the first metric, cumulative bsld over time and the waiting-time
ECDF (one curve per config), box plots when there are several windows or seeds, and with a
small/large classifier, each config's slowdown of small and large jobs. Then the
paper's numbers beside ours, the configurations as ``simulate`` flags, and failures.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections import defaultdict
from pathlib import Path

from .results import metric_value, read_results
from .spec import CampaignError, _paper, config_argv

__all__ = ["class_split", "reduction", "summarise", "write_report"]

LOWER_IS_BETTER_PREFIXES = ("avebsld", "cum_bsld", "maxbsld", "mean_wait", "geomean_wait", "median_wait",
                            "max_wait", "mean_turnaround", "makespan", "wasted", "kills", "killed")


def reduction(value, base) -> float | None:
    """``100 * (1 - value / base)``: how much lower than the baseline, in %."""
    if value is None or base is None or base == 0 or (isinstance(value, float) and math.isnan(value)):
        return None
    return 100.0 * (1.0 - value / base)


def _change(value, base) -> float | None:
    """``100 * (value / base - 1)``: the change vs the baseline, in %."""
    red = reduction(value, base)
    return None if red is None else -red


def _lower_is_better(metric: str) -> bool:
    return metric.startswith(LOWER_IS_BETTER_PREFIXES)


def fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, int):
        return f"{v:,}"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def _pct(v) -> str:
    return "-" if v is None else f"{v:+.1f}%".replace("+-", "-")


def _settings(results_dir: Path) -> dict:
    """Baseline, metrics, configs' flags and paper references from the copied campaign file."""
    from .spec import DEFAULT_METRICS

    path = results_dir / "campaign.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    head = data.get("campaign", {})
    configs = data.get("configs", {})
    traces = data.get("traces", {})
    try:
        argv = {n: config_argv(t, f"[configs.{n}]") for n, t in configs.items()}
        paper = _paper(data.get("paper", []), traces, configs)
    except CampaignError as exc:
        raise CampaignError(f"{path}: {exc}") from None
    return {"name": head.get("name", results_dir.name), "description": head.get("description", ""),
            "baseline": head.get("baseline", next(iter(configs), None)),
            "metrics": head.get("metrics", DEFAULT_METRICS), "argv": argv, "paper": paper}


def _mean(values):
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(values) / len(values) if values else None


def summarise(rows: list[dict], metrics: list[str]) -> dict:
    """``{(trace, config): {"n": runs, metric: mean over windows and seeds}}`` of the rows that ran."""
    groups = defaultdict(list)
    for r in rows:
        if r["status"] != "error":
            groups[(r["trace"], r["config"])].append(r)
    return {k: {"n": len(g), **{m: _mean(metric_value(r, m) for r in g) for m in metrics}}
            for k, g in groups.items()}


def _figures(rows, trace, configs, metric, folder: Path, results_dir: Path) -> list[tuple[str, str]]:
    """Write this trace's figures; ``[(caption, file name)]`` (empty without matplotlib)."""
    from ..analysis.plots import PlotError, _pyplot, plot_runs

    try:
        plt = _pyplot()
    except PlotError:
        return []
    out = []
    ran = [r for r in rows if r["trace"] == trace and r["status"] != "error"]
    if not ran:
        return out
    window, seed = min(r["window"] for r in ran), min(r["seed"] for r in ran)
    runs = []
    for config in configs:
        r = next((r for r in ran if r["config"] == config and r["window"] == window and r["seed"] == seed), None)
        path = results_dir / "runs" / f"{_run_name(trace, window, config, seed)}_jobs.csv.gz"
        if r is not None and path.is_file():
            runs.append((config, path))
    slug = "".join(ch if ch.isalnum() or ch in "+-_" else "_" for ch in trace)
    which = "" if len({r["window"] for r in ran}) == 1 and len({r["seed"] for r in ran}) == 1 else \
        f" (window {window}, seed {seed})"
    if runs:
        for kind, caption in (("cumbsld", "cumulative bounded slowdown (tau = 60 s) over time"),
                              ("wait-ecdf", "waiting-time distribution")):
            name = f"{slug}-{kind}.png"
            plot_runs([p for _, p in runs], folder / name, kind=kind, labels=[c for c, _ in runs],
                      title=f"{trace}: {caption}{which}")
            out.append((f"{caption}{which}", name))
    values = {c: [metric_value(r, metric) for r in ran if r["config"] == c] for c in configs}
    values = {c: [v for v in vs if v is not None] for c, vs in values.items() if any(v is not None for v in vs)}
    if values:
        fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(values) + 2), 4))
        labels = list(values)
        if any(len(v) > 1 for v in values.values()):
            ax.boxplot([values[c] for c in labels])
            kind, caption = "box", f"{metric} across windows and seeds"
        else:
            ax.bar(range(1, len(labels) + 1), [values[c][0] for c in labels], color="tab:blue")
            kind, caption = "bars", f"{metric} per configuration"
        ax.set_xticks(range(1, len(labels) + 1), labels, rotation=30, ha="right")
        ax.set_ylabel(metric)
        ax.set_title(f"{trace}: {caption}")
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        name = f"{slug}-{kind}.png"
        fig.savefig(folder / name)
        plt.close(fig)
        out.append((caption, name))
    return out


def _dividers(report) -> tuple[float, list[int], list[float | None]] | None:
    """(period, week indices, dividers) of a classifier run's report, or None."""
    cls = (report or {}).get("classification") if isinstance(report, dict) else None
    weekly = (cls or {}).get("weekly") or []
    if not cls or not cls.get("period") or not any(w.get("divider") is not None for w in weekly):
        return None
    return float(cls["period"]), [int(w["week"]) for w in weekly], [w.get("divider") for w in weekly]


def class_split(rows, trace, configs, results_dir: Path) -> tuple[dict, str] | None:
    """Average bounded slowdown (tau = 60 s) of small and large jobs per config (Zrigui et al.
    2022, Figure 8), or None when no run of ``trace`` has a classifier's weekly dividers.

    A job is small when its run time is below the divider in force in the week it was submitted,
    the dividers being those of the trace's first classifier run (they follow that run's
    completions, so one reference classifies the jobs of every config alike); jobs of the weeks
    before the first divider are left out. Returns ``({config: (small, large, n_small, n_large)},
    reference config)``. (A run's report keeps its weekly list up to ``tasks.MAX_REPORT_ITEMS``
    weeks: a longer trace has no split.)"""
    import bisect

    import numpy as np

    from ..analysis.metrics import merge_attempts, per_job_bsld, read_jobs_csv

    ran = [r for r in rows if r["trace"] == trace and r["status"] != "error"]
    if not ran:
        return None
    window, seed = min(r["window"] for r in ran), min(r["seed"] for r in ran)
    first = {r["config"]: r for r in ran if r["window"] == window and r["seed"] == seed}
    ref = next((c for c in configs if c in first and _dividers(first[c].get("report"))), None)
    if ref is None:
        return None
    period, weeks, dividers = _dividers(first[ref]["report"])
    out = {}
    for config in configs:
        path = results_dir / "runs" / f"{_run_name(trace, window, config, seed)}_jobs.csv.gz"
        if config not in first or not path.is_file():
            continue
        records = merge_attempts(read_jobs_csv(path))
        bsld = per_job_bsld(records, 60.0)
        week_of = np.floor(records.submission / period).astype(np.int64)
        divider = np.array([(dividers[i - 1] if (i := bisect.bisect_right(weeks, w)) else None) for w in week_of],
                           dtype=object)
        known = np.array([d is not None for d in divider]) & ~np.isnan(bsld)
        small = known.copy()
        small[known] = records.run[known] < divider[known].astype(np.float64)
        large = known & ~small
        out[config] = (float(bsld[small].mean()) if small.any() else None,
                       float(bsld[large].mean()) if large.any() else None, int(small.sum()), int(large.sum()))
    return out, ref


def _class_section(rows, trace, configs, baseline, folder: Path, results_dir: Path) -> list[str]:
    split = class_split(rows, trace, configs, results_dir)
    if split is None:
        return []
    values, ref = split
    base = values.get(baseline, (None, None))
    n_small, n_large = values[ref][2], values[ref][3]
    lines = [f"Average bounded slowdown (tau = 60 s) of small and large jobs (Zrigui et al. 2022, Figure 8): "
             f"small = run time below the weekly divider of `{ref}` in the week of submission "
             f"({n_small:,} small, {n_large:,} large jobs; the first week, without a divider, left out).", "",
             "| config | small jobs | large jobs |", "|---|---:|---:|"]
    for config, (sm, lg, _, _) in values.items():
        cells = []
        for v, b in ((sm, base[0]), (lg, base[1])):
            change = _change(v, b) if config != baseline else None
            cells.append(fmt(v) + (f" ({_pct(change)})" if change is not None else ""))
        lines.append(f"| {config} | " + " | ".join(cells) + " |")
    lines.append("")
    try:
        from ..analysis.plots import PlotError, _pyplot

        plt = _pyplot()
    except PlotError:
        return lines
    import numpy as np

    labels = list(values)
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(labels) + 2), 4))
    ax.bar(x - 0.2, [values[c][0] or 0 for c in labels], 0.4, label="small jobs", color="tab:green")
    ax.bar(x + 0.2, [values[c][1] or 0 for c in labels], 0.4, label="large jobs", color="tab:gray")
    ax.set_xticks(x, labels, rotation=30, ha="right")
    ax.set_ylabel("average bounded slowdown (tau = 60 s)")
    ax.set_title(f"{trace}: small and large jobs")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    slug = "".join(ch if ch.isalnum() or ch in "+-_" else "_" for ch in trace)
    name = f"{slug}-classes.png"
    fig.savefig(folder / name)
    plt.close(fig)
    return lines + [f"![{trace}: small and large jobs]({name})", ""]


def _run_name(trace, window, config, seed) -> str:
    from .tasks import _safe

    return f"{_safe(trace)}.w{window}.{_safe(config)}.s{seed}"


def write_report(results_dir, report_dir) -> Path:
    """Write ``report_dir/report.md`` (+ figures) from ``results_dir``; returns the Markdown path."""
    results_dir, report_dir = Path(results_dir), Path(report_dir)
    rows = read_results(results_dir)
    s = _settings(results_dir)
    metrics, baseline = list(s["metrics"]), s["baseline"]
    paper_metrics = [p.metric for p in s["paper"] if p.metric not in metrics]
    summary = summarise(rows, metrics + list(dict.fromkeys(paper_metrics)))
    report_dir.mkdir(parents=True, exist_ok=True)
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    configs = list(dict.fromkeys(r["config"] for r in rows))
    status = defaultdict(int)
    for r in rows:
        status[r["status"]] += 1
    lines = [f"# Campaign {s['name']}", ""]
    if s["description"]:
        lines += [s["description"], ""]
    lines += [f"{len(rows)} runs ({', '.join(f'{n} {k}' for k, n in sorted(status.items()))}); "
              f"traces {', '.join(traces)}; {len(configs)} configurations; baseline **{baseline}**. "
              "Values are means over windows and seeds (column n), with their change vs the baseline "
              "in parentheses (`100 * (config / baseline - 1)`: negative is better for slowdowns and waits).", ""]
    for trace in traces:
        lines += [f"## {trace}", ""]
        head = ["config", "n"] + [m for m in metrics]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * len(metrics)]
        base = summary.get((trace, baseline), {})
        for config in configs:
            got = summary.get((trace, config))
            if got is None:
                lines.append(f"| {config} | 0 |" + " - |" * len(metrics))
                continue
            cells = []
            for m in metrics:
                cell = fmt(got[m])
                change = _change(got[m], base.get(m))
                if _lower_is_better(m) and config != baseline and change is not None:
                    cell += f" ({_pct(change)})"
                cells.append(cell)
            lines.append(f"| {config} | {got['n']} | " + " | ".join(cells) + " |")
        lines.append("")
        for caption, name in _figures(rows, trace, configs, metrics[0], report_dir, results_dir):
            lines += [f"![{trace}: {caption}]({name})", ""]
        lines += _class_section(rows, trace, configs, baseline, report_dir, results_dir)
    s["paper"] = [p for p in s["paper"] if p.trace in traces]  # a subset run: only the traces that ran
    if s["paper"]:
        lines += ["## Beside the paper", "",
                  "`reduction` rows: % below the baseline "
                  f"({baseline}), gap in points. Other rows: the metric itself, gap = ours - paper (relative), and "
                  "each one's change vs the baseline when the paper gives the baseline's value too.", "",
                  "| trace | config | metric | source | ours | paper | gap | ours vs baseline | paper vs baseline |",
                  "|---|---|---|---|---:|---:|---:|---:|---:|"]
        paper_values = {(p.trace, p.config, p.metric): p.value for p in s["paper"] if p.value is not None}
        for p in s["paper"]:
            ours = (summary.get((p.trace, p.config)) or {}).get(p.metric)
            base = (summary.get((p.trace, baseline)) or {}).get(p.metric)
            if p.reduction is not None:
                red = reduction(ours, base)
                gap = None if red is None else red - p.reduction
                lines.append(f"| {p.trace} | {p.config} | {p.metric} reduction | {p.source} | {_pct(red)} | "
                             f"{_pct(p.reduction)} | {'-' if gap is None else f'{gap:+.1f} pts'} | | |")
            else:
                gap = None if ours is None else ours - p.value
                rel = "" if gap is None or not p.value else f" ({_pct(100 * gap / p.value)})"
                pbase = paper_values.get((p.trace, baseline, p.metric))
                changes = ("", "") if p.config == baseline else (_pct(_change(ours, base)),
                                                                   _pct(_change(p.value, pbase)))
                lines.append(f"| {p.trace} | {p.config} | {p.metric} | {p.source} | {fmt(ours)} | {fmt(p.value)} | "
                             f"{'-' if gap is None else fmt(gap)}{rel} | {changes[0]} | {changes[1]} |")
        lines.append("")
    lines += ["## Configurations", "", "| config | `batsched-ml simulate` flags |", "|---|---|"]
    for name, argv in s["argv"].items():
        lines.append(f"| {name} | `{' '.join(argv) or '(defaults)'}` |")
    lines.append("")
    walls = defaultdict(list)
    for r in rows:
        if r.get("wall_s") is not None:
            walls[r["config"]].append(r["wall_s"])
    if walls:
        total = sum(sum(v) for v in walls.values())
        lines += [f"Simulation time: {total:,.1f} s in total (sum over runs, as measured when each ran; "
                  "cached runs keep their original time).", ""]
    log = results_dir / "runs.log"
    if log.is_file():
        last = json.loads(log.read_text().splitlines()[-1])
        lines += [f"Last `campaign run`: {last['wall_s']:,.1f} s wall on {last['engine']}, {last['computed']} runs "
                  f"computed, {last['cached']} cached, {last['failed']} failed (code {last['code']}, "
                  f"{last['finished']}).", ""]
    errors = [r for r in rows if r["status"] == "error"]
    if errors:
        lines += ["## Failed runs", ""]
        lines += [f"- {r['trace']} w{r['window']} {r['config']} seed {r['seed']}: {r['error']}" for r in errors]
        lines.append("")
    path = report_dir / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
