"""Reading Batsim's export files: ``PREFIX_jobs.csv`` (one row per attempt) into a column table,
and the one-row ``PREFIX_schedule.csv`` (Batsim 5: ``PREFIXjobs.csv``, whose profile column
names ``workload!profile``, and ``PREFIXschedule.json``).

Both transports write these files -- real Batsim behind the ZeroMQ server and the embedded
simulator -- so this one reader serves every run; :mod:`batsched_ml.analysis.metrics` scores them.
"""

from __future__ import annotations

import csv
import gc
import gzip
import itertools
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence, Union

import numpy as np

__all__ = ["COMPLETED_FAILED", "COMPLETED_KILLED", "COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED",
           "JOBS_COLUMNS", "REJECTED", "JobsTable", "read_jobs_csv", "read_schedule", "read_schedule_csv",
           "schedule_csv_for", "schedule_file_for"]

JOBS_COLUMNS = (
    "job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
    "requested_time", "success", "final_state", "starting_time", "execution_time", "finish_time",
    "waiting_time", "turnaround_time", "stretch", "allocated_resources", "consumed_energy",
    "metadata",
)
_STR_COLUMNS = ("job_id", "workload_name", "profile", "final_state", "allocated_resources", "metadata")
_INT_COLUMNS = ("requested_number_of_resources", "success")
_DEFERRED_COLUMNS = ("waiting_time", "turnaround_time", "stretch", "consumed_energy")
# Columns Batsim leaves empty for a rejected job (never started): they read as NaN.
_MAYBE_EMPTY = ("starting_time", "execution_time", "finish_time", "waiting_time",
                "turnaround_time", "stretch")

COMPLETED_SUCCESSFULLY = "COMPLETED_SUCCESSFULLY"
COMPLETED_FAILED = "COMPLETED_FAILED"
COMPLETED_WALLTIME_REACHED = "COMPLETED_WALLTIME_REACHED"
COMPLETED_KILLED = "COMPLETED_KILLED"
REJECTED = "REJECTED"

PathLike = Union[str, os.PathLike]


@dataclass(frozen=True, eq=False)
class JobsTable:
    """A Batsim jobs CSV, column by column: one row per attempt, file order.

    Text columns are object arrays of ``str`` (cheap to build, ``==`` works elementwise);
    times are float64 with NaN where Batsim wrote nothing (rejected jobs). The columns Batsim
    derives from the others (``waiting_time``, ``turnaround_time``, ``stretch``) and
    ``consumed_energy`` are parsed on first access: no metric needs them, and parsing text
    to floats is most of the cost of reading a 250k-row file.
    """

    job_id: np.ndarray
    workload_name: np.ndarray
    profile: np.ndarray
    submission_time: np.ndarray
    requested_number_of_resources: np.ndarray
    requested_time: np.ndarray
    success: np.ndarray
    final_state: np.ndarray
    starting_time: np.ndarray
    execution_time: np.ndarray
    finish_time: np.ndarray
    allocated_resources: np.ndarray
    metadata: np.ndarray
    path: str | None = None
    deferred: dict = field(default_factory=dict, repr=False)  # column -> array or raw text

    def __len__(self) -> int:
        return len(self.job_id)

    def _deferred(self, name: str) -> np.ndarray:
        col = self.deferred[name]
        if not isinstance(col, np.ndarray):
            col = self.deferred[name] = _to_numbers(self.path, name, col, np.float64)
        return col

    waiting_time = property(lambda self: self._deferred("waiting_time"))
    turnaround_time = property(lambda self: self._deferred("turnaround_time"))
    stretch = property(lambda self: self._deferred("stretch"))
    consumed_energy = property(lambda self: self._deferred("consumed_energy"))


def _open_text(path: PathLike):
    """Open plain or gzip text by content (magic bytes), not by suffix."""
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    if gzipped:
        return gzip.open(path, "rt", newline="", encoding="utf-8")
    return open(path, newline="", encoding="utf-8")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Building ~250k row lists triggers the cyclic GC over and over; pausing it halves parse time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _to_numbers(path: PathLike, name: str, values: Sequence[str], dtype, first_line: int = 2) -> np.ndarray:
    """Convert a text column in one numpy call; on failure, name file, column, line and value
    (``first_line``: the file line of ``values[0]``)."""
    try:
        if name in _MAYBE_EMPTY and "" in values:
            values = [v or "nan" for v in values]
        return np.array(values, dtype=dtype)
    except (ValueError, OverflowError):
        convert = int if dtype is np.int64 else float
        for i, v in enumerate(values):
            try:
                convert(v)
            except (ValueError, OverflowError):
                raise ValueError(f"{path}: line {i + first_line}, column {name!r}: "
                                 f"cannot parse {v!r} as a number") from None
        raise


_CHUNK_ROWS = 32768  # rows parsed at a time: text rows of a 200k-job file would take ~400 MB at once
_REPEATED = ("workload_name", "profile", "final_state", "metadata")  # few distinct values: stored once


