"""Figures of one or several runs, from their Batsim jobs CSVs (ours or real Batsim's).

* ``cumbsld``: the running sum of bounded slowdowns over time, one curve per run
  (Zrigui et al. 2022, Figure 6) -- where a scheduler gains or loses, and when;
* ``wait-ecdf``: the distribution of waiting times (log scale), one curve per run.

A killed-and-requeued job counts once, as in the metrics. matplotlib is an
optional dependency (``pip install 'batsched-ml[plots]'``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..validation import tau as check_tau
from .metrics import cumulative_bsld, merge_attempts, read_jobs_csv

KINDS = ("cumbsld", "wait-ecdf")
DAY = 86400.0


class PlotError(RuntimeError):
    """Plotting is not possible here (matplotlib missing)."""


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise PlotError("plots need matplotlib: pip install 'batsched-ml[plots]'") from exc
    return plt


def run_label(path) -> str:
    """``out/easy_jobs.csv`` -> ``easy``."""
    name = Path(path).name
    return name[: -len("_jobs.csv")] if name.endswith("_jobs.csv") else Path(path).stem


def plot_runs(jobs_csvs, output, kind: str = "cumbsld", tau: float = 60.0, labels=None, title=None):
    """Draw ``kind`` for every jobs CSV into ``output`` (format from its suffix); returns the figure."""
    check_tau(tau)
    if kind not in KINDS:
        raise ValueError(f"unknown plot kind {kind!r}; choose from {', '.join(KINDS)}")
    labels = list(labels) if labels else [run_label(p) for p in jobs_csvs]
    if len(labels) != len(jobs_csvs):
        raise ValueError(f"{len(labels)} labels for {len(jobs_csvs)} runs")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for path, label in zip(jobs_csvs, labels):
        if kind == "cumbsld":
            times, cum = cumulative_bsld(path, tau)
            ax.step(times / DAY, cum, where="post", label=label)
        else:
            records = merge_attempts(read_jobs_csv(path))
            wait = np.sort(records.wait[~np.isnan(records.wait)])
            ax.step(np.maximum(wait, 1.0), np.arange(1, len(wait) + 1) / max(len(wait), 1), where="post",
                    label=label)
    if kind == "cumbsld":
        ax.set_xlabel("time (days)")
        ax.set_ylabel(f"cumulative bounded slowdown (tau = {tau:g} s)")
    else:
        ax.set_xscale("log")
        ax.set_xlabel("waiting time (s, waits under 1 s drawn at 1 s)")
        ax.set_ylabel("share of jobs")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left" if kind == "cumbsld" else "lower right")  # "best" is slow on 100k-point curves
    fig.tight_layout()
    fig.savefig(output)
    plt.close(fig)
    return fig
