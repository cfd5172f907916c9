"""Figures of one or several runs, from their Batsim jobs CSVs (ours or real Batsim's).

* ``cumbsld``: the running sum of bounded slowdowns over time, one curve per run
  (Zrigui et al. 2022, Figure 6) -- where a scheduler gains or loses, and when;
* ``wait-ecdf``: the distribution of waiting times, one curve per run, on a
  symlog axis (linear below 1 s, logarithmic above): waits of 0 and 0.3 ms --
  Batsim's message latencies -- are shown where they are, not piled at 1 s; when
  most jobs do not wait at all (95% on a lightly loaded machine), the share axis
  starts just below that share, so the jobs that did wait fill the figure.

Campaign reports also draw :func:`plot_spread` (one metric's value per run, by
configuration) and :func:`plot_class_bars` (small and large jobs' slowdowns).

A killed-and-requeued job counts once, as in the metrics. Defaults are meant for
papers: curve labels from the run (``PREFIX_run.json``, written by ``simulate``:
scheduler, policy, predictor...) unless given, plain tick labels (no ``1e6``
offset), every figure 7 x 4.2 in at 300 dpi for bitmaps (2100 x 1260 px), long
titles wrapped, PDF/SVG by the output's suffix.
"""

from __future__ import annotations

import json
import math
import textwrap
import warnings
from pathlib import Path

import numpy as np

from ..config.validate import tau as check_tau
from ..errors import PlotError
from .metrics import cumulative_bsld, merge_attempts, read_jobs_csv

KINDS = ("cumbsld", "wait-ecdf")
DAY = 86400.0
DPI = 300
FIGSIZE = (7.0, 4.2)  # inches: every figure, so that a report's figures line up
TITLE_WIDTH = 70  # characters per title line at the default font on FIGSIZE
NO_WAIT = 0.01  # s: a wait this short is Batsim's message latency, not waiting
MATPLOTLIB_MISSING = "figures need matplotlib, which is not installed here: pip install matplotlib"
# one line style and marker per curve, beside its colour: curves that overlap stay told apart (and in print)
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
MARKS_PER_CURVE = 12  # markers along a curve, evenly spaced on the figure (not one per job)


def pyplot():
    """matplotlib's pyplot on the file-only backend; ``PlotError`` (one line) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise PlotError(MATPLOTLIB_MISSING) from exc
    return plt


def new_figure():
    """``(plt, fig, ax)``: one axes of the common size."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=FIGSIZE)
    return plt, fig, ax


def set_title(ax, title: str | None) -> None:
    """A title wrapped onto as many lines as it needs (never cut by the figure's edge)."""
    if title:
        ax.set_title("\n".join(textwrap.wrap(title, TITLE_WIDTH)) or title)


def save_figure(plt, fig, output) -> None:
    """Lay out and write ``fig`` (format from the suffix, bitmaps at DPI), then free it."""
    fig.tight_layout()
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=DPI)
    plt.close(fig)


