"""Reading and checking each event of a protocol message, the way Batsim does.

One small parser per event type turns an event's ``data`` into a typed event of
:mod:`~batsched_ml.protocol.events` or raises :class:`~batsched_ml.protocol.members.Invalid` saying what is wrong;
:func:`~batsched_ml.protocol.decoding.decode` adds where (event index, type, an excerpt). The
rules are those of ``batsim-protocol.md`` (checked against Batsim 4.2.1's ``protocol.cpp`` and
``server.cpp``), where Batsim aborts the simulation. The reader of events is lenient about
members it does not need (Batsim may add some); the reader of decisions enforces Batsim's
member counts. The members themselves (ids, allocations) are read by
:mod:`~batsched_ml.protocol.members`, job and profile descriptions by
:mod:`~batsched_ml.protocol.descriptions`.
"""

from __future__ import annotations

from .errors import quote as _q
from .events import (
    EVENT_MACHINE_AVAILABLE,
    EVENT_MACHINE_UNAVAILABLE,
    JOB_STATES,
    OTHER_EVENT_TYPES,
    CallMeLater,
    ExecuteJob,
    JobCompleted,
    JobKilled,
    JobSubmitted,
    KillJob,
    Notify,
    OtherEvent,
    RegisterJob,
    RegisterProfile,
    RejectJob,
    RequestedCall,
    SetJobMetadata,
    SimulationBegins,
    SimulationEnds,
)
from .descriptions import check_job, check_profile_description
from .members import (MAX_CORE_ID, Invalid, alloc_member, dict_member, exact_members, is_number,
                      job_id_list, job_id_member, member, str_member)

__all__ = ["BEGINS_ORDER", "DECISIONS", "DIRECTION_TEXT", "EVENTS", "PARSERS"]

EVENTS = "events"  # Batsim -> scheduler
DECISIONS = "decisions"  # scheduler -> Batsim
DIRECTION_TEXT = {EVENTS: "Batsim->scheduler", DECISIONS: "scheduler->Batsim"}


# ------------------------------------------------------------ Batsim -> scheduler

# SIMULATION_BEGINS members, in Batsim's writing order; the ones without a field go to ``extra``.
BEGINS_ORDER = (
    "nb_resources",
    "nb_compute_resources",
    "nb_storage_resources",
    "allow_compute_sharing",
    "allow_storage_sharing",
    "config",
    "compute_resources",
    "storage_resources",
    "workloads",
    "profiles",
)
_BEGINS_FIELDS = ("nb_resources", "nb_compute_resources", "allow_compute_sharing", "config",
                  "compute_resources", "workloads", "profiles")
_BEGINS_TYPES = {"allow_compute_sharing": bool, "config": dict, "compute_resources": list,
                 "workloads": dict, "profiles": dict}


def _simulation_begins(ts: float, data: dict, now: float) -> SimulationBegins:
    counts = []
    for key in ("nb_resources", "nb_compute_resources"):
        value = member(data, key)
        if type(value) is not int or value <= 0:
            raise Invalid(f"data member {_q(key)} must be a positive integer, got {_q(value)}")
        if value > MAX_CORE_ID + 1:
            raise Invalid(f"data member {_q(key)} is {value}: batsched-ml handles machines of at most "
                           f"{MAX_CORE_ID + 1} resources")
        counts.append(value)
    if counts[1] > counts[0]:
        raise Invalid(f"nb_compute_resources ({counts[1]}) exceeds nb_resources ({counts[0]})")
    optional = {}
    for key, kind in _BEGINS_TYPES.items():
        if key in data:
            value = data[key]
            if type(value) is not kind:
                raise Invalid(f"data member {_q(key)} must be a {kind.__name__}, got {_q(value)}")
            optional[key] = value
    machines = optional.get("compute_resources")
    if machines is not None and len(machines) != counts[1]:
        raise Invalid(f"compute_resources lists {len(machines)} machines, nb_compute_resources says {counts[1]}")
    extra = {key: value for key, value in data.items() if key not in _BEGINS_FIELDS}
    return SimulationBegins(ts, counts[0], counts[1], extra=extra, **optional)


