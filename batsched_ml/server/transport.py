"""ZeroMQ plumbing shared by the decision server (REP, bind) and the Batsim peer (REQ, connect).

Kept small on purpose: sockets, a receive that gives up after a timeout or when
the other side disconnects, and the message log. Nothing here knows the
protocol beyond "one message, one reply".
"""

from __future__ import annotations

import struct
import time

import zmq

from ..config.validate import timeout as check_timeout

__all__ = ["DEFAULT_ENDPOINT", "ERROR_PREFIX", "Channel", "PeerGone", "TransportError", "MessageLog"]

DEFAULT_ENDPOINT = "tcp://127.0.0.1:28000"

# A reply that starts with these bytes is not JSON: the decision server sends it instead of a
# reply when it must stop (malformed message, scheduler error). Batsim cannot parse it and
# aborts (instead of waiting forever for a reply that will never come); our own peer
# recognises it and reports the server's error text.
ERROR_PREFIX = b"batsched-ml: error: "

_SLICE = 0.1  # seconds: how often a waiting receive looks at the connection and the clock


class TransportError(OSError):
    """The socket could not be opened, or the peer vanished / timed out.

    An ``OSError`` so that the CLI reports it as one line and exits 2.
    """


class PeerGone(TransportError):
    """Nothing arrived in time, or the peer closed its connection."""


def _monitor_event(frames: list) -> int:
    """The event number of a ZeroMQ monitor message (a 16-bit event and a 32-bit value in
    the first frame, the endpoint in the second). pyzmq's ``recv_monitor_message`` does the
    same but its module imports asyncio: 40 ms of ``serve``'s start-up."""
    if len(frames) != 2 or len(frames[0]) != 6:
        raise TransportError(f"malformed ZeroMQ monitor event: {frames!r}")
    return struct.unpack("=hi", frames[0])[0]


class Channel:
    """One ZeroMQ socket with a bounded, disconnect-aware ``recv``.

    ``timeout`` (seconds, None = wait forever) bounds every wait. A monitor
    socket also watches the connection: when the peer disconnects while we
    wait for its message (Batsim crashed, was killed), ``recv`` fails at once
    instead of waiting for the timeout — or forever.
    """

    def __init__(self, kind: int, endpoint: str, *, bind: bool, timeout: float | None = None,
                 peer_name: str = "peer", watch_disconnect: bool = True):
        self.endpoint = endpoint
        self.timeout = check_timeout(timeout)
        self.peer_name = peer_name
        self.context = zmq.Context()
        self.socket = self.context.socket(kind)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.monitor = None
        self.connected = 0  # peers currently connected (as the monitor saw them)
        self.ever_connected = False
        try:
            if watch_disconnect:
                self.monitor = self.socket.get_monitor_socket(
                    zmq.EVENT_ACCEPTED | zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
            if bind:
                self.socket.bind(endpoint)
            else:
                self.socket.connect(endpoint)
        except zmq.ZMQError as error:
            self.close()
            verb = "bind" if bind else "connect to"
            raise TransportError(f"cannot {verb} {endpoint}: {error}") from None
        # A receive blocks in ZeroMQ for at most one slice, then the connection, the clock and the
        # caller's ``tick`` are checked: one call per message when messages flow (no poll, no
        # exception), a disconnection noticed within a slice.
        self.socket.setsockopt(zmq.RCVTIMEO, int(_SLICE * 1000))

    def _drain_monitor(self) -> bool:
        """Read pending monitor events; True when a peer disconnected."""
        gone = False
        while True:
            try:
                kind = _monitor_event(self.monitor.recv_multipart(zmq.NOBLOCK))
            except zmq.Again:
                return gone
            if kind in (zmq.EVENT_ACCEPTED, zmq.EVENT_CONNECTED):
                self.connected += 1
                self.ever_connected = True
            elif kind == zmq.EVENT_DISCONNECTED:
                self.connected = max(0, self.connected - 1)
                gone = True

    def recv(self, waiting_for: str = "a message", *, fail_on_disconnect: bool = True, tick=None,
             tick_every: float = 1.0) -> bytes:
        """The next message; raises PeerGone on timeout or (if ``fail_on_disconnect``) disconnection.

        A server passes ``fail_on_disconnect=False`` before its first message: a port probe
        that connects and leaves is not Batsim going away. ``tick(waited_seconds)``, if given,
        is called about every ``tick_every`` seconds of waiting (hints, progress).
        """
        socket = self.socket
        try:
            return socket.recv(copy=True)  # blocks at most one slice (RCVTIMEO)
        except zmq.Again:
            pass
        started = time.monotonic() - _SLICE
        next_tick = None if tick is None else started + tick_every
        while True:
            now = time.monotonic()
            if self.monitor is not None and self._drain_monitor() and self.connected == 0 and fail_on_disconnect:
                # A message sent just before the disconnection is still delivered.
                if socket.poll(50, zmq.POLLIN):
                    return socket.recv(copy=True)
                raise PeerGone(f"{self.peer_name} disconnected from {self.endpoint} while "
                               f"batsched-ml was waiting for {waiting_for}")
            if next_tick is not None and now >= next_tick:
                tick(now - started)
                next_tick += tick_every
            if self.timeout is not None and now - started >= self.timeout:
                raise PeerGone(f"no message from {self.peer_name} on {self.endpoint} for "
                               f"{self.timeout:g} s while waiting for {waiting_for} "
                               f"(did {self.peer_name} stop?)")
            try:
                return socket.recv(copy=True)
            except zmq.Again:
                pass

    def send(self, payload: bytes) -> None:
        self.socket.send(payload, copy=len(payload) < 65536)

    def close(self, linger_ms: int = 0) -> None:
        """Close the sockets; ``linger_ms`` lets a last reply leave first."""
        if self.monitor is not None:
            try:
                self.socket.disable_monitor()
            except zmq.ZMQError:
                pass
            self.monitor.close(0)
            self.monitor = None
        if not self.socket.closed:
            self.socket.close(linger_ms)
        self.context.term()


class MessageLog:
    """Every message, one a line, in the golden transcripts' format (``BATSIM `` / ``SCHED  ``).
    A Batsim 5 message's closing NUL byte is left out of its line."""

    def __init__(self, path):
        self.file = open(path, "w", encoding="utf-8")

    def batsim(self, raw: bytes) -> None:
        self.line("BATSIM", _text(raw))

    def sched(self, raw: bytes) -> None:
        self.line("SCHED ", _text(raw))

    def line(self, tag: str, text: str) -> None:
        self.file.write(f"{tag} {text}\n")

    def close(self) -> None:
        self.file.close()


def _text(raw: bytes) -> str:
    if raw[-1:] == b"\0":
        raw = raw[:-1]
    return raw.decode("utf-8", "backslashreplace")
