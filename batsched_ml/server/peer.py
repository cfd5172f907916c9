"""``batsched-ml simulate --connect``: the embedded simulator as a Batsim peer.

The simulator drives an external scheduler over ZeroMQ exactly as Batsim 4.2.1
does: a REQ socket connects to the scheduler's REP endpoint, each simulator
message is encoded and sent, the reply is decoded as decisions (checked like
Batsim checks them) and applied. Any Batsim-4 scheduler can therefore run on
the embedded simulator: ``batsched-ml serve``, batsched, pybatsim.

Dynamic jobs are off by default, as in Batsim: a command line that works with
Batsim works here. ``--enable-dynamic-jobs`` (Batsim's flag, ``dynamic_jobs=True``)
turns them on for a requeueing scheduler, which must then send ``NOTIFY
registration_finished`` (``batsched-ml serve`` does).

With ``--batsim 5`` the peer is Batsim 5.0.0-rc2: the embedded simulator's Batsim 5 line
(``simulator.lines.BATSIM_5``: rc2's timing) speaking its batprotocol (``protocol.v5``). It sends
the init frame (``{"format_json": true}``, what rc2's process scheduler reads), reads the
scheduler's hello, and sets the simulation up with the features it asks for (dynamic
registration, profile reuse, acknowledgements, forwarded profiles); the events go out as rc2
writes them (every date and real to the 12 decimals rc2 prints, which is what a JSON scheduler
reads and echoes) and the replies are read as rc2 reads them (a reply dated a sliver before its
message is taken; a decision dated after rc2's clock is waited for).
"""

from __future__ import annotations

import sys
from dataclasses import replace

import zmq

from ..protocol.codec import DECISIONS, ProtocolError, decode, encode
from ..protocol.events import Message, SimulationBegins
from ..protocol.v5.sessions import BatsimSession
from ..simulator.engine import SimulationError, SimulationResult, Simulator
from ..simulator.lines import line_of
from ..runner import load_inputs
from .console import HINT_AFTER, scheduler_hint
from .transport import ERROR_PREFIX, Channel

__all__ = ["BATSIM5_INIT", "batsim_like_begins", "load_inputs", "remote_exchange", "run_connected",
           "simulate_connected"]

BATSIM5_INIT = b'{"format_json": true}'  # the init string rc2's process scheduler needs to answer in JSON


# What a real Batsim 4.2.1 puts in SIMULATION_BEGINS beyond what the embedded simulator fills in
# (see the golden transcripts); external schedulers read some of it (pybatsim needs the storage
# members).
_BATSIM_CONFIG = {
    "redis-enabled": False, "redis-hostname": "127.0.0.1", "redis-port": 6379, "redis-prefix": "default",
    "profiles-forwarded-on-submission": False, "dynamic-jobs-enabled": False,
    "dynamic-jobs-acknowledged": False, "profile-reuse-enabled": False, "sched-config": "",
    "forward-unknown-events": False,
}
_BATSIM_BEGINS_EXTRA = {"nb_storage_resources": 0, "allow_storage_sharing": True, "storage_resources": []}


def batsim_like_begins(event: SimulationBegins) -> SimulationBegins:
    """SIMULATION_BEGINS with every member a real Batsim 4.2.1 sends (missing ones at their defaults)."""
    config = {**_BATSIM_CONFIG, **event.config}
    resources = [resource if "zone_properties" in resource else {**resource, "zone_properties": {}}
                 for resource in event.compute_resources]
    extra = {**_BATSIM_BEGINS_EXTRA, **event.extra}
    return replace(event, config=config, compute_resources=resources, extra=extra)


class _Batsim4Peer:
    """Batsim 4.2.1's side of the exchange: stateless, SIMULATION_BEGINS completed as Batsim writes it."""

    @staticmethod
    def encode(message: Message) -> bytes:
        events = message.events
        if events and type(events[0]) is SimulationBegins:
            message = Message(message.now, [batsim_like_begins(events[0]), *events[1:]])
        return encode(message)

    @staticmethod
    def decode(raw: bytes) -> Message:
        return decode(raw, direction=DECISIONS)


def _first_reply(channel: Channel, what: str, err, hint_after: float) -> bytes:
    """The scheduler's first reply, with a hint naming ``serve`` after ``hint_after`` s of silence."""
    hinted = []

    def hint(waited):
        if not hinted and waited >= hint_after and err is not None:
            hinted.append(True)
            print(scheduler_hint(channel.endpoint, waited), file=err, flush=True)

    return channel.recv(what, tick=hint, tick_every=min(1.0, hint_after))


def _refused(raw: bytes, endpoint: str) -> None:
    if raw.startswith(ERROR_PREFIX):
        text = raw[len(ERROR_PREFIX):].decode("utf-8", "backslashreplace")
        raise SimulationError(f"the scheduler at {endpoint} stopped with an error: {text}")


def remote_exchange(channel: Channel, log=None, *, err=None, hint_after: float = HINT_AFTER, codec=None):
    """The ``exchange(now, events) -> (reply_now, decisions)`` of a scheduler behind ``channel``.

    ``codec`` writes the events and reads the replies: Batsim 4.2.1's by default, or a Batsim 5
    ``BatsimSession`` (handshake done). While the first reply is awaited, a hint naming ``serve``
    goes to ``err`` after ``hint_after`` s.
    """
    endpoint = channel.endpoint
    codec = codec or _Batsim4Peer
    write, read = codec.encode, codec.decode
    first = [codec is _Batsim4Peer]  # after a Batsim 5 handshake the scheduler has answered already

    def exchange(now, events):
        payload = write(Message(now, events))
        if log is not None:
            log.batsim(payload)
        channel.send(payload)
        what = f"the scheduler's reply to the message at now={now!r}"
        if first[0]:
            raw = _first_reply(channel, what, err, hint_after)
            first[0] = False
        else:
            raw = channel.recv(what)
        if log is not None:
            log.sched(raw)
        _refused(raw, endpoint)
        try:
            reply = read(raw)
        except ProtocolError as error:
            raise ProtocolError(f"reply of the scheduler at {endpoint}: {error}", index=error.index,
                                event_type=error.event_type) from None
        return reply.now, reply.events

    return exchange


