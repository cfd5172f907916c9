"""The job and profile descriptions Batsim accepts, wherever it reads one: a workload file (its
``Job::from_json`` and ``Profile::from_json``, jobs.cpp and profiles.cpp), the job of a
JOB_SUBMITTED or REGISTER_JOB, the profile of a REGISTER_PROFILE (or of a Batsim 5
``ProfileAndId``). One set of rules for all of them, so that a workload our simulator runs is one
Batsim runs, and ``serve`` refuses what Batsim would never send. Each check raises
:class:`~batsched_ml.protocol.members.Invalid` naming the member and the rule; the caller says
where (``decoding.decode``: the event; ``workloads.loader``: the file and the job).
``docs/simulator.md`` tabulates the rules beside Batsim's.

Batsim 5.0.0-rc2 reads the same members under new profile type names (``delay`` became
``DelayProfile``...: :data:`PROFILE_TYPES_V5`, checked by the same rules), wants a job without a
walltime to leave ``walltime`` out (4.2.1's -1 is refused) and takes an ``extra_data`` string,
object or array; ``batsim=5`` selects those rules, :func:`workload_line` tells a file's line by its
profile types.

Numbers follow Batsim's JSON reader: an "integer" is a JSON integer that fits 32 bits (``4.0`` and
``1e3`` are not integers), a "number" is finite.
"""

from __future__ import annotations

from .errors import quote as _q
from .members import Invalid, is_number

