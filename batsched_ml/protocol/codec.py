"""JSON codec of the Batsim 4.2.1 protocol: wire bytes <-> typed messages.

``decode`` parses one ZeroMQ message (``{"now": ..., "events": [...]}``) into a
:class:`~batsched_ml.protocol.events.Message` of typed events and checks it the
way Batsim does; ``encode`` writes a message back as compact UTF-8 JSON with a
fixed member order. Both directions use the same functions: ``"events"`` are
Batsim -> scheduler messages, ``"decisions"`` scheduler -> Batsim ones.

Every problem is reported as a :class:`ProtocolError` naming what is wrong, the
event index and type, and an excerpt of the raw message. The rules are those of
``batsim-protocol.md`` (checked against Batsim 4.2.1's ``protocol.cpp`` and
``server.cpp``), where Batsim aborts the simulation. The reader of events is
lenient about members it does not need (Batsim may add some); the reader of
decisions enforces Batsim's member counts.

Hot path: one dispatch-table lookup and one small parser per event; allocation
strings are parsed here directly into a ``CoreSet`` (procset costs ~10 µs per
allocation and is quadratic on fragmented sets). ``orjson`` parses when it is
installed (same Python objects as ``json.loads``); writing always uses the
standard library so that floats are written by ``repr``.
"""

from __future__ import annotations

import json
import math
import reprlib
from math import isfinite
from os import PathLike

from ..validation import MAX_CORES
from .coreset import CoreSet, format_mask
from .events import (
    EVENT_MACHINE_AVAILABLE,
    EVENT_MACHINE_UNAVAILABLE,
    JOB_STATES,
    OTHER_EVENT_TYPES,
    CallMeLater,
    ExecuteJob,
    JobCompleted,
    JobKilled,
    JobSubmitted,
    KillJob,
    Message,
    Notify,
    OtherEvent,
    RegisterJob,
    RegisterProfile,
    RejectJob,
    RequestedCall,
    SetJobMetadata,
    SimulationBegins,
    SimulationEnds,
)

try:  # optional accelerator for parsing; results are checked equal to json.loads in the tests
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - depends on the environment
    _fast_loads = None

__all__ = [
    "DECISIONS",
    "EVENTS",
    "MAX_CORE_ID",
    "TRANSCRIPT_TAGS",
    "ProtocolError",
    "ProtocolViolation",
    "decode",
    "encode",
    "parse_alloc",
    "read_transcript",
]

EVENTS = "events"  # Batsim -> scheduler
DECISIONS = "decisions"  # scheduler -> Batsim
_DIRECTION_TEXT = {EVENTS: "Batsim->scheduler", DECISIONS: "scheduler->Batsim"}

# Transcript line tags (``/work/shared/golden/transcripts/*.log``) and their directions.
TRANSCRIPT_TAGS = {"BATSIM": EVENTS, "SCHED": DECISIONS}

# Largest core id accepted in an allocation string: a typo such as "0-99999999999"
# would otherwise build a gigantic bitmask. Every command shares this limit (``validation.MAX_CORES``).
MAX_CORE_ID = MAX_CORES - 1

_EXCERPT = 160  # characters of the raw message quoted in an error


class ProtocolError(ValueError):
    """A message that breaks the protocol. ``str(error)`` says what, where, and quotes it.

    ``index`` and ``event_type`` locate the offending event (None for envelope errors).
    """

    def __init__(self, message: str, *, index: int | None = None, event_type: str | None = None):
        super().__init__(message)
        self.message = message
        self.index = index
        self.event_type = event_type


class ProtocolViolation(ProtocolError):
    """A well-formed message that Batsim never sends in this state (a second SIMULATION_BEGINS, the
    completion of a job that is not running, time going backwards...): the peer is not a correct
    Batsim, and going on would corrupt the schedule."""


class _Invalid(Exception):
    """A problem inside one event's data; ``decode`` adds the context."""


# ----------------------------------------------------------------------- helpers


# Quoted input is escaped (control bytes such as NUL, ESC or newlines are shown as \\x00, \\x1b,
# \\n) and truncated before it is built, so an error about a 50 MB message costs microseconds and
# always fits on one line.
_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))}
_CONTROLS.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 80
_SHORT.maxlong = 40
_SHORT.maxlist = _SHORT.maxdict = _SHORT.maxtuple = 6
_SHORT.maxlevel = 3


