"""The figures of a campaign report: per trace, the cumulative bounded slowdown and waiting-time
curves of each config's first run, and the first metric per config (bars, or every run's value
when there are several windows or seeds); and the note a report carries when the runs' jobs
CSVs, which the curves need, are not in the results directory."""

from __future__ import annotations

from pathlib import Path

from .results import RAN, metric_value
from .tasks import run_name, safe_name

__all__ = ["config_colors", "first_run", "jobs_csv_path", "matplotlib_missing", "per_job_note", "trace_figures"]


def config_colors(configs) -> dict:
    """One colour per config, by its place in the campaign file: the same in every trace's figures."""
    configs = list(configs)
    if len(configs) <= 10:
        return {c: f"C{i}" for i, c in enumerate(configs)}
    from matplotlib import colormaps

    cmap = colormaps["tab20"]
    return {c: cmap(i % 20) for i, c in enumerate(configs)}


def first_run(ran: list[dict]) -> tuple[int, int]:
    """(window, seed) of the run each config's curves are drawn from."""
    return min(r["window"] for r in ran), min(r["seed"] for r in ran)


def jobs_csv_path(results_dir: Path, trace, window, config, seed) -> Path:
    return results_dir / "runs" / f"{run_name(trace, window, config, seed)}_jobs.csv.gz"


def per_job_note(rows, results_dir: Path) -> list[str]:
    """Say what is left out when no run's jobs CSV is in ``results_dir`` (a results directory kept
    as ``results.csv`` and ``campaign.toml`` only, like the ones committed under benchmarks/results)."""
    ran = [r for r in rows if r["status"] in RAN]
    if not ran or any(jobs_csv_path(results_dir, r["trace"], r["window"], r["config"], r["seed"]).is_file()
                      for r in ran):
        return []
    return ["The runs' jobs CSVs (`runs/`) are not in this results directory: the curves over time, the small / "
            "large job split and the job-resampled intervals of single runs, computed from them, are left out "
            "(`batsched-ml campaign run` on the campaign file writes them).", ""]


def trace_figures(rows, trace, configs, metric, folder: Path, results_dir: Path, colors: dict,
                  windows_are: str = "windows") -> list[tuple[str, str]]:
    """Write this trace's figures; ``[(caption, file name)]``. ``windows_are``: what the trace's
    windows are, in captions (``"windows"``, or ``"jittered copies"`` of a trace with ``jitter``)."""
    from ..analysis.plots import plot_bars, plot_runs, plot_spread

    out = []
    ran = [r for r in rows if r["trace"] == trace and r["status"] in RAN]
    if not ran:
        return out
    window, seed = first_run(ran)
    runs = []
    for config in configs:
        r = next((r for r in ran if r["config"] == config and r["window"] == window and r["seed"] == seed), None)
        path = jobs_csv_path(results_dir, trace, window, config, seed)
        if r is not None and path.is_file():
            runs.append((config, path))
    slug = safe_name(trace)
    windows, seeds = len({r["window"] for r in ran}), len({r["seed"] for r in ran})
    one = "copy" if windows_are == "jittered copies" else "window"
    which = "" if windows == 1 and seeds == 1 else f" ({one} {window}, seed {seed})"
    if runs:
        for kind, caption in (("cumbsld", "cumulative bounded slowdown (tau = 60 s) over time"),
                              ("wait-ecdf", "waiting-time distribution")):
            name = f"{slug}-{kind}.png"
            plot_runs([p for _, p in runs], folder / name, kind=kind, labels=[c for c, _ in runs],
                      title=f"{trace}: {caption}{which}", colors=[colors[c] for c, _ in runs])
            out.append((f"{caption}{which}", name))
    values = {c: [v for r in ran if r["config"] == c and (v := metric_value(r, metric)) is not None] for c in configs}
    values = {c: vs for c, vs in values.items() if vs}
    if values:
        if any(len(v) > 1 for v in values.values()):
            across = (f"{windows_are} and seeds" if windows > 1 and seeds > 1 else windows_are if windows > 1
                      else "seeds")
            caption = f"{metric} of every run across {across} (dots; bar: mean)"
            name = f"{slug}-spread.png"
            plot_spread(values, folder / name, metric, f"{trace}: {caption}", colors)
        else:
            caption = f"{metric} per configuration"
            name = f"{slug}-bars.png"
            plot_bars({c: v[0] for c, v in values.items()}, folder / name, metric, f"{trace}: {caption}", colors)
        out.append((caption, name))
    return out


def matplotlib_missing() -> str | None:
    """None when figures can be drawn, else the one line saying how to get them."""
    from ..analysis.plots import PlotError, pyplot

    try:
        pyplot()
    except PlotError as exc:
        return str(exc)
    return None
