"""Markdown report of a campaign's results directory, with its PNG figures (``figures``).

Per trace: each config's metrics (means over windows and seeds) and their change vs the
baseline, better or worse by the metric (:func:`trace_table`), the jobs runs left out of their
metrics (rejected, killed, never started: :func:`not_completed_by_config`), which runs are
missing, failed or timed out (never a row of zeros), the first metric per config (bars, or every run's value when there are several
windows or seeds), cumulative bsld over time and the waiting-time ECDF (one curve per
config; a config has the same colour in every figure), and with a small/large classifier,
each config's slowdown of small and large jobs. Then the paper's numbers beside ours
(:func:`paper_table`), the configurations as ``simulate`` flags, and failures.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

from ..analysis.uncertainty import change_rule, format_change
from .aggregates import aggregate_table
from .results import RAN, fmt, jobs_not_completed, metric_value, read_results
from .expand import expand, read_campaign_file
from .forks import fork_section
from .figures import config_colors, first_run, jobs_csv_path, matplotlib_missing, per_job_note, trace_figures
from .spec import CampaignError, config_argv, paper_refs, table_specs
from .tasks import safe_name

__all__ = ["class_split", "completeness", "not_completed_by_config", "paper_table", "reduction", "run_report",
           "summarise", "trace_table", "write_report"]


def reduction(value, base) -> float | None:
    """``100 * (1 - value / base)``: how much lower than the baseline, in % (a paper's figure)."""
    if value is None or base is None or base == 0 or (isinstance(value, float) and math.isnan(value)):
        return None
    return 100.0 * (1.0 - value / base)


def _change(value, base) -> float | None:
    """``100 * (value / base - 1)``: the change vs the baseline, in % (what every table shows)."""
    red = reduction(value, base)
    return None if red is None else -red


def _settings(results_dir: Path) -> dict:
    """Baseline, metrics, configs' flags, paper references and tables from the campaign as run
    (``campaign.toml``, written expanded by ``campaign run``)."""
    from .spec import DEFAULT_METRICS

    path = results_dir / "campaign.toml"
    try:
        data = expand(read_campaign_file(path)) if path.is_file() else {}
        head = data.get("campaign", {})
        configs = data.get("configs", {})
        traces = data.get("traces", {})
        argv = {n: config_argv(t, f"[configs.{n}]") for n, t in configs.items()}
        kinds = {n: t.get("kind", "simulate") for n, t in configs.items()}
        runs_on = {n: t["traces"] if isinstance(t.get("traces"), list) else [t["traces"]]
                   for n, t in configs.items() if "traces" in t}
        paper = paper_refs(data.get("paper", []), traces, configs)
        tables = table_specs(data.get("tables", []), {n: t.get("axes") for n, t in configs.items()})
    except CampaignError as exc:
        raise CampaignError(f"{path}: {exc}") from None
    return {"name": head.get("name", results_dir.name), "description": head.get("description", ""),
            "baseline": head.get("baseline", next(iter(configs), None)),
            "metrics": head.get("metrics", DEFAULT_METRICS), "argv": argv, "paper": paper,
            "traces": list(traces), "configs": list(configs), "tables": tables,
            "windows": {n: "jittered copies" if "jitter" in (t or {}) else "windows" for n, t in traces.items()},
            "seeds": {n: t.get("seeds", _training_seeds(t, data.get("train", {})) or head.get("seeds", [0]))
                      for n, t in configs.items()},
            "kinds": kinds, "runs_on": runs_on, "trainings": list(data.get("train", {})),
            "axes": {n: dict(t.get("axes") or {}) for n, t in configs.items()}}


def _training_seeds(config: dict, trainings: dict) -> list | None:
    """The seeds of the training a config names (``@NAME``), which it runs by default."""
    from .kinds import references

    named = sorted(n for n in references({k: v for k, v in config.items() if k != "axes"}) if n in trainings)
    return trainings[named[0]].get("seeds") if named else None


def _mean(values):
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(values) / len(values) if values else None


def summarise(rows: list[dict], metrics: list[str]) -> dict:
    """``{(trace, config): {"n": runs, metric: mean over windows and seeds}}`` of the rows that ran
    (not those that failed or timed out)."""
    groups = defaultdict(list)
    for r in rows:
        if r["status"] in RAN:
            groups[(r["trace"], r["config"])].append(r)
    return {k: {"n": len(g), **{m: _mean(metric_value(r, m) for r in g) for m in metrics}}
            for k, g in groups.items()}


def run_report(results_dir: Path, row: dict) -> dict | None:
    """A run's scheduler report: the file results.csv names (``runs/<run>_report.json``), or the
    dict itself in a results.csv written before reports moved out of it."""
    report = row.get("report")
    if isinstance(report, dict) or report is None:
        return report
    try:
        return json.loads((Path(results_dir) / report).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# ------------------------------------------------------------------ which runs are there


def completeness(rows, traces, configs, seeds, runs_on: dict | None = None, kinds: dict | None = None) -> dict:
    """``{(trace, config): {"expected": n, "missing": n, status: n...}}`` for every trace and config
    of the campaign file: a run is expected for each seed (``seeds``: a list, or each config's
    list) and each window the trace's rows of configs of the same kind show (``kinds``: config ->
    kind; a trace without any row counts as one window), missing when results.csv has no row for
    it; ``runs_on``: config -> its traces, for the configs that run on some only."""
    kinds = kinds or {}
    present = defaultdict(lambda: defaultdict(int))
    windows = defaultdict(set)
    have = set()
    for r in rows:
        present[(r["trace"], r["config"])][r["status"]] += 1
        windows[(r["trace"], kinds.get(r["config"], "simulate"))].add(r["window"])
        have.add((r["trace"], r["config"], r["window"], r["seed"]))
    out = {}
    for trace in traces:
        for config in configs:
            if runs_on and config in runs_on and trace not in runs_on[config]:
                continue
            trace_windows = windows.get((trace, kinds.get(config, "simulate"))) or {0}
            config_seeds = seeds.get(config, [0]) if isinstance(seeds, dict) else seeds
            expected = [(w, s) for w in trace_windows for s in config_seeds]
            counts = dict(present.get((trace, config), {}))
            counts["expected"] = len(expected)
            counts["missing"] = sum((trace, config, w, s) not in have for w, s in expected)
            out[(trace, config)] = counts
    return out


def _gaps(counts: dict) -> str:
    """``"1 error, 2 missing"``: what is not a finished run (empty when all ran fully)."""
    parts = [f"{counts[k]} {k}" for k in ("error", "timeout", "missing") if counts.get(k)]
    if counts.get("unfinished"):
        parts.append(f"{counts['unfinished']} with jobs that never started")
    return ", ".join(parts)


def _gaps_note(trace: str, configs, counts: dict) -> list[str]:
    """Under a trace's table: the configs with runs that failed, timed out or are missing."""
    notes = []
    for config in configs:
        c = counts.get((trace, config))
        if c and _gaps(c):
            ran = sum(c.get(k, 0) for k in RAN)
            notes.append(f"`{config}` {ran} of {c['expected']} runs ({_gaps(c)})")
    if not notes:
        return []
    return [f"Incomplete: {'; '.join(notes)}. Failed and timed-out runs are listed under Failed runs; "
            "`batsched-ml campaign run` on the campaign file runs what is missing or failed.", ""]


# ------------------------------------------------------------------ tables


def trace_table(summary: dict, trace: str, configs, metrics, baseline: str, counts: dict | None = None,
                not_completed: dict | None = None) -> list[str]:
    """The Markdown table of one trace: a row per config that ran (n = its runs, "n of N" when some
    are missing or failed), the metrics' means and their change vs the baseline (better or worse by
    the metric); with ``not_completed`` (``{config: text}``, :func:`not_completed_by_config`) a
    column of the jobs that did not complete, marked ``!``."""
    head = ["config", "n"] + (["jobs not completed"] if not_completed else []) + list(metrics)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * (len(head) - len(metrics)) + "---:|" * len(metrics)]
    base = summary.get((trace, baseline), {})
    for config in configs:
        got = summary.get((trace, config))
        if got is None:
            continue  # nothing ran: said under the table (_gaps_note)
        expected = (counts or {}).get((trace, config), {}).get("expected", got["n"])
        n = f"{got['n']}" if got["n"] >= expected else f"{got['n']} of {expected}"
        cells = [f"! {not_completed[config]}" if config in not_completed else "none"] if not_completed else []
        for m in metrics:
            cell = fmt(got[m])
            change = _change(got[m], base.get(m))
            if config != baseline and change is not None:
                cell += f" ({format_change(change, m)})"
            cells.append(cell)
        lines.append(f"| {config} | {n} | " + " | ".join(cells) + " |")
    return lines + [""]


def not_completed_by_config(rows, trace: str) -> dict[str, str]:
    """``{config: "159 rejected"}`` for the configs of ``trace`` whose runs left jobs out of their
    metrics (rejected, killed and not requeued, never started): the count when every run has the
    same, else its range over the runs (``"0-159 rejected"``)."""
    counts: dict = {}
    for r in rows:
        if r["trace"] == trace and r["status"] in RAN:
            counts.setdefault(r["config"], []).append(jobs_not_completed(r))
    out = {}
    for config, runs in counts.items():
        parts = []
        for kind in ("rejected", "killed", "unfinished"):
            values = [run.get(kind, 0) for run in runs]
            if any(values):
                low, high = min(values), max(values)
                shown = f"{high:,}" if low == high else f"{low:,}-{high:,}"
                parts.append(f"{shown} {'never started' if kind == 'unfinished' else kind}")
        if parts:
            out[config] = ", ".join(parts)
    return out


def _not_completed_note(not_completed: dict, rows, trace: str) -> list[str]:
    if not not_completed:
        return []
    jobs = {r["config"]: r.get("jobs") for r in rows if r["trace"] == trace and r["status"] in RAN}
    listed = "; ".join(f"`{c}` {text} of {fmt(jobs.get(c))} jobs" for c, text in not_completed.items())
    return [f"! Not every job completed: {listed}. The waits and slowdowns cover the jobs that ran; `jobs` "
            "counts them all (results.csv: columns `complete`, `rejected`, `killed`, `unfinished`).", ""]


def paper_table(paper, summary: dict, baseline: str) -> list[str]:
    """Our numbers beside the paper's (``[[paper]]`` entries of the traces that ran)."""
    if not paper:
        return []
    lines = ["## Beside the paper", "",
             f"Rows `METRIC vs {baseline}`: {change_rule(baseline)}, ours and the paper's (a reduction the paper "
             "states, with its sign turned), gap = ours - paper in points. Other rows: the metric itself, gap = ours "
             "- paper (relative), and each one's change vs the baseline when the paper gives the baseline's value "
             "too.", "",
             "| trace | config | metric | source | ours | paper | gap | ours vs baseline | paper vs baseline |",
             "|---|---|---|---|---:|---:|---:|---:|---:|"]
    paper_values = {(p.trace, p.config, p.metric): p.value for p in paper if p.value is not None}
    for p in paper:
        ours = (summary.get((p.trace, p.config)) or {}).get(p.metric)
        base = (summary.get((p.trace, baseline)) or {}).get(p.metric)
        if p.reduction is not None:
            change = _change(ours, base)
            gap = None if change is None else change + p.reduction
            lines.append(f"| {p.trace} | {p.config} | {p.metric} vs {baseline} | {p.source} | "
                         f"{format_change(change, p.metric)} | {format_change(-p.reduction, p.metric)} | "
                         f"{'-' if gap is None else f'{gap:+.1f} pts'} | | |")
        else:
            gap = None if ours is None else ours - p.value
            rel = "" if gap is None or not p.value else f" ({f'{100 * gap / p.value:+.1f}%'})"
            pbase = paper_values.get((p.trace, baseline, p.metric))
            changes = ("", "") if p.config == baseline else (format_change(_change(ours, base), p.metric),
                                                               format_change(_change(p.value, pbase), p.metric))
            lines.append(f"| {p.trace} | {p.config} | {p.metric} | {p.source} | {fmt(ours)} | {fmt(p.value)} | "
                         f"{'-' if gap is None else fmt(gap)}{rel} | {changes[0]} | {changes[1]} |")
    return lines + [""]


# ------------------------------------------------------------------ small and large jobs


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

    results_dir = Path(results_dir)
    ran = [r for r in rows if r["trace"] == trace and r["status"] in RAN]
    if not ran:
        return None
    window, seed = first_run(ran)
    first = {r["config"]: r for r in ran if r["window"] == window and r["seed"] == seed}
    reports = {c: run_report(results_dir, first[c]) for c in configs if c in first}
    ref = next((c for c in configs if c in first and _dividers(reports[c])), None)
    if ref is None:
        return None
    period, weeks, dividers = _dividers(reports[ref])
    out = {}
    for config in configs:
        path = jobs_csv_path(results_dir, trace, window, config, seed)
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


def _class_section(rows, trace, configs, baseline, folder: Path, results_dir: Path, figures: bool) -> list[str]:
    split = class_split(rows, trace, configs, results_dir)
    if split is None:
        return []
    values, ref = split
    if ref not in values:  # its jobs CSV is not in the results directory (a report from results.csv alone)
        return []
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
            cells.append(fmt(v) + (f" ({format_change(change, 'avebsld60')})" if change is not None else ""))
        lines.append(f"| {config} | " + " | ".join(cells) + " |")
    lines.append("")
    if not figures:
        return lines
    from ..analysis.plots import plot_class_bars

    name = f"{safe_name(trace)}-classes.png"
    plot_class_bars({c: v[:2] for c, v in values.items()}, folder / name, "average bounded slowdown (tau = 60 s)",
                    f"{trace}: small and large jobs")
    return lines + [f"![{trace}: small and large jobs]({name})", ""]


def _interval_section(rows, trace, configs, metrics, baseline, results_dir: Path) -> list[str]:
    """Means with their bootstrap intervals and paired reductions (``analysis.uncertainty``)."""
    from ..analysis.uncertainty import campaign_section

    ran = [r for r in rows if r["trace"] == trace and r["status"] in RAN]

    def single_run_jobs(config):
        mine = [r for r in ran if r["config"] == config]
        if len(mine) != 1:
            return None
        path = jobs_csv_path(results_dir, trace, mine[0]["window"], config, mine[0]["seed"])
        return path if path.is_file() else None

    lines = campaign_section(ran, trace, configs, baseline, metrics, metric_value, single_run_jobs)
    return ["### Intervals", ""] + lines if lines else []


def _configurations(s: dict) -> list[str]:
    """Each config as its command's flags (``simulate`` only: the flags alone, as always)."""
    from .kinds import get_kind

    only_simulate = all(kind == "simulate" for kind in s["kinds"].values())
    head = "`batsched-ml simulate` flags" if only_simulate else "command"
    lines = ["## Configurations", "", f"| config | {head} |", "|---|---|"]
    for name, argv in s["argv"].items():
        flags = " ".join(argv) or "(defaults)"
        if not only_simulate:
            flags = f"{get_kind(s['kinds'][name]).command} {' '.join(argv)}".strip()
        on = f" (on {', '.join(s['runs_on'][name])})" if name in s["runs_on"] else ""
        lines.append(f"| {name}{on} | `{flags}` |")
    return lines + [""]


def _trainings_section(results_dir: Path, trainings: list[str]) -> list[str]:
    """The trainings' runs (``trainings.csv``): status, traces and what each kind reports."""
    from .trainings import read_trainings

    rows = [r for r in read_trainings(results_dir) if r["training"] in trainings]
    if not rows:
        return (["## Trainings", "", f"Not run yet: {', '.join(trainings)}.", ""] if trainings else [])
    columns = list(dict.fromkeys(k for r in rows for k in (r["metrics"] or {})))
    lines = ["## Trainings", "", "Each training's seeds (`trainings.csv`; the files under `trained/`).", "",
             "| training | seed | status | traces | " + " | ".join(columns) + " |",
             "|---|---:|---|---|" + "---:|" * len(columns)]
    for r in rows:
        metrics = r["metrics"] or {}
        cells = [metrics[c] if isinstance(metrics.get(c), str) else fmt(metrics.get(c)) for c in columns]
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {r['error']}"
        lines.append(f"| {r['training']} | {r['seed']} | {status} | {r['traces']} | " + " | ".join(cells) + " |")
    return lines + [""]


def _last_run(results_dir: Path) -> list[str]:
    log = results_dir / "runs.log"
    if not log.is_file():
        return []
    last = json.loads(log.read_text().splitlines()[-1])
    stopped = " It was interrupted: run it again to complete the campaign." if last.get("interrupted") else ""
    return [f"Last `campaign run`: {last['wall_s']:,.1f} s wall on {last['engine']}, {last['computed']} runs "
            f"computed, {last['cached']} cached, {last['failed']} failed (code {last['code']}, "
            f"{last['finished']}).{stopped}", ""]


def write_report(results_dir, report_dir, log=None) -> Path:
    """Write ``report_dir/report.md`` (+ figures) from ``results_dir``; returns the Markdown path.
    ``log(line)`` hears what the report could not do (figures without matplotlib)."""
    results_dir, report_dir = Path(results_dir), Path(report_dir)
    rows = read_results(results_dir)
    s = _settings(results_dir)
    metrics, baseline = list(s["metrics"]), s["baseline"]
    paper_metrics = [p.metric for p in s["paper"] if p.metric not in metrics]
    summary = summarise(rows, metrics + list(dict.fromkeys(paper_metrics)))
    report_dir.mkdir(parents=True, exist_ok=True)
    traces = list(dict.fromkeys([*s["traces"], *(r["trace"] for r in rows)]))
    configs = list(dict.fromkeys([*s["configs"], *(r["config"] for r in rows)]))
    counts = completeness(rows, traces, configs, s["seeds"], s["runs_on"], s["kinds"])
    missing = sum(c["missing"] for c in counts.values())
    no_figures = matplotlib_missing()
    if no_figures and log is not None:
        log(f"batsched-ml: note: the report has no figures: {no_figures}")
    colors = config_colors(configs) if not no_figures else {}
    status = defaultdict(int)
    for r in rows:
        status[r["status"]] += 1
    lines = [f"# Campaign {s['name']}", ""]
    if s["description"]:
        lines += [s["description"], ""]
    incomplete = sum(1 for r in rows if r["status"] in RAN and jobs_not_completed(r))
    lines += [f"{len(rows)} runs ({', '.join(f'{n} {k}' for k, n in sorted(status.items()))})"
              + (f", {missing} missing" if missing else "")
              + (f"; **{incomplete} with jobs that did not complete** (marked `!`)" if incomplete else "")
              + f"; traces {', '.join(traces)}; {len(configs)} configurations; baseline **{baseline}**. Values are "
              f"means over windows and seeds (column n), with in parentheses their {change_rule(baseline)}.", ""]
    if no_figures:
        lines += [f"No figures in this report: {no_figures}, then `batsched-ml campaign report {results_dir}`.", ""]
    lines += per_job_note(rows, results_dir)
    for trace in traces:
        lines += [f"## {trace}", ""]
        if not any(counts.get((trace, c), {}).get(k) for c in configs for k in (*RAN, "error", "timeout")):
            lines += ["Not run yet: `batsched-ml campaign run` on the campaign file runs it.", ""]
            continue
        not_completed = not_completed_by_config(rows, trace)
        lines += trace_table(summary, trace, configs, metrics, baseline, counts, not_completed)
        lines += _not_completed_note(not_completed, rows, trace)
        lines += _gaps_note(trace, configs, counts)
        if not no_figures:
            for caption, name in trace_figures(rows, trace, configs, metrics[0], report_dir, results_dir, colors,
                                               windows_are=s["windows"].get(trace, "windows")):
                lines += [f"![{trace}: {caption}]({name})", ""]
        lines += _class_section(rows, trace, configs, baseline, report_dir, results_dir, figures=not no_figures)
        lines += _interval_section(rows, trace, configs, metrics, baseline, results_dir)
    if s["tables"]:
        lines += ["## Tables", ""]
        for spec in s["tables"]:
            lines += aggregate_table(spec, rows, traces, configs, s["axes"], s["paper"])
    lines += paper_table([p for p in s["paper"] if p.trace in traces], summary, baseline)
    lines += fork_section(results_dir)
    lines += _trainings_section(results_dir, s["trainings"])
    lines += _configurations(s)
    walls = [r["wall_s"] for r in rows if r.get("wall_s") is not None]
    if walls:
        lines += [f"Simulation time: {sum(walls):,.1f} s in total (sum over runs, as measured when each ran; "
                  "cached runs keep their original time).", ""]
    lines += _last_run(results_dir)
    failed = [r for r in rows if r["status"] in ("error", "timeout")]
    if failed:
        lines += ["## Failed runs", ""]
        lines += [f"- {r['trace']} w{r['window']} {r['config']} seed {r['seed']} ({r['status']}): {r['error']}"
                  for r in failed]
        lines.append("")
    path = report_dir / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
