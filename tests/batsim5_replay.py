"""Replaying the real Batsim 5.0.0-rc2's recorded frames against ``serve --batsim 5``.

``golden-v5/transcripts/NAME/`` holds every ZeroMQ frame of an exchange between rc2 and a
decision component (``NNNN-b2e.bin`` Batsim -> EDC, ``NNNN-e2b.bin`` back). :func:`replay` sends
Batsim's frames, in order, to ``serve`` over a real socket and compares each reply with the
recorded one, decision for decision and ``now`` for ``now`` (:func:`decisions`).

Where our hello asks for something the recorded decision component did not, Batsim's frames are
adapted the way rc2 writes them then, and nothing else is touched:

* ``forward_profiles_on_simulation_begins``: the SimulationBeginsEvent carries the workload's
  profiles (``ProfileAndId``: ``{"id": "w0!p0", "profile_type": "DelayProfile", "profile": {...}}``);
* names the decision component chooses are its own (call ids, ids of requeued jobs): once a reply
  pairs a recorded name with ours, Batsim's later frames carry ours;
* a recorded component that reused a profile (``profile_reuse``) registered no profile where ours
  registers a copy (``<profile>#<attempt>``, as under 4.2.1): our RegisterProfileEvent is checked to
  copy the profile the recorded RegisterJobEvent reused, and a job's profile is compared by the
  profile it copies.

The two test schedulers below make the recorded kill-and-requeue components' choices on the
public API: our classifiers kill on learned predictions and cannot be steered to these kills.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import zmq

from batsched_ml.api import QUEUED, RUNNING, QueueScheduler
from batsched_ml.protocol import events as ev
from batsched_ml.protocol.members import parse_alloc
from batsched_ml.protocol.v5.handshake import read_hello_frame
from batsched_ml.server.serve import ServerStats, run_server

DATA = Path(__file__).resolve().parent / "data" / "golden-v5"
TRANSCRIPTS = DATA / "transcripts"
WORKLOADS = DATA / "workloads"
TIMEOUT = 20.0


def frames(name: str) -> list[tuple[bytes, bytes]]:
    """The recorded (Batsim frame, reply) pairs of a transcript, the handshake first."""
    folder = TRANSCRIPTS / name
    sent = sorted(folder.glob("*-b2e.bin"))
    answered = sorted(folder.glob("*-e2b.bin"))
    assert len(sent) == len(answered) and sent, f"{folder}: unpaired frames"
    return [(a.read_bytes(), b.read_bytes()) for a, b in zip(sent, answered)]


def profiles_as_rc2_writes(workload: Path, name: str = "w0") -> list:
    """A workload's profiles as rc2's SimulationBeginsEvent lists them when they are forwarded
    (``ProfileAndId``, its numbers float64)."""
    profiles = json.loads(workload.read_text())["profiles"]
    return [{"id": f"{name}!{key}", "profile_type": profile["type"], "profile": _floats(profile)}
            for key, profile in profiles.items()]


def _floats(profile: dict) -> dict:
    return {k: float(v) if type(v) in (int, float) else v for k, v in profile.items() if k != "type"}


def _message(raw: bytes) -> dict:
    return json.loads(raw.rstrip(b"\0"))


def with_profiles(raw: bytes, profiles: list) -> bytes:
    """Batsim's frame with its SimulationBeginsEvent carrying ``profiles`` (NUL kept)."""
    message = _message(raw)
    for event in message["events"]:
        if event["event_type"] == "SimulationBeginsEvent":
            event["event"]["profiles"] = profiles
    return json.dumps(message).encode() + b"\0"


@dataclass
class Names:
    """Recorded name -> ours, learned from the replies (call ids, requeued jobs' ids)."""

    ours: dict = field(default_factory=dict)

    def learn(self, recorded: str, ours: str) -> None:
        known = self.ours.setdefault(recorded, ours)
        assert known == ours, f"recorded {recorded!r} was paired with {known!r}, now with {ours!r}"

    def __call__(self, name: str) -> str:
        return self.ours.get(name, name)

    def rewrite(self, raw: bytes) -> bytes:
        for recorded, ours in self.ours.items():
            if recorded != ours:
                raw = raw.replace(json.dumps(recorded).encode(), json.dumps(ours).encode())
        return raw


_COPY = re.compile(r"#\d+$")


def _profile_base(profile_id: str) -> str:
    """``w0!d3477#1`` -> ``w0!d3477``: the profile a requeued job's copy was made from."""
    return _COPY.sub("", profile_id)