def _job_submitted(ts: float, data: dict, now: float) -> JobSubmitted:
    job_id = job_id_member(data)
    job = dict_member(data, "job")
    check_job(job, job_id)
    profile = data.get("profile")  # forwarded with --forward-profiles-on-submission
    if profile is not None:
        if type(profile) is not dict:
            raise Invalid(f"data member 'profile' must be an object, got {_q(profile)}")
        _check_profile(profile, job["profile"])
    return JobSubmitted(ts, job_id, job, profile)


def _check_profile(profile: dict, name: str) -> None:
    try:
        check_profile_description(profile)
    except Invalid as problem:
        raise Invalid(f"profile {_q(name)}: {problem}") from None


def _job_completed(ts: float, data: dict, now: float) -> JobCompleted:
    job_id = job_id_member(data)
    state = member(data, "job_state")
    if state not in JOB_STATES:
        raise Invalid(f"data member 'job_state' must be one of {', '.join(JOB_STATES)}, got {_q(state)}")
    return_code = member(data, "return_code")
    if type(return_code) is not int:
        raise Invalid(f"data member 'return_code' must be an integer, got {_q(return_code)}")
    mask = alloc_member(data, "alloc").mask  # JobCompleted keeps the text, and the cores for the core's check
    return JobCompleted(ts, job_id, state, return_code, data["alloc"], mask)


def _job_killed(ts: float, data: dict, now: float) -> JobKilled:
    job_ids = job_id_list(data)
    progress = data.get("job_progress", {})  # a job that finished before the kill has no entry
    if type(progress) is not dict:
        raise Invalid(f"data member 'job_progress' must be an object, got {_q(progress)}")
    for job_id, entry in progress.items():
        if job_id not in job_ids:
            raise Invalid(f"job_progress has an entry for {_q(job_id)}, which is not in job_ids {_q(job_ids)}")
        if type(entry) is not dict:
            raise Invalid(f"job_progress entry of {_q(job_id)} must be an object, got {_q(entry)}")
    return JobKilled(ts, job_ids, progress)


def _requested_call(ts: float, data: dict, now: float) -> RequestedCall:
    return RequestedCall(ts)


def _simulation_ends(ts: float, data: dict, now: float) -> SimulationEnds:
    return SimulationEnds(ts)


def _notify(ts: float, data: dict, now: float) -> Notify:
    kind = str_member(data, "type")  # unknown kinds are kept as they are
    resources = data.get("resources")
    if resources is not None:
        alloc_member(data, "resources")
    elif kind == EVENT_MACHINE_AVAILABLE or kind == EVENT_MACHINE_UNAVAILABLE:
        raise Invalid(f"NOTIFY {kind} needs a 'resources' member")
    return Notify(ts, kind, resources)


def _other_event(etype: str):
    def parse(ts: float, data: dict, now: float) -> OtherEvent:
        return OtherEvent(ts, etype, data)

    return parse


_EVENT_PARSERS = {
    "SIMULATION_BEGINS": _simulation_begins,
    "JOB_SUBMITTED": _job_submitted,
    "JOB_COMPLETED": _job_completed,
    "JOB_KILLED": _job_killed,
    "REQUESTED_CALL": _requested_call,
    "NOTIFY": _notify,
    "SIMULATION_ENDS": _simulation_ends,
    **{etype: _other_event(etype) for etype in OTHER_EVENT_TYPES},
}


# ------------------------------------------------------------ scheduler -> Batsim