def escape_controls(text: str) -> str:
    """``text`` with every unprintable character escaped (controls, line separators, format and
    unassigned code points): safe to print on one terminal line."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escape_char(char) for char in text)


def _escape_char(char: str) -> str:
    code = ord(char)
    special = _CONTROLS.get(code)
    if special is not None:
        return special
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _q(value) -> str:
    """A short, escaped ``repr`` of a value taken from a message (for error texts)."""
    try:
        return escape_controls(_SHORT.repr(value))
    except RecursionError:  # pragma: no cover - reprlib stops at maxlevel
        return f"<{type(value).__name__}>"


def excerpt(raw, limit: int = _EXCERPT) -> str:
    """The start of a raw message for an error text: at most ``limit`` characters, escaped, with
    the full length when cut. Only the start is decoded, whatever the message's size."""
    size = len(raw)
    if isinstance(raw, str):
        text = raw[: limit + 1]
    else:
        text = bytes(raw[: 4 * limit + 4]).decode("utf-8", "backslashreplace")[: limit + 1]
    text = escape_controls(text.strip())
    if len(text) <= limit and size <= 4 * limit:
        return text
    unit = "chars" if isinstance(raw, str) else "bytes"
    return f"{text[:limit]}... ({size} {unit})"


_excerpt = excerpt


def _is_number(value) -> bool:
    kind = type(value)
    return (kind is float and math.isfinite(value)) or kind is int


def _member(data: dict, key: str):
    try:
        return data[key]
    except KeyError:
        raise _Invalid(f"missing data member {_q(key)}") from None


def _str_member(data: dict, key: str) -> str:
    value = _member(data, key)
    if type(value) is not str:
        raise _Invalid(f"data member {_q(key)} must be a string, got {_q(value)}")
    return value


def _dict_member(data: dict, key: str) -> dict:
    value = _member(data, key)
    if type(value) is not dict:
        raise _Invalid(f"data member {_q(key)} must be an object, got {_q(value)}")
    return value


def _check_job_id(value, key: str, element: bool = False) -> str:
    """``value`` if it is a job id ``workload!name``; the error text names ``key`` (built only then)."""
    if type(value) is str:
        workload, bang, name = value.partition("!")
        if workload and name and "!" not in name:
            return value
    what = f"an element of {key!r}" if element else f"data member {key!r}"
    if type(value) is not str:
        raise _Invalid(f"{what} must be a string 'workload!name', got {_q(value)}")
    raise _Invalid(
        f"{what} {_q(value)} is not a job id: it needs exactly one '!' between a workload "
        "name and a job name (e.g. 'w0!17')"
    )


def _job_id_member(data: dict, key: str = "job_id") -> str:
    return _check_job_id(_member(data, key), key)


def _job_id_list(data: dict, key: str = "job_ids") -> list:
    ids = _member(data, key)
    if type(ids) is not list or not ids:
        raise _Invalid(f"data member {_q(key)} must be a non-empty array of job ids, got {_q(ids)}")
    for job_id in ids:
        _check_job_id(job_id, key, True)
    return ids


def _exact_members(data: dict, expected: tuple[str, ...], etype: str) -> None:
    """Batsim aborts unless ``data`` has exactly these members (protocol.cpp MemberCount checks)."""
    if len(data) == len(expected) and all(key in data for key in expected):
        return
    wanted = " and ".join(repr(key) for key in expected)
    unexpected = [key for key in data if key not in expected]
    if unexpected:
        raise _Invalid(
            f"data must have only {wanted}, but it also has {', '.join(map(repr, unexpected))} "
            f"(Batsim checks the member count of {etype} and aborts)"
        )
    missing = next(key for key in expected if key not in data)
    raise _Invalid(f"missing data member {_q(missing)}")


def parse_alloc(text: str) -> CoreSet:
    """Parse Batsim's allocation text (``"0-3 5 7-9"``) into a CoreSet.

    Accepts what Batsim accepts: single-space separated ids ``N`` or closed ranges
    ``N-M`` (N <= M), in any order, overlaps merged. Raises ValueError with the
    offending token otherwise, and for an empty string.
    """
    if type(text) is not str:
        raise ValueError(f"an allocation must be a string like '0-3 5', got {_q(text)}")
    if not text:
        raise ValueError("the allocation is empty")
    mask = 0
    for token in text.split(" "):
        first, dash, last = token.partition("-")
        if not (first.isdigit() and first.isascii() and (not dash or (last.isdigit() and last.isascii()))):
            raise ValueError(
                f"malformed allocation {_q(text)}: token {_q(token)} is not 'N' or 'N-M' "
                "(non-negative integers separated by single spaces)"
            )
        lo = int(first)
        hi = int(last) if dash else lo
        if hi < lo:
            raise ValueError(f"malformed allocation {_q(text)}: range {_q(token)} is reversed")
        if hi > MAX_CORE_ID:
            raise ValueError(f"malformed allocation {_q(text)}: core id {hi} exceeds {MAX_CORE_ID}")
        mask |= ((1 << (hi - lo + 1)) - 1) << lo
    return CoreSet(mask)


