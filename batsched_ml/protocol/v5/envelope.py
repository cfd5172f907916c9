"""One Batsim 5 message: ``{"now": t, "events": [{"timestamp", "event_type", "event"}...]}``.

The rules are batprotocol's (``docs/protocol.rst``): ``now`` is a number, every event's
``timestamp`` is at most ``now`` and the events are in chronological order; each event names its
type in ``event_type`` (written before ``event``, as the flatbuffers JSON parser needs). Batsim
ends every message it sends with one NUL byte (it sends ``strlen + 1`` bytes); a reply may carry
one too (Batsim's C++ message builder adds it; rc2 adds its own when it reads).
"""

from __future__ import annotations

from ..decoding import read_message as read_envelope
from ..encoding import number_text
from ..errors import ProtocolError, excerpt, quote as _q
from ..events import Message

__all__ = ["KEYS", "NUL", "bind", "event_json", "frame", "read_message"]

NUL = b"\0"
KEYS = ("event_type", "event")  # where Batsim 5 puts an event's type and body (4.2.1: type, data)


def read_message(raw: bytes, readers: dict, *, sender: str, direction: str, nul: bool, on_now=None) -> Message:
    """Parse and check one message with the rules both Batsim lines share
    (:func:`batsched_ml.protocol.decoding.read_message`); ``readers[event_type](timestamp, event,
    now)`` (see :func:`bind`) turns each event into a typed one (None when the session consumes it,
    like an acknowledgement).

    ``sender`` names it in the errors (``"Batsim->EDC"``), ``direction`` is ``"events"`` or
    ``"decisions"``; ``nul``: the message must end with Batsim's NUL byte (else one is allowed);
    ``on_now(now)`` checks ``now`` before any event. Raises ProtocolError (ProtocolViolation for
    an event out of order, ``members.OutOfOrder``)."""
    if raw[-1:] == NUL:
        raw = raw[:-1]
    elif nul:
        raise ProtocolError(f"{sender} message does not end with the NUL byte Batsim 5 writes after every "
                            f"message: {excerpt(raw)}")
    return read_envelope(raw, readers, direction=direction, sender=sender, keys=KEYS, on_now=on_now)


def bind(readers: dict, state) -> dict:
    """``readers`` (``(timestamp, event, now, state)``) with one connection's ``state`` given."""
    return {etype: _bound(reader, state) for etype, reader in readers.items()}


def _bound(reader, state):
    def read(ts: float, body: dict, now: float):
        return reader(ts, body, now, state)

    return read


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
