"""How much a scheduling result would move with another seed, window or sample of jobs.

Results with a learned or random component are samples of a noisy quantity, and the bounded
slowdown is heavy-tailed (a few jobs that waited days can hold a large share of the sum), so a
single number says little. This module gives the intervals the reports print:

* :func:`mean_interval`: the mean of a metric over seeds and/or windows, with a bootstrap 95%
  interval (runs resampled with replacement);
* :func:`paired_reduction`: a config's reduction vs a baseline, ``100 * (1 - mean(config) /
  mean(baseline))``, with runs paired on (window, seed) and resampled as pairs, and whether
  the interval holds 0 (the difference is *within noise*);
* :func:`job_interval` / :func:`worst_share`: for one run, the interval of AVEbsld or of the
  cumulative bsld when its jobs are resampled, and the share of the cumulative bsld held by
  the worst 1% of jobs (why these sums jump); :func:`paired_job_reduction`: the same for the
  reduction between two single runs of the same jobs (deterministic configs);
* :func:`comparison_lines` / :func:`campaign_section`: the Markdown table of a campaign's
  configs built from the above (``campaign/report.py`` prints one per trace), each reduction
  shown as the change it is (:func:`format_change`, the one convention of every report table).

Intervals are percentile bootstrap intervals (``scipy.stats.bootstrap``, ``method="percentile"``),
seeded, so a report is the same every time it is written. With 3 runs the percentile interval of
a mean is close to [min, max] of the runs: read it as the spread that was observed, not as a
guarantee; fewer than two runs give no interval at all.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

__all__ = ["Interval", "campaign_section", "change_rule", "comparison_lines", "format_change", "format_number",
           "job_interval", "mean_difference", "mean_interval", "paired_job_reduction", "paired_reduction",
           "per_job_values", "run_figures", "run_uncertainty",
           "worst_share"]

CONFIDENCE = 0.95
RESAMPLES = 9999
JOB_RESAMPLES = 1000  # resamples of a run's jobs, fewer on long runs (JOB_DRAWS)
JOB_DRAWS = 100_000_000  # at most this many jobs drawn per interval: ~5 s on one core
SEED = 0


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap interval (``low``/``high`` None with fewer than 2 samples)."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def holds(self, value: float) -> bool:
        """True when ``value`` lies inside the interval (False when there is none)."""
        return self.has_interval and self.low <= value <= self.high

    def as_dict(self) -> dict:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n}


def _bootstrap(data: tuple, statistic: Callable, *, paired: bool, n_resamples: int, seed: int,
               batch: int | None = None) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` (vectorised along the last axis)."""
    from scipy.stats import bootstrap

    seeding = {"rng": np.random.default_rng(seed)} if "rng" in inspect.signature(bootstrap).parameters \
        else {"random_state": np.random.default_rng(seed)}  # scipy < 1.15
    res = bootstrap(data, statistic, paired=paired, vectorized=True, axis=-1, n_resamples=n_resamples,
                    confidence_level=CONFIDENCE, method="percentile", batch=batch, **seeding)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _clean(values) -> np.ndarray:
    a = np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
    return a[~np.isnan(a)]


def mean_interval(values: Sequence[float], *, n_resamples: int = RESAMPLES, seed: int = SEED) -> Interval:
    """Mean of ``values`` (None/NaN dropped) with its bootstrap interval."""
    a = _clean(values)
    if len(a) == 0:
        return Interval(None, None, None, 0)
    mean = float(a.mean())
    if len(a) < 2:
        return Interval(mean, None, None, len(a))
    if np.ptp(a) == 0:
        return Interval(mean, mean, mean, len(a))
    low, high = _bootstrap((a,), lambda x, axis=-1: x.mean(axis=axis), paired=False,
                           n_resamples=n_resamples, seed=seed)
    return Interval(mean, low, high, len(a))


def mean_difference(values: Sequence[float], other: Sequence[float], *, n_resamples: int = RESAMPLES,
                    seed: int = SEED) -> Interval:
    """``mean(values) - mean(other)`` of two independent sets of runs (e.g. a learned config's
    seeds against a deterministic config's jitter copies), each resampled on its own; no
    interval unless both have at least two runs."""
    x, y = _clean(values), _clean(other)
    if len(x) == 0 or len(y) == 0:
        return Interval(None, None, None, 0)
    estimate = float(x.mean() - y.mean())
    n = min(len(x), len(y))
    if n < 2:
        return Interval(estimate, None, None, n)
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        return Interval(estimate, estimate, estimate, n)
    low, high = _bootstrap((x, y), lambda a, b, axis=-1: a.mean(axis=axis) - b.mean(axis=axis), paired=False,
                           n_resamples=n_resamples, seed=seed)
    return Interval(estimate, low, high, n)