def decisions(raw: bytes, names: Names | None = None, *, recorded: bool = False, reused: set | None = None) -> tuple:
    """A reply as comparable facts: ``(now, [(event_type, timestamp, what it decides), ...])``.

    On the recorded side (``recorded=True``) names are mapped to ours with ``names``; a
    RegisterJobEvent's profile is named by the profile it copies; on our side the
    RegisterProfileEvents that copy a profile the recorded side reused (``reused``) are left out
    (the caller checks them)."""
    message = _message(raw)
    facts = []
    rename = names if (names is not None and recorded) else (lambda name: name)
    for event in message["events"]:
        etype, ts, body = event["event_type"], float(event["timestamp"]), event["event"]
        if etype == "ExecuteJobEvent":
            allocation = body["allocation"]
            what = (rename(body["job_id"]), parse_alloc(allocation["host_allocation"]).mask,
                    allocation["executor_placement_type"], json.dumps(allocation["executor_placement"],
                                                                      sort_keys=True))
        elif etype == "CallMeLaterEvent":
            when = body["when"]
            what = (rename(body["call_me_later_id"]), body["when_type"], when["time"], when.get("time_unit", "Second"))
        elif etype == "KillJobsEvent":
            what = tuple(rename(job_id) for job_id in body["job_ids"])
        elif etype == "RejectJobEvent":
            what = (rename(body["job_id"]),)
        elif etype == "RegisterJobEvent":
            job = body["job"]
            what = (rename(body["job_id"]), job["resource_request"], float(job.get("walltime", -1)),
                    _profile_base(job["profile_id"]))
        elif etype == "RegisterProfileEvent":
            profile = body["profile"]
            if reused is not None and _profile_base(profile["id"]) in reused:
                continue
            what = (profile["id"], profile["profile_type"], json.dumps(_floats(profile["profile"]), sort_keys=True))
        else:
            what = (json.dumps(body, sort_keys=True),)
        facts.append((etype, ts, what))
    return float(message["now"]), facts


def _pair_names(recorded: bytes, ours: bytes, names: Names) -> None:
    """Learn the names ours gives where the recorded component gave its own (same positions)."""
    keys = {"CallMeLaterEvent": "call_me_later_id", "RegisterJobEvent": "job_id"}
    theirs = [e for e in _message(recorded)["events"] if e["event_type"] in keys]
    mine = [e for e in _message(ours)["events"] if e["event_type"] in keys]
    for a, b in zip(theirs, mine):
        if a["event_type"] == b["event_type"]:
            key = keys[a["event_type"]]
            names.learn(a["event"][key], b["event"][key])


def _reused_profiles(recorded: bytes) -> set:
    return {e["event"]["job"]["profile_id"] for e in _message(recorded)["events"]
            if e["event_type"] == "RegisterJobEvent" and "#" not in e["event"]["job"]["profile_id"]}


@dataclass
class Replay:
    """What a replay saw: the hello, every reply compared (``mismatches`` empty when all agree)."""

    hello: object = None
    compared: int = 0
    mismatches: list = field(default_factory=list)
    copies: list = field(default_factory=list)  # our RegisterProfileEvents left out of the comparison
    names: Names = field(default_factory=Names)
    serve_code: int | None = None
    serve_errors: str = ""
    stats: ServerStats | None = None


def replay(name: str, scheduler, endpoint: str, *, workload: Path | None = None, batsim: str | None = "5",
           log_path=None) -> Replay:
    """Play transcript ``name`` against ``run_server(scheduler, batsim=...)`` bound at ``endpoint``
    in a thread; ``workload``: the run's workload, whose profiles rc2 forwards when asked."""
    import io

    stats = ServerStats()
    err = io.StringIO()
    ready = threading.Event()
    codes = []
    thread = threading.Thread(target=lambda: codes.append(run_server(
        scheduler, endpoint, timeout=TIMEOUT, err=err, stats=stats, ready=ready, batsim=batsim,
        log_path=log_path)), daemon=True)
    thread.start()
    assert ready.wait(TIMEOUT)
    try:
        result = play(name, endpoint, workload=workload)
    finally:
        thread.join(TIMEOUT)
    result.stats = stats
    result.serve_code = codes[0] if codes else None
    result.serve_errors = err.getvalue()
    return result


