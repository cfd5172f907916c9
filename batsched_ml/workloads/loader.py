"""Loading and writing Batsim JSON workloads, with validation.

Batsim aborts with terse messages on a bad workload, and our embedded simulator
would fail later in odd places; so a workload is checked once, here, against the
rules Batsim 4.2.1 (or 5.0.0-rc2) applies when it loads one, and the first problem is reported as a
``WorkloadError`` naming the file, the job or profile, and the rule.
Written files are deterministic (same dict order, compact, gzip without a
timestamp) so that a converted workload can be compared byte for byte.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from ..protocol.descriptions import check_job_description, check_profile_description, is_int32, workload_line
from ..protocol.members import Invalid

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
        workload = _parse_json(raw)
    except WorkloadError as exc:
        raise WorkloadError(f"{path}: {exc}") from None
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
    _check_trace_files(workload, path)
    return workload


def _check_trace_files(workload: dict, path: Path) -> None:
    """An smpi or usage_trace profile (Batsim 5: TraceReplayProfile) names a file beside the
    workload (Batsim reads it at load)."""
    for pname, prof in workload["profiles"].items():
        key = _TRACE_FILE.get(prof["type"])
        if key is not None and not (path.parent / prof[key]).is_file():
            raise WorkloadError(f"{path}: profile {pname!r}: its {key!r} {prof[key]!r} is not a file "
                                f"in {path.parent}")


_TRACE_FILE = {"smpi": "trace", "usage_trace": "trace", "TraceReplayProfile": "filename"}


def _parse_json(raw: bytes):
    """``json.loads`` reading what Batsim's JSON reader reads: no NaN or Infinity, and no key twice
    in an object (Batsim would read the first, Python the last: two different workloads)."""
    return json.loads(raw, object_pairs_hook=_object_without_duplicates, parse_constant=_no_constant)


def _object_without_duplicates(pairs: list) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise WorkloadError(f"the key {key!r} appears twice in one object (Batsim reads the first, "
                            "Python the last)")
    return obj


def _no_constant(name: str):
    raise WorkloadError(f"{name} is not a JSON number (Batsim's JSON reader refuses it)")


def validate_workload(workload, name: str = "<workload>") -> None:
    """Raise ``WorkloadError`` for the first rule of Batsim that ``workload`` breaks (its
    workload.cpp, jobs.cpp, profiles.cpp: the rules of one job or profile are
    ``protocol.descriptions``'), or where batsched-ml is stricter (docs/simulator.md lists both).
    The rules are Batsim 4.2.1's, or Batsim 5.0.0-rc2's for a workload whose profiles have its
    type names (``DelayProfile``...: ``descriptions.workload_line``)."""

    def fail(msg: str):
        raise WorkloadError(f"{name}: {msg}")

    if not isinstance(workload, dict):
        fail(f"top level must be a JSON object, got {type(workload).__name__}")
    nb_res = workload.get("nb_res")
    if not (is_int32(nb_res) and nb_res > 0):
        fail("missing 'nb_res' (the machine size Batsim requires)" if "nb_res" not in workload
             else f"'nb_res' must be a positive integer, got {nb_res!r}")
    for key, kind in (("jobs", list), ("profiles", dict)):
        if key not in workload:
            fail(f"missing '{key}'")
        if not isinstance(workload[key], kind):
            fail(f"'{key}' must be a JSON {'array' if kind is list else 'object'}")

    profiles = workload["profiles"]
    try:
        line = workload_line(profiles)
    except Invalid as problem:
        fail(str(problem))
    for pname, prof in profiles.items():
        try:
            check_profile_description(prof, line)
        except Invalid as problem:
            fail(f"profile {pname!r}: {problem}")
        if prof["type"] in ("composed", "SequentialCompositionProfile"):
            missing = next((p for p in prof["seq"] if p not in profiles), None)
            if missing is not None:
                fail(f"composed profile {pname!r} uses profile {missing!r}, which is not defined in 'profiles'")

    seen: dict[str, int] = {}
    for index, job in enumerate(workload["jobs"]):
        if not isinstance(job, dict):
            fail(f"job #{index} is not a JSON object")
        jid = job.get("id")
        where = f"job #{index}" if jid is None else f"job {jid!r} (#{index})"
        try:
            check_job_description(job, line)
        except Invalid as problem:
            fail(f"{where}: {problem}")
        if jid == "" or "!" in str(jid):
            fail(f"{where}: 'id' must be a non-empty name without '!' (Batsim writes ids as "
                 "'workload!name')")
        # Batsim turns numeric ids into strings, so 7 and "7" are the same job.
        if str(jid) in seen:
            fail(f"{where}: duplicate id (first used by job #{seen[str(jid)]})")
        seen[str(jid)] = index
        if job["subtime"] < 0:
            fail(f"{where}: 'subtime' is {job['subtime']!r}: it must be non-negative (the simulation starts at 0)")
        profile = profiles.get(job["profile"])
        if profile is None:
            fail(f"{where}: profile {job['profile']!r} is not defined in 'profiles'")
        if profile["type"] in ("parallel", "ParallelTaskProfile") and len(profile["cpu"]) != job["res"]:
            fail(f"{where}: 'res' is {job['res']} but its parallel profile {job['profile']!r} has "
                 f"{len(profile['cpu'])} 'cpu' entries")


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
