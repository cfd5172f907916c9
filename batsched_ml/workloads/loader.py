"""Loading and writing Batsim JSON workloads, with validation.

Batsim aborts with terse messages on a bad workload, and our embedded simulator
would fail later in odd places; so a workload is checked once, here, and every
problem is reported as a ``WorkloadError`` naming the file and the job.
Written files are deterministic (same dict order, compact, gzip without a
timestamp) so that a converted workload can be compared byte for byte.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

__all__ = ["WorkloadError", "load_workload", "validate_workload", "write_workload"]

_GZIP_MAGIC = b"\x1f\x8b"


class WorkloadError(ValueError):
    """A workload file that Batsim (or our simulator) could not run."""


def load_workload(path: str | Path) -> dict:
    """Read a ``.json`` or gzip ``.json.gz`` workload (gzip found by magic bytes), or the bundled
    sample ``sample:NAME`` names (``samples``)."""
    from .samples import sample_path

    path = Path(sample_path(path))
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot read workload: {exc.strerror or exc}") from exc
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise WorkloadError(f"{path}: corrupt gzip data: {exc}") from exc
    try:
        workload = json.loads(raw)
    except UnicodeDecodeError as exc:
        raise WorkloadError(f"{path}: not UTF-8 text: {exc}") from exc
    except json.JSONDecodeError as exc:
        from .swf import looks_like_swf  # here: numpy, which reading a workload does not need

        if looks_like_swf(raw):
            raise WorkloadError(f"{path}: this looks like an SWF trace, not a Batsim JSON workload: run "
                                f"`batsched-ml convert {path} -w WORKLOAD.json` first") from None
        raise WorkloadError(
            f"{path}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    validate_workload(workload, str(path))
    return workload


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def validate_workload(workload, name: str = "<workload>") -> None:
    """Raise ``WorkloadError`` for the first problem found in ``workload``."""

    def fail(msg: str):
        raise WorkloadError(f"{name}: {msg}")

    if not isinstance(workload, dict):
        fail(f"top level must be a JSON object, got {type(workload).__name__}")
    for key, kind in (("jobs", list), ("profiles", dict)):
        if key not in workload:
            fail(f"missing '{key}'")
        if not isinstance(workload[key], kind):
            fail(f"'{key}' must be a JSON {'array' if kind is list else 'object'}")
    if "nb_res" in workload and not (_is_int(workload["nb_res"]) and workload["nb_res"] > 0):
        fail(f"'nb_res' must be a positive integer, got {workload['nb_res']!r}")

    profiles = workload["profiles"]
    for pname, prof in profiles.items():
        if not isinstance(prof, dict) or not isinstance(prof.get("type"), str):
            fail(f"profile {pname!r} must be an object with a string 'type'")
        if prof["type"] in ("delay", "DelayProfile") and not (_is_number(prof.get("delay")) and prof["delay"] >= 0):
            fail(f"delay profile {pname!r} needs a non-negative numeric 'delay', "
                 f"got {prof.get('delay')!r}")

    seen: dict[str, int] = {}
    for index, job in enumerate(workload["jobs"]):
        where = f"job #{index}"
        if not isinstance(job, dict):
            fail(f"{where} is not a JSON object")
        for key in ("id", "subtime", "res", "profile"):
            if key not in job:
                fail(f"{where} (id {job.get('id')!r}) is missing '{key}'")
        jid = job["id"]
        if isinstance(jid, bool) or not isinstance(jid, (int, str)) or jid == "":
            fail(f"{where}: 'id' must be an integer or a non-empty string, got {jid!r}")
        where = f"job {jid!r} (#{index})"
        # Batsim turns numeric ids into strings, so 7 and "7" are the same job.
        if str(jid) in seen:
            fail(f"{where}: duplicate id (first used by job #{seen[str(jid)]})")
        seen[str(jid)] = index
        if not (_is_number(job["subtime"]) and job["subtime"] >= 0):
            fail(f"{where}: 'subtime' must be a non-negative number, got {job['subtime']!r}")
        if not (_is_int(job["res"]) and job["res"] > 0):
            fail(f"{where}: 'res' must be a positive integer, got {job['res']!r}")
        if "walltime" in job and not _is_number(job["walltime"]):
            fail(f"{where}: 'walltime' must be a number (-1 = none), got {job['walltime']!r}")
        if not isinstance(job["profile"], str) or job["profile"] not in profiles:
            fail(f"{where}: profile {job['profile']!r} is not defined in 'profiles'")


def _is_int(x) -> bool:
    return _is_number(x) and float(x).is_integer()


def write_workload(workload: dict, path: str | Path) -> None:
    """Write compact JSON (+ newline), gzip'ed when ``path`` ends with ``.gz``."""
    path = Path(path)
    text = json.dumps(workload, separators=(",", ":"), allow_nan=False) + "\n"
    data = text.encode("utf-8")
    if path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)  # no timestamp: reproducible bytes
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
