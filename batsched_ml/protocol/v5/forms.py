"""The members Batsim 5 events and decisions share, in both directions: job and profile ids, job
descriptions, profiles, host allocations, executor placements, call times and return codes.

The typed events keep the Batsim 4.2.1 forms the decision core and the simulator read (a job
``{"id", "subtime", "walltime", "res", "profile", ...extra}``, a profile ``{"type": "delay",
"delay": 10}``); these functions convert between them and batprotocol's (``resource_request``,
``profile_id`` ``workload!name``, ``DelayProfile``...). Readers raise
:class:`~batsched_ml.protocol.members.Invalid` naming the member and the rule.
"""

from __future__ import annotations

import json
import math

from ..coreset import CoreSet, format_mask
from ..descriptions import PROFILE_TYPES_V5, check_profile_description
from ..errors import quote as _q
from ..members import Invalid, is_number, parse_alloc

__all__ = ["KILLED_RETURN_CODE", "MILLISECOND", "SECOND", "allocation_text", "at_of_call", "call_time",
           "count_member", "executor_placement", "full_profile_id", "job_from_v5", "job_id", "job_id_member",
           "job_ids_member", "job_to_v5", "member", "merge_extra_data", "placement_mapping", "profile_from_v5",
           "profile_to_v5", "read_host_allocation", "read_profile_and_id", "signed_return_code", "typed_job",
           "uint32_return_code"]

SECOND, MILLISECOND = "Second", "Millisecond"  # batprotocol's TimeUnit
KILLED_RETURN_CODE = 4294967295  # what Batsim 5 writes for a killed job: -1 as a uint32

# Profile types batsched-ml reads, 4.2.1 name -> batprotocol union name; other types keep their
# batprotocol name (and members) in the typed form and are written back unchanged.
_V5_TYPE = {"delay": "DelayProfile"}
_TYPED_TYPE = {v5: typed for typed, v5 in _V5_TYPE.items()}

SPREAD = {"strategy": "SpreadOverHostsFirst"}  # the placement every batsched-ml allocation uses
PREDEFINED = "PredefinedExecutorPlacementStrategyWrapper"
CUSTOM = "CustomExecutorToHostMapping"


# ------------------------------------------------------------------ members


def member(body: dict, key: str, kind: type, what: str = "member"):
    """``body[key]``, which must be of ``kind`` (``float`` also takes an integer)."""
    try:
        value = body[key]
    except KeyError:
        raise Invalid(f"missing {what} {_q(key)}") from None
    if kind is float:
        if not is_number(value):
            raise Invalid(f"{what} {_q(key)} must be a finite number, got {_q(value)}")
        return float(value)
    if type(value) is not kind:
        raise Invalid(f"{what} {_q(key)} must be {_KIND_TEXT.get(kind, kind.__name__)}, got {_q(value)}")
    return value


_KIND_TEXT = {str: "a string", int: "an integer", bool: "a boolean", list: "an array", dict: "an object"}


def count_member(body: dict, key: str, *, positive: bool = True) -> int:
    value = member(body, key, int)
    if value < (1 if positive else 0):
        raise Invalid(f"member {_q(key)} must be a {'positive' if positive else 'non-negative'} integer, "
                      f"got {_q(value)}")
    return value


# ------------------------------------------------------------------ profiles


def full_profile_id(workload: str, profile: str) -> str:
    """A job's ``profile`` as batprotocol names it: ``workload!name`` (a full id stays as it is)."""
    return profile if "!" in profile else f"{workload}!{profile}"


def profile_from_v5(kind: str, body: dict) -> dict:
    """``("DelayProfile", {"delay": 10})`` -> ``{"type": "delay", "delay": 10}`` (4.2.1's form)."""
    typed = {"type": _TYPED_TYPE.get(kind, kind)}
    typed.update(body)
    return typed


def profile_to_v5(profile: dict) -> tuple[str, dict]:
    """The inverse of :func:`profile_from_v5`: (batprotocol type, members)."""
    kind = profile.get("type")
    if type(kind) is not str:
        raise Invalid(f"a profile needs a string 'type', got {_q(profile)}")
    return _V5_TYPE.get(kind, kind), {key: value for key, value in profile.items() if key != "type"}


def read_profile_and_id(item) -> tuple[str, str, dict]:
    """A batprotocol ``ProfileAndId`` -> (workload, name, typed profile)."""
    if type(item) is not dict:
        raise Invalid(f"a profile must be an object {{id, profile_type, profile}}, got {_q(item)}")
    profile_id = member(item, "id", str, "profile member")
    workload, bang, name = profile_id.partition("!")
    if not (workload and bang and name):
        raise Invalid(f"profile id {_q(profile_id)} is not of the form 'workload!name'")
    kind = member(item, "profile_type", str, "profile member")
    body = member(item, "profile", dict, "profile member")
    if kind in PROFILE_TYPES_V5:  # Batsim 5's rules for its workloads' profiles (descriptions)
        try:
            check_profile_description({**body, "type": kind}, batsim=5)
        except Invalid as problem:
            raise Invalid(f"profile {_q(profile_id)}: {problem}") from None
    typed = profile_from_v5(kind, body)
    extra = item.get("extra_data")
    if extra:
        typed["extra_data"] = extra
    return workload, name, typed