def _reduction(x, y, axis=-1):
    return 100.0 * (1.0 - np.mean(x, axis=axis) / np.mean(y, axis=axis))


def paired_reduction(values: Mapping, baseline: Mapping, *, n_resamples: int = RESAMPLES,
                     seed: int = SEED) -> Interval:
    """``100 * (1 - mean(config) / mean(baseline))`` over the runs both have (keys such as
    ``(window, seed)``), with the bootstrap interval of pairs resampled together.

    Pairing removes what the two share (the same window's load, the same seed's draws): a
    config that is always 10% better than its baseline window by window gets a narrow interval
    even when the windows differ tenfold. No pair, or a baseline mean of 0: an empty estimate.
    """
    keys = [k for k in values if k in baseline and values[k] is not None and baseline[k] is not None
            and not (isinstance(values[k], float) and math.isnan(values[k]))
            and not (isinstance(baseline[k], float) and math.isnan(baseline[k]))]
    if not keys:
        return Interval(None, None, None, 0)
    x = np.array([values[k] for k in keys], dtype=np.float64)
    y = np.array([baseline[k] for k in keys], dtype=np.float64)
    if y.mean() == 0:
        return Interval(None, None, None, len(keys))
    estimate = float(_reduction(x, y))
    if len(keys) < 2:
        return Interval(estimate, None, None, 1)
    if np.ptp(x / np.where(y == 0, np.nan, y)) == 0 and np.ptp(y) == 0:
        return Interval(estimate, estimate, estimate, len(keys))
    if (y == 0).any():
        y = y + 0.0  # a zero baseline run cannot be resampled alone into a division by zero
    low, high = _bootstrap((x, y), _reduction, paired=True, n_resamples=n_resamples, seed=seed)
    return Interval(estimate, low, high, len(keys))


