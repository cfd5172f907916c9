"""The Batsim 5 handshake: Batsim's binary init frame, and the decision component's hello.

1. Batsim -> EDC: ``u32`` little-endian length + the init string given on Batsim's command line
   (``--edc-socket-str ENDPOINT INIT``), verbatim, not JSON-wrapped.
2. EDC -> Batsim: ``u32`` little-endian flags (``0x1`` flatbuffers binary, ``0x2`` JSON) + one
   message holding exactly one ``EDCHelloEvent``.

rc2 dereferences ``decision_component_commit`` and ``requested_simulation_features`` without a
check (it segfaults when either is missing): :class:`EDCHello` has no optional field, and
:func:`hello_frame` writes every field of it and of :class:`SimulationFeatures`, so a hello
missing one cannot be built. The features are requested from what the configuration needs
(:func:`features_for`), where Batsim 4.2.1 took command-line flags.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, fields

from ..encoding import compact_json
from ..errors import ProtocolError, excerpt, quote as _q
from ..members import Invalid
from .envelope import bind, event_json, frame, read_message
from .forms import member

__all__ = ["BATPROTOCOL_VERSION", "FLAG_BINARY", "FLAG_JSON", "EDCHello", "SimulationFeatures", "features_for",
           "hello_frame", "init_frame", "is_init_frame", "read_hello_frame", "read_init_frame"]

FLAG_BINARY, FLAG_JSON = 0x1, 0x2
BATPROTOCOL_VERSION = "0.1.0"  # what rc2's own test EDCs and pybatsim's v5 client announce
_U32 = struct.Struct("<I")


# ------------------------------------------------------------------ init frame (Batsim -> EDC)


def init_frame(init: bytes) -> bytes:
    """Batsim's first frame for an init string."""
    return _U32.pack(len(init)) + init


def is_init_frame(raw: bytes) -> bool:
    """True when ``raw`` is a length-prefixed init string (Batsim 5's first frame). A Batsim 4.2.1
    first message is JSON text: its first four bytes (``{"no``) read as a length of ~1.9e9."""
    return len(raw) >= 4 and _U32.unpack_from(raw)[0] == len(raw) - 4


def read_init_frame(raw: bytes) -> bytes:
    """The init string of Batsim 5's first frame; ProtocolError for anything else."""
    if len(raw) < 4:
        raise ProtocolError(f"Batsim 5 init frame: {len(raw)} bytes, shorter than its 4-byte length prefix: "
                            f"{excerpt(raw)}")
    size = _U32.unpack_from(raw)[0]
    if size != len(raw) - 4:
        raise ProtocolError(f"Batsim 5 init frame: its length prefix says {size} bytes of init string, the frame "
                            f"holds {len(raw) - 4}: {excerpt(raw)}")
    return bytes(raw[4:])


# ------------------------------------------------------------------ hello (EDC -> Batsim)


@dataclass(frozen=True, slots=True)
class SimulationFeatures:
    """batprotocol's ``EDCRequestedSimulationFeatures``: every member, none optional."""

    dynamic_registration: bool
    profile_reuse: bool
    acknowledge_dynamic_jobs: bool
    forward_profiles_on_job_submission: bool
    forward_profiles_on_jobs_killed: bool
    forward_profiles_on_simulation_begins: bool
    forward_unknown_external_events: bool

    def __post_init__(self):
        for spec in fields(self):
            if type(getattr(self, spec.name)) is not bool:
                raise TypeError(f"simulation feature {spec.name} must be a bool, got {getattr(self, spec.name)!r}")

    def as_dict(self) -> dict:
        return {spec.name: getattr(self, spec.name) for spec in fields(self)}


def features_for(requeues: bool) -> SimulationFeatures:
    """What a batsched-ml configuration asks of Batsim 5.

    * profiles in SimulationBeginsEvent, always: Batsim 4.2.1 always sent them, and the decision
      core reads a delay profile's run time (``Job.runtime``, for clairvoyant components) and
      copies a killed job's profile when it requeues it;
    * a scheduler that kills and requeues (``may_requeue``) registers jobs and profiles:
      ``dynamic_registration``, and ``acknowledge_dynamic_jobs`` so that Batsim confirms each
      registered job (``serve`` checks the confirmation and does not pass it on). No
      ``profile_reuse``: a requeued job gets a fresh copy of its profile, as under 4.2.1.
    """
    return SimulationFeatures(dynamic_registration=requeues, profile_reuse=False, acknowledge_dynamic_jobs=requeues,
                              forward_profiles_on_job_submission=False, forward_profiles_on_jobs_killed=False,
                              forward_profiles_on_simulation_begins=True, forward_unknown_external_events=False)