# ------------------------------------------------------------------ jobs


def job_from_v5(job_id: str, job: dict, submission_time: float) -> dict:
    """A batprotocol ``Job`` -> the job description of the typed events (4.2.1's form,
    :func:`typed_job`); ``profile_id`` of the job's own workload becomes the bare name (a profile
    of another workload keeps its full id)."""
    if type(job) is not dict:
        raise Invalid(f"member 'job' must be an object, got {_q(job)}")
    res = count_member(job, "resource_request")
    walltime = job.get("walltime")
    if walltime is not None and (not is_number(walltime) or walltime <= 0):
        raise Invalid(f"job member 'walltime' must be a positive number when present, got {_q(walltime)}")
    profile_id = member(job, "profile_id", str, "job member")
    workload = job_id.partition("!")[0]
    owner, bang, name = profile_id.partition("!")
    if not profile_id or (bang and not (owner and name)):
        raise Invalid(f"job member 'profile_id' {_q(profile_id)} is not 'workload!name' or 'name'")
    extra = job.get("extra_data")
    if extra and type(extra) is not str:
        raise Invalid(f"job member 'extra_data' must be a string, got {_q(extra)}")
    return typed_job(job_id, submission_time, walltime, res, name if bang and owner == workload else profile_id,
                     extra)


def typed_job(job_id: str, subtime, walltime, res: int, profile: str, extra=None) -> dict:
    """What a scheduler reads of a Batsim 5 job, in the typed events' form (4.2.1's): its id,
    times (``walltime`` -1 when it has none), size and profile, and what rc2 forwards of its
    ``extra_data`` (:func:`merge_extra_data`). Shared by the codec (a ``JobSubmittedEvent``) and
    the embedded simulator (a workload's job, ``workloads.batsim5``)."""
    data = {"id": job_id, "subtime": subtime, "walltime": -1 if walltime is None else walltime, "res": res,
            "profile": profile}
    if extra:
        merge_extra_data(data, extra)
    return data


def merge_extra_data(data: dict, extra) -> None:
    """A job's ``extra_data`` into its typed description. rc2 forwards a workload job's
    ``extra_data`` as JSON text (an object or array written compact, a string as it is): the
    members of a JSON object become members of the job (``{"user": 12}``: ``job.data["user"]``),
    as a 4.2.1 workload's extra fields were; anything else stays ``extra_data``, as text."""
    if type(extra) is str:
        try:
            members = json.loads(extra) if extra.lstrip().startswith("{") else None
        except ValueError:
            members = None
    else:
        members = extra
    if type(members) is dict:
        for key, value in members.items():
            data.setdefault(key, value)
    else:
        data["extra_data"] = extra if type(extra) is str else json.dumps(extra, separators=(",", ":"))


_JOB_KEYS = frozenset(("id", "subtime", "walltime", "res", "profile", "extra_data"))


def job_to_v5(job: dict, workload: str, *, extra_members: bool = True) -> dict:
    """The typed job description -> a batprotocol ``Job`` (``walltime`` only when there is one).

    ``extra_members``: the job's other members (a 4.2.1 workload's ``user``...) go to
    ``extra_data`` as a JSON object, as :func:`job_from_v5` reads them back."""
    walltime = job.get("walltime", -1)
    out = {"resource_request": job["res"]}
    if walltime is not None and walltime != -1:
        out["walltime"] = walltime
    extra = job.get("extra_data")
    if extra is None and extra_members:
        others = {key: value for key, value in job.items() if key not in _JOB_KEYS}
        extra = json.dumps(others, separators=(",", ":")) if others else ""
    elif type(extra) is not str:
        extra = json.dumps(extra, separators=(",", ":"))
    out["extra_data"] = extra or ""
    out["rigid"] = True
    out["profile_id"] = full_profile_id(workload, job["profile"])
    return out


# ------------------------------------------------------------------ allocations


def read_host_allocation(text) -> CoreSet:
    """``host_allocation`` (``"0-3 5"``): Batsim 5's interval text is 4.2.1's."""
    try:
        return parse_alloc(text)
    except ValueError as error:
        raise Invalid(f"member 'host_allocation': {error}") from None