def _alloc_member(data: dict, key: str) -> CoreSet:
    try:
        return parse_alloc(_member(data, key))
    except ValueError as error:
        raise _Invalid(f"data member {_q(key)}: {error}") from None


def _check_job(job: dict, job_id: str) -> None:
    """What Batsim's ``Job::from_json`` requires of a job description (plus res > 0)."""
    get = job.get
    jid = get("id")
    if type(jid) is not str:
        if type(jid) is not int:
            if "id" not in job:
                raise _Invalid("missing job member 'id'")
            raise _Invalid(f"job member 'id' must be a string or an integer, got {_q(jid)}")
        jid = str(jid)
    if jid != job_id and f"{job_id.partition('!')[0]}!{jid}" != job_id:  # Batsim prefixes a bare id
        raise _Invalid(f"job member 'id' {_q(job['id'])} does not match data member 'job_id' {_q(job_id)}")
    subtime = get("subtime")
    if not _is_number(subtime):
        if "subtime" not in job:
            raise _Invalid("missing job member 'subtime'")
        raise _Invalid(f"job member 'subtime' must be a number, got {_q(subtime)}")
    res = get("res")
    if type(res) is not int or res <= 0:
        if res is None and "res" not in job:
            raise _Invalid("missing job member 'res'")
        raise _Invalid(f"job member 'res' must be a positive integer, got {_q(res)}")
    walltime = get("walltime", -1)
    if walltime != -1 and not (_is_number(walltime) and walltime > 0):
        raise _Invalid(f"job member 'walltime' must be -1 (none) or a positive number, got {_q(walltime)}")
    profile = get("profile")
    if type(profile) is not str:
        if "profile" not in job:
            raise _Invalid("missing job member 'profile'")
        raise _Invalid(f"job member 'profile' must be a string, got {_q(profile)}")


# ------------------------------------------------------------ Batsim -> scheduler

# SIMULATION_BEGINS members, in Batsim's writing order; the ones without a field go to ``extra``.
_BEGINS_ORDER = (
    "nb_resources",
    "nb_compute_resources",
    "nb_storage_resources",
    "allow_compute_sharing",
    "allow_storage_sharing",
    "config",
    "compute_resources",
    "storage_resources",
    "workloads",
    "profiles",
)
_BEGINS_FIELDS = ("nb_resources", "nb_compute_resources", "allow_compute_sharing", "config",
                  "compute_resources", "workloads", "profiles")
_BEGINS_TYPES = {"allow_compute_sharing": bool, "config": dict, "compute_resources": list,
                 "workloads": dict, "profiles": dict}


def _simulation_begins(ts: float, data: dict, now: float) -> SimulationBegins:
    counts = []
    for key in ("nb_resources", "nb_compute_resources"):
        value = _member(data, key)
        if type(value) is not int or value <= 0:
            raise _Invalid(f"data member {_q(key)} must be a positive integer, got {_q(value)}")
        if value > MAX_CORE_ID + 1:
            raise _Invalid(f"data member {_q(key)} is {value}: batsched-ml handles machines of at most "
                           f"{MAX_CORE_ID + 1} resources")
        counts.append(value)
    if counts[1] > counts[0]:
        raise _Invalid(f"nb_compute_resources ({counts[1]}) exceeds nb_resources ({counts[0]})")
    optional = {}
    for key, kind in _BEGINS_TYPES.items():
        if key in data:
            value = data[key]
            if type(value) is not kind:
                raise _Invalid(f"data member {_q(key)} must be a {kind.__name__}, got {_q(value)}")
            optional[key] = value
    machines = optional.get("compute_resources")
    if machines is not None and len(machines) != counts[1]:
        raise _Invalid(f"compute_resources lists {len(machines)} machines, nb_compute_resources says {counts[1]}")
    extra = {key: value for key, value in data.items() if key not in _BEGINS_FIELDS}
    return SimulationBegins(ts, counts[0], counts[1], extra=extra, **optional)


