"""What ``simulate`` writes and says besides Batsim's files: per-job detail tables
(``PREFIX_classes.csv``, ``PREFIX_predictions.csv``) so that ``--json`` stays a summary, the
scheduler report completed from the metrics (one definition of wasted work), a short
account of rejected jobs, and ``PREFIX_run.json``: the run's configuration and whether it
ran to its end, so that the tools reading a jobs CSV can say when it holds only part of a run.

Our files follow Batsim's naming: 4.2.1 puts "_" between the export prefix and a file's name
(``PREFIX_jobs.csv``, so ``PREFIX_run.json``), Batsim 5 nothing (``PREFIXjobs.csv``, so
``PREFIXrun.json``): ``separator`` says which; the run description is always the jobs file's
name with ``jobs.csv`` replaced by ``run.json``."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

__all__ = ["write_job_details", "complete_report", "rejection_summary", "write_run_description", "mark_run",
           "partial_run_warning", "record_resumption"]

PER_JOB_KEYS = (("classification", "jobs"),)  # report entries moved to per-job files


def write_job_details(scheduler, prefix, separator: str = "_") -> dict:
    """Write each of ``scheduler.job_details()`` to ``PREFIX_<name>.csv``; returns name -> path."""
    details = getattr(scheduler, "job_details", lambda: {})()
    files = {}
    for name, (columns, rows) in details.items():
        path = f"{prefix}{separator}{name}.csv"
        with open(path, "w", newline="") as out:
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(columns)
            writer.writerows(rows)
        files[name] = path
    return files


def complete_report(report: dict, metrics: dict) -> dict:
    """The report for output: per-job tables left out (they are in the files), and the
    classifier's wasted core-seconds taken from the metrics (Batsim's execution times)."""
    out = dict(report)
    for section, key in PER_JOB_KEYS:
        if isinstance(out.get(section), dict) and key in out[section]:
            out[section] = {k: v for k, v in out[section].items() if k != key}
    if isinstance(out.get("classification"), dict):
        out["classification"] = dict(out["classification"], wasted_core_seconds=metrics.get("wasted_core_seconds"))
    return out


def rejection_summary(rejected, first: int = 3, reasons_in_csv: bool = True) -> list[str]:
    """Lines for stderr from ``[(job id, reason), ...]``: a count per reason and its first ids.
    ``reasons_in_csv``: the jobs CSV keeps each reason in its metadata column (Batsim 5's does
    not: its jobs file leaves that column empty)."""
    if not rejected:
        return []
    by_reason: dict = {}
    for job_id, reason in rejected:
        by_reason.setdefault(reason or "no reason given", []).append(job_id)
    counts = Counter({reason: len(ids) for reason, ids in by_reason.items()})
    where = " (reasons in the jobs CSV's metadata column)" if reasons_in_csv else ""
    lines = [f"rejected {len(rejected)} jobs{where}:"]
    for reason, count in counts.most_common():
        ids = by_reason[reason]
        more = ", ..." if len(ids) > first else ""
        lines.append(f"  {count} {reason}: {', '.join(ids[:first])}{more}")
    return lines


# ``status`` of PREFIX_run.json: RUNNING when written, at the start; COMPLETE once both CSVs hold
# the whole run; else how it stopped (the CSVs then hold the jobs that had ended).
RUNNING, COMPLETE, INTERRUPTED, TERMINATED, FAILED = "running", "complete", "interrupted", "terminated", "failed"
PAUSED = "paused"  # stopped on purpose at a date (simulate --stop-at): its snapshot continues it
WINDOW = "window"  # a fork stopped at the end of its window (simulate --fork-window)


def run_description_path(prefix, separator: str = "_") -> str:
    return f"{prefix}{separator}run.json"


def write_run_description(config, prefix, platform, workloads, batsim: str = "4.2.1",
                          separator: str = "_", extra: dict | None = None) -> str:
    """``PREFIX_run.json``: the run's configuration (a resolved ``config.declare.RunConfig``: every setting,
    null where the scheduler does not take it), its inputs, the Batsim line it followed
    (``batsim``), a ``label`` (used by ``plot``) and its ``status`` (RUNNING until :func:`mark_run`
    says how it ended); ``extra``: more keys (how a run resumed from snapshots got there:
    ``resumed``; a fork's origin: ``fork``)."""
    from .config.resolve import run_label

    description = config.to_dict()
    if config.preset is not None:  # what the name meant when this ran (a preset's expansion may change)
        from .config.presets import get

        preset = get(config.preset)
        description["preset_version"] = preset.version
        description["preset_expansion"] = list(type(config)(**preset.values()).argv())
        description["preset_changed"] = config.changed_from_preset()
    return _describe(prefix, description, run_label(config), platform, workloads, batsim, separator, extra)


def write_connected_description(endpoint: str, prefix, platform, workloads, dynamic_jobs: bool,
                                batsim: str = "4.2.1", separator: str = "_") -> str:
    """``PREFIX_run.json`` of ``simulate --connect``: the scheduler is the one at ``endpoint``,
    whose settings this side does not know."""
    return _describe(prefix, {"connect": endpoint, "dynamic_jobs": bool(dynamic_jobs)},
                     f"scheduler at {endpoint}", platform, workloads, batsim, separator)


def _describe(prefix, description: dict, label: str, platform, workloads, batsim: str, separator: str,
              extra: dict | None = None) -> str:
    from . import __version__
    from .config.validate import output_prefix

    description["platform"] = str(platform)
    description["workloads"] = [str(w) for w in workloads]
    description["batsim"] = batsim
    description["label"] = label
    description["batsched_ml"] = __version__
    description["status"] = RUNNING
    description.update(extra or {})
    output_prefix(prefix, separator=separator)  # a file where a directory should be gets a sentence
    path = Path(run_description_path(prefix, separator))
    _write_json(path, description)
    return str(path)


def mark_run(path, status: str, partial=None) -> None:
    """Record how the run of ``path`` (its PREFIX_run.json) ended; ``partial``: the
    simulator's ``PartialOutputs`` of a run stopped early (what the CSVs hold)."""
    path = Path(path)
    config = json.loads(path.read_text())
    config["status"] = status
    if partial is not None:
        config["stopped"] = {"sim_time": partial.sim_time, "jobs_written": partial.jobs_written,
                             "pending": partial.pending, "not_submitted": partial.not_submitted}
    _write_json(path, config)


def record_resumption(path) -> list:
    """The ``resumed`` entries of the PREFIX_run.json a resumed run rewrites (its earlier resumptions)."""
    try:
        earlier = json.loads(Path(path).read_text()).get("resumed", [])
    except (OSError, ValueError, AttributeError):
        return []
    return earlier if isinstance(earlier, list) else []


def _write_json(path: Path, config: dict) -> None:
    path.write_text(json.dumps(config, sort_keys=True, indent=1) + "\n")


def run_description(jobs_csv) -> dict | None:
    """The run description next to a jobs file (``PREFIX_jobs.csv`` -> ``PREFIX_run.json``,
    Batsim 5's ``PREFIXjobs.csv`` -> ``PREFIXrun.json``, or ``.csv.gz``), None when there is none
    or it cannot be read (a real Batsim run has none)."""
    path = Path(jobs_csv)
    for suffix in ("jobs.csv", "jobs.csv.gz"):
        if path.name.endswith(suffix):
            try:
                config = json.loads(path.with_name(path.name[: -len(suffix)] + "run.json").read_text())
            except (OSError, ValueError):
                return None
            return config if isinstance(config, dict) else None
    return None


def partial_run_warning(jobs_csv) -> str | None:
    """A sentence when ``jobs_csv`` belongs to a run that did not reach its end (its
    PREFIX_run.json says so), for the tools that read it (metrics, plot, check); else None.
    Runs written before the status existed, and real Batsim's, give None."""
    config = run_description(jobs_csv) or {}
    status = config.get("status")
    if status is None or status == COMPLETE:
        return None
    if status == RUNNING:
        return (f"{jobs_csv} belongs to a run that has not finished (still running, or killed): "
                "it holds only the jobs that had ended")
    how = {INTERRUPTED: "was interrupted", TERMINATED: "was terminated (SIGTERM)",
           FAILED: "stopped on an error", PAUSED: "was paused (--stop-at)",
           WINDOW: "is a fork stopped at the end of its window"}.get(status, f"ended as {status!r}")
    stopped = config.get("stopped")
    missing = ""
    if isinstance(stopped, dict):
        missing = (f" at simulated time {stopped.get('sim_time', 0):.0f} s: {stopped.get('pending', '?')} jobs "
                   f"queued or running and {stopped.get('not_submitted', '?')} not yet submitted are not in it")
    return f"{jobs_csv} is partial: its run {how}{missing}"