def executor_placement(mapping: dict | None, nb_hosts: int) -> tuple[str, dict]:
    """(``executor_placement_type``, ``executor_placement``): spread over the hosts, or the
    4.2.1 ``mapping`` {executor: index in the allocation} as a custom mapping vector."""
    if mapping is None:
        return PREDEFINED, SPREAD
    vector = [0] * len(mapping)
    for executor, index in mapping.items():
        executor, index = int(executor), int(index)
        if not (0 <= executor < len(vector) and 0 <= index < nb_hosts):
            raise Invalid(f"mapping {_q(mapping)} does not map executors 0..{len(vector) - 1} to hosts "
                          f"0..{nb_hosts - 1} of the allocation")
        vector[executor] = index
    return CUSTOM, {"mapping": vector}


def placement_mapping(allocation: dict, nb_hosts: int) -> dict | None:
    """The inverse of :func:`executor_placement` (checked as Batsim 5 reads it): None for a
    predefined strategy, else the 4.2.1 ``mapping``."""
    kind = member(allocation, "executor_placement_type", str, "allocation member")
    placement = member(allocation, "executor_placement", dict, "allocation member")
    if kind == PREDEFINED:
        strategy = placement.get("strategy", "SpreadOverHostsFirst")
        if strategy not in ("SpreadOverHostsFirst", "FillOneHostCoresFirst"):
            raise Invalid(f"unknown predefined executor placement strategy {_q(strategy)}")
        return None
    if kind != CUSTOM:
        raise Invalid(f"'executor_placement_type' must be {PREDEFINED} or {CUSTOM}, got {_q(kind)} "
                      "(Batsim 5 aborts on a missing placement)")
    vector = member(placement, "mapping", list, "CustomExecutorToHostMapping member")
    if not vector or any(type(index) is not int or not 0 <= index < nb_hosts for index in vector):
        raise Invalid(f"custom mapping {_q(vector)} must give each executor a host index in "
                      f"[0, {nb_hosts}) of the allocation")
    return {str(executor): index for executor, index in enumerate(vector)}


# ------------------------------------------------------------------ times and codes


def call_time(at: float) -> tuple[int, str]:
    """A call date (seconds) as a OneShot's integer ``time`` and ``time_unit``: whole seconds when
    the date is one, else milliseconds rounded up (the call never comes before the date asked).

    A date that is already a number of milliseconds as Batsim 5 reads it (``ms / 1e3``, what
    :func:`at_of_call` gives) is asked as that number: ``at * 1000`` may exceed it by a rounding
    error, and ceiling it would ask one millisecond more (so the simulator, which reads our peer's
    calls back through this function, fires them when rc2 would)."""
    if at < 0 or not math.isfinite(at):
        raise Invalid(f"cannot ask for a call at {_q(at)}")
    if at == int(at):
        return int(at), SECOND
    whole = round(at * 1000)
    if whole / 1e3 == at:
        return whole, MILLISECOND
    return math.ceil(at * 1000), MILLISECOND


def at_of_call(time: int, unit: str) -> float:
    """The date (seconds) of a OneShot, as Batsim 5 computes it (milliseconds / 1e3)."""
    return time / 1e3 if unit == MILLISECOND else float(time)


def signed_return_code(code: int) -> int:
    """Batsim 5's uint32 ``return_code`` as the signed code of 4.2.1 (4294967295 -> -1)."""
    return code - (1 << 32) if code >= 1 << 31 else code


def uint32_return_code(code: int) -> int:
    return code & 0xFFFFFFFF


def allocation_text(alloc) -> str:
    """A decision's allocation (CoreSet or its text) as host_allocation text; empty is refused."""
    if isinstance(alloc, CoreSet):
        text = format_mask(alloc.mask)
    elif type(alloc) is str:
        text = alloc
    else:
        raise Invalid(f"an allocation must be a CoreSet or its text, got {_q(alloc)}")
    if not text:
        raise Invalid("the allocation is empty (Batsim aborts)")
    return text


def job_id(value, key: str = "job_id") -> str:
    """``value`` if it is a job id ``workload!name`` (Batsim 5 splits it there)."""
    if type(value) is str:
        workload, bang, name = value.partition("!")
        if workload and name and "!" not in name:
            return value
        raise Invalid(f"member {_q(key)} {_q(value)} is not a job id 'workload!name' (e.g. 'w0!17')")
    raise Invalid(f"member {_q(key)} must be a job id string 'workload!name', got {_q(value)}")


def job_id_member(body: dict, key: str = "job_id") -> str:
    try:
        return job_id(body[key], key)
    except KeyError:
        raise Invalid(f"missing member {_q(key)}") from None


def job_ids_member(body: dict, key: str = "job_ids") -> list:
    ids = member(body, key, list)
    if not ids:
        raise Invalid(f"member {_q(key)} must be a non-empty array of job ids")
    for value in ids:
        job_id(value, f"{key}[]")
    return ids