def _job_submitted(ts: float, data: dict, now: float) -> JobSubmitted:
    job_id = _job_id_member(data)
    job = _dict_member(data, "job")
    _check_job(job, job_id)
    profile = data.get("profile")
    if profile is not None and type(profile) is not dict:
        raise _Invalid(f"data member 'profile' must be an object, got {_q(profile)}")
    return JobSubmitted(ts, job_id, job, profile)


def _job_completed(ts: float, data: dict, now: float) -> JobCompleted:
    job_id = _job_id_member(data)
    state = _member(data, "job_state")
    if state not in JOB_STATES:
        raise _Invalid(f"data member 'job_state' must be one of {', '.join(JOB_STATES)}, got {_q(state)}")
    return_code = _member(data, "return_code")
    if type(return_code) is not int:
        raise _Invalid(f"data member 'return_code' must be an integer, got {_q(return_code)}")
    mask = _alloc_member(data, "alloc").mask  # JobCompleted keeps the text, and the cores for the core's check
    return JobCompleted(ts, job_id, state, return_code, data["alloc"], mask)


def _job_killed(ts: float, data: dict, now: float) -> JobKilled:
    job_ids = _job_id_list(data)
    progress = data.get("job_progress", {})  # a job that finished before the kill has no entry
    if type(progress) is not dict:
        raise _Invalid(f"data member 'job_progress' must be an object, got {_q(progress)}")
    for job_id, entry in progress.items():
        if job_id not in job_ids:
            raise _Invalid(f"job_progress has an entry for {_q(job_id)}, which is not in job_ids {_q(job_ids)}")
        if type(entry) is not dict:
            raise _Invalid(f"job_progress entry of {_q(job_id)} must be an object, got {_q(entry)}")
    return JobKilled(ts, job_ids, progress)


def _requested_call(ts: float, data: dict, now: float) -> RequestedCall:
    return RequestedCall(ts)


def _simulation_ends(ts: float, data: dict, now: float) -> SimulationEnds:
    return SimulationEnds(ts)


def _notify(ts: float, data: dict, now: float) -> Notify:
    kind = _str_member(data, "type")  # unknown kinds are kept as they are
    resources = data.get("resources")
    if resources is not None:
        _alloc_member(data, "resources")
    elif kind == EVENT_MACHINE_AVAILABLE or kind == EVENT_MACHINE_UNAVAILABLE:
        raise _Invalid(f"NOTIFY {kind} needs a 'resources' member")
    return Notify(ts, kind, resources)


def _other_event(etype: str):
    def parse(ts: float, data: dict, now: float) -> OtherEvent:
        return OtherEvent(ts, etype, data)

    return parse


_EVENT_PARSERS = {
    "SIMULATION_BEGINS": _simulation_begins,
    "JOB_SUBMITTED": _job_submitted,
    "JOB_COMPLETED": _job_completed,
    "JOB_KILLED": _job_killed,
    "REQUESTED_CALL": _requested_call,
    "NOTIFY": _notify,
    "SIMULATION_ENDS": _simulation_ends,
    **{etype: _other_event(etype) for etype in OTHER_EVENT_TYPES},
}


# ------------------------------------------------------------ scheduler -> Batsim


def _execute_job(ts: float, data: dict, now: float) -> ExecuteJob:
    size = len(data)
    if not (size == 2 or (size == 3 and "mapping" in data)) or "job_id" not in data or "alloc" not in data:
        unexpected = [key for key in data if key not in ("job_id", "alloc", "mapping")]
        if unexpected:
            raise _Invalid(
                f"data may only have 'job_id', 'alloc' and an optional 'mapping', but it also has "
                f"{', '.join(map(repr, unexpected))} (Batsim checks the member count of EXECUTE_JOB and aborts)"
            )  # otherwise a member is missing: reported just below
    job_id = _job_id_member(data)
    alloc = _alloc_member(data, "alloc")
    mapping = data.get("mapping")
    if mapping is not None:
        _check_mapping(mapping, len(alloc))
    return ExecuteJob(ts, job_id, alloc, mapping)


def _check_mapping(mapping, nb_allocated: int) -> None:
    """Batsim's rules: executors 0..n-1, each mapped to an index within the allocation."""
    if type(mapping) is not dict or not mapping:
        raise _Invalid(f"data member 'mapping' must be a non-empty object, got {_q(mapping)}")
    executors = set()
    for key, value in mapping.items():
        try:
            executor, resource = int(key), int(value)
        except (TypeError, ValueError):
            raise _Invalid(f"mapping entry {_q(key)}: {_q(value)} is not integer -> integer") from None
        if type(value) not in (int, str):
            raise _Invalid(f"mapping entry {_q(key)}: {_q(value)} is not integer -> integer")
        if not 0 <= resource < nb_allocated:
            raise _Invalid(
                f"mapping sends executor {executor} to resource #{resource} of the allocation, "
                f"which has only {nb_allocated} resources"
            )
        executors.add(executor)
    if executors != set(range(len(mapping))):
        raise _Invalid(f"mapping executors must be 0..{len(mapping) - 1}, got {sorted(executors)}")


