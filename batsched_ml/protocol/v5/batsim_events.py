"""The events Batsim 5 sends, both ways: read into typed events (``serve``), written from typed
events the way rc2 writes them (our Batsim peer, ``simulate --connect --batsim 5``).

Readers take ``(timestamp, event, now, session)`` and return a typed event of
:mod:`batsched_ml.protocol.events` (None when the event is consumed by the session itself: the
acknowledgement of a job it registered). The session (``sessions.EDCSession``) gives what a
Batsim 5 event leaves out and 4.2.1's said: the allocation of a completed job (the one ``serve``
sent), the features it asked for (4.2.1's ``config``). It also makes the order checks name
Batsim 5's events: SimulationBeginsEvent first and once, nothing after SimulationEndsEvent, no
call that was never asked for, no time going back.

Writers take ``(typed event, session)`` (``sessions.BatsimSession``) and return the event's
object; the event names and members are those of rc2 (``golden-v5/transcripts``).
"""

from __future__ import annotations

from .. import events as ev
from ..errors import quote as _q
from ..members import MAX_CORE_ID, Invalid, OutOfOrder
from .forms import (KILLED_RETURN_CODE, count_member, full_profile_id, job_from_v5, job_id_member, job_ids_member,
                    job_to_v5, member, profile_to_v5, read_profile_and_id, signed_return_code, uint32_return_code)

__all__ = ["EVENT_READERS", "EVENT_WRITERS", "STATIC_JOBS_DONE"]

STATIC_JOBS_DONE = "AllStaticJobsHaveBeenSubmittedEvent"
_STATIC_EVENTS_DONE = "AllStaticExternalEventsHaveBeenInjectedEvent"
_FINAL_STATES = frozenset(ev.JOB_STATES)


# ------------------------------------------------------------------ reading (serve)


def _order(session, etype: str) -> None:
    """SimulationBeginsEvent first, nothing after SimulationEndsEvent."""
    if session.ended:
        raise OutOfOrder(f"{etype} after SimulationEndsEvent (Batsim 5 sends nothing once the simulation ended)")
    if not session.begun:
        raise OutOfOrder(f"the first event must be SimulationBeginsEvent, got {etype}")


def _simulation_begins(ts: float, body: dict, now: float, session) -> ev.SimulationBegins:
    if session.begun:
        raise OutOfOrder("a second SimulationBeginsEvent (Batsim 5 sends it once, first): the simulation already "
                         "began")
    if session.ended:
        raise OutOfOrder("SimulationBeginsEvent after SimulationEndsEvent")
    nb_hosts = count_member(body, "host_number")
    nb_compute = count_member(body, "computation_host_number")
    for key, value in (("host_number", nb_hosts), ("computation_host_number", nb_compute)):
        if value > MAX_CORE_ID + 1:
            raise Invalid(f"member {_q(key)} is {value}: batsched-ml handles machines of at most "
                          f"{MAX_CORE_ID + 1} hosts")
    if nb_compute > nb_hosts:
        raise Invalid(f"computation_host_number ({nb_compute}) exceeds host_number ({nb_hosts})")
    hosts = member(body, "computation_hosts", list)
    if len(hosts) != nb_compute:
        raise Invalid(f"computation_hosts lists {len(hosts)} hosts, computation_host_number says {nb_compute}")
    resources = [_host(host, index) for index, host in enumerate(hosts)]
    workloads = {}
    for item in body.get("workloads") or ():
        if type(item) is not dict:
            raise Invalid(f"a workload must be an object {{name, filename}}, got {_q(item)}")
        workloads[member(item, "name", str, "workload member")] = member(item, "filename", str, "workload member")
    profiles = {}
    for item in body.get("profiles") or ():
        workload, name, profile = read_profile_and_id(item)
        profiles.setdefault(workload, {})[name] = profile
    features = session.features
    config = {"dynamic-jobs-enabled": features.dynamic_registration,
              "dynamic-jobs-acknowledged": features.acknowledge_dynamic_jobs,
              "profile-reuse-enabled": features.profile_reuse,
              "profiles-forwarded-on-submission": features.forward_profiles_on_job_submission}
    extra = {key: value for key, value in body.items()
             if key not in ("computation_hosts", "workloads", "profiles")}
    session.begun = True
    return ev.SimulationBegins(ts, nb_hosts, nb_compute, False, config, resources, workloads, profiles, extra)


