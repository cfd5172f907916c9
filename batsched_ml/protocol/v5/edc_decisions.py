"""The decisions a Batsim 5 decision component sends, both ways: written from typed decisions
(``serve``), read into typed decisions the way rc2 reads them (our Batsim peer).

Writers take ``(typed decision, session)`` (``sessions.EDCSession``) and return the event's type
and JSON text; the session remembers what the replies will need: the allocation of each job it
starts (Batsim 5's JobCompletedEvent does not repeat it), the jobs it registers (until Batsim
acknowledges them), the calls it asks for (by id: Batsim 5 names the call it answers).

* ExecuteJob -> ExecuteJobEvent: ``allocation.host_allocation`` + an executor placement (spread
  over the hosts, or a 4.2.1 ``mapping`` as a custom mapping);
* CallMeLater (a date in seconds) -> CallMeLaterEvent: an id, a OneShot ``time`` (whole seconds,
  else milliseconds rounded up) and its ``time_unit``;
* RegisterProfile / RegisterJob -> RegisterProfileEvent / RegisterJobEvent (full
  ``workload!name`` ids, ``DelayProfile``); NOTIFY registration_finished -> FinishRegistrationEvent;
* RejectJob, KillJob -> RejectJobEvent, KillJobsEvent.

Readers take ``(timestamp, event, now, session)`` (``sessions.BatsimSession``) and check what rc2
checks before it applies a decision (where it aborts).
"""

from __future__ import annotations

import json

from .. import events as ev
from ..coreset import CoreSet
from ..encoding import compact_json
from ..errors import quote as _q
from ..members import Invalid
from .forms import (MILLISECOND, SECOND, allocation_text, at_of_call, call_time, count_member, executor_placement,
                    job_from_v5, job_id_member, job_ids_member, job_to_v5, member, placement_mapping, profile_to_v5,
                    read_host_allocation, read_profile_and_id)

__all__ = ["DECISION_READERS", "DECISION_WRITERS", "write_decision"]

_json_string = json.encoder.encode_basestring


# ------------------------------------------------------------------ writing (serve)


def _write_execute(decision: ev.ExecuteJob, session) -> tuple[str, str]:
    text = allocation_text(decision.alloc)
    alloc = decision.alloc
    mask = alloc.mask if isinstance(alloc, CoreSet) else read_host_allocation(text).mask
    session.allocations[decision.job_id] = (text, mask)
    if decision.mapping is None:  # what nearly every decision is: written without building a dict
        return "ExecuteJobEvent", (f'{{"job_id":{_json_string(decision.job_id)},"allocation":{{"host_allocation":'
                                   f'"{text}","executor_placement_type":"PredefinedExecutorPlacementStrategyWrapper",'
                                   f'"executor_placement":{{"strategy":"SpreadOverHostsFirst"}}}}}}')
    kind, placement = executor_placement(decision.mapping, mask.bit_count())
    return "ExecuteJobEvent", compact_json({"job_id": decision.job_id, "allocation": {
        "host_allocation": text, "executor_placement_type": kind, "executor_placement": placement}})


def _write_call(decision: ev.CallMeLater, session) -> tuple[str, str]:
    time, unit = call_time(decision.at)
    call_id = session.new_call_id()
    session.calls[call_id] = decision.at
    return "CallMeLaterEvent", (f'{{"call_me_later_id":"{call_id}","when_type":"OneShot",'
                                f'"when":{{"time":{time},"time_unit":"{unit}"}}}}')


def _write_profile(decision: ev.RegisterProfile, session) -> tuple[str, str]:
    kind, body = profile_to_v5(decision.profile)
    item = {"id": f"{decision.workload_name}!{decision.profile_name}", "profile_type": kind, "profile": body}
    return "RegisterProfileEvent", compact_json({"profile": item})


def _write_job(decision: ev.RegisterJob, session) -> tuple[str, str]:
    workload = decision.job_id.partition("!")[0]
    if session.features.acknowledge_dynamic_jobs:
        session.unacknowledged[decision.job_id] = decision.job
    return "RegisterJobEvent", compact_json({"job_id": decision.job_id, "job": job_to_v5(decision.job, workload)})


def _write_notify(decision: ev.Notify, session) -> tuple[str, str]:
    if decision.kind != ev.REGISTRATION_FINISHED:
        raise Invalid(f"NOTIFY {decision.kind} has no Batsim 5 form (only registration_finished: "
                      "FinishRegistrationEvent)")
    return "FinishRegistrationEvent", "{}"


