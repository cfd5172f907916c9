"""JSON codec of the Batsim 4.2.1 protocol: wire bytes <-> typed messages.

``decode`` parses one ZeroMQ message (``{"now": ..., "events": [...]}``) into a
:class:`~batsched_ml.protocol.events.Message` of typed events and checks it the way Batsim does;
``encode`` writes a message back as compact UTF-8 JSON with a fixed member order. Both directions
use the same functions: ``"events"`` are Batsim -> scheduler messages, ``"decisions"`` scheduler
-> Batsim ones. Every problem is a :class:`ProtocolError` naming what is wrong, the event index
and type, and an excerpt of the raw message.

This module is the protocol's one import for its users; the work is done by its parts:
:mod:`~batsched_ml.protocol.parse` (each event read and checked, by type) and
:mod:`~batsched_ml.protocol.members` (its members: ids, allocations, job descriptions),
:mod:`~batsched_ml.protocol.decoding` (the message envelope and JSON),
:mod:`~batsched_ml.protocol.encoding`, :mod:`~batsched_ml.protocol.transcripts` and
:mod:`~batsched_ml.protocol.errors`.
"""

from __future__ import annotations

from .decoding import decode
from .encoding import encode
from .errors import ProtocolError, ProtocolViolation, escape_controls, excerpt
from .members import MAX_CORE_ID, parse_alloc
from .parse import DECISIONS, EVENTS
from .transcripts import TRANSCRIPT_TAGS, read_transcript

__all__ = [
    "BATSIM_4",
    "DECISIONS",
    "EVENTS",
    "MAX_CORE_ID",
    "TRANSCRIPT_TAGS",
    "ProtocolError",
    "ProtocolViolation",
    "decode",
    "encode",
    "escape_controls",
    "excerpt",
    "parse_alloc",
    "read_transcript",
]


class _Batsim4:
    """The 4.2.1 codec with a Batsim 5 session's interface (``decode``, ``encode``): stateless,
    4.2.1's messages stand alone."""

    name = "Batsim 4.2.1"
    decode = staticmethod(decode)
    encode = staticmethod(encode)


BATSIM_4 = _Batsim4()