def _host(host, index: int) -> dict:
    """A batprotocol ``Host`` in 4.2.1's ``compute_resources`` form (plus its core count and speeds)."""
    if type(host) is not dict:
        raise Invalid(f"a host must be an object, got {_q(host)}")
    host_id = member(host, "id", int, "host member")
    if host_id != index:
        raise Invalid(f"computation host #{index} has id {host_id}: batsched-ml schedules computation hosts "
                      "numbered 0..n-1 in order (a platform whose storage hosts come first is not supported)")
    resource = {"id": host_id, "name": member(host, "name", str, "host member"),
                "state": str(host.get("state", "IDLE")).lower(),
                "properties": _properties(host.get("properties")),
                "zone_properties": _properties(host.get("zone_properties"))}
    for key in ("core_count", "pstate", "pstate_count", "computation_speed"):
        if key in host:
            resource[key] = host[key]
    return resource


def _properties(items) -> dict:
    out = {}
    for item in items or ():
        if type(item) is not dict or type(item.get("key")) is not str:
            raise Invalid(f"a host property must be an object {{key, value}}, got {_q(item)}")
        out[item["key"]] = item.get("value", "")
    return out


def _job_submitted(ts: float, body: dict, now: float, session):
    _order(session, "JobSubmittedEvent")
    job_id = job_id_member(body)
    job = job_from_v5(job_id, body.get("job"), member(body, "submission_time", float))
    registered = session.unacknowledged.pop(job_id, None)
    if registered is not None:  # Batsim 5 confirms a job serve registered (acknowledge_dynamic_jobs)
        if registered["res"] != job["res"] or registered.get("walltime", -1) != job["walltime"]:
            raise OutOfOrder(f"acknowledges {job_id} with {job['res']} resources and walltime {job['walltime']}, "
                             f"but it was registered with {registered['res']} and {registered.get('walltime', -1)}")
        return None
    profile = body.get("profile")
    if profile is not None:
        profile = read_profile_and_id(profile)[2]
    return ev.JobSubmitted(ts, job_id, job, profile)


def _job_completed(ts: float, body: dict, now: float, session) -> ev.JobCompleted:
    _order(session, "JobCompletedEvent")
    job_id = job_id_member(body)
    state = member(body, "state", str)
    if state not in _FINAL_STATES:
        rule = ("Batsim 5 sends no JobCompletedEvent for a rejected job" if state == "REJECTED"
                else f"it must be one of {', '.join(ev.JOB_STATES)}")
        raise Invalid(f"member 'state' is {_q(state)}: {rule}")
    code = body.get("return_code", 0)
    if type(code) is not int or not 0 <= code <= KILLED_RETURN_CODE:
        raise Invalid(f"member 'return_code' must be a uint32, got {_q(code)}")
    alloc = session.allocations.pop(job_id, None)
    if alloc is None:
        raise OutOfOrder(f"JobCompletedEvent for {job_id}, which batsched-ml never started (or which "
                         "completed already)")
    return ev.JobCompleted(ts, job_id, state, signed_return_code(code), alloc[0], alloc[1])


def _jobs_killed(ts: float, body: dict, now: float, session) -> ev.JobKilled:
    _order(session, "JobsKilledEvent")
    job_ids = job_ids_member(body)
    progress = {}
    for item in member(body, "progresses", list):
        if type(item) is not dict:
            raise Invalid(f"a progress must be an object {{job_id, wrapper}}, got {_q(item)}")
        job_id = job_id_member(item)
        if job_id not in job_ids:
            raise Invalid(f"progresses has an entry for {_q(job_id)}, which is not in job_ids {_q(job_ids)}")
        progress[job_id] = _kill_progress(member(item, "wrapper", dict, "progress member"))
    return ev.JobKilled(ts, job_ids, progress)


