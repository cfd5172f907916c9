"""``batsched-ml serve``: the decision server a real Batsim (4.2.1 or 5) connects to.

Binds a ZeroMQ REP socket; Batsim connects its REQ socket and sends one JSON
message at a time. Each message goes decode -> ``DecisionCore.handle`` ->
encode and is answered exactly once, with Batsim's ``now`` echoed and the
decisions (all timestamped ``now``) in order.

Which Batsim: ``--batsim 4`` (4.2.1's JSON protocol, ``protocol.codec``), ``--batsim 5``
(batprotocol: a binary init frame answered by our hello, then JSON messages,
``protocol.v5``), or by default whichever Batsim's first frame is (Batsim 5's is a
length-prefixed init string, 4.2.1's a JSON message). The decision core is the same.

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

from .. import __version__
from ..core.decision_core import DecisionCore
from ..core.job import QUEUED
from ..interrupts import exit_code, what_stopped
from ..protocol.codec import BATSIM_4, ProtocolError, ProtocolViolation, escape_controls, excerpt
from ..protocol.events import Message
from ..protocol.v5.handshake import EDCHello, features_for, is_init_frame
from ..protocol.v5.sessions import EDCSession
from .console import HINT_AFTER, ProgressLine, batsim_hint, connect_form, edc_socket_form
from .transport import DEFAULT_ENDPOINT, ERROR_PREFIX, Channel, MessageLog, TransportError

__all__ = ["BATSIM_LINES", "DecisionServer", "ServerStats", "edc_hello", "serve", "run_server"]

BATSIM_LINES = {"4": "Batsim 4.2.1", "5": "Batsim 5"}  # --batsim values and what the lines say

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


def edc_hello(scheduler) -> EDCHello:
    """Our Batsim 5 hello: the features this scheduler needs (``features_for``)."""
    return EDCHello("batsched-ml", __version__, "", features_for(bool(getattr(scheduler, "may_requeue", False))))


class DecisionServer:
    """The transport-independent half of the server: bytes in, bytes out.

    ``answer(raw)`` decodes one Batsim message, lets the core decide and
    encodes the reply; it raises ProtocolError / SchedulingError (with the
    message context added) for the caller to report. ``codec`` turns bytes into
    typed events and decisions into bytes: Batsim 4.2.1's (the default) or one
    Batsim 5 connection's ``EDCSession`` (see ``use``).
    """

    def __init__(self, scheduler, *, stats: ServerStats | None = None, codec=BATSIM_4):
        self.core = DecisionCore(scheduler)
        self.stats = stats or ServerStats()
        self.ended = False
        self.use(codec)

    def use(self, codec) -> None:
        """Speak ``codec`` (anything with ``decode(raw) -> Message`` and ``encode(Message) -> bytes``)."""
        self.codec = codec
        self._decode, self._encode = codec.decode, codec.encode

    def answer(self, raw: bytes) -> bytes:
        stats = self.stats
        clock = time.perf_counter
        t0 = clock()
        message = self._decode(raw)  # ProtocolError names the event and quotes the message
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
        reply = self._encode(Message(now, decisions))
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
               hint_after: float = HINT_AFTER, progress: bool | None = None, batsim: str | None = None) -> int:
    """Serve decisions on ``endpoint`` until SIMULATION_ENDS; return the exit code.

    ``batsim``: ``"4"`` (Batsim 4.2.1), ``"5"`` (Batsim 5), or None to speak whichever Batsim's
    first frame is. ``ready`` (a ``threading.Event`` or anything with ``set()``) is set once the
    socket is bound — tests and benchmarks start the peer then. ``err`` is where
    errors and status lines are written (stderr by default): where it listens
    (with the scheduler's ``label``) and for which Batsim, a hint after ``hint_after`` s without
    Batsim, a progress line when ``progress`` (default: ``err`` is a terminal).
    """
    if batsim is not None and batsim not in BATSIM_LINES:
        raise ValueError(f"batsim must be one of {', '.join(BATSIM_LINES)} or None, not {batsim!r}")
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
    for text in _listening(endpoint, label, batsim):
        print(text, file=err, flush=True)
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
                print(batsim_hint(endpoint, waited, batsim), file=err, flush=True)
        elif line.enabled:
            line.update(_progress_text(server), force=True)

    def first(raw: bytes) -> bytes:
        """Batsim's first frame: settle which Batsim speaks (and shake hands with Batsim 5)."""
        if _speaks_batsim_5(raw, batsim):
            session = EDCSession(edc_hello(scheduler))
            reply = session.handshake(raw)
            server.use(session)
            if log is not None:
                log.line("BATSIM", f"INIT {session.init_data!r}")
                log.line("SCHED ", f"INIT-REPLY flags={int.from_bytes(reply[:4], 'little'):#x} "
                         f"{reply[4:].rstrip(bytes(1)).decode()}")
            if batsim is None:
                print(f"batsched-ml serve: Batsim 5 connected (init string {session.init_data!r}); speaking "
                      "batprotocol JSON", file=err, flush=True)
            return reply
        if log is not None:
            log.batsim(raw)
        reply = server.answer(raw)
        if log is not None:
            log.sched(reply)
        return reply

    try:
        while True:
            opening = raw is None
            waiting_for = _FIRST_MESSAGE.get(batsim) if opening else "the next message"
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
            if log is not None and not opening:
                log.batsim(raw)
            try:
                reply = first(raw) if opening else server.answer(raw)
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
            if log is not None and not opening:
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


_FIRST_MESSAGE = {None: "Batsim's first message", "4": "SIMULATION_BEGINS", "5": "Batsim 5's init frame"}


def _listening(endpoint: str, label: str | None, batsim: str | None) -> list:
    """The start-up line(s): where ``serve`` listens, for which Batsim, how Batsim connects."""
    scheduler_text = f" (scheduler {label})" if label else ""
    target = connect_form(endpoint)
    if batsim == "5":
        return [f"batsched-ml serve: listening on {endpoint}{scheduler_text} for Batsim 5 (batprotocol JSON); "
                f"Batsim connects with {edc_socket_form(target)}"]
    if batsim == "4":
        return [f"batsched-ml serve: listening on {endpoint}{scheduler_text} for Batsim 4.2.1; Batsim connects "
                f"with -s {target}"]
    return [f"batsched-ml serve: listening on {endpoint}{scheduler_text}; Batsim connects with -s {target}",
            f"batsched-ml serve: speaks Batsim 4.2.1 and Batsim 5, whichever Batsim's first message is "
            f"(Batsim 5 connects with {edc_socket_form(target)})"]


def _speaks_batsim_5(raw: bytes, batsim: str | None) -> bool:
    """Whether Batsim's first frame opens a Batsim 5 exchange; a frame of the other line than the
    one ``--batsim`` named is refused with a line saying so."""
    if batsim is None:
        return is_init_frame(raw)
    if batsim == "5":
        if not is_init_frame(raw) and raw[:1] == b"{":
            raise ProtocolError(f"Batsim's first message is JSON (a Batsim 4.2.1 message), but serve speaks "
                                f"Batsim 5 (--batsim 5), which opens with a binary init frame: {excerpt(raw)}")
        return True
    if is_init_frame(raw):
        raise ProtocolError(f"Batsim's first message is a Batsim 5 init frame (u32 length + init string), but serve "
                            f"speaks Batsim 4.2.1 (--batsim 4): {excerpt(raw)}")
    return False


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
    """Entry point of ``batsched-ml serve`` (``args.socket``, ``args.timeout``, ``args.log``, ``args.batsim``);
    ``label`` names the configuration in the listening line (``RunConfig.label``)."""
    timeout = getattr(args, "timeout", None)
    if timeout is not None and timeout <= 0:
        timeout = None
    return run_server(scheduler, getattr(args, "socket", None) or DEFAULT_ENDPOINT, timeout=timeout,
                      log_path=getattr(args, "log", None), label=label or scheduler.name,
                      batsim=getattr(args, "batsim", None))