def _execute_job(ts: float, data: dict, now: float) -> ExecuteJob:
    size = len(data)
    if not (size == 2 or (size == 3 and "mapping" in data)) or "job_id" not in data or "alloc" not in data:
        unexpected = [key for key in data if key not in ("job_id", "alloc", "mapping")]
        if unexpected:
            raise Invalid(
                f"data may only have 'job_id', 'alloc' and an optional 'mapping', but it also has "
                f"{', '.join(map(repr, unexpected))} (Batsim checks the member count of EXECUTE_JOB and aborts)"
            )  # otherwise a member is missing: reported just below
    job_id = job_id_member(data)
    alloc = alloc_member(data, "alloc")
    mapping = data.get("mapping")
    if mapping is not None:
        _check_mapping(mapping, len(alloc))
    return ExecuteJob(ts, job_id, alloc, mapping)


def _check_mapping(mapping, nb_allocated: int) -> None:
    """Batsim's rules: executors 0..n-1, each mapped to an index within the allocation."""
    if type(mapping) is not dict or not mapping:
        raise Invalid(f"data member 'mapping' must be a non-empty object, got {_q(mapping)}")
    executors = set()
    for key, value in mapping.items():
        try:
            executor, resource = int(key), int(value)
        except (TypeError, ValueError):
            raise Invalid(f"mapping entry {_q(key)}: {_q(value)} is not integer -> integer") from None
        if type(value) not in (int, str):
            raise Invalid(f"mapping entry {_q(key)}: {_q(value)} is not integer -> integer")
        if not 0 <= resource < nb_allocated:
            raise Invalid(
                f"mapping sends executor {executor} to resource #{resource} of the allocation, "
                f"which has only {nb_allocated} resources"
            )
        executors.add(executor)
    if executors != set(range(len(mapping))):
        raise Invalid(f"mapping executors must be 0..{len(mapping) - 1}, got {sorted(executors)}")


def _reject_job(ts: float, data: dict, now: float) -> RejectJob:
    exact_members(data, ("job_id",), "REJECT_JOB")
    return RejectJob(ts, job_id_member(data))


def _kill_job(ts: float, data: dict, now: float) -> KillJob:
    exact_members(data, ("job_ids",), "KILL_JOB")
    return KillJob(ts, job_id_list(data))


def _call_me_later(ts: float, data: dict, now: float) -> CallMeLater:
    exact_members(data, ("timestamp",), "CALL_ME_LATER")
    at = data["timestamp"]
    if not is_number(at):
        raise Invalid(f"data member 'timestamp' must be a number, got {_q(at)}")
    if not at > now:
        raise Invalid(
            f"asks to be called at {_q(at)}, which is not strictly later than now={_q(now)} "
            "(Batsim aborts on such a request)"
        )
    return CallMeLater(ts, float(at))


def _register_profile(ts: float, data: dict, now: float) -> RegisterProfile:
    workload = str_member(data, "workload_name")
    name = str_member(data, "profile_name")
    _check_profile(dict_member(data, "profile"), name)
    return RegisterProfile(ts, workload, name, data["profile"])


def _register_job(ts: float, data: dict, now: float) -> RegisterJob:
    job_id = job_id_member(data)
    job = dict_member(data, "job")
    check_job(job, job_id)
    return RegisterJob(ts, job_id, job)


def _set_job_metadata(ts: float, data: dict, now: float) -> SetJobMetadata:
    exact_members(data, ("job_id", "metadata"), "SET_JOB_METADATA")
    job_id = job_id_member(data)
    metadata = str_member(data, "metadata")
    if '"' in metadata:
        raise Invalid(f"data member 'metadata' must not contain double quotes, got {_q(metadata)}")
    return SetJobMetadata(ts, job_id, metadata)


_DECISION_PARSERS = {
    "EXECUTE_JOB": _execute_job,
    "REJECT_JOB": _reject_job,
    "KILL_JOB": _kill_job,
    "CALL_ME_LATER": _call_me_later,
    "REGISTER_PROFILE": _register_profile,
    "REGISTER_JOB": _register_job,
    "SET_JOB_METADATA": _set_job_metadata,
    "NOTIFY": _notify,
}

PARSERS = {EVENTS: _EVENT_PARSERS, DECISIONS: _DECISION_PARSERS}  # by direction
