"""What ``serve`` and ``simulate --connect`` tell their user on stderr.

Two processes that wait for each other look dead when they say nothing: each
side prints where it listens or connects, a progress line while it runs (on a
terminal only, so logs stay clean), and a hint naming the command to run when
its peer has not shown up after a while.
"""

from __future__ import annotations

import time

__all__ = ["ProgressLine", "batsim_hint", "connect_form", "edc_socket_form", "scheduler_hint"]

HINT_AFTER = 10.0  # seconds of silence before a hint


def connect_form(endpoint: str) -> str:
    """The endpoint a peer connects to for a bound one: ``tcp://*:28000`` -> ``tcp://localhost:28000``."""
    for wildcard in ("tcp://*:", "tcp://0.0.0.0:"):
        if endpoint.startswith(wildcard):
            return "tcp://localhost:" + endpoint[len(wildcard):]
    return endpoint


def edc_socket_form(target: str) -> str:
    """How Batsim 5 connects to a decision component at ``target``: an endpoint and an init string
    (batsched-ml reads nothing from it: its configuration is its own command line)."""
    return f"--edc-socket-str {target} '{{}}'"


def batsim_hint(endpoint: str, waited: float, batsim: str | None = None) -> str:
    """For ``serve`` when no Batsim has sent anything yet (``batsim``: which one it waits for,
    ``"4"``, ``"5"`` or None for either)."""
    target = connect_form(endpoint)
    start = f"batsched-ml serve: no Batsim has connected to {endpoint} after {waited:.0f} s; start one with "
    batsim4 = (f"`batsim -p PLATFORM.xml -w WORKLOAD.json -e out/run -s {target}` (add --enable-dynamic-jobs for "
               f"a requeueing scheduler)")
    batsim5 = f"`batsim -p PLATFORM.xml -w WORKLOAD.json -e out/run/ {edc_socket_form(target)}`"
    if batsim == "5":
        return (f"{start}{batsim5}, or use the embedded simulator: `batsched-ml simulate -p PLATFORM.xml "
                f"-w WORKLOAD.json --connect {target} --batsim 5`")
    either = f"{batsim4}, or Batsim 5 with {batsim5}" if batsim is None else batsim4
    return (f"{start}{either}, or use the embedded simulator: "
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
