"""Decoding one protocol message: wire bytes -> a checked :class:`~batsched_ml.protocol.events.Message`.

``decode`` parses the JSON envelope (``{"now": ..., "events": [...]}``), checks the timestamps,
and hands each event to its parser (:mod:`~batsched_ml.protocol.parse`); every problem becomes a
:class:`~batsched_ml.protocol.errors.ProtocolError` naming what is wrong, the event index and
type, and an excerpt of the raw message. ``orjson`` parses when it is installed (same Python
objects as ``json.loads``; the standard library gives the precise complaint when it refuses).
"""

from __future__ import annotations

import json
import math
from math import isfinite

from .errors import EXCERPT, ProtocolError, ProtocolViolation, escape_controls, excerpt, quote as _q
from .events import Message
from .members import Invalid, OutOfOrder, is_number
from .parse import DECISIONS, DIRECTION_TEXT, EVENTS, PARSERS

try:  # optional accelerator for parsing; results are checked equal to json.loads in the tests
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - depends on the environment
    _fast_loads = None

__all__ = ["decode", "read_message"]


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
                f"{excerpt(raw)}"
            ) from None
    else:
        raise ProtocolError(f"a message must be bytes or str, not {type(raw).__name__}")
    try:
        return _std_decode(text)
    except RecursionError:
        raise ProtocolError(f"message is nested too deeply to be a protocol message (arrays or objects "
                            f"more than ~1000 levels deep): {excerpt(text)}") from None
    except ValueError as error:
        if isinstance(error, json.JSONDecodeError):
            where = f"{error.msg} at line {error.lineno} column {error.colno}"
            near = text[max(0, error.pos - 30) : error.pos + 30]
            raise ProtocolError(f"message is not valid JSON ({where}, near {_q(near)}): {excerpt(text)}") from None
        raise ProtocolError(f"message is not valid JSON ({error}): {excerpt(text)}") from None


def _event_text(event, message_size: int) -> str:
    """The offending event for an error text: its JSON when the message is small, else a short repr."""
    if message_size <= 4 * EXCERPT:
        try:
            text = json.dumps(event, separators=(",", ":"), ensure_ascii=False, default=repr)
        except (ValueError, RecursionError):
            text = _q(event)
        text = escape_controls(text)
    else:
        text = _q(event)
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "..."


def decode(raw: bytes | str, *, direction: str = EVENTS) -> Message:
    """Parse and check one protocol message.

    ``direction`` is ``"events"`` (Batsim -> scheduler) or ``"decisions"``
    (scheduler -> Batsim). Timestamps become floats. Raises ProtocolError.
    """
    parsers = PARSERS.get(direction)
    if parsers is None:
        raise ValueError(f"direction must be {_q(EVENTS)} or {_q(DECISIONS)}, not {_q(direction)}")
    return read_message(raw, parsers, direction=direction, sender=DIRECTION_TEXT[direction])


def read_message(raw, parsers: dict, *, direction: str, sender: str, keys: tuple = ("type", "data"),
                 on_now=None, after_first: bool = False) -> Message:
    """The envelope ``{"now", "events"}`` and its events, checked by the rules every Batsim line
    shares (``now`` a number, each event's timestamp at most ``now``, the events sorted); each event
    is ``{"timestamp", keys[0]: its type, keys[1]: its body}`` (4.2.1's ``type``/``data``, Batsim
    5's ``event_type``/``event``) and becomes ``parsers[type](timestamp, body, now)`` (None: left
    out). ``sender`` names the direction in the errors (``"Batsim->scheduler"``); ``on_now(now)``
    checks ``now`` before any event; ``after_first``: each timestamp need only be at least the
    first event's (how Batsim 5.0.0-rc2 reads a reply), not the previous one's. An
    :class:`~batsched_ml.protocol.members.OutOfOrder` problem is a ProtocolViolation, any other a
    ProtocolError."""
    doc = _load(raw)
    if type(doc) is not dict:
        raise ProtocolError(f"message is not a JSON object but a {type(doc).__name__}: {excerpt(raw)}")
    try:
        now = doc["now"]
    except KeyError:
        raise ProtocolError(f"message has no 'now' member: {excerpt(raw)}") from None
    if not is_number(now):
        raise ProtocolError(f"message 'now' must be a finite number, got {_q(now)}: {excerpt(raw)}")
    now = float(now)
    if on_now is not None:
        on_now(now)
    try:
        raw_events = doc["events"]
    except KeyError:
        raise ProtocolError(f"message has no 'events' member: {excerpt(raw)}") from None
    if type(raw_events) is not list:
        raise ProtocolError(f"message 'events' must be an array, got {type(raw_events).__name__}: {excerpt(raw)}")

    type_key, body_key = keys
    events = []
    previous = -math.inf
    for index, event in enumerate(raw_events):
        etype = None
        try:
            if type(event) is not dict:
                raise Invalid("an event must be a JSON object")
            etype = event.get(type_key)
            if type(etype) is not str:
                raise Invalid(f"missing event member {type_key!r}" if etype is None
                              else f"event {type_key!r} must be a string")
            parser = parsers.get(etype)
            if parser is None:
                raise Invalid(f"unknown event type for the {direction} direction ({sender}); "
                              f"known types: {', '.join(parsers)}")
            ts = event.get("timestamp")
            if type(ts) is not float or not isfinite(ts):
                if type(ts) is not int:
                    if "timestamp" not in event:
                        raise Invalid("missing event member 'timestamp'")
                    raise Invalid(f"event 'timestamp' must be a finite number, got {_q(ts)}")
                ts = float(ts)
            if ts > now:
                raise Invalid(f"event timestamp {_q(ts)} is later than the message now={_q(now)}")
            if ts < previous:
                raise Invalid(f"events are not sorted by timestamp: {_q(ts)} comes after {_q(previous)}"
                              if not after_first else
                              f"event timestamp {_q(ts)} is before the first event's {_q(previous)}")
            if not after_first or index == 0:
                previous = ts
            data = event.get(body_key)
            if type(data) is not dict:
                raise Invalid(f"missing event member {body_key!r}" if data is None
                              else f"event {body_key!r} must be an object")
            result = parser(ts, data, now)
        except Invalid as problem:
            shown = etype if type(etype) is str else "?"
            shown_event = _event_text(event, len(raw))
            error = ProtocolViolation if isinstance(problem, OutOfOrder) else ProtocolError
            raise error(
                f"{sender} message, event #{index} ({shown}): {problem}; "
                f"event: {shown_event}; message: {excerpt(raw)}",
                index=index,
                event_type=etype if type(etype) is str else None,
            ) from None
        if result is not None:
            events.append(result)
    return Message(now, events)
