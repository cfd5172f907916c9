"""Reading Standard Workload Format (SWF) traces of the Parallel Workloads Archive.

A trace is ``;`` comment lines (the header, ``; Key: value``) followed by one
job per line with 18 whitespace-separated numbers. The reader is strict by
default: a damaged line is an error naming the file and line, because silently
dropping jobs would change every result computed from the trace. With
``strict=False`` bad lines are skipped but kept in ``trace.bad_lines``.

Speed: the whole job table is parsed by ``numpy.loadtxt`` in one call (about
1 s for SDSC-BLUE's 243k lines); only when that fails do we rescan line by line
to find and describe the bad lines.
"""

from __future__ import annotations

import gzip
import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["SWF_FIELDS", "SwfFormatError", "SwfTrace", "read_swf", "read_bytes", "looks_like_swf"]

# The 18 standard SWF fields, in file order (1-based field k is SWF_FIELDS[k-1]).
SWF_FIELDS = (
    "job_id",            # 1
    "submit_time",       # 2
    "wait_time",         # 3
    "run_time",          # 4
    "allocated_procs",   # 5
    "avg_cpu_time",      # 6
    "used_memory",       # 7
    "requested_procs",   # 8
    "requested_time",    # 9
    "requested_memory",  # 10
    "status",            # 11
    "user_id",           # 12
    "group_id",          # 13
    "executable_id",     # 14
    "queue_id",          # 15
    "partition_id",      # 16
    "preceding_job_id",  # 17
    "think_time",        # 18
)
SWF_DTYPE = np.dtype([(name, np.float64) for name in SWF_FIELDS])

_GZIP_MAGIC = b"\x1f\x8b"
# "; Key: value" -- the key is a word followed by ':' and a blank (so that
# continuation lines holding URLs such as "http://..." are not taken as keys).
_HEADER_RE = re.compile(r"^;\s*([A-Za-z][\w-]*)\s*:(?:\s+(.*?)|)\s*$")


_REMOVED_RE = re.compile(r"\((\d+) jobs? removed\)")


class SwfFormatError(ValueError):
    """A trace line that is not 18 numbers (the message names file and line)."""