def _batsim5_handshake(channel: Channel, session: BatsimSession, log, err, hint_after: float):
    """Init frame out, the scheduler's hello in (checked as rc2 reads it); returns the hello."""
    frame = session.init_frame()
    channel.send(frame)
    raw = _first_reply(channel, "the scheduler's hello (Batsim 5 handshake)", err, hint_after)
    _refused(raw, channel.endpoint)
    if log is not None:
        log.line("BATSIM", f"INIT {session.init!r}")
        log.line("SCHED ", f"INIT-REPLY {raw[:4].hex()} {raw[4:].rstrip(bytes(1)).decode('utf-8', 'backslashreplace')}")
    try:
        return session.read_hello(raw)
    except ProtocolError as error:
        raise ProtocolError(f"hello of the scheduler at {channel.endpoint}: {error}") from None


def run_connected(platform, workloads, endpoint: str, prefix=None, *, timeout: float | None = None,
                  dynamic_jobs: bool = False, profile_reuse: bool = False, log_path=None,
                  progress=None, err=None, hint_after: float = HINT_AFTER, batsim=4,
                  init: bytes = BATSIM5_INIT, on_start=None) -> SimulationResult:
    """Simulate ``workloads`` on ``platform`` with the scheduler listening at ``endpoint``.

    ``batsim``: the Batsim line to be (``simulator.lines.line_of``: 4, 5, ``"4"``, ``"5"``). 4:
    Batsim 4.2.1's protocol and timing (``dynamic_jobs``/``profile_reuse`` are Batsim's flags).
    5: Batsim 5.0.0-rc2's batprotocol and timing; ``init`` is the init string, and the
    scheduler's hello sets the features (dynamic registration, profile reuse, acknowledgements).
    ``err`` (optional) gets a hint when no scheduler answers within ``hint_after`` s;
    ``on_start()`` runs once the inputs are read and the outputs open (``Simulator.run``).
    """
    line = line_of(batsim)
    nb_hosts, names, loaded = load_inputs(platform, workloads)

    def simulator(dynamic_jobs: bool, profile_reuse: bool, acknowledged: bool = False) -> Simulator:
        return Simulator(nb_hosts, loaded, host_names=names, dynamic_jobs=dynamic_jobs, profile_reuse=profile_reuse,
                         acknowledge_dynamic_jobs=acknowledged, progress=progress, line=line)

    sim = simulator(dynamic_jobs, profile_reuse) if line.major == 4 else None
    if prefix is not None:
        from ..config.validate import output_prefix

        output_prefix(prefix, separator=line.file_separator)
    from .transport import MessageLog

    log = MessageLog(log_path) if log_path else None
    channel = Channel(zmq.REQ, endpoint, bind=False, timeout=timeout, peer_name="the scheduler")
    try:
        codec = None
        if line.major == 5:  # the scheduler's hello says which features the simulation has
            context = {"socket_endpoint": endpoint, "export_prefix": "" if prefix is None else str(prefix)}
            codec = BatsimSession(init, arguments=["batsched-ml", "simulate", "--connect", endpoint, "--batsim", "5"],
                                  execution_context=context)
            features = _batsim5_handshake(channel, codec, log, err, hint_after).requested_simulation_features
            sim = simulator(features.dynamic_registration, features.profile_reuse, features.acknowledge_dynamic_jobs)
        exchange = remote_exchange(channel, log, err=err, hint_after=hint_after, codec=codec)
        return sim.run(exchange, prefix=None if prefix is None else str(prefix), on_start=on_start)
    finally:
        channel.close(0)
        if log is not None:
            log.close()


def simulate_connected(args, progress=None, on_start=None) -> SimulationResult:
    """Entry point of ``simulate --connect`` (``args.platform``, ``workload``, ``export``, ``connect``,
    ``timeout``; optional ``dynamic_jobs`` (default off, as in Batsim), ``profile_reuse``, ``log``,
    ``quiet``, ``batsim`` (4 by default, or 5)). ``progress``, ``on_start``: as for
    ``Simulator.run`` (the CLI passes its progress reporter, and writes PREFIX_run.json at the start)."""
    timeout = getattr(args, "timeout", None)
    if timeout is not None and timeout <= 0:
        timeout = None
    dynamic_jobs = bool(getattr(args, "dynamic_jobs", False))
    line = line_of(getattr(args, "batsim", None) or 4)
    if not getattr(args, "quiet", False):
        how = ("Batsim 5.0.0-rc2 would (its timing; batprotocol JSON, the scheduler's hello asks for the features)"
               if line.major == 5 else f"Batsim would (dynamic jobs {'on' if dynamic_jobs else 'off'})")
        print(f"batsched-ml simulate: connecting to the scheduler at {args.connect} as {how}", file=sys.stderr,
              flush=True)
    return run_connected(args.platform, args.workload, args.connect, args.export, timeout=timeout,
                         dynamic_jobs=dynamic_jobs, profile_reuse=getattr(args, "profile_reuse", False),
                         log_path=getattr(args, "log", None), progress=progress, err=sys.stderr, batsim=line,
                         on_start=on_start)
