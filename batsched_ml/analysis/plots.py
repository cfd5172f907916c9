"""Figures of one or several runs, from their Batsim jobs CSVs (ours or real Batsim's).

* ``cumbsld``: the running sum of bounded slowdowns over time, one curve per run
  (Zrigui et al. 2022, Figure 6) -- where a scheduler gains or loses, and when;
* ``wait-ecdf``: the distribution of waiting times, one curve per run, on a
  symlog axis (linear below 1 s, logarithmic above): waits of 0 and 0.3 ms --
  Batsim's message latencies -- are shown where they are, not piled at 1 s.

A killed-and-requeued job counts once, as in the metrics. Defaults are meant for
papers: curve labels from the run (``PREFIX_run.json``, written by ``simulate``:
scheduler, policy, predictor...) unless given, plain tick labels (no ``1e6``
offset), 300 dpi for bitmaps, PDF/SVG by the output's suffix. matplotlib is an
optional dependency (``pip install 'batsched-ml[plots]'``).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from ..errors import PlotError
from ..validation import tau as check_tau
from .metrics import cumulative_bsld, merge_attempts, read_jobs_csv

KINDS = ("cumbsld", "wait-ecdf")
DAY = 86400.0
DPI = 300


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise PlotError("plots need matplotlib: pip install 'batsched-ml[plots]'") from exc
    return plt


def _prefix(path) -> str:
    name = Path(path).name
    for suffix in ("_jobs.csv", "_jobs.csv.gz"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return Path(path).stem


def run_label(path) -> str:
    """The ``label`` of the run's ``PREFIX_run.json`` (e.g. ``easy fcfs, eloss/incremental, sjbf``)
    when present, else the prefix: ``out/easy_jobs.csv`` -> ``easy``."""
    info = Path(path).with_name(_prefix(path) + "_run.json")
    try:
        label = json.loads(info.read_text()).get("label")
    except (OSError, ValueError, AttributeError):
        label = None
    return label if isinstance(label, str) and label else _prefix(path)


def plot_runs(jobs_csvs, output, kind: str = "cumbsld", tau: float = 60.0, labels=None, title=None):
    """Draw ``kind`` for every jobs CSV into ``output`` (format from its suffix); returns the figure."""
    check_tau(tau)
    if kind not in KINDS:
        raise ValueError(f"unknown plot kind {kind!r}; choose from {', '.join(KINDS)}")
    labels = list(labels) if labels else [run_label(p) for p in jobs_csvs]
    if len(labels) != len(jobs_csvs):
        raise ValueError(f"{len(labels)} labels for {len(jobs_csvs)} runs")
    plt = _pyplot()
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for path, label in zip(jobs_csvs, labels):
        if kind == "cumbsld":
            times, cum = cumulative_bsld(path, tau)
            empty = len(times) == 0
            ax.step(times / DAY, cum, where="post", label=label)
        else:
            records = merge_attempts(read_jobs_csv(path))
            wait = np.sort(records.wait[~np.isnan(records.wait)])
            empty = len(wait) == 0
            ax.step(wait, np.arange(1, len(wait) + 1) / max(len(wait), 1), where="post", label=label)
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
        ax.set_ylabel("share of jobs")
        ax.set_ylim(0.0, 1.0)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left" if kind == "cumbsld" else "lower right")  # "best" is slow on 100k-point curves
    fig.tight_layout()
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=DPI)
    plt.close(fig)
    return fig


def _plain_number(value, _pos=None) -> str:
    """``1234567.0`` -> ``1,234,567``; ``0.5`` -> ``0.5``: no offset, no scientific notation."""
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.6g}"