@dataclass
class SwfTrace:
    """A parsed SWF trace.

    ``jobs`` is a numpy structured array (one float64 field per ``SWF_FIELDS``
    name), in file order. ``header`` maps each ``; Key: value`` key to its value;
    a repeated key or a continuation line is joined to the value with ``\\n``.
    ``bad_lines`` lists ``(lineno, text, reason)`` of lines skipped with
    ``strict=False``.
    """

    path: str
    header: dict[str, str]
    jobs: np.ndarray
    header_lines: list[str] = field(default_factory=list)
    bad_lines: list[tuple[int, str, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.jobs)

    @property
    def name(self) -> str:
        """File name without directories (used as the workload's source)."""
        return Path(self.path).name

    def announced_jobs(self) -> int | None:
        """The jobs the header says the file holds: ``MaxJobs`` less the jobs the archive's cleaning
        removed (its ``(N jobs removed)`` notes; a cleaned log keeps the original ``MaxJobs``).
        None without ``MaxJobs``."""
        max_jobs = self.header_int("MaxJobs")
        if max_jobs is None:
            return None
        removed = sum(int(m.group(1)) for line in self.header_lines for m in _REMOVED_RE.finditer(line))
        return max_jobs - removed

    def header_int(self, key: str) -> int | None:
        """Leading integer of a header value (``"70  (dual)"`` -> 70), or None."""
        value = self.header.get(key)
        if value is None:
            return None
        m = re.match(r"\s*([-+]?\d+)", value)
        return int(m.group(1)) if m else None


def read_swf(path: str | Path, strict: bool = True) -> SwfTrace:
    """Read a plain or gzip SWF file (gzip is detected by its magic bytes)."""
    path = Path(path)
    with open(path, "rb") as fh:
        raw = fh.read()
    return read_bytes(raw, str(path), strict=strict)


def read_bytes(raw: bytes, name: str = "<bytes>", strict: bool = True) -> SwfTrace:
    """Parse SWF content held in memory; ``name`` is used in error messages."""
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise SwfFormatError(f"{name}: corrupt gzip data: {exc}") from exc
    # latin-1 never fails and keeps every byte: odd characters in comments
    # must not make a good trace unreadable.
    if raw.lstrip()[:1] in (b"{", b"["):
        raise SwfFormatError(f"{name}: this is JSON (a Batsim workload?), not an SWF trace; convert expects a "
                             "Standard Workload Format file (.swf or .swf.gz, e.g. from the Parallel "
                             "Workloads Archive); a Batsim workload goes straight to simulate -w")
    lines = raw.decode("latin-1").splitlines()
    header_lines, header = _parse_header(lines)
    nb_data = len(lines) - len(header_lines)
    jobs = _fast_parse(lines) if nb_data else None
    bad: list[tuple[int, str, str]] = []
    if jobs is None:
        jobs, bad = _slow_parse(lines)
        if bad and strict:
            lineno, text, reason = bad[0]
            more = f" ({len(bad) - 1} more bad lines)" if len(bad) > 1 else ""
            shown = text if len(text) <= 80 else text[:77] + "..."  # one line, however long the input's
            raise SwfFormatError(f"{name}:{lineno}: {reason}: {shown!r}{more}")
    return SwfTrace(path=name, header=header, jobs=jobs, header_lines=header_lines, bad_lines=bad)


def _parse_header(lines: list[str]) -> tuple[list[str], dict[str, str]]:
    """Collect every comment line and the ``Key: value`` pairs among them."""
    comments: list[str] = []
    header: dict[str, str] = {}
    last_key = None
    for line in lines:
        s = line.strip()
        if not s.startswith(";"):
            continue  # a data line or a blank line
        comments.append(line)
        m = _HEADER_RE.match(s)
        if m:
            key, value = m.group(1), (m.group(2) or "")
            header[key] = f"{header[key]}\n{value}" if key in header else value
            last_key = key
        elif s.strip("; \t"):
            if last_key is not None:  # continuation of the previous value
                header[last_key] += "\n" + s.lstrip("; \t").rstrip()
        else:
            last_key = None  # an empty ";" line ends a continuation
    return comments, header


def _fast_parse(lines: list[str]) -> np.ndarray | None:
    """All data lines in one numpy call; None when anything is irregular."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # e.g. "input contained no data"
            table = np.loadtxt(lines, comments=";", dtype=np.float64, ndmin=2)
    except (ValueError, UserWarning):
        return None
    if table.shape[1] != len(SWF_FIELDS) or not np.isfinite(table).all():
        return None
    return _as_records(table)


def _slow_parse(lines: list[str]) -> tuple[np.ndarray, list[tuple[int, str, str]]]:
    """Line by line, the reference definition of a good and a bad line."""
    rows: list[list[float]] = []
    bad: list[tuple[int, str, str]] = []
    for lineno, line in enumerate(lines, start=1):
        data = line.split(";", 1)[0]  # text after ';' is a comment (as loadtxt)
        tokens = data.split()
        if not tokens:
            continue
        if len(tokens) != len(SWF_FIELDS):
            bad.append((lineno, line, f"expected {len(SWF_FIELDS)} fields, found {len(tokens)}"))
            continue
        try:
            values = [float(t) for t in tokens]
        except ValueError:
            culprit = next(t for t in tokens if not _is_number(t))
            bad.append((lineno, line, f"non-numeric field {culprit!r}"))
            continue
        if not all(math.isfinite(v) for v in values):
            bad.append((lineno, line, "non-finite field"))
            continue
        rows.append(values)
    table = np.array(rows, dtype=np.float64).reshape(-1, len(SWF_FIELDS))
    return _as_records(table), bad


def looks_like_swf(raw: bytes) -> bool:
    """Whether a file starts like an SWF trace: ``;`` header comments, or a first line of
    18 numbers (for a message when one is given where a Batsim JSON workload is expected)."""
    for line in raw[:65536].decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line:
            if line.startswith(";"):
                return True
            tokens = line.split()
            return len(tokens) == len(SWF_FIELDS) and all(_is_number(t) for t in tokens)
    return False


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _as_records(table: np.ndarray) -> np.ndarray:
    """View an (n, 18) float table as a structured array without copying."""
    table = np.ascontiguousarray(table, dtype=np.float64)
    return table.view(SWF_DTYPE).reshape(len(table))