def _reject_job(ts: float, data: dict, now: float) -> RejectJob:
    _exact_members(data, ("job_id",), "REJECT_JOB")
    return RejectJob(ts, _job_id_member(data))


def _kill_job(ts: float, data: dict, now: float) -> KillJob:
    _exact_members(data, ("job_ids",), "KILL_JOB")
    return KillJob(ts, _job_id_list(data))


def _call_me_later(ts: float, data: dict, now: float) -> CallMeLater:
    _exact_members(data, ("timestamp",), "CALL_ME_LATER")
    at = data["timestamp"]
    if not _is_number(at):
        raise _Invalid(f"data member 'timestamp' must be a number, got {_q(at)}")
    if not at > now:
        raise _Invalid(
            f"asks to be called at {_q(at)}, which is not strictly later than now={_q(now)} "
            "(Batsim aborts on such a request)"
        )
    return CallMeLater(ts, float(at))


def _register_profile(ts: float, data: dict, now: float) -> RegisterProfile:
    workload = _str_member(data, "workload_name")
    name = _str_member(data, "profile_name")
    profile = _dict_member(data, "profile")
    if type(profile.get("type")) is not str:
        raise _Invalid(f"the profile {_q(name)} needs a string member 'type', got {_q(profile)}")
    return RegisterProfile(ts, workload, name, profile)


def _register_job(ts: float, data: dict, now: float) -> RegisterJob:
    job_id = _job_id_member(data)
    job = _dict_member(data, "job")
    _check_job(job, job_id)
    return RegisterJob(ts, job_id, job)


def _set_job_metadata(ts: float, data: dict, now: float) -> SetJobMetadata:
    _exact_members(data, ("job_id", "metadata"), "SET_JOB_METADATA")
    job_id = _job_id_member(data)
    metadata = _str_member(data, "metadata")
    if '"' in metadata:
        raise _Invalid(f"data member 'metadata' must not contain double quotes, got {_q(metadata)}")
    return SetJobMetadata(ts, job_id, metadata)


_DECISION_PARSERS = {
    "EXECUTE_JOB": _execute_job,
    "REJECT_JOB": _reject_job,
    "KILL_JOB": _kill_job,
    "CALL_ME_LATER": _call_me_later,
    "REGISTER_PROFILE": _register_profile,
    "REGISTER_JOB": _register_job,
    "SET_JOB_METADATA": _set_job_metadata,
    "NOTIFY": _notify,
}

_PARSERS = {EVENTS: _EVENT_PARSERS, DECISIONS: _DECISION_PARSERS}


# ------------------------------------------------------------------------ decode


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


# One decoder for every message: ``json.loads`` with an option builds a new one per call (~5 us).
_std_decode = json.JSONDecoder(parse_constant=_reject_constant).decode


def _load(raw):
    """Parse the JSON text; every failure becomes a ProtocolError."""
    if _fast_loads is not None:
        try:
            return _fast_loads(raw)
        except (ValueError, TypeError):
            pass  # the standard library below gives the precise complaint (or accepts, e.g. huge ints)
    if isinstance(raw, str):
        text = raw
    elif isinstance(raw, (bytes, bytearray, memoryview)):
        try:
            text = raw.decode("utf-8") if type(raw) is bytes else bytes(raw).decode("utf-8")
        except UnicodeDecodeError as error:
            raise ProtocolError(
                f"message is not valid UTF-8 (byte {raw[error.start]:#04x} at offset {error.start}): "
                f"{_excerpt(raw)}"
            ) from None
    else:
        raise ProtocolError(f"a message must be bytes or str, not {type(raw).__name__}")
    try:
        return _std_decode(text)
    except RecursionError:
        raise ProtocolError(f"message is nested too deeply to be a protocol message (arrays or objects "
                            f"more than ~1000 levels deep): {_excerpt(text)}") from None
    except ValueError as error:
        if isinstance(error, json.JSONDecodeError):
            where = f"{error.msg} at line {error.lineno} column {error.colno}"
            near = text[max(0, error.pos - 30) : error.pos + 30]
            raise ProtocolError(f"message is not valid JSON ({where}, near {_q(near)}): {_excerpt(text)}") from None
        raise ProtocolError(f"message is not valid JSON ({error}): {_excerpt(text)}") from None