def read_jobs_csv(path: PathLike) -> JobsTable:
    """Read a Batsim 4 ``PREFIX_jobs.csv`` (plain or gzip) into a :class:`JobsTable`.

    Raises ``ValueError`` naming the file for a missing column, a ragged row or an
    unparsable number (with its line), so a broken writer is caught at the first read
    (for the deferred columns of :class:`JobsTable`, at their first access). Parsed in
    chunks, numbers converted per chunk, so the text of the whole file is never held at once.
    """
    with _gc_paused():
        with _open_text(path) as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                raise ValueError(f"{path}: empty file, expected a Batsim jobs CSV header")
            missing = [c for c in JOBS_COLUMNS if c not in header]
            if missing:
                raise ValueError(f"{path}: {_not_a_jobs_csv(header, missing)}")
            pos = {name: i for i, name in enumerate(header)}
            texts: dict = {name: [] for name in JOBS_COLUMNS
                           if name in _STR_COLUMNS or name in _DEFERRED_COLUMNS}
            numbers: dict = {name: [] for name in JOBS_COLUMNS if name not in texts}
            seen = {name: {} for name in _REPEATED}
            done = 0  # rows parsed so far
            while True:
                rows = [r for r in itertools.islice(reader, _CHUNK_ROWS) if r]
                if not rows:
                    break
                if set(map(len, rows)) - {len(header)}:
                    bad = next(i for i, r in enumerate(rows) if len(r) != len(header))
                    raise ValueError(f"{path}: row {done + bad + 2} has {len(rows[bad])} fields, "
                                     f"header has {len(header)}")
                raw = list(zip(*rows))
                for name, chunks in numbers.items():
                    dtype = np.int64 if name in _INT_COLUMNS else np.float64
                    chunks.append(_to_numbers(path, name, raw[pos[name]], dtype, first_line=done + 2))
                for name, column in texts.items():
                    values = raw[pos[name]]
                    if name in seen:
                        values = [seen[name].setdefault(v, v) for v in values]
                    column.extend(values)
                done += len(rows)
                del rows, raw
        cols: dict = {"deferred": {name: texts.pop(name) for name in _DEFERRED_COLUMNS}}
        for name in JOBS_COLUMNS:
            if name in texts:
                cols[name] = np.array(texts.pop(name), dtype=object)
            elif name in numbers:
                chunks = numbers.pop(name)
                dtype = np.int64 if name in _INT_COLUMNS else np.float64
                cols[name] = np.concatenate(chunks) if chunks else np.array([], dtype=dtype)
    return JobsTable(path=str(path), **cols)


def _not_a_jobs_csv(header: list, missing: list) -> str:
    """What a file without the jobs CSV's columns is, when its first line tells."""
    first = ",".join(header).lstrip()
    wanted = "a jobs CSV (the PREFIX_jobs.csv that `batsched-ml simulate` or Batsim writes)"
    if first.startswith(("{", "[")):
        return f"this is JSON (a Batsim workload?), not {wanted}"
    if first.startswith(";"):
        return f"this looks like an SWF trace, not {wanted}"
    return f"missing column(s) {', '.join(missing)}: not {wanted}"


def read_schedule(path: PathLike) -> dict:
    """Read Batsim's schedule file: 4.2.1's one-row ``PREFIX_schedule.csv`` (ints stay int, reals
    float, the rest str) or Batsim 5's ``PREFIXschedule.json`` (a JSON object)."""
    if str(path).endswith((".json", ".json.gz")):
        with _open_text(path) as f:
            try:
                out = json.load(f)
            except ValueError as error:
                raise ValueError(f"{path}: not Batsim 5's JSON schedule file: {error}") from None
        if not isinstance(out, dict):
            raise ValueError(f"{path}: a Batsim 5 schedule file holds one JSON object")
        return out
    with _open_text(path) as f:
        rows = list(csv.DictReader(f))
    if len(rows) != 1:
        raise ValueError(f"{path}: expected exactly one data row, found {len(rows)}")
    out = {}
    for key, text in rows[0].items():
        if key == "batsim_version":  # "4.2" must not become a float
            out[key] = text
            continue
        for convert in (int, float, str):
            try:
                out[key] = convert(text)
                break
            except ValueError:
                pass
    return out


read_schedule_csv = read_schedule  # its name from before Batsim 5's JSON file


def schedule_file_for(jobs_path: PathLike) -> Path | None:
    """The schedule file written next to a jobs file, if present: ``PREFIX_schedule.csv`` beside
    ``PREFIX_jobs.csv`` (Batsim 4.2.1), ``PREFIXschedule.json`` beside ``PREFIXjobs.csv`` (Batsim
    5); either may be gzip'ed."""
    p = Path(jobs_path)
    for suffix in ("jobs.csv.gz", "jobs.csv"):
        if p.name.endswith(suffix):
            stem = p.name[: -len(suffix)]
            for name in ("schedule.csv", "schedule.csv.gz", "schedule.json", "schedule.json.gz"):
                if (p.parent / (stem + name)).is_file():
                    return p.parent / (stem + name)
            return None
    return None


schedule_csv_for = schedule_file_for  # its name from before Batsim 5's JSON file