def job_interval(bsld: Sequence[float], *, total: bool = False, n_resamples: int | None = None,
                 seed: int = SEED) -> Interval:
    """AVEbsld of one run (or with ``total``, its cumulative bsld = the sum) with the interval of
    its jobs resampled: how much the figure rests on which jobs happened to be in the trace.
    ``n_resamples`` defaults to 1,000, fewer (not under 200) beyond 100k jobs to bound the cost."""
    a = _clean(bsld)
    n = len(a)
    if n == 0:
        return Interval(None, None, None, 0)
    if n_resamples is None:
        n_resamples = max(200, min(JOB_RESAMPLES, JOB_DRAWS // max(n, 1)))
    scale = float(n) if total else 1.0
    mean = float(a.mean())
    if n < 2 or np.ptp(a) == 0:
        return Interval(mean * scale, None if n < 2 else mean * scale, None if n < 2 else mean * scale, n)
    # a batch of resamples holds batch x n floats: keep it near 25 M (200 MB)
    batch = max(1, min(n_resamples, 25_000_000 // n))
    low, high = _bootstrap((a,), lambda x, axis=-1: x.mean(axis=axis), paired=False,
                           n_resamples=n_resamples, seed=seed, batch=batch)
    return Interval(mean * scale, low * scale, high * scale, n)


def paired_job_reduction(values: Sequence[float], baseline: Sequence[float], *, n_resamples: int | None = None,
                         seed: int = SEED) -> Interval:
    """``100 * (1 - sum(values) / sum(baseline))`` of two runs of the same jobs (aligned arrays,
    e.g. per-job bsld), with the interval of the jobs resampled together: for single runs of
    deterministic configs, how much the reduction rests on which jobs were in the trace. (It
    cannot tell what another seed would do: a learned config needs several seeds.)"""
    x = np.asarray(values, dtype=np.float64)
    y = np.asarray(baseline, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired_job_reduction needs aligned runs, got {len(x)} and {len(y)} jobs")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = len(x)
    if n == 0 or y.sum() == 0:
        return Interval(None, None, None, n)
    estimate = float(_reduction(x, y))
    if n < 2:
        return Interval(estimate, None, None, n)
    if n_resamples is None:
        n_resamples = max(200, min(JOB_RESAMPLES, JOB_DRAWS // (2 * n)))
    batch = max(1, min(n_resamples, 12_500_000 // n))
    low, high = _bootstrap((x, y), _reduction, paired=True, n_resamples=n_resamples, seed=seed, batch=batch)
    return Interval(estimate, low, high, n)


def worst_share(bsld: Sequence[float], fraction: float = 0.01) -> float | None:
    """Share of the cumulative bsld held by the worst ``fraction`` of jobs (at least one job)."""
    a = _clean(bsld)
    if len(a) == 0 or a.sum() == 0:
        return None
    k = max(1, int(math.ceil(fraction * len(a))))
    return float(np.partition(a, len(a) - k)[len(a) - k:].sum() / a.sum())


def run_uncertainty(bsld_by_tau: Mapping[float, Sequence[float]], *, seed: int = SEED) -> dict:
    """Per-run figures for ``batsched-ml metrics``: for each tau, the job-bootstrap interval of
    AVEbsld and of the cumulative bsld, and the worst 1% share (plain floats for JSON)."""
    out = {}
    for tau, bsld in bsld_by_tau.items():
        key = f"tau{float(tau):g}"
        ave = job_interval(bsld, seed=seed)
        cum = job_interval(bsld, total=True, seed=seed)
        out[f"avebsld_{key}_ci95"] = [ave.low, ave.high]
        out[f"cum_bsld_{key}"] = cum.estimate
        out[f"cum_bsld_{key}_ci95"] = [cum.low, cum.high]
        out[f"worst1pct_share_{key}"] = worst_share(bsld)
    return out


def run_figures(source, taus: Sequence[float] = (10.0, 60.0), *, seed: int = SEED) -> dict:
    """:func:`run_uncertainty` of one run (a jobs CSV path, table or records): its executed
    logical jobs' bsld for each tau (``batsched-ml metrics`` adds these to the metrics)."""
    from .metrics import JobRecords, JobsTable, merge_attempts, per_job_bsld, read_jobs_csv

    if isinstance(source, JobRecords):
        records = source
    else:
        records = merge_attempts(source if isinstance(source, JobsTable) else read_jobs_csv(source))
    done = records.subset(~records.rejected & ~np.isnan(records.start))
    return run_uncertainty({float(t): per_job_bsld(done, t) for t in taus}, seed=seed)


# ------------------------------------------------------------------------------------ tables
def format_number(v) -> str:
    """A number for a report's table: thousands separated, three significant digits below 1."""
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


def format_change(change: float | None, metric: str, low: float | None = None, high: float | None = None) -> str:
    """A change vs a baseline, in % of the baseline (``100 * (value / baseline - 1)``: negative is
    lower), with its interval and the word that says which way is good for ``metric``:
    ``-63.4% better``, ``-12.6% worse`` (a utilisation drop), ``+2.0% [-1.0, +5.1] worse ~``
    (``~``: the interval holds 0, within noise). The one way every report table shows a change."""
    if change is None or (isinstance(change, float) and math.isnan(change)):
        return "-"
    text = f"{change:+.1f}%".replace("+-", "-")
    if low is not None and high is not None:
        text += f" [{low:+.1f}, {high:+.1f}]"
    from .metrics import better_direction

    direction = better_direction(metric)
    if direction is not None and round(change, 1) != 0:
        text += " better" if (change < 0) == (direction == "lower") else " worse"
    if low is not None and high is not None and low <= 0.0 <= high:
        text += " ~"
    return text


def change_rule(baseline: str) -> str:
    """The sentence every report table with changes carries."""
    return (f"changes vs {baseline} in % of its value (`100 * (config / {baseline} - 1)`: negative is lower), "
            "marked better or worse by the metric (lower slowdowns, waits, kills and waste; higher utilisation)")


def _cell(interval: Interval) -> str:
    if interval.estimate is None:
        return "-"
    if not interval.has_interval:
        return format_number(interval.estimate)
    return f"{format_number(interval.estimate)} [{format_number(interval.low)}, {format_number(interval.high)}]"


def _change_cell(reduction: Interval, metric: str) -> str:
    """A reduction's interval (``100 * (1 - config / baseline)``) shown as the change it is."""
    if reduction.estimate is None:
        return "-"
    if not reduction.has_interval:
        return format_change(-reduction.estimate, metric)
    return format_change(-reduction.estimate, metric, -reduction.high, -reduction.low)


def _paired_baseline(runs: Mapping, base: Mapping) -> dict:
    """The baseline value each run of ``runs`` (keys ``(window, seed)``) is compared with: the
    baseline run of the same window and seed, or the baseline's only run of that window (a
    deterministic baseline run once beside a learned config's seeds)."""
    by_window: dict = {}
    for (window, _), value in base.items():
        by_window.setdefault(window, []).append(value)
    out = {}
    for key in runs:
        if key in base:
            out[key] = base[key]
        elif isinstance(key, tuple) and len(by_window.get(key[0], ())) == 1:
            out[key] = by_window[key[0]][0]
    return out


def comparison_lines(values: Mapping[str, Mapping[str, Mapping]], baseline: str, metrics: Sequence[str],
                     job_reductions: Mapping[str, Mapping[str, Interval]] | None = None) -> list[str]:
    """Markdown table: per config and metric, the mean over runs with its 95% interval, and
    the paired change vs ``baseline`` with its interval (:func:`format_change`: better or worse
    by the metric), ``~`` marking an interval that holds 0 (within noise). ``values[config][metric]`` maps a run key (``(window, seed)``) to its value.
    ``job_reductions[config][metric]``: for a config and baseline run once each (no interval
    over runs), the :func:`paired_job_reduction` shown instead, marked ``(jobs)``."""
    job_reductions = job_reductions or {}
    lines = ["| config | runs | " + " | ".join(f"{m} [95% CI] | change [95% CI]" for m in metrics) + " |",
             "|---|---:|" + "---:|---:|" * len(metrics)]
    base = values.get(baseline, {})
    for config, by_metric in values.items():
        n = max((len([v for v in runs.values() if v is not None]) for runs in by_metric.values()), default=0)
        cells = []
        for m in metrics:
            runs = by_metric.get(m, {})
            cells.append(_cell(mean_interval(list(runs.values()))))
            if config == baseline:
                cells.append("")
                continue
            red = paired_reduction(runs, _paired_baseline(runs, base.get(m, {})))
            by_jobs = job_reductions.get(config, {}).get(m)
            if not red.has_interval and by_jobs is not None and by_jobs.has_interval:
                cells.append(_change_cell(by_jobs, m) + " (jobs)")
            else:
                cells.append(_change_cell(red, m))
        lines.append(f"| {config} | {n} | " + " | ".join(cells) + " |")
    return lines


# metric -> (per-job quantity, tau): the metrics a single run's jobs can be resampled for
PER_JOB_METRICS = {"avebsld10": ("bsld", 10.0), "avebsld60": ("bsld", 60.0), "cum_bsld60": ("bsld", 60.0),
                   "mean_wait": ("wait", None)}


def per_job_values(jobs_csv, metrics: Sequence[str]) -> dict:
    """``{metric: (job ids sorted, values)}`` of one run for the metrics of ``PER_JOB_METRICS``."""
    from .metrics import merge_attempts, per_job_bsld, read_jobs_csv

    records = merge_attempts(read_jobs_csv(jobs_csv))
    order = np.argsort(records.full_id, kind="stable")
    ids = records.full_id[order]
    out = {}
    for m in metrics:
        kind = PER_JOB_METRICS.get(m)
        if kind is None:
            continue
        vals = per_job_bsld(records, kind[1]) if kind[0] == "bsld" else records.wait.astype(np.float64)
        out[m] = (ids, vals[order])
    return out


def campaign_section(rows: Sequence[Mapping], trace: str, configs: Sequence[str], baseline: str,
                     metrics: Sequence[str], value: Callable, single_run_jobs: Callable | None = None) -> list[str]:
    """The Markdown lines of a campaign report's interval table for one trace.

    ``rows``: the results rows (``trace``, ``window``, ``config``, ``seed``, ``status``);
    ``value(row, metric)``: a row's metric; ``single_run_jobs(config)``: the jobs CSV of a
    config's only run (or None), for the job-resampled interval of single deterministic runs."""
    ran = [r for r in rows if r["trace"] == trace and r["status"] != "error"]
    values = {c: {m: {(r["window"], r["seed"]): value(r, m) for r in ran if r["config"] == c} for m in metrics}
              for c in configs if any(r["config"] == c for r in ran)}
    if baseline not in values:
        return []
    job_reductions: dict = {}
    runs = {c: len(values[c][metrics[0]]) if metrics else 0 for c in values}
    if single_run_jobs is not None and runs.get(baseline) == 1 and any(m in PER_JOB_METRICS for m in metrics):
        base_path = single_run_jobs(baseline)
        base_jobs = per_job_values(base_path, metrics) if base_path else {}
        for c in values:
            path = single_run_jobs(c) if c != baseline and runs[c] == 1 else None
            if not path or not base_jobs:
                continue
            mine = per_job_values(path, metrics)
            for m, (ids, vals) in mine.items():
                base_ids, base_vals = base_jobs[m]
                if len(ids) == len(base_ids) and (ids == base_ids).all():
                    job_reductions.setdefault(c, {})[m] = paired_job_reduction(vals, base_vals)
    lines = [f"Means over windows and seeds with bootstrap 95% intervals (runs resampled; with 3 runs about "
             f"[min, max]); {change_rule(baseline)}, paired by window and seed, `~` where the interval holds 0 "
             "(within noise). A config run once "
             "beside a baseline run once has no interval over runs: `(jobs)` marks the interval of its jobs "
             "resampled in both runs (how much the figure rests on which jobs the trace holds; another seed "
             "of a learned config may move it further).", ""]
    return lines + comparison_lines(values, baseline, metrics, job_reductions) + [""]
