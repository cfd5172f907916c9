"""``batsched-ml serve``: the decision server a real Batsim 4.2.1 connects to.

Binds a ZeroMQ REP socket; Batsim connects its REQ socket and sends one JSON
message at a time. Each message goes decode -> ``DecisionCore.handle`` ->
encode and is answered exactly once, with Batsim's ``now`` echoed and the
decisions (all timestamped ``now``) in order.

Stopping:

* ``SIMULATION_ENDS`` is answered with an empty event list, then the socket is
  closed and ``serve`` returns 0;
* a malformed or out-of-contract message, or a scheduler error (e.g. a
  requeueing scheduler while Batsim runs without ``--enable-dynamic-jobs``), is
  reported on stderr naming the message and the event, and answered by a
  non-JSON line ``batsched-ml: error: ...``: the REP socket must answer
  something, and a reply Batsim cannot parse makes it abort at once instead of
  waiting forever for a decision that will never come. ``serve`` returns 2
  (1 for an internal bug, with a traceback);
* ``--timeout S``: no message for S seconds is an error naming the endpoint
  (off by default: a real simulation may think for a long time between
  messages). Independently, when Batsim's connection drops while the server
  waits (Batsim crashed or was killed), the server stops with that error at
  once.
"""

from __future__ import annotations

import sys
import time
import traceback

import zmq

from ..core.decision_core import DecisionCore
from ..core.job import QUEUED
from ..interrupts import exit_code, what_stopped
from ..protocol.codec import ProtocolError, ProtocolViolation, decode, encode, escape_controls, excerpt
from ..protocol.events import Message
from .console import HINT_AFTER, ProgressLine, batsim_hint, connect_form
from .transport import DEFAULT_ENDPOINT, ERROR_PREFIX, Channel, MessageLog, TransportError

__all__ = ["DecisionServer", "ServerStats", "serve", "run_server"]

_FINAL_LINGER_MS = 2000  # how long a last reply may take to leave before the socket closes


class ServerStats:
    """Counters of one run (for the benchmark): messages and seconds spent where."""

    __slots__ = ("messages", "events", "decisions", "decide_time", "codec_time", "wall_time", "exit_code")

    def __init__(self):
        self.messages = 0
        self.events = 0
        self.decisions = 0
        self.decide_time = 0.0  # inside DecisionCore.handle
        self.codec_time = 0.0  # decode + encode
        self.wall_time = 0.0  # first message received -> last reply sent
        self.exit_code = None

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}


class DecisionServer:
    """The transport-independent half of the server: bytes in, bytes out.

    ``answer(raw)`` decodes one Batsim message, lets the core decide and
    encodes the reply; it raises ProtocolError / SchedulingError (with the
    message context added) for the caller to report.
    """

    def __init__(self, scheduler, *, stats: ServerStats | None = None):
        self.core = DecisionCore(scheduler)
        self.stats = stats or ServerStats()
        self.ended = False

    def answer(self, raw: bytes) -> bytes:
        stats = self.stats
        clock = time.perf_counter
        t0 = clock()
        message = decode(raw)  # ProtocolError names the event and quotes the message
        now = message.now
        events = message.events
        t1 = clock()
        decisions = self.core.handle(now, events)  # ProtocolViolation when Batsim breaks the protocol
        t2 = clock()
        if self.core.ended:
            self.ended = True
            decisions = []
        elif len(decisions) > 1:
            previous = decisions[0].timestamp
            for decision in decisions:  # cheap check; the core timestamps everything ``now``
                if decision.timestamp < previous:
                    decisions = sorted(decisions, key=_timestamp)
                    break
                previous = decision.timestamp
        reply = encode(Message(now, decisions))
        t3 = clock()
        stats.messages += 1
        stats.events += len(events)
        stats.decisions += len(decisions)
        stats.decide_time += t2 - t1
        stats.codec_time += (t1 - t0) + (t3 - t2)
        return reply


def _timestamp(decision) -> float:
    return decision.timestamp


def _describe(raw: bytes, limit: int = 200) -> str:
    return excerpt(raw, limit)  # escaped and cut before decoding: cheap whatever the size