def _event_text(event, message_size: int) -> str:
    """The offending event for an error text: its JSON when the message is small, else a short repr."""
    if message_size <= 4 * _EXCERPT:
        try:
            text = json.dumps(event, separators=(",", ":"), ensure_ascii=False, default=repr)
        except (ValueError, RecursionError):
            text = _q(event)
        text = escape_controls(text)
    else:
        text = _q(event)
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


def decode(raw: bytes | str, *, direction: str = EVENTS) -> Message:
    """Parse and check one protocol message.

    ``direction`` is ``"events"`` (Batsim -> scheduler) or ``"decisions"``
    (scheduler -> Batsim). Timestamps become floats. Raises ProtocolError.
    """
    parsers = _PARSERS.get(direction)
    if parsers is None:
        raise ValueError(f"direction must be {_q(EVENTS)} or {_q(DECISIONS)}, not {_q(direction)}")
    doc = _load(raw)
    if type(doc) is not dict:
        raise ProtocolError(f"message is not a JSON object but a {type(doc).__name__}: {_excerpt(raw)}")
    try:
        now = doc["now"]
    except KeyError:
        raise ProtocolError(f"message has no 'now' member: {_excerpt(raw)}") from None
    if not _is_number(now):
        raise ProtocolError(f"message 'now' must be a finite number, got {_q(now)}: {_excerpt(raw)}")
    now = float(now)
    try:
        raw_events = doc["events"]
    except KeyError:
        raise ProtocolError(f"message has no 'events' member: {_excerpt(raw)}") from None
    if type(raw_events) is not list:
        raise ProtocolError(f"message 'events' must be an array, got {type(raw_events).__name__}: {_excerpt(raw)}")

    events = []
    previous = -math.inf
    for index, event in enumerate(raw_events):
        etype = None
        try:
            if type(event) is not dict:
                raise _Invalid("an event must be a JSON object")
            etype = event.get("type")
            if type(etype) is not str:
                raise _Invalid("missing event member 'type'" if etype is None else "event 'type' must be a string")
            parser = parsers.get(etype)
            if parser is None:
                raise _Invalid(
                    f"unknown event type for the {direction} direction ({_DIRECTION_TEXT[direction]}); "
                    f"known types: {', '.join(parsers)}"
                )
            ts = event.get("timestamp")
            if type(ts) is not float or not isfinite(ts):
                if type(ts) is not int:
                    if "timestamp" not in event:
                        raise _Invalid("missing event member 'timestamp'")
                    raise _Invalid(f"event 'timestamp' must be a finite number, got {_q(ts)}")
                ts = float(ts)
            if ts > now:
                raise _Invalid(f"event timestamp {_q(ts)} is later than the message now={_q(now)}")
            if ts < previous:
                raise _Invalid(f"events are not sorted by timestamp: {_q(ts)} comes after {_q(previous)}")
            previous = ts
            data = event.get("data")
            if type(data) is not dict:
                raise _Invalid("missing event member 'data'" if data is None else "event 'data' must be an object")
            events.append(parser(ts, data, now))
        except _Invalid as problem:
            shown = etype if type(etype) is str else "?"
            event_text = _event_text(event, len(raw))
            raise ProtocolError(
                f"{_DIRECTION_TEXT[direction]} message, event #{index} ({shown}): {problem}; "
                f"event: {event_text}; message: {_excerpt(raw)}",
                index=index,
                event_type=etype if type(etype) is str else None,
            ) from None
    return Message(now, events)


# ------------------------------------------------------------------------ encode


def _alloc_text(ev: ExecuteJob) -> str:
    alloc = ev.alloc
    if isinstance(alloc, CoreSet):
        if alloc.mask:
            return format_mask(alloc.mask)
    elif type(alloc) is str:
        if alloc:
            return alloc
    else:
        raise ProtocolError(f"EXECUTE_JOB of {_q(ev.job_id)}: alloc must be a CoreSet (or its text), got {_q(alloc)}")
    raise ProtocolError(f"EXECUTE_JOB of {_q(ev.job_id)}: the allocation is empty (Batsim aborts)")