def _kill_progress(wrapper: dict) -> dict:
    """A ``KillProgressWrapper`` -> 4.2.1's ``job_progress`` entry (``profile_name``, ``progress``)."""
    kind = member(wrapper, "kill_progress_type", str, "kill progress member")
    body = member(wrapper, "kill_progress", dict, "kill progress member")
    entry = {"profile_name": member(body, "profile_id", str, "kill progress member").partition("!")[2]}
    if kind == "KillProgressAtomicProfile":
        entry["progress"] = member(body, "progress", float, "kill progress member")
    elif kind == "KillProgressSequentialProfile":
        entry["current_repetition"] = body.get("current_repetition", 0)
        entry["current_task_index"] = body.get("current_task_index", 0)
        entry["current_task"] = _kill_progress(member(body, "current_task_progress", dict, "kill progress member"))
    elif kind == "KillProgressForkJoinProfile":
        entry["tasks"] = [_kill_progress(task) for task in member(body, "tasks_progress", list)]
    else:
        raise Invalid(f"unknown kill_progress_type {_q(kind)}")
    return entry


def _requested_call(ts: float, body: dict, now: float, session) -> ev.RequestedCall:
    _order(session, "RequestedCallEvent")
    call_id = member(body, "call_me_later_id", str)
    if type(body.get("last_periodic_call", False)) is not bool:
        raise Invalid(f"member 'last_periodic_call' must be a boolean, got {_q(body['last_periodic_call'])}")
    if session.calls.pop(call_id, None) is None:
        raise OutOfOrder(f"calls back {_q(call_id)}, which batsched-ml never asked for (or was called back already)")
    return ev.RequestedCall(ts)


def _notify(kind: str, etype: str):
    def read(ts: float, body: dict, now: float, session) -> ev.Notify:
        _order(session, etype)
        return ev.Notify(ts, kind)

    return read


def _simulation_ends(ts: float, body: dict, now: float, session) -> ev.SimulationEnds:
    _order(session, "SimulationEndsEvent")
    session.ended = True
    return ev.SimulationEnds(ts)


def _other(etype: str):
    """Events batsched-ml never asks for (external events, power states, probes): kept as an
    OtherEvent, as 4.2.1's energy events are, and answered harmlessly."""

    def read(ts: float, body: dict, now: float, session) -> ev.OtherEvent:
        _order(session, etype)
        return ev.OtherEvent(ts, etype, body)

    return read


EVENT_READERS = {
    "SimulationBeginsEvent": _simulation_begins,
    "JobSubmittedEvent": _job_submitted,
    "JobCompletedEvent": _job_completed,
    "JobsKilledEvent": _jobs_killed,
    "RequestedCallEvent": _requested_call,
    STATIC_JOBS_DONE: _notify(ev.NO_MORE_STATIC_JOB_TO_SUBMIT, STATIC_JOBS_DONE),
    _STATIC_EVENTS_DONE: _notify(ev.NO_MORE_EXTERNAL_EVENT_TO_OCCUR, _STATIC_EVENTS_DONE),
    "SimulationEndsEvent": _simulation_ends,
    **{etype: _other(etype) for etype in ("ExternalEventOccurredEvent", "HostsPStateChangedEvent",
                                          "HostsTurnedOnOffEvent", "ProbeDataEmittedEvent")},
}


# ------------------------------------------------------------------ writing (our Batsim peer)