def run_server(scheduler, endpoint: str = DEFAULT_ENDPOINT, *, timeout: float | None = None,
               log_path=None, stats: ServerStats | None = None, err=None, ready=None, label: str | None = None,
               hint_after: float = HINT_AFTER, progress: bool | None = None) -> int:
    """Serve decisions on ``endpoint`` until SIMULATION_ENDS; return the exit code.

    ``ready`` (a ``threading.Event`` or anything with ``set()``) is set once the
    socket is bound — tests and benchmarks start the peer then. ``err`` is where
    errors and status lines are written (stderr by default): where it listens
    (with the scheduler's ``label``), a hint after ``hint_after`` s without
    Batsim, a progress line when ``progress`` (default: ``err`` is a terminal).
    """
    err = err or sys.stderr
    server = DecisionServer(scheduler, stats=stats)
    stats = server.stats
    try:
        channel = Channel(zmq.REP, endpoint, bind=True, timeout=timeout, peer_name="Batsim")
    except TransportError as error:
        print(f"batsched-ml serve: error: {error}", file=err)
        stats.exit_code = 2
        return 2
    log = MessageLog(log_path) if log_path else None
    scheduler_text = f" (scheduler {label})" if label else ""
    print(f"batsched-ml serve: listening on {endpoint}{scheduler_text}; Batsim connects with "
          f"-s {connect_form(endpoint)}", file=err, flush=True)
    line = ProgressLine(err, enabled=progress)
    if ready is not None:
        ready.set()
    code = 0
    started = None
    raw = None
    hinted = False

    def waiting(waited: float) -> None:
        nonlocal hinted
        if raw is None:
            if not hinted and waited >= hint_after:
                hinted = True
                print(batsim_hint(endpoint, waited), file=err, flush=True)
        elif line.enabled:
            line.update(_progress_text(server), force=True)

    try:
        while True:
            waiting_for = "SIMULATION_BEGINS" if raw is None else "the next message"
            try:
                raw = channel.recv(waiting_for, fail_on_disconnect=raw is not None, tick=waiting,
                                   tick_every=min(1.0, hint_after) if raw is None else 1.0)
            except TransportError as error:
                line.close()
                print(f"batsched-ml serve: error: {error}", file=err)
                code = 2
                break
            if started is None:
                started = time.perf_counter()
            if log is not None:
                log.batsim(raw)
            try:
                reply = server.answer(raw)
            except Exception as error:  # noqa: BLE001 - every failure must still be answered
                line.close()
                code = _report(error, raw, endpoint, err)
                payload = ERROR_PREFIX + _one_line(error).encode("utf-8", "backslashreplace")
                if log is not None:
                    log.sched(payload)
                channel.send(payload)  # REP must answer; Batsim aborts on it instead of hanging
                channel.close(_FINAL_LINGER_MS)
                break
            channel.send(reply)
            if log is not None:
                log.sched(reply)
            if server.ended:
                channel.close(_FINAL_LINGER_MS)
                break
            if line.enabled and line.due():
                line.update(_progress_text(server))
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM through the CLI (interrupts.Terminated)
        line.close()
        print(f"batsched-ml serve: {what_stopped(exc)} while serving {endpoint}", file=err)
        code = exit_code(exc)
    finally:
        line.close()
        if started is not None:
            stats.wall_time = time.perf_counter() - started
        if not channel.socket.closed:
            channel.close(0)
        if log is not None:
            log.close()
    stats.exit_code = code
    if code == 0:
        print(f"batsched-ml serve: simulation ended at t={server.core.last_now} s: {stats.messages} messages "
              f"answered in {stats.wall_time:.2f} s", file=err)
    return code


def _progress_text(server: DecisionServer) -> str:
    core = server.core
    queued = sum(1 for job in core.jobs.values() if job.state == QUEUED)
    now = core.last_now if core.last_now is not None else 0.0
    return (f"serve: {server.stats.messages} messages, {server.stats.events} events, simulated time "
            f"{now:.0f} s, {queued} queued, {len(core.running)} running")


def _one_line(error: BaseException) -> str:
    return escape_controls(" ".join(str(error).split())) or type(error).__name__


def _report(error: BaseException, raw: bytes, endpoint: str, err) -> int:
    from ..errors import USER_ERRORS

    if isinstance(error, ProtocolViolation):
        print(f"batsched-ml serve: error: Batsim on {endpoint} broke the protocol: {_one_line(error)}", file=err)
        return 2
    if isinstance(error, ProtocolError):
        print(f"batsched-ml serve: error: malformed message from Batsim on {endpoint}: {_one_line(error)}",
              file=err)
        return 2
    if isinstance(error, (RecursionError, MemoryError)):  # a pathological message, not a bug to trace
        print(f"batsched-ml serve: error: cannot handle a message from Batsim on {endpoint} "
              f"({type(error).__name__}): {_describe(raw)}", file=err)
        return 2
    if isinstance(error, USER_ERRORS):
        print(f"batsched-ml serve: error: {_one_line(error)} (while answering {_describe(raw)})", file=err)
        return 2
    print(f"batsched-ml serve: internal error while answering {_describe(raw)}:", file=err)
    traceback.print_exception(error, file=err)
    return 1


def serve(args, scheduler, label: str = "") -> int:
    """Entry point of ``batsched-ml serve`` (``args.socket``, ``args.timeout``, ``args.log``);
    ``label`` names the configuration in the listening line (``RunConfig.label``)."""
    timeout = getattr(args, "timeout", None)
    if timeout is not None and timeout <= 0:
        timeout = None
    return run_server(scheduler, getattr(args, "socket", None) or DEFAULT_ENDPOINT, timeout=timeout,
                      log_path=getattr(args, "log", None), label=label or scheduler.name)
