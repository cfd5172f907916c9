"""The campaign's tidy table: one row per task, written as ``results.csv`` (and
``results.parquet`` when pyarrow is installed), read back by the report.

Every cell is bounded: the metrics JSON has a fixed set of keys, an error message is cut, and
a run's scheduler report (per-week classifier data...: 150 kB on a 200k-job trace) is a file
under ``runs/`` that the ``report`` column names (``runs/<run>_report.json``)."""

from __future__ import annotations

import csv
import functools
import json
import math
import os
import tempfile
from pathlib import Path

from ..analysis.uncertainty import format_number

__all__ = ["COLUMNS", "FLAT_FROM_METRICS", "complete_row", "fmt", "jobs_not_completed", "metric_names", "metric_value", "read_results",
           "write_results"]

# flat column <- key of compute_metrics' dict (the rest are computed by the task)
FLAT_FROM_METRICS = {
    "jobs": "jobs", "avebsld10": "avebsld_tau10", "avebsld60": "avebsld_tau60", "mean_wait": "mean_wait",
    "geomean_wait": "geomean_wait", "max_wait": "max_wait", "utilisation": "utilisation", "makespan": "makespan",
    "kills": "killed_attempts", "wasted_core_seconds": "wasted_core_seconds", "rejected": "rejected",
    "killed": "killed",
}
# ``rejected``, ``killed`` (jobs whose last attempt was killed: not requeued) and ``unfinished`` (never
# started) are the jobs the time metrics leave out; ``complete`` is false when there are any
COLUMNS = ("trace", "window", "config", "seed", "status", "error", "jobs", "complete", "rejected", "killed",
           "unfinished", "avebsld10", "avebsld60", "cum_bsld60", "mean_wait", "geomean_wait", "max_wait",
           "utilisation", "makespan", "kills", "wasted_core_seconds", "wall_s", "window_start", "key", "metrics",
           "report")
NOT_COMPLETED = ("rejected", "killed", "unfinished")
JSON_COLUMNS = ("metrics",)
INT_COLUMNS = ("window", "seed", "jobs", "kills", *NOT_COMPLETED)
BOOL_COLUMNS = ("complete",)
TEXT_COLUMNS = ("trace", "config", "status", "error", "key", "report")
NOT_METRICS = JSON_COLUMNS + ("report",)
RAN = ("ok", "unfinished")  # statuses of runs that have metrics (unfinished: some jobs never started)
NUMERIC = tuple(c for c in COLUMNS if c not in JSON_COLUMNS + TEXT_COLUMNS + BOOL_COLUMNS + ("window", "seed"))

_TINY_JOBS_CSV = (
    "job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,"
    "final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,stretch,"
    "allocated_resources,consumed_energy,metadata\n"
    "1,w0,d10,0.000000,1,60.000000,1,COMPLETED_SUCCESSFULLY,5.000000,10.000000,15.000000,5.000000,"
    "15.000000,1.500000,0,-1.000000,\n")


@functools.lru_cache(maxsize=1)
def metric_names() -> list[str]:
    """Names a report may show: the flat columns, then every key of ``compute_metrics``."""
    from ..analysis import compute_metrics

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x_jobs.csv"
        path.write_text(_TINY_JOBS_CSV)
        keys = list(compute_metrics(path, nb_cores=1))
    flat = [c for c in NUMERIC if c not in ("window_start", "unfinished")]
    return flat + [k for k in keys if k not in flat]


def metric_value(row: dict, name: str):
    """A row's value of ``name``: a flat column, else from its metrics JSON (None if absent; a
    results.csv written before a flat column existed has it in the JSON only)."""
    if name in row and name not in NOT_METRICS and row[name] is not None:
        return row[name]
    return (row.get("metrics") or {}).get(name)


def jobs_not_completed(row: dict) -> dict[str, int]:
    """``{"rejected": n, "killed": n, "unfinished": n}`` of a run that ran (the jobs its time metrics
    leave out); the counts that are zero or unknown are left out: ``{}`` when every job completed."""
    out = {}
    for name in NOT_COMPLETED:
        value = metric_value(row, name)
        if value:
            out[name] = int(value)
    return out


def complete_row(row: dict) -> dict:
    """``row`` with its flat columns filled from its metrics JSON where missing (a row cached by
    older code) and ``complete`` set, for a run that ran; other rows as they are."""
    if row.get("status") not in RAN:
        return row
    row = dict(row)
    for column in FLAT_FROM_METRICS:
        if row.get(column) is None:
            row[column] = metric_value(row, column)
    row["complete"] = not jobs_not_completed(row)
    return row


fmt = format_number  # the one number format of every report table


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=float)
    return str(value)


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_results(directory, rows: list[dict]) -> list[Path]:
    """Write ``results.csv`` (floats as Python's shortest round-trip text) and, if pyarrow is
    installed, ``results.parquet``; returns the paths written."""
    directory = Path(directory)
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    rows = [complete_row(row) for row in rows]
    for row in rows:
        writer.writerow([_text(row.get(c)) for c in COLUMNS])
    out = [directory / "results.csv"]
    _atomic_write(out[0], buf.getvalue().encode("utf-8"))
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return out
    columns = {}
    for c in COLUMNS:
        values = [row.get(c) for row in rows]
        if c in JSON_COLUMNS:
            columns[c] = pa.array([_text(v) for v in values], pa.string())
        elif c in INT_COLUMNS:
            columns[c] = pa.array(values, pa.int64())
        elif c in BOOL_COLUMNS:
            columns[c] = pa.array(values, pa.bool_())
        elif c in TEXT_COLUMNS:
            columns[c] = pa.array([None if v is None else str(v) for v in values], pa.string())
        else:
            columns[c] = pa.array([None if v is None else float(v) for v in values], pa.float64())
    path = directory / "results.parquet"
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    pq.write_table(pa.table(columns), tmp)
    os.replace(tmp, path)
    out.append(path)
    return out


def _parse(column: str, text: str):
    if text == "":
        return None
    if column in JSON_COLUMNS or (column == "report" and text.startswith("{")):  # (older files: inline)
        return json.loads(text)
    if column in INT_COLUMNS:
        return int(text)
    if column in BOOL_COLUMNS:
        return text == "True"
    if column in TEXT_COLUMNS:
        return text
    return float(text)


def read_results(directory) -> list[dict]:
    """Rows of ``results.csv`` with their types back (numbers, JSON columns as dicts). Files written
    before the reports moved out of it may hold cells of any size: they are read too."""
    path = Path(directory) / "results.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no results here (run `batsched-ml campaign run` first)")
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, path.stat().st_size))
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return [complete_row({c: _parse(c, row.get(c, "")) for c in COLUMNS}) for row in csv.DictReader(f)]
    finally:
        csv.field_size_limit(limit)
