"""The rules Batsim enforces on a scheduler's replies and decisions: each check raises
``SimulationError`` where Batsim would abort, with the message saying which rule broke."""

from __future__ import annotations

from ..protocol.coreset import format_mask
from ..protocol.members import Invalid
from .actors import stamp


class SimulationError(RuntimeError):
    """The scheduler broke a rule Batsim enforces (Batsim would abort)."""


def check_reply(now: float, reply_now: float, decisions, past_allowed: bool = False) -> None:
    """A reply is not in the past, and none of its decisions is after the reply's ``now`` (the
    decisions' order is the codec's to check: ``decoding``).

    ``past_allowed``: Batsim 5.0.0-rc2's rule instead (``parse_batprotocol_message`` in its
    src/protocol.cpp), which never compares the reply's ``now`` with its message's: each decision
    is dated at most the reply's ``now`` and at least the *first* decision's date (rc2 never
    updates the date it compares with). A JSON scheduler echoing the 12 decimals rc2 printed is
    a sliver early or late; rc2 sends a decision dated before its clock at once and waits for
    one dated after it."""
    if reply_now < now and not past_allowed:
        raise SimulationError(f"the scheduler replied with now={reply_now} < {now}")
    first = decisions[0].timestamp if decisions and past_allowed else float("-inf")
    for d in decisions:
        if d.timestamp > reply_now:
            raise SimulationError(f"{d.type} has timestamp {d.timestamp} after now={reply_now}")
        if d.timestamp < first:
            raise SimulationError(f"{d.type} has timestamp {d.timestamp} before the first decision's {first} "
                                  "(Batsim 5 aborts)")


def known_job(jobs: dict, job_id: str, what: str):
    job = jobs.get(job_id)
    if job is None:
        raise SimulationError(f"{what}: unknown job {job_id}")
    return job


def check_waiting(job, what: str) -> None:
    """EXECUTE_JOB and REJECT_JOB take a submitted job that has not started."""
    if job.state != "SUBMITTED":
        raise SimulationError(f"{what} {job.id}: the job is {job.state}, not waiting")


def check_execution(job, mask: int, nb_hosts: int, busy: int) -> None:
    """EXECUTE_JOB's allocation: as many cores as the job requests, on the machine, all idle; and
    a job the embedded simulator can run (a delay profile)."""
    if mask.bit_count() != job.res:
        raise SimulationError(f"EXECUTE_JOB {job.id}: {mask.bit_count()} cores allocated, "
                              f"the job requests {job.res}")
    if mask >> nb_hosts:
        raise SimulationError(f"EXECUTE_JOB {job.id}: allocation {format_mask(mask)} exceeds the "
                              f"{nb_hosts} hosts")
    if mask & busy:
        raise SimulationError(f"EXECUTE_JOB {job.id}: cores {format_mask(mask & busy)} are busy")
    profile = job.profile
    if profile.get("type") != "delay":
        hint = " (a Batsim 5 profile: simulate with --batsim 5)" if profile.get("type") == "DelayProfile" else ""
        raise SimulationError(f"job {job.id}: profile type {profile.get('type')!r} is not supported by the "
                              f"embedded simulator (only 'delay'){hint}; run real Batsim for it")


def call_date(line, at: float) -> float:
    """The date a CALL_ME_LATER at ``at`` asks Batsim ``line`` for (one Batsim 5 cannot be asked:
    a negative or non-finite date)."""
    try:
        return line.call_date(at)
    except Invalid as problem:
        raise SimulationError(f"CALL_ME_LATER: {problem}") from None


def check_call_later(at: int, t: int, requested: float) -> None:
    """CALL_ME_LATER is strictly in the future (``at``, ``t``: nanoseconds)."""
    if not at > t:
        raise SimulationError(f"CALL_ME_LATER at {requested} is not strictly after now={stamp(t)}")


def check_killable(job, job_id: str) -> None:
    if job.state in ("NOT_SUBMITTED", "SUBMITTED", "REJECTED"):
        raise SimulationError(f"KILL_JOB {job_id}: the job is {job.state}, not started")


def require_line(line, major: int, what: str) -> None:
    """A decision only one Batsim line has (rc2 has no job metadata, no continue_registration)."""
    if line.major != major:
        raise SimulationError(f"{what} has no Batsim {line.name} form: it needs Batsim {major} (--batsim {major})")


def require_dynamic(dynamic_jobs: bool, what: str) -> None:
    if not dynamic_jobs:
        raise SimulationError(f"{what} needs dynamic jobs (Batsim's --enable-dynamic-jobs)")


def require_registration(dynamic_jobs: bool, registration_open: bool, what: str) -> None:
    """REGISTER_PROFILE / REGISTER_JOB: dynamic jobs enabled, and registration not finished."""
    require_dynamic(dynamic_jobs, what)
    if not registration_open:
        raise SimulationError(f"{what} after NOTIFY registration_finished")


def check_new_profile(profiles: dict, name: str, reuse: bool) -> None:
    if name in profiles and not reuse:
        raise SimulationError(f"REGISTER_PROFILE: profile {name!r} already exists")


def check_registered_job(job_id: str, job: dict) -> None:
    if "subtime" not in job:
        raise SimulationError(f"REGISTER_JOB {job_id}: 'subtime' is required")