def _encode_begins(ev: SimulationBegins) -> dict:
    known = {
        "nb_resources": ev.nb_resources,
        "nb_compute_resources": ev.nb_compute_resources,
        "allow_compute_sharing": ev.allow_compute_sharing,
        "config": ev.config,
        "compute_resources": ev.compute_resources,
        "workloads": ev.workloads,
        "profiles": ev.profiles,
    }
    data = {}
    for key in _BEGINS_ORDER:  # Batsim's order, with the extra members at their usual place
        if key in known:
            data[key] = known[key]
        elif key in ev.extra:
            data[key] = ev.extra[key]
    for key, value in ev.extra.items():
        if key not in data:
            data[key] = value
    return {"timestamp": ev.timestamp, "type": "SIMULATION_BEGINS", "data": data}


def _encode_submitted(ev: JobSubmitted) -> dict:
    data = {"job_id": ev.job_id, "job": ev.job}
    if ev.profile is not None:
        data["profile"] = ev.profile
    return {"timestamp": ev.timestamp, "type": "JOB_SUBMITTED", "data": data}


def _encode_completed(ev: JobCompleted) -> dict:
    data = {"job_id": ev.job_id, "job_state": ev.job_state, "return_code": ev.return_code, "alloc": ev.alloc}
    return {"timestamp": ev.timestamp, "type": "JOB_COMPLETED", "data": data}


def _encode_killed(ev: JobKilled) -> dict:
    data = {"job_ids": ev.job_ids, "job_progress": ev.job_progress}
    return {"timestamp": ev.timestamp, "type": "JOB_KILLED", "data": data}


def _encode_notify(ev: Notify) -> dict:
    data = {"type": ev.kind}
    if ev.resources is not None:
        data["resources"] = ev.resources
    return {"timestamp": ev.timestamp, "type": "NOTIFY", "data": data}


def _encode_execute(ev: ExecuteJob) -> dict:
    data = {"job_id": ev.job_id, "alloc": _alloc_text(ev)}
    if ev.mapping is not None:
        data["mapping"] = ev.mapping
    return {"timestamp": ev.timestamp, "type": "EXECUTE_JOB", "data": data}


_ENCODERS = {
    SimulationBegins: _encode_begins,
    JobSubmitted: _encode_submitted,
    JobCompleted: _encode_completed,
    JobKilled: _encode_killed,
    RequestedCall: lambda ev: {"timestamp": ev.timestamp, "type": "REQUESTED_CALL", "data": {}},
    SimulationEnds: lambda ev: {"timestamp": ev.timestamp, "type": "SIMULATION_ENDS", "data": {}},
    Notify: _encode_notify,
    OtherEvent: lambda ev: {"timestamp": ev.timestamp, "type": ev.type, "data": ev.data},
    ExecuteJob: _encode_execute,
    RejectJob: lambda ev: {"timestamp": ev.timestamp, "type": "REJECT_JOB", "data": {"job_id": ev.job_id}},
    KillJob: lambda ev: {"timestamp": ev.timestamp, "type": "KILL_JOB", "data": {"job_ids": ev.job_ids}},
    CallMeLater: lambda ev: {"timestamp": ev.timestamp, "type": "CALL_ME_LATER", "data": {"timestamp": ev.at}},
    RegisterProfile: lambda ev: {
        "timestamp": ev.timestamp,
        "type": "REGISTER_PROFILE",
        "data": {"workload_name": ev.workload_name, "profile_name": ev.profile_name, "profile": ev.profile},
    },
    RegisterJob: lambda ev: {
        "timestamp": ev.timestamp,
        "type": "REGISTER_JOB",
        "data": {"job_id": ev.job_id, "job": ev.job},
    },
    SetJobMetadata: lambda ev: {
        "timestamp": ev.timestamp,
        "type": "SET_JOB_METADATA",
        "data": {"job_id": ev.job_id, "metadata": ev.metadata},
    },
}


def _not_serializable(value):
    raise TypeError(f"{type(value).__name__} value {_q(value)} cannot be written as JSON")


def _make_dumps():
    """Compact, UTF-8, NaN-free ``json.dumps``.

    Reuses one C encoder object instead of building one per call (what
    ``JSONEncoder.encode`` does; ~1 µs per message), after checking that it
    writes exactly what the public encoder writes; falls back otherwise.
    """
    public = json.JSONEncoder(
        ensure_ascii=False, allow_nan=False, check_circular=False, separators=(",", ":"), default=_not_serializable
    ).encode
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython without the _json accelerator
        return public
    try:
        iterencode = make(None, _not_serializable, json.encoder.encode_basestring, None, ":", ",", False, False, False)

        def dumps(obj) -> str:
            return "".join(iterencode(obj, 0))

        probe = {"now": 4.5e-05, "events": [{"a": [1, 1e16, -0.0, True, None, "é\"\\\n"], "b": {}}]}
        if dumps(probe) == public(probe):
            return dumps
    except Exception:  # pragma: no cover - private API changed
        pass
    return public  # pragma: no cover