__all__ = ["PROFILE_TYPES", "PROFILE_TYPES_V5", "check_job", "check_job_description", "check_profile_description",
           "is_int32", "workload_line"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def is_int32(value) -> bool:
    """What rapidjson's ``IsInt`` accepts: a JSON integer (not a bool, not 4.0) within 32 bits."""
    return type(value) is int and _INT32_MIN <= value <= _INT32_MAX


def _present(desc: dict, key: str):
    try:
        return desc[key]
    except KeyError:
        raise Invalid(f"missing {_q(key)}") from None


def check_job_description(job: dict, batsim: int = 4) -> None:
    """Batsim's rules on one job (``Job::from_json``) of Batsim line ``batsim`` (4 or 5); ``res``
    must be positive (Batsim takes 0)."""
    jid = _present(job, "id")
    if type(jid) is not str and not is_int32(jid):
        raise Invalid(f"'id' must be a string or a 32-bit integer, got {_q(jid)}")
    subtime = _present(job, "subtime")
    if not is_number(subtime):
        raise Invalid(f"'subtime' must be a number, got {_q(subtime)}")
    if batsim == 5:
        walltime = job.get("walltime")
        if walltime is not None and not (is_number(walltime) and walltime > 0):
            raise Invalid(f"'walltime' is {_q(walltime)}: Batsim 5 wants a strictly positive number, or no "
                          "'walltime' member for a job without one")
        extra = job.get("extra_data")
        if extra is not None and type(extra) not in (str, dict, list):
            raise Invalid(f"'extra_data' must be a string, an object or an array, got {_q(extra)}")
    else:
        walltime = job.get("walltime", -1)
        if walltime != -1 and not (is_number(walltime) and walltime > 0):
            raise Invalid(f"'walltime' is {_q(walltime)}: it must be -1 (no walltime) or a strictly positive "
                          "number")
    res = _present(job, "res")
    if not is_int32(res) or res <= 0:
        raise Invalid(f"'res' must be a positive integer, got {_q(res)}")
    profile = _present(job, "profile")
    if type(profile) is not str:
        raise Invalid(f"'profile' must be a string, got {_q(profile)}")
    mapping = job.get("smpi_ranks_to_hosts_mapping")
    if mapping is not None:
        if type(mapping) is not list:
            raise Invalid(f"'smpi_ranks_to_hosts_mapping' must be an array, got {_q(mapping)}")
        for rank, host in enumerate(mapping):
            if not (is_int32(host) and 0 <= host < res):
                raise Invalid(f"'smpi_ranks_to_hosts_mapping': rank {rank} maps to {_q(host)}, not an "
                              f"integer in [0, {res})")


def check_job(job: dict, job_id: str) -> None:
    """The job of a JOB_SUBMITTED or REGISTER_JOB: a description Batsim accepts whose id is
    ``job_id`` (Batsim prefixes a bare id with the workload's name)."""
    try:
        check_job_description(job)
    except Invalid as problem:
        raise Invalid(f"job description: {problem}") from None
    jid = job["id"]
    if type(jid) is not str:
        jid = str(jid)
    if jid != job_id and f"{job_id.partition('!')[0]}!{jid}" != job_id:
        raise Invalid(f"job member 'id' {_q(job['id'])} does not match data member 'job_id' {_q(job_id)}")


def _number(desc: dict, key: str, strict: bool, required: bool = True) -> None:
    """``desc[key]`` is a number, > 0 when ``strict`` else >= 0 (absent: fine unless ``required``)."""
    if key not in desc and not required:
        return
    value = _present(desc, key)
    if not (is_number(value) and (value > 0 if strict else value >= 0)):
        kind = "strictly positive" if strict else "non-negative"
        raise Invalid(f"{_q(key)} must be a {kind} number, got {_q(value)}")


def _string(desc: dict, key: str, required: bool = True) -> None:
    if key not in desc and not required:
        return
    value = _present(desc, key)
    if type(value) is not str:
        raise Invalid(f"{_q(key)} must be a string, got {_q(value)}")


def _number_array(desc: dict, key: str) -> int:
    """The length of ``desc[key]``, a non-empty array of non-negative numbers."""
    values = _present(desc, key)
    if type(values) is not list or not values:
        raise Invalid(f"{_q(key)} must be a non-empty array of numbers, got {_q(values)}")
    for value in values:
        if not (is_number(value) and value >= 0):
            raise Invalid(f"{_q(key)}: every element must be a non-negative number, got {_q(value)}")
    return len(values)


def _delay(profile: dict) -> None:
    _number(profile, "delay", strict=True)


def _parallel(profile: dict) -> None:
    nb_res = _number_array(profile, "cpu")
    size = _number_array(profile, "com")
    if size != nb_res * nb_res:
        raise Invalid(f"'com' has {size} elements where {nb_res} 'cpu' entries need {nb_res}x{nb_res}")


def _homogeneous(profile: dict) -> None:
    _number(profile, "cpu", strict=False)
    _number(profile, "com", strict=False)
    _string(profile, "generation_strategy", required=False)  # Batsim 5's; 4.2.1 has a type per strategy


def _composed(profile: dict) -> None:
    repeat = profile.get("repeat", 1)
    if not is_int32(repeat) or repeat <= 0:
        raise Invalid(f"'repeat' must be a strictly positive integer, got {_q(repeat)}")
    seq = _present(profile, "seq")
    if type(seq) is not list or not seq or not all(type(name) is str for name in seq):
        raise Invalid(f"'seq' must be a non-empty array of profile names, got {_q(seq)}")


def _pfs(profile: dict) -> None:
    if "bytes_to_read" not in profile and "bytes_to_write" not in profile:
        raise Invalid("needs 'bytes_to_read' or 'bytes_to_write'")
    for key in ("bytes_to_read", "bytes_to_write"):
        if key in profile and not is_number(profile[key]):
            raise Invalid(f"{_q(key)} must be a number, got {_q(profile[key])}")
    _string(profile, "storage" if "storage" in profile else "host", required=False)


def _data_staging(profile: dict) -> None:
    _number(profile, "nb_bytes", strict=False)
    _string(profile, "from")
    _string(profile, "to")


def _send(profile: dict) -> None:
    if type(_present(profile, "msg")) is not dict:
        raise Invalid(f"'msg' must be an object, got {_q(profile['msg'])}")
    _number(profile, "sleeptime", strict=True, required=False)


def _recv(profile: dict) -> None:
    for key in ("regex", "success", "failure", "timeout"):
        _string(profile, key, required=False)
    _number(profile, "polltime", strict=True, required=False)


def _trace(profile: dict) -> None:
    _string(profile, "trace")


def _trace_replay(profile: dict) -> None:
    _string(profile, "filename")
    kind = _present(profile, "trace_type")
    if kind not in ("SMPI", "FractionalComputation"):
        raise Invalid(f"'trace_type' must be SMPI or FractionalComputation, got {_q(kind)}")


# Batsim 4.2.1's profile types and the rules of each (profiles.cpp, Profile::from_json).
PROFILE_TYPES = {
    "delay": _delay, "parallel": _parallel, "parallel_homogeneous": _homogeneous,
    "parallel_homogeneous_total": _homogeneous, "composed": _composed, "parallel_homogeneous_pfs": _pfs,
    "data_staging": _data_staging, "send": _send, "recv": _recv, "smpi": _trace, "usage_trace": _trace,
}


# Batsim 5.0.0-rc2's profile types (its profiles.cpp): 4.2.1's members under new names, one type
# for the two homogeneous ones (``generation_strategy``) and one for both trace replays; no send
# and recv; ForkJoinCompositionProfile and ParallelTaskMergeCompositionProfile abort ("not
# implemented yet").
PROFILE_TYPES_V5 = {
    "DelayProfile": _delay, "ParallelTaskProfile": _parallel, "ParallelTaskHomogeneousProfile": _homogeneous,
    "SequentialCompositionProfile": _composed, "ParallelTaskOnStorageHomogeneousProfile": _pfs,
    "ParallelTaskDataStagingBetweenStoragesProfile": _data_staging, "TraceReplayProfile": _trace_replay,
}
_TYPES = {4: PROFILE_TYPES, 5: PROFILE_TYPES_V5}


def workload_line(profiles: dict) -> int:
    """The Batsim line (4 or 5) whose profile type names a workload's ``profiles`` use (4 when
    none tells); a workload naming both is refused."""
    kinds = {p.get("type") for p in profiles.values() if type(p) is dict}
    v4, v5 = sorted(k for k in kinds if k in PROFILE_TYPES), sorted(k for k in kinds if k in PROFILE_TYPES_V5)
    if v4 and v5:
        raise Invalid(f"its profiles mix Batsim 4.2.1 types ({', '.join(v4)}) and Batsim 5 types "
                      f"({', '.join(v5)}): neither Batsim reads both")
    return 5 if v5 else 4


def check_profile_description(profile, batsim: int = 4) -> None:
    """Batsim's rules on one profile (``Profile::from_json``) of Batsim line ``batsim`` (4 or 5):
    a known ``type`` and its members. Cross-references (a ``composed`` profile's ``seq``, a
    ``parallel`` profile's size against its jobs' ``res``) are the workload's to check."""
    if type(profile) is not dict:
        raise Invalid(f"must be an object, got {_q(profile)}")
    kind = _present(profile, "type")
    types = _TYPES[batsim]
    rules = types.get(kind) if type(kind) is str else None
    if rules is None:
        line = " (Batsim 5's type names)" if batsim == 5 else ""
        raise Invalid(f"'type' must be one of {', '.join(types)}{line}, got {_q(kind)}")
    ret = profile.get("ret", 0)
    if not is_int32(ret):
        raise Invalid(f"'ret' must be an integer, got {_q(ret)}")
    rules(profile)