def _write_begins(event: ev.SimulationBegins, session) -> tuple[str, dict]:
    hosts = []
    for resource in event.compute_resources:
        properties = {k: v for k, v in resource.get("properties", {}).items() if (k, v) != ("role", "")}
        hosts.append({"id": resource["id"], "name": resource["name"], "pstate": resource.get("pstate", 0),
                      "pstate_count": resource.get("pstate_count", 1),
                      "state": str(resource.get("state", "idle")).upper(),
                      "properties": [{"key": k, "value": v} for k, v in properties.items()],
                      "zone_properties": [{"key": k, "value": v}
                                          for k, v in resource.get("zone_properties", {}).items()],
                      "core_count": resource.get("core_count", 1),
                      "computation_speed": resource.get("computation_speed", [])})
    profiles = []
    if session.features.forward_profiles_on_simulation_begins:
        for workload, named in event.profiles.items():
            profiles.extend(_profile_and_id(f"{workload}!{name}", profile) for name, profile in named.items())
    body = {"host_number": event.nb_resources, "computation_host_number": event.nb_compute_resources,
            "computation_hosts": hosts, "storage_host_number": event.nb_resources - event.nb_compute_resources,
            "storage_hosts": [], "batsim_arguments": session.arguments,
            "batsim_execution_context_json": session.execution_context,
            "workloads": [{"name": name, "filename": str(path)} for name, path in event.workloads.items()],
            "profiles": profiles, "external_event_lists": [], "batsim_version": session.version}
    return "SimulationBeginsEvent", body


def _profile_and_id(profile_id: str, profile: dict) -> dict:
    kind, body = profile_to_v5(profile)
    return {"id": profile_id, "profile_type": kind, "profile": body}


def _write_submitted(event: ev.JobSubmitted, session) -> tuple[str, dict]:
    workload = event.job_id.partition("!")[0]
    job = event.job
    body = {"job_id": event.job_id, "job": job_to_v5(job, workload),
            "submission_time": job.get("subtime", event.timestamp)}
    if session.features.forward_profiles_on_job_submission:
        profile_id = full_profile_id(workload, job["profile"])
        body["profile"] = _profile_and_id(profile_id, session.profile(profile_id))
    return "JobSubmittedEvent", body


def _write_completed(event: ev.JobCompleted, session) -> tuple[str, dict]:
    return "JobCompletedEvent", {"job_id": event.job_id, "state": event.job_state,
                                 "return_code": uint32_return_code(event.return_code)}


def _write_killed(event: ev.JobKilled, session) -> tuple[str, dict]:
    progresses = []
    for job_id in event.job_ids:
        entry = event.job_progress.get(job_id)
        if entry is None:  # it completed before the kill: Batsim 5 lists no progress
            continue
        profile_id = full_profile_id(job_id.partition("!")[0], entry["profile_name"])
        progresses.append({"job_id": job_id, "wrapper": {
            "kill_progress_type": "KillProgressAtomicProfile",
            "kill_progress": {"profile_id": profile_id, "progress": entry.get("progress", 0.0)}}})
    body = {"job_ids": list(event.job_ids), "progresses": progresses}
    if session.features.forward_profiles_on_jobs_killed:
        body["profiles"] = [_profile_and_id(p["wrapper"]["kill_progress"]["profile_id"],
                                            session.profile(p["wrapper"]["kill_progress"]["profile_id"]))
                            for p in progresses]
    return "JobsKilledEvent", body


def _write_call(event: ev.RequestedCall, session) -> tuple[str, dict]:
    return "RequestedCallEvent", {"call_me_later_id": session.call_due(event.timestamp), "last_periodic_call": False}


_NOTIFY_EVENTS = {ev.NO_MORE_STATIC_JOB_TO_SUBMIT: STATIC_JOBS_DONE,
                  ev.NO_MORE_EXTERNAL_EVENT_TO_OCCUR: _STATIC_EVENTS_DONE}


def _write_notify(event: ev.Notify, session) -> tuple[str, dict]:
    etype = _NOTIFY_EVENTS.get(event.kind)
    if etype is None:
        raise Invalid(f"NOTIFY {event.kind} has no Batsim 5 event")
    return etype, {}


EVENT_WRITERS = {
    ev.SimulationBegins: _write_begins,
    ev.JobSubmitted: _write_submitted,
    ev.JobCompleted: _write_completed,
    ev.JobKilled: _write_killed,
    ev.RequestedCall: _write_call,
    ev.Notify: _write_notify,
    ev.SimulationEnds: lambda event, session: ("SimulationEndsEvent", {}),
}
