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
"""

from __future__ import annotations

import sys
from dataclasses import replace

import zmq

from ..protocol.codec import DECISIONS, ProtocolError, decode, encode
from ..protocol.events import Message, SimulationBegins
from ..simulator.engine import SimulationError, SimulationResult, Simulator
from ..runner import load_inputs
from .console import HINT_AFTER, scheduler_hint
from .transport import ERROR_PREFIX, Channel

__all__ = ["batsim_like_begins", "load_inputs", "remote_exchange", "run_connected", "simulate_connected"]


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


def remote_exchange(channel: Channel, log=None, *, err=None, hint_after: float = HINT_AFTER):
    """The ``exchange(now, events) -> (reply_now, decisions)`` of a scheduler behind ``channel``.

    While the first reply is awaited, a hint naming ``serve`` goes to ``err`` after ``hint_after`` s.
    """
    endpoint = channel.endpoint
    first = [True]

    def hint(waited):
        if first[0] and waited >= hint_after and err is not None:
            first[0] = False
            print(scheduler_hint(endpoint, waited), file=err, flush=True)

    def exchange(now, events):
        if events and type(events[0]) is SimulationBegins:
            events = [batsim_like_begins(events[0]), *events[1:]]
        payload = encode(Message(now, events))
        if log is not None:
            log.batsim(payload)
        channel.send(payload)
        if first[0]:
            raw = channel.recv(f"the scheduler's reply to the message at now={now!r}", tick=hint,
                               tick_every=min(1.0, hint_after))
            first[0] = False
        else:
            raw = channel.recv(f"the scheduler's reply to the message at now={now!r}")
        if log is not None:
            log.sched(raw)
        if raw.startswith(ERROR_PREFIX):
            text = raw[len(ERROR_PREFIX):].decode("utf-8", "backslashreplace")
            raise SimulationError(f"the scheduler at {endpoint} stopped with an error: {text}")
        try:
            reply = decode(raw, direction=DECISIONS)
        except ProtocolError as error:
            raise ProtocolError(f"reply of the scheduler at {endpoint}: {error}", index=error.index,
                                event_type=error.event_type) from None
        return reply.now, reply.events

    return exchange


def run_connected(platform, workloads, endpoint: str, prefix=None, *, timeout: float | None = None,
                  dynamic_jobs: bool = False, profile_reuse: bool = False, log_path=None,
                  progress=None, err=None, hint_after: float = HINT_AFTER, on_start=None) -> SimulationResult:
    """Simulate ``workloads`` on ``platform`` with the scheduler listening at ``endpoint``.

    ``err`` (optional) gets a hint when no scheduler answers within ``hint_after`` s; ``on_start()``
    runs once the inputs are read and the outputs open (``Simulator.run``).
    """
    nb_hosts, names, loaded = load_inputs(platform, workloads)
    sim = Simulator(nb_hosts, loaded, host_names=names, dynamic_jobs=dynamic_jobs,
                    profile_reuse=profile_reuse, progress=progress)
    if prefix is not None:
        from ..validation import output_prefix

        output_prefix(prefix)
    from .transport import MessageLog

    log = MessageLog(log_path) if log_path else None
    channel = Channel(zmq.REQ, endpoint, bind=False, timeout=timeout, peer_name="the scheduler")
    try:
        exchange = remote_exchange(channel, log, err=err, hint_after=hint_after)
        return sim.run(exchange, prefix=None if prefix is None else str(prefix), on_start=on_start)
    finally:
        channel.close(0)
        if log is not None:
            log.close()


def simulate_connected(args, progress=None, on_start=None) -> SimulationResult:
    """Entry point of ``simulate --connect`` (``args.platform``, ``workload``, ``export``, ``connect``,
    ``timeout``; optional ``dynamic_jobs`` (default off, as in Batsim), ``profile_reuse``, ``log``,
    ``quiet``). ``progress``, ``on_start``: as for ``Simulator.run`` (the CLI passes its progress
    reporter, and writes PREFIX_run.json at the start)."""
    timeout = getattr(args, "timeout", None)
    if timeout is not None and timeout <= 0:
        timeout = None
    dynamic_jobs = bool(getattr(args, "dynamic_jobs", False))
    if not getattr(args, "quiet", False):
        print(f"batsched-ml simulate: connecting to the scheduler at {args.connect} as Batsim would (dynamic "
              f"jobs {'on' if dynamic_jobs else 'off'})", file=sys.stderr, flush=True)
    return run_connected(args.platform, args.workload, args.connect, args.export, timeout=timeout,
                         dynamic_jobs=dynamic_jobs, profile_reuse=getattr(args, "profile_reuse", False),
                         log_path=getattr(args, "log", None), progress=progress, err=sys.stderr, on_start=on_start)
