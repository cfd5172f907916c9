"""One Batsim 5 message: ``{"now": t, "events": [{"timestamp", "event_type", "event"}...]}``.

The rules are batprotocol's (``docs/protocol.rst``): ``now`` is a number, every event's
``timestamp`` is at most ``now`` and the events are in chronological order; each event names its
type in ``event_type`` (written before ``event``, as the flatbuffers JSON parser needs). Batsim
ends every message it sends with one NUL byte (it sends ``strlen + 1`` bytes); a reply may carry
one too (Batsim's C++ message builder adds it; rc2 adds its own when it reads).
"""

from __future__ import annotations

import math

from ..decoding import event_text, load_json
from ..encoding import number_text
from ..errors import ProtocolError, ProtocolViolation, excerpt, quote as _q
from ..events import Message
from ..members import Invalid, is_number

__all__ = ["NUL", "OutOfOrder", "event_json", "frame", "read_message"]

NUL = b"\0"


class OutOfOrder(Invalid):
    """A well-formed event that Batsim 5 never sends at this point (a second SimulationBeginsEvent,
    a completion of a job that does not run...): reported as a ProtocolViolation."""


def read_message(raw: bytes, readers: dict, state, *, direction: str, nul: bool, on_now=None) -> Message:
    """Parse and check one message; ``readers[event_type](timestamp, event, now, state)`` turns
    each event into a typed one (or None when it is consumed, like an acknowledgement).

    ``direction`` names the sender for the error texts (``"Batsim->EDC"``); ``nul``: the
    message must end with Batsim's NUL byte (else one is allowed); ``on_now(now)``, if given,
    checks ``now`` before any event is read. Raises ProtocolError (ProtocolViolation for
    :class:`OutOfOrder`)."""
    if raw[-1:] == NUL:
        raw = raw[:-1]
    elif nul:
        raise ProtocolError(f"{direction} message does not end with the NUL byte Batsim 5 writes after every "
                            f"message: {excerpt(raw)}")
    doc = load_json(raw)
    if type(doc) is not dict:
        raise ProtocolError(f"{direction} message is not a JSON object but a {type(doc).__name__}: {excerpt(raw)}")
    now = doc.get("now")
    if not is_number(now):
        what = "has no 'now' member" if "now" not in doc else f"'now' must be a finite number, got {_q(now)}"
        raise ProtocolError(f"{direction} message {what}: {excerpt(raw)}")
    now = float(now)
    if on_now is not None:
        on_now(now)
    events = doc.get("events")
    if type(events) is not list:
        what = "has no 'events' member" if "events" not in doc else "'events' must be an array"
        raise ProtocolError(f"{direction} message {what}: {excerpt(raw)}")
    typed = []
    previous = -math.inf
    for index, event in enumerate(events):
        etype = None
        try:
            if type(event) is not dict:
                raise Invalid("an event must be a JSON object {timestamp, event_type, event}")
            etype = event.get("event_type")
            if type(etype) is not str:
                raise Invalid("missing 'event_type'" if etype is None else "'event_type' must be a string")
            reader = readers.get(etype)
            if reader is None:
                raise Invalid(f"unknown event type for the {direction} direction; known types: {', '.join(readers)}")
            ts = event.get("timestamp")
            if not is_number(ts):
                raise Invalid("missing 'timestamp'" if "timestamp" not in event
                              else f"'timestamp' must be a finite number, got {_q(ts)}")
            ts = float(ts)
            if ts > now:
                raise Invalid(f"timestamp {_q(ts)} is later than the message's now={_q(now)}")
            if ts < previous:
                raise Invalid(f"events are not in chronological order: timestamp {_q(ts)} comes after {_q(previous)}")
            previous = ts
            body = event.get("event")
            if type(body) is not dict:
                raise Invalid("missing 'event'" if body is None else "'event' must be an object")
            result = reader(ts, body, now, state)
        except Invalid as problem:
            shown = etype if type(etype) is str else "?"
            error = ProtocolViolation if isinstance(problem, OutOfOrder) else ProtocolError
            raise error(f"{direction} message, event #{index} ({shown}): {problem}; event: "
                                f"{event_text(event, len(raw))}; message: {excerpt(raw)}",
                                index=index, event_type=shown) from None
        if result is not None:
            typed.append(result)
    return Message(now, typed)


def frame(now: float, events: list, *, nul: bool = True) -> bytes:
    """A message from the JSON texts of its events (``{"timestamp","event_type","event"}``)."""
    now_text = number_text(now)
    if now_text is None:
        raise ProtocolError(f"cannot write a message at now={_q(now)}: not a finite number")
    text = f'{{"now":{now_text},"events":[{",".join(events)}]}}'.encode()
    return text + NUL if nul else text


def event_json(timestamp: float, event_type: str, body_json: str) -> str:
    """One event's JSON text, its type before its body (the flatbuffers parser needs that order)."""
    ts = number_text(timestamp)
    if ts is None:
        raise ProtocolError(f"cannot write {event_type} at timestamp {_q(timestamp)}: not a finite number")
    return f'{{"timestamp":{ts},"event_type":"{event_type}","event":{body_json}}}'
