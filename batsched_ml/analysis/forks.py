"""Branches of one snapshot compared on the same jobs, paired (issue 42).

The jobs a fork's branches are compared on are those of its window in every branch: not started
at the fork (``starting_time`` at or after it, or never started) and submitted before the
window's end, requeued attempts merged (``metrics.merge_attempts``). For each branch against the
reference: the reduction of the cumulative bounded slowdown (tau = 60 s) over those jobs,
``100 * (1 - sum(branch) / sum(reference))``, with the 95% bootstrap interval of the jobs
resampled together (``uncertainty.paired_job_reduction``), and the mean wait.
"""

from __future__ import annotations

import numpy as np

from .metrics import merge_attempts, per_job_bsld, read_jobs_csv
from .uncertainty import paired_job_reduction

__all__ = ["TAU", "compare_branches", "window_records"]

TAU = 60.0


def window_records(jobs_csv, at: float, end: float):
    """A branch's merged job records of the window ``[at, end)`` (see the module docstring)."""
    records = merge_attempts(read_jobs_csv(jobs_csv))
    started = records.start
    keep = (records.submission < end) & ((started >= at) | np.isnan(started))
    return records.subset(keep)


def compare_branches(records: dict, reference: str) -> dict:
    """``{"jobs": n, "branches": {name: {cum_bsld60, mean_wait_h, reduction: [estimate, low, high]}}}``
    of the branches' window records (``{name: records}``) on the jobs they all hold, each against
    ``reference`` (one of them)."""
    common = sorted(set.intersection(*(set(r.full_id) for r in records.values())))
    aligned = {}
    for name, branch in records.items():
        chosen = branch.select_ids(common)
        order = np.argsort(chosen.full_id)
        aligned[name] = (per_job_bsld(chosen, TAU)[order], chosen.wait[order])
    ref_bsld = aligned[reference][0]
    out = {"jobs": len(common), "branches": {}}
    for name, (bsld, wait) in aligned.items():
        interval = paired_job_reduction(bsld, ref_bsld)
        out["branches"][name] = {"cum_bsld60": float(np.nansum(bsld)),
                                 "mean_wait_h": float(np.nanmean(wait) / 3600) if len(wait) else None,
                                 "reduction": [interval.estimate, interval.low, interval.high]}
    return out