def play(name: str, endpoint: str, *, workload: Path | None = None) -> Replay:
    """Be rc2 for transcript ``name`` towards the decision component at ``endpoint``: send the
    recorded frames (adapted as the module says) and compare every reply with the recorded one."""
    result = Replay()
    context = zmq.Context()
    socket = context.socket(zmq.REQ)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.RCVTIMEO, int(TIMEOUT * 1000))
    socket.connect(endpoint)
    try:
        (init, _), *exchange = frames(name)
        socket.send(init)
        result.hello = read_hello_frame(socket.recv())
        forward = result.hello.requested_simulation_features.forward_profiles_on_simulation_begins
        profiles = profiles_as_rc2_writes(workload) if forward and workload is not None else None
        for index, (sent, recorded) in enumerate(exchange, start=1):
            sent = result.names.rewrite(sent)
            if profiles is not None and b'"SimulationBeginsEvent"' in sent:
                sent = with_profiles(sent, profiles)
            socket.send(sent)
            ours = socket.recv()
            if ours.startswith(b"batsched-ml: error"):
                result.mismatches.append((index, "serve refused the frame", ours.decode(errors="replace")))
                break
            _pair_names(recorded, ours, result.names)
            reused = _reused_profiles(recorded)
            expected = decisions(recorded, result.names, recorded=True)
            got = decisions(ours, reused=reused)
            result.copies += [e["event"]["profile"] for e in _message(ours)["events"]
                              if e["event_type"] == "RegisterProfileEvent"
                              and _profile_base(e["event"]["profile"]["id"]) in reused]
            result.compared += 1
            if got != expected:
                result.mismatches.append((index, expected, got))
    finally:
        socket.close(0)
        context.term()
    return result


# ------------------------------------------------------------------ the recorded components' choices


class FirstFit(QueueScheduler):
    """Strict FCFS on the public API: start the head of the queue while it fits, lowest hosts first."""

    name = "first-fit-test"
    needs_walltime = False

    def schedule(self, ctx) -> None:
        head = self.queue.first(ctx.now)
        while head is not None and head.res <= ctx.machine.nb_free:
            self.start_job(ctx, head)
            head = self.queue.first(ctx.now)
        self.end_pass(ctx)


class Requeueing(FirstFit):
    """FirstFit that requeues every job it has killed (``ctx.requeue``: ``<id>#1`` on a copy of its
    profile) and knows when every static job was submitted."""

    may_requeue = True

    def __init__(self, **options):
        super().__init__(**options)
        self.static_over = False

    def on_job_killed(self, job, progress, ctx) -> None:
        if progress is not None:
            ctx.requeue(job)

    def on_notify(self, kind, ctx) -> None:
        super().on_notify(kind, ctx)
        if kind == ev.NO_MORE_STATIC_JOB_TO_SUBMIT:
            self.static_over = True


class KillAtTime(Requeueing):
    """``py-json-kill-requeue-v4scenario`` (4.2.1's kill-requeue scenario): the first job started
    is killed at ``at`` seconds (a call asked for that date) and requeued; registration ends once
    every static job was submitted and every job has ended."""

    name = "kill-at-time-test"

    def __init__(self, at: float = 5.0, **options):
        super().__init__(**options)
        self.at = at
        self.victim = None
        self.jobs = {}

    def on_simulation_begins(self, nb_cores, ctx) -> None:
        super().on_simulation_begins(nb_cores, ctx)
        self.jobs = ctx.jobs  # the core's live mapping, read only

    def schedule(self, ctx) -> None:
        super().schedule(ctx)
        if self.victim is None:
            started = [d for d in ctx.decisions if type(d) is ev.ExecuteJob]
            if started:
                self.victim = ctx.jobs[started[0].job_id]
                ctx.call_me_later(self.at)

    def on_requested_call(self, ctx) -> None:
        super().on_requested_call(ctx)
        if self.victim is not None and self.victim.state == RUNNING:
            ctx.kill(self.victim)

    def registration_finished(self) -> bool:
        return self.static_over and all(job.state not in (QUEUED, RUNNING) for job in self.jobs.values())


class PreemptOnce(Requeueing):
    """``py-json-kill-requeue``: the first job that asks for the whole machine while others run has
    them killed and requeued (once); registration ends when every static job was submitted."""

    name = "preempt-once-test"

    def __init__(self, **options):
        super().__init__(**options)
        self.preempted = False
        self.nb_hosts = 0

    def on_simulation_begins(self, nb_cores, ctx) -> None:
        super().on_simulation_begins(nb_cores, ctx)
        self.nb_hosts = nb_cores

    def on_job_submitted(self, job, ctx) -> None:
        super().on_job_submitted(job, ctx)
        if not self.preempted and job.res == self.nb_hosts and ctx.running:
            self.preempted = True
            for running in list(ctx.running.values()):
                ctx.kill(running)

    def registration_finished(self) -> bool:
        return self.static_over
