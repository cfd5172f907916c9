"""What ``simulate`` writes and says besides Batsim's two files: per-job detail tables
(``PREFIX_classes.csv``, ``PREFIX_predictions.csv``) so that ``--json`` stays a summary, the
scheduler report completed from the metrics (one definition of wasted work), and a short
account of rejected jobs."""

from __future__ import annotations

import csv
from collections import Counter

__all__ = ["write_job_details", "complete_report", "rejection_summary"]

PER_JOB_KEYS = (("classification", "jobs"),)  # report entries moved to per-job files


def write_job_details(scheduler, prefix) -> dict:
    """Write each of ``scheduler.job_details()`` to ``PREFIX_<name>.csv``; returns name -> path."""
    details = getattr(scheduler, "job_details", lambda: {})()
    files = {}
    for name, (columns, rows) in details.items():
        path = f"{prefix}_{name}.csv"
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


def rejection_summary(rejected, first: int = 3) -> list[str]:
    """Lines for stderr from ``[(job id, reason), ...]``: a count per reason and its first ids."""
    if not rejected:
        return []
    by_reason: dict = {}
    for job_id, reason in rejected:
        by_reason.setdefault(reason or "no reason given", []).append(job_id)
    counts = Counter({reason: len(ids) for reason, ids in by_reason.items()})
    lines = [f"rejected {len(rejected)} jobs (reasons in the jobs CSV's metadata column):"]
    for reason, count in counts.most_common():
        ids = by_reason[reason]
        more = ", ..." if len(ids) > first else ""
        lines.append(f"  {count} {reason}: {', '.join(ids[:first])}{more}")
    return lines


def write_run_description(config, prefix, platform, workloads) -> str:
    """``PREFIX_run.json``: the run's configuration (a resolved ``config.RunConfig``: every setting,
    null where the scheduler does not take it), its inputs and a ``label`` (used by ``plot``)."""
    import json
    from pathlib import Path

    from . import __version__
    from .validation import output_prefix

    description = config.to_dict()
    description["platform"] = str(platform)
    description["workloads"] = [str(w) for w in workloads]
    description["label"] = config.label()
    description["batsched_ml"] = __version__
    output_prefix(prefix)  # a file where a directory should be gets a sentence
    path = Path(f"{prefix}_run.json")
    path.write_text(json.dumps(description, sort_keys=True, indent=1) + "\n")
    return str(path)