_dumps = _make_dumps()


_float_text = float.__repr__  # what json writes for a finite float
_json_string = json.encoder.encode_basestring  # a JSON string literal, non-ASCII kept (ensure_ascii=False)


def _number_text(value) -> str | None:
    """JSON text of a timestamp as ``json.dumps`` writes it; None when the fast path does not apply."""
    kind = type(value)
    if kind is float:
        return _float_text(value) if isfinite(value) else None
    if kind is int:
        return int.__repr__(value)
    return None


def _fast_execute(ev: ExecuteJob) -> str | None:
    ts = _number_text(ev.timestamp)
    if ts is None or ev.mapping is not None or type(ev.job_id) is not str:
        return None
    return f'{{"timestamp":{ts},"type":"EXECUTE_JOB","data":{{"job_id":{_json_string(ev.job_id)},"alloc":"{_alloc_text(ev)}"}}}}'


def _fast_call(ev: CallMeLater) -> str | None:
    ts, at = _number_text(ev.timestamp), _number_text(ev.at)
    if ts is None or at is None:
        return None
    return f'{{"timestamp":{ts},"type":"CALL_ME_LATER","data":{{"timestamp":{at}}}}}'


# The decisions a scheduler sends most, written without building a dict (same bytes as the
# general path: ``tests/test_protocol.py`` checks it); anything else goes through ``_ENCODERS``.
_FAST_ENCODERS = {ExecuteJob: _fast_execute, CallMeLater: _fast_call}


def encode(message: Message) -> bytes:
    """Write a message as compact UTF-8 JSON: ``{"now":..,"events":[{"timestamp","type","data"}..]}``.

    Works for both directions. ``RejectJob.reason`` is not sent; ``mapping`` only
    when set. Raises ProtocolError for an object that has no wire form.
    """
    now = _number_text(message.now)
    if now is None:
        return _encode_general(message)
    if not message.events:  # most replies: nothing to do
        return f'{{"now":{now},"events":[]}}'.encode()
    fast, encoders, parts = _FAST_ENCODERS, _ENCODERS, []
    try:
        for event in message.events:
            writer = fast.get(event.__class__)
            text = None if writer is None else writer(event)
            if text is None:
                encoder = encoders.get(event.__class__)
                if encoder is None:
                    raise ProtocolError(f"cannot encode {_q(event)}: not a protocol event or decision")
                text = _dumps(encoder(event))
            parts.append(text)
        return f'{{"now":{now},"events":[{",".join(parts)}]}}'.encode("utf-8")
    except (TypeError, ValueError) as error:  # unknown objects, lone surrogates
        if isinstance(error, ProtocolError):
            raise
        raise ProtocolError(f"cannot encode message at now={_q(message.now)}: {error}") from None


def _encode_general(message: Message) -> bytes:
    """The reference writer: every event through ``_ENCODERS`` and one ``json.dumps``."""
    encoders = _ENCODERS
    events = []
    for event in message.events:
        encoder = encoders.get(event.__class__)
        if encoder is None:
            raise ProtocolError(f"cannot encode {_q(event)}: not a protocol event or decision")
        events.append(encoder(event))
    try:
        return _dumps({"now": message.now, "events": events}).encode("utf-8")
    except (TypeError, ValueError) as error:  # NaN, infinity, unknown objects, lone surrogates
        raise ProtocolError(f"cannot encode message at now={_q(message.now)}: {error}") from None


# -------------------------------------------------------------------- transcripts


def read_transcript(path: str | PathLike) -> list[tuple[str, Message]]:
    """Decode a transcript: one message per line, tagged ``BATSIM `` or ``SCHED  ``.

    Returns ``[(tag, message), ...]`` with tag ``"BATSIM"`` (decoded as events) or
    ``"SCHED"`` (decoded as decisions). Blank lines are skipped.
    """
    messages = []
    with open(path, encoding="utf-8") as lines:
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            tag, _, body = line.partition(" ")
            direction = TRANSCRIPT_TAGS.get(tag)
            if direction is None:
                raise ProtocolError(f"{path}:{lineno}: unknown tag {_q(tag)}, expected BATSIM or SCHED")
            try:
                messages.append((tag, decode(body, direction=direction)))
            except ProtocolError as error:
                raise ProtocolError(
                    f"{path}:{lineno}: {error.message}", index=error.index, event_type=error.event_type
                ) from None
    return messages
