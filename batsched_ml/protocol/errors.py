"""How the protocol layer reports a bad message: :class:`ProtocolError` (and
:class:`ProtocolViolation`), with a short, escaped quote of the offending input.

Quoted input is escaped (control bytes such as NUL, ESC or newlines are shown as \\x00, \\x1b,
\\n) and truncated before it is built, so an error about a 50 MB message costs microseconds and
always fits on one line.
"""

from __future__ import annotations

import reprlib

__all__ = ["EXCERPT", "ProtocolError", "ProtocolViolation", "escape_controls", "excerpt", "quote"]

EXCERPT = 160  # characters of the raw message quoted in an error


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


def quote(value) -> str:
    """A short, escaped ``repr`` of a value taken from a message (for error texts)."""
    try:
        return escape_controls(_SHORT.repr(value))
    except RecursionError:  # pragma: no cover - reprlib stops at maxlevel
        return f"<{type(value).__name__}>"


def excerpt(raw, limit: int = EXCERPT) -> str:
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