# batprotocol's EDCSchedulingConstraints as batsched-ml keeps them (optional; rc2 does not read it)
_CONSTRAINTS = {"compute_sharing": False, "storage_sharing": True,
                "job_allocation_validation_strategy": "MatchJobRequestExactly"}


@dataclass(frozen=True, slots=True)
class EDCHello:
    """batprotocol's ``EDCHelloEvent``: every field rc2 reads is required here."""

    decision_component_name: str
    decision_component_version: str
    decision_component_commit: str  # "" when unknown; never absent (rc2 reads it unchecked)
    requested_simulation_features: SimulationFeatures
    batprotocol_version: str = BATPROTOCOL_VERSION

    def __post_init__(self):
        for name in ("decision_component_name", "decision_component_version", "decision_component_commit",
                     "batprotocol_version"):
            value = getattr(self, name)
            if type(value) is not str or "," in value or '"' in value:
                raise ValueError(f"EDCHelloEvent {name} must be a string without ',' or '\"', got {value!r}")
        if type(self.requested_simulation_features) is not SimulationFeatures:
            raise TypeError("EDCHelloEvent requested_simulation_features must be SimulationFeatures")

    def body(self) -> dict:
        """The ``EDCHelloEvent`` object, every field written."""
        return {"batprotocol_version": self.batprotocol_version,
                "decision_component_name": self.decision_component_name,
                "decision_component_version": self.decision_component_version,
                "decision_component_commit": self.decision_component_commit,
                "requested_simulation_features": self.requested_simulation_features.as_dict(),
                "scheduling_constraints": _CONSTRAINTS}


def hello_frame(hello: EDCHello) -> bytes:
    """The EDC's answer to the init frame: JSON flag + a message with the one hello, at time 0."""
    event = event_json(0.0, "EDCHelloEvent", compact_json(hello.body()))
    return _U32.pack(FLAG_JSON) + frame(0.0, [event])


_REQUIRED = ("batprotocol_version", "decision_component_name", "decision_component_version")
_UNCHECKED = ("decision_component_commit", "requested_simulation_features")  # rc2 segfaults without them


def _read_hello(ts: float, body: dict, now: float, state) -> EDCHello:
    for key in _REQUIRED:
        member(body, key, str, "EDCHelloEvent member")
    for key in _UNCHECKED:
        if key not in body:
            raise Invalid(f"missing EDCHelloEvent member {_q(key)}: Batsim 5.0.0-rc2 reads it without a check "
                          "and crashes (segmentation fault) without it")
    member(body, "decision_component_commit", str, "EDCHelloEvent member")
    wanted = member(body, "requested_simulation_features", dict, "EDCHelloEvent member")
    known = {spec.name for spec in fields(SimulationFeatures)}
    unknown = sorted(set(wanted) - known)
    if unknown:
        raise Invalid(f"unknown requested simulation feature(s) {', '.join(map(repr, unknown))}; known: "
                      f"{', '.join(sorted(known))}")
    values = {}
    for name in known:
        value = wanted.get(name, False)  # batprotocol's default
        if type(value) is not bool:
            raise Invalid(f"requested simulation feature {_q(name)} must be a boolean, got {_q(value)}")
        values[name] = value
    try:
        return EDCHello(body["decision_component_name"], body["decision_component_version"],
                        body["decision_component_commit"], SimulationFeatures(**values), body["batprotocol_version"])
    except ValueError as error:
        raise Invalid(str(error)) from None


def read_hello_frame(raw: bytes) -> EDCHello:
    """The hello of a decision component (what Batsim 5 reads), checked; ProtocolError otherwise."""
    if len(raw) < 4:
        raise ProtocolError(f"EDC hello: {len(raw)} bytes, shorter than its 4-byte flags: {excerpt(raw)}")
    flags = _U32.unpack_from(raw)[0]
    if not flags & FLAG_JSON:
        what = "flatbuffers binary (0x1)" if flags & FLAG_BINARY else f"no known format ({flags:#x})"
        raise ProtocolError(f"EDC hello asks for {what}: batsched-ml speaks batprotocol's JSON format (flag 0x2)")
    message = read_message(bytes(raw[4:]), bind({"EDCHelloEvent": _read_hello}, None), sender="EDC->Batsim",
                           direction="decisions", nul=False)
    if len(message.events) != 1:
        raise ProtocolError(f"EDC hello: the message must hold exactly one EDCHelloEvent, it holds "
                            f"{len(message.events)}: {excerpt(raw[4:])}")
    return message.events[0]