def _jobs_file_stem(path):
    """A jobs file's name without ``jobs.csv``: ``easy_`` (Batsim 4.2.1's ``easy_jobs.csv``), ``easy-`` or
    ``""`` (Batsim 5's ``easy-jobs.csv``, ``easy/jobs.csv``); None for another name."""
    name = Path(path).name
    for suffix in ("jobs.csv", "jobs.csv.gz"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return None


def _prefix(path) -> str:
    """The run's name from its export prefix: ``out/easy_jobs.csv`` -> ``easy``, Batsim 5's
    ``out/easy/jobs.csv`` -> ``easy``."""
    stem = _jobs_file_stem(path)
    if stem is None:
        return Path(path).stem
    return stem.rstrip("_-.") or Path(path).parent.name


def run_label(path) -> str:
    """The ``label`` of the run's ``PREFIX_run.json`` (e.g. ``easy fcfs, eloss/incremental, sjbf``)
    when present, else the prefix: ``out/easy_jobs.csv`` -> ``easy``."""
    stem = _jobs_file_stem(path)
    try:
        label = json.loads(Path(path).with_name(stem + "run.json").read_text()).get("label") if stem is not None else None
    except (OSError, ValueError, AttributeError):
        label = None
    return label if isinstance(label, str) and label else _prefix(path)


def plot_runs(jobs_csvs, output, kind: str = "cumbsld", tau: float = 60.0, labels=None, title=None, colors=None):
    """Draw ``kind`` for every jobs CSV into ``output`` (format from its suffix); returns the figure.
    ``colors``: one matplotlib colour per run (default: the colour cycle, in order)."""
    check_tau(tau)
    if kind not in KINDS:
        raise ValueError(f"unknown plot kind {kind!r}; choose from {', '.join(KINDS)}")
    labels = list(labels) if labels else [run_label(p) for p in jobs_csvs]
    if len(labels) != len(jobs_csvs):
        raise ValueError(f"{len(labels)} labels for {len(jobs_csvs)} runs")
    colors = list(colors) if colors else [None] * len(labels)
    plt, fig, ax = new_figure()
    from matplotlib.ticker import FuncFormatter

    no_wait = []  # each run's share of jobs that did not wait
    for i, (path, label, color) in enumerate(zip(jobs_csvs, labels, colors)):
        style = curve_style(i)
        if kind == "cumbsld":
            times, cum = cumulative_bsld(path, tau)
            empty = len(times) == 0
            ax.step(times / DAY, cum, where="post", label=label, color=color, **style)
        else:
            records = merge_attempts(read_jobs_csv(path))
            wait = np.sort(records.wait[~np.isnan(records.wait)])
            empty = len(wait) == 0
            if not empty:
                no_wait.append(np.searchsorted(wait, NO_WAIT, side="right") / len(wait))
            ax.step(wait, np.arange(1, len(wait) + 1) / max(len(wait), 1), where="post", label=label, color=color,
                    **style)
        if empty:
            warnings.warn(f"{path}: no executed job, the curve {label!r} is empty", stacklevel=2)
    plain = FuncFormatter(_plain_number)
    if kind == "cumbsld":
        ax.set_xlabel("time (days)")
        ax.set_ylabel(f"cumulative bounded slowdown (tau = {tau:g} s)")
        ax.yaxis.set_major_formatter(plain)
        ax.ticklabel_format(axis="x", useOffset=False)
    else:
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(left=0.0)
        ax.set_xlabel("waiting time (s; linear below 1 s, logarithmic above)")
        bottom = _share_axis_bottom(min(no_wait)) if no_wait else 0.0
        ax.set_ylim(bottom, 1.0)
        ax.set_ylabel("share of jobs" + (f"\n(axis from {bottom:g}: {min(no_wait):.1%} or more did not wait)"
                                         if bottom > 0 else ""))
    set_title(ax, title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left" if kind == "cumbsld" else "lower right")  # "best" is slow on 100k-point curves
    save_figure(plt, fig, output)
    return fig


def curve_style(i: int) -> dict:
    """Line style and markers of the ``i``-th curve: no two of the first 28 curves alike, the
    markers a few per curve (their place shifted per curve, so that curves on top of each other
    still show each one's marks)."""
    return {"linestyle": LINESTYLES[i % len(LINESTYLES)], "marker": MARKERS[i % len(MARKERS)], "markersize": 4,
            "markevery": (0.3 * (i % 4) / MARKS_PER_CURVE, 1.0 / MARKS_PER_CURVE), "linewidth": 1.3}


def _share_axis_bottom(no_wait: float) -> float:
    """Where the share axis starts: 1 minus a round span (1, 2 or 5 x 10^k) at least 1.5 times the
    share of jobs that waited, so that they fill two thirds of the figure or more (95% not
    waiting -> from 0.9; 99.9% -> from 0.998); 0 when most jobs waited."""
    waited = 1.0 - no_wait
    if waited <= 0:
        return 0.0
    need = 1.5 * max(waited, 1e-6)
    exponent = math.floor(math.log10(need))
    span = next(m * 10.0 ** exponent for m in (1, 2, 5, 10) if m * 10.0 ** exponent >= need)
    return 0.0 if span >= 1.0 else round(1.0 - span, 12)


def plot_spread(values: dict, output, ylabel: str, title: str | None = None, colors=None):
    """One metric's value of every run, by configuration (``{label: [values]}``): each run a dot,
    the mean a bar across them; a box behind the dots once a configuration has 5 runs or more
    (a box of 2 or 3 values, or of seeds that give the same value, is a flat line that hides
    the runs). Returns the figure."""
    plt, fig, ax = new_figure()
    colors = colors or {}
    labels = list(values)
    positions = np.arange(1, len(labels) + 1)
    if any(len(values[c]) >= 5 for c in labels):
        ax.boxplot([values[c] for c in labels], positions=positions, widths=0.5, showfliers=False,
                   medianprops={"color": "0.4"}, boxprops={"color": "0.6"}, whiskerprops={"color": "0.6"},
                   capprops={"color": "0.6"})
    for x, label in zip(positions, labels):
        vs = np.asarray(values[label], dtype=float)
        offsets = np.linspace(-0.15, 0.15, len(vs)) if len(vs) > 1 else np.zeros(1)
        color = colors.get(label)
        ax.scatter(x + offsets, vs, s=18, color=color, alpha=0.8, zorder=3)
        ax.hlines(vs.mean(), x - 0.28, x + 0.28, color=color, linewidth=2.5, zorder=4)
        ax.annotate(_number(vs.mean()), (x + 0.3, vs.mean()), va="center", fontsize=8, color="0.25")
    ax.set_xticks(positions, labels, rotation=30, ha="right")
    ax.set_xlim(0.4, len(labels) + 0.6)
    _from_zero(ax, [v for c in labels for v in values[c]])
    ax.set_ylabel(ylabel)
    set_title(ax, title)
    ax.grid(axis="y", alpha=0.3)
    save_figure(plt, fig, output)
    return fig


def _from_zero(ax, values) -> None:
    """Start the value axis at 0 when no value is negative: a bar or a gap reads at its true size."""
    finite = [v for v in values if v is not None and np.isfinite(v)]
    if finite and min(finite) >= 0:
        ax.set_ylim(bottom=0.0)


def _number(value) -> str:
    from .uncertainty import format_number  # the reports' number format

    return format_number(float(value))


def _value_labels(ax, bars, values) -> None:
    """Each bar's value on top of it, in the reports' number format."""
    ax.bar_label(bars, labels=[_number(v) if v is not None else "" for v in values], padding=2, fontsize=8)
    ax.margins(y=0.12)  # room for the labels above the highest bar


def plot_bars(values: dict, output, ylabel: str, title: str | None = None, colors=None):
    """One value per configuration (``{label: value}``) as bars. Returns the figure."""
    plt, fig, ax = new_figure()
    colors = colors or {}
    labels = list(values)
    positions = np.arange(1, len(labels) + 1)
    bars = ax.bar(positions, [values[c] for c in labels], color=[colors.get(c, "tab:blue") for c in labels])
    _value_labels(ax, bars, [values[c] for c in labels])
    ax.set_xticks(positions, labels, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    set_title(ax, title)
    ax.grid(axis="y", alpha=0.3)
    save_figure(plt, fig, output)
    return fig


def plot_class_bars(values: dict, output, ylabel: str, title: str | None = None):
    """Small and large jobs' values side by side per configuration (``{label: (small, large)}``;
    None draws no bar). Returns the figure."""
    plt, fig, ax = new_figure()
    labels = list(values)
    x = np.arange(len(labels))
    for offset, which, name, color in ((-0.2, 0, "small jobs", "tab:green"), (0.2, 1, "large jobs", "tab:gray")):
        shown = [values[c][which] for c in labels]
        bars = ax.bar(x + offset, [v or 0 for v in shown], 0.4, label=name, color=color)
        _value_labels(ax, bars, shown)
    ax.set_xticks(x, labels, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    set_title(ax, title)
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    save_figure(plt, fig, output)
    return fig


def _plain_number(value, _pos=None) -> str:
    """``1234567.0`` -> ``1,234,567``; ``0.5`` -> ``0.5``: no offset, no scientific notation."""
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.6g}"