def _no_form(decision, session):
    raise Invalid(f"{decision.type} has no Batsim 5 form (batprotocol has no event for it)")


DECISION_WRITERS = {
    ev.ExecuteJob: _write_execute,
    ev.RejectJob: lambda d, session: ("RejectJobEvent", f'{{"job_id":{_json_string(d.job_id)}}}'),
    ev.KillJob: lambda d, session: ("KillJobsEvent", compact_json({"job_ids": list(d.job_ids)})),
    ev.CallMeLater: _write_call,
    ev.RegisterProfile: _write_profile,
    ev.RegisterJob: _write_job,
    ev.Notify: _write_notify,
    ev.SetJobMetadata: _no_form,
}


def write_decision(decision, session) -> tuple[str, str]:
    writer = DECISION_WRITERS.get(type(decision))
    if writer is None:
        raise Invalid(f"cannot write {_q(decision)}: not a decision")
    return writer(decision, session)


# ------------------------------------------------------------------ reading (our Batsim peer)


def _read_execute(ts: float, body: dict, now: float, session) -> ev.ExecuteJob:
    job_id = job_id_member(body)
    allocation = member(body, "allocation", dict)
    alloc = read_host_allocation(member(allocation, "host_allocation", str, "allocation member"))
    mapping = placement_mapping(allocation, len(alloc))
    for key in ("profile_allocation_override", "storage_placement"):
        if body.get(key):
            raise Invalid(f"member {_q(key)} is not simulated by batsched-ml (delay profiles only)")
    return ev.ExecuteJob(ts, job_id, alloc, mapping)


def _read_call(ts: float, body: dict, now: float, session) -> ev.CallMeLater:
    call_id = member(body, "call_me_later_id", str)
    kind = member(body, "when_type", str)
    when = member(body, "when", dict)
    if kind == "Periodic":
        raise Invalid("periodic calls are not simulated by batsched-ml (OneShot only)")
    if kind != "OneShot":
        raise Invalid(f"'when_type' must be OneShot or Periodic, got {_q(kind)} (Batsim 5 aborts)")
    time = count_member(when, "time", positive=False)
    unit = when.get("time_unit", SECOND)
    if unit not in (SECOND, MILLISECOND):
        raise Invalid(f"'time_unit' must be {SECOND} or {MILLISECOND}, got {_q(unit)}")
    at = at_of_call(time, unit)
    session.call_asked(at, call_id)
    return ev.CallMeLater(ts, at)


def _read_profile(ts: float, body: dict, now: float, session) -> ev.RegisterProfile:
    workload, name, profile = read_profile_and_id(member(body, "profile", dict))
    session.profiles.setdefault(workload, {})[name] = profile
    return ev.RegisterProfile(ts, workload, name, profile)


def _read_job(ts: float, body: dict, now: float, session) -> ev.RegisterJob:
    job_id = job_id_member(body)
    return ev.RegisterJob(ts, job_id, job_from_v5(job_id, member(body, "job", dict), ts))


def _unsupported(etype: str):
    def read(ts, body, now, session):
        raise Invalid(f"{etype} is not simulated by batsched-ml's embedded simulator")

    return read


DECISION_READERS = {
    "ExecuteJobEvent": _read_execute,
    "RejectJobEvent": lambda ts, body, now, session: ev.RejectJob(ts, job_id_member(body)),
    "KillJobsEvent": lambda ts, body, now, session: ev.KillJob(ts, job_ids_member(body)),
    "CallMeLaterEvent": _read_call,
    "RegisterProfileEvent": _read_profile,
    "RegisterJobEvent": _read_job,
    "FinishRegistrationEvent": lambda ts, body, now, session: ev.Notify(ts, ev.REGISTRATION_FINISHED),
    "EDCHelloEvent": lambda ts, body, now, session: _raise("EDCHelloEvent after the handshake: Batsim 5 aborts "
                                                           "('said hello twice')"),
    **{etype: _unsupported(etype) for etype in ("ForceSimulationStopEvent", "StopCallMeLaterEvent",
                                                "CreateProbeEvent", "StopProbeEvent", "TriggerProbeEvent",
                                                "ResetProbeEvent", "ChangeHostsPStateEvent", "TurnOnOffHostsEvent")},
}


def _raise(text: str):
    raise Invalid(text)
