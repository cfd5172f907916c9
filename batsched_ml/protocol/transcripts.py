"""Transcripts of protocol exchanges (``/work/shared/golden/transcripts/*.log``): one message per
line, tagged with its direction."""

from __future__ import annotations

from os import PathLike

from .decoding import decode
from .errors import ProtocolError, quote as _q
from .events import Message
from .parse import DECISIONS, EVENTS

__all__ = ["TRANSCRIPT_TAGS", "read_transcript"]

# Transcript line tags and their directions.
TRANSCRIPT_TAGS = {"BATSIM": EVENTS, "SCHED": DECISIONS}


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
