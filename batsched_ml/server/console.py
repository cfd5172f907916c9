"""What ``serve`` and ``simulate --connect`` tell their user on stderr.

Two processes that wait for each other look dead when they say nothing: each
side prints where it listens or connects, a progress line while it runs (on a
terminal only, so logs stay clean), and a hint naming the command to run when
its peer has not shown up after a while.
"""

from __future__ import annotations

import time

__all__ = ["ProgressLine", "batsim_hint", "connect_form", "scheduler_hint"]

HINT_AFTER = 10.0  # seconds of silence before a hint


def connect_form(endpoint: str) -> str:
    """The endpoint a peer connects to for a bound one: ``tcp://*:28000`` -> ``tcp://localhost:28000``."""
    for wildcard in ("tcp://*:", "tcp://0.0.0.0:"):
        if endpoint.startswith(wildcard):
            return "tcp://localhost:" + endpoint[len(wildcard):]
    return endpoint


def batsim_hint(endpoint: str, waited: float) -> str:
    """For ``serve`` when no Batsim has sent anything yet."""
    target = connect_form(endpoint)
    return (f"batsched-ml serve: no Batsim has connected to {endpoint} after {waited:.0f} s; start one with "
            f"`batsim -p PLATFORM.xml -w WORKLOAD.json -e out/run -s {target}` (add --enable-dynamic-jobs for "
            f"a requeueing scheduler), or use the embedded simulator: "
            f"`batsched-ml simulate -p PLATFORM.xml -w WORKLOAD.json --connect {target}`")


def scheduler_hint(endpoint: str, waited: float) -> str:
    """For ``simulate --connect`` when no scheduler has answered SIMULATION_BEGINS yet."""
    return (f"batsched-ml simulate: no scheduler has answered on {endpoint} after {waited:.0f} s; start one "
            f"first, e.g. `batsched-ml serve -s {endpoint}` (or batsched / pybatsim bound there)")


class ProgressLine:
    """One self-overwriting status line on a terminal (nothing at all otherwise).

    ``update(text)`` redraws at most every ``every`` seconds; ``close()`` ends the line.
    """

    def __init__(self, stream, every: float = 0.5, enabled: bool | None = None):
        self.stream = stream
        self.every = every
        if enabled is None:
            isatty = getattr(stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.shown = 0  # length of the text on screen
        self.next_draw = 0.0

    def due(self) -> bool:
        return self.enabled and time.monotonic() >= self.next_draw

    def update(self, text: str, *, force: bool = False) -> None:
        if not self.enabled or not (force or time.monotonic() >= self.next_draw):
            return
        self.next_draw = time.monotonic() + self.every
        self.stream.write("\r" + text + " " * max(0, self.shown - len(text)))
        self.stream.flush()
        self.shown = len(text)

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.shown = 0
