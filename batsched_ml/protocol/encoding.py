"""Encoding a protocol message: a :class:`~batsched_ml.protocol.events.Message` -> compact UTF-8 JSON.

Both directions use the same writer, with a fixed member order (Batsim's). The decisions a
scheduler sends most (EXECUTE_JOB, CALL_ME_LATER) are written without building a dict, with the
same bytes as the general path; floats are written by ``repr``, as the standard library does.
"""

from __future__ import annotations

import json
from math import isfinite

from .coreset import CoreSet, format_mask
from .errors import ProtocolError, quote as _q
from .events import (
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
from .parse import BEGINS_ORDER

__all__ = ["compact_json", "encode", "number_text"]


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
    for key in BEGINS_ORDER:  # Batsim's order, with the extra members at their usual place
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
compact_json = _dumps  # the same JSON writing for the Batsim 5 codec (``protocol.v5``)


_float_text = float.__repr__  # what json writes for a finite float
_json_string = json.encoder.encode_basestring  # a JSON string literal, non-ASCII kept (ensure_ascii=False)


def number_text(value) -> str | None:
    """JSON text of a timestamp as ``json.dumps`` writes it; None when the fast path does not apply."""
    kind = type(value)
    if kind is float:
        return _float_text(value) if isfinite(value) else None
    if kind is int:
        return int.__repr__(value)
    return None


def _fast_execute(ev: ExecuteJob) -> str | None:
    ts = number_text(ev.timestamp)
    if ts is None or ev.mapping is not None or type(ev.job_id) is not str:
        return None
    return f'{{"timestamp":{ts},"type":"EXECUTE_JOB","data":{{"job_id":{_json_string(ev.job_id)},"alloc":"{_alloc_text(ev)}"}}}}'


def _fast_call(ev: CallMeLater) -> str | None:
    ts, at = number_text(ev.timestamp), number_text(ev.at)
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
    now = number_text(message.now)
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
