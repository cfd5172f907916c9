"""A campaign's ``results.csv`` written by hand, for the tests of the scripts that summarise one
(``benchmarks/*_summary.py``): the columns they read, one row per (trace, config, seed)."""

from __future__ import annotations

import csv
from pathlib import Path


def write_results(folder: Path, rows: list[dict], fields: list[str]) -> None:
    """``rows``: dicts of ``fields`` beyond the defaults (window 0, status ok, 100 jobs)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "results.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, ["trace", "window", "config", "seed", "status", "jobs", *fields])
        writer.writeheader()
        for row in rows:
            writer.writerow({"window": 0, "status": "ok", "jobs": 100, **row})
