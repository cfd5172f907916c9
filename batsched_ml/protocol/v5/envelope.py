"""One Batsim 5 message: ``{"now": t, "events": [{"timestamp", "event_type", "event"}...]}``.

The rules are batprotocol's (``docs/protocol.rst``): ``now`` is a number, every event's
``timestamp`` is at most ``now`` and the events are in chronological order; each event names its
type in ``event_type`` (written before ``event``, as the flatbuffers JSON parser needs). What
rc2's code checks of a reply is less (src/protocol.cpp, ``parse_batprotocol_message``): each
timestamp at most ``now`` and at least the first event's; the reply's ``now`` is never compared
with the message's (a JSON scheduler echoing the 12 decimals rc2 prints is often a sliver early).
Batsim ends every message it sends with one NUL byte (it sends ``strlen + 1`` bytes); a reply may
carry one too (Batsim's C++ message builder adds it; rc2 adds its own when it reads).
"""

from __future__ import annotations

from math import isfinite

from ..decoding import read_message as read_envelope
from ..encoding import number_text
from ..errors import ProtocolError, excerpt, quote as _q
from ..events import Message

__all__ = ["KEYS", "NUL", "as_printed", "bind", "event_json", "frame", "printed", "rc2_number", "read_message"]

NUL = b"\0"
KEYS = ("event_type", "event")  # where Batsim 5 puts an event's type and body (4.2.1: type, data)


def read_message(raw: bytes, readers: dict, *, sender: str, direction: str, nul: bool, on_now=None,
                 after_first: bool = False) -> Message:
    """Parse and check one message with the rules both Batsim lines share
    (:func:`batsched_ml.protocol.decoding.read_message`); ``readers[event_type](timestamp, event,
    now)`` (see :func:`bind`) turns each event into a typed one (None when the session consumes it,
    like an acknowledgement).

    ``sender`` names it in the errors (``"Batsim->EDC"``), ``direction`` is ``"events"`` or
    ``"decisions"``; ``nul``: the message must end with Batsim's NUL byte (else one is allowed);
    ``on_now(now)`` checks ``now`` before any event; ``after_first``: rc2's rule for a reply (each
    timestamp at least the first's, at most ``now``; ``now`` itself unchecked). Raises
    ProtocolError (ProtocolViolation for an event out of order, ``members.OutOfOrder``)."""
    if raw[-1:] == NUL:
        raw = raw[:-1]
    elif nul:
        raise ProtocolError(f"{sender} message does not end with the NUL byte Batsim 5 writes after every "
                            f"message: {excerpt(raw)}")
    return read_envelope(raw, readers, direction=direction, sender=sender, keys=KEYS, on_now=on_now,
                         after_first=after_first)


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


def rc2_number(x: float) -> str:
    """A double as rc2 writes it in a JSON message (flatbuffers' ``FloatToString`` at 12
    decimals): fixed notation, trailing zeros dropped but one (``0.000100008``, ``53940.0``)."""
    text = f"{x:.12f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def printed(x: float) -> float:
    """The double a JSON decision component reads where rc2 wrote ``x`` (:func:`rc2_number`):
    ``x`` itself from about 16,384 s on (12 decimals are finer than the double), else ``x``
    rounded to 1e-12."""
    return float(rc2_number(x))


def as_printed(value):
    """``value`` (an event's body) with every float as rc2 prints it (:func:`printed`)."""
    kind = type(value)
    if kind is float:
        return printed(value) if isfinite(value) else value
    if kind is dict:
        return {key: as_printed(item) for key, item in value.items()}
    if kind is list:
        return [as_printed(item) for item in value]
    return value
