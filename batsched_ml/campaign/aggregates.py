"""The report's ``[[tables]]``: one metric's statistic (mean, median, min or max) over each config's
runs (windows x seeds), laid out by configs and traces, or, for each trace, by two axes of the
configs -- Carastan-Santos & de Camargo's Table 4 is ``rows = "setting"``, ``columns = "policy"``,
the median of AVEbsld over the sequences. A paper's number for the cell (a ``[[paper]]`` value of
the same metric) is shown in parentheses."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from .results import RAN, fmt, metric_value

__all__ = ["STATISTICS", "aggregate_table"]

STATISTICS = {"mean": statistics.fmean, "median": statistics.median, "min": min, "max": max}


def _run_values(rows, metric: str) -> dict:
    """``{(trace, config): [the metric of each run that ran]}``."""
    values = defaultdict(list)
    for r in rows:
        if r["status"] in RAN:
            v = metric_value(r, metric)
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                values[(r["trace"], r["config"])].append(v)
    return values


def aggregate_table(spec, rows, traces, configs, axes: dict, paper) -> list[str]:
    """The Markdown lines of one ``[[tables]]`` entry (``spec``: a ``spec.TableSpec``; ``axes``:
    config -> {axis: label})."""
    values = _run_values(rows, spec.metric)
    statistic = STATISTICS[spec.statistic]
    traces = [t for t in traces if spec.traces is None or t in spec.traces]
    configs = [c for c in configs if spec.configs is None or c in spec.configs]
    references = {(p.trace, p.config): p.value for p in paper if p.metric == spec.metric and p.value is not None}

    def number(value) -> str:
        return fmt(value) if spec.decimals is None else f"{value:,.{spec.decimals}f}"

    def cell(trace, config) -> str:
        got = values.get((trace, config))
        text = number(statistic(got)) if got else "-"
        if (trace, config) in references:
            text += f" ({number(references[(trace, config)])})"
        return text

    title = spec.title or f"{spec.metric}: {spec.statistic} over each configuration's runs"
    lines = [f"### {title}", ""]
    if spec.rows is None:
        lines += ["| config | " + " | ".join(traces) + " |", "|---|" + "---:|" * len(traces)]
        for config in configs:
            if any((t, config) in values for t in traces):
                lines.append(f"| {config} | " + " | ".join(cell(t, config) for t in traces) + " |")
    else:
        laid_out = {c: (axes[c][spec.rows], axes[c][spec.columns]) for c in configs
                    if spec.rows in axes.get(c, {}) and spec.columns in axes.get(c, {})}
        row_labels = list(dict.fromkeys(r for r, _ in laid_out.values()))
        column_labels = list(dict.fromkeys(c for _, c in laid_out.values()))
        configs_at = defaultdict(list)  # a place may hold a config per trace (each runs on its own)
        for config, place in laid_out.items():
            configs_at[place].append(config)

        def config_at(trace, place):
            held = configs_at.get(place, [])
            return next((c for c in held if (trace, c) in values), held[0] if held else None)

        lines += [f"| trace | {spec.rows} | n | " + " | ".join(column_labels) + " |",
                  "|---|---|---:|" + "---:|" * len(column_labels)]
        for trace in traces:
            for row in row_labels:
                placed = [config_at(trace, (row, column)) for column in column_labels]
                runs = max((len(values.get((trace, c), [])) for c in placed if c), default=0)
                if runs:
                    cells = [cell(trace, c) if c else "-" for c in placed]
                    lines.append(f"| {trace} | {row} | {runs} | " + " | ".join(cells) + " |")
    if references:
        lines += ["", "In parentheses: the paper's value."]
    return lines + [""]
