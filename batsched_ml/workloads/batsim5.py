"""Batsim 5 workloads beside 4.2.1's.

Batsim 5.0.0-rc2 reads a 4.2.1 workload after one change, the profile type names (``delay``
became ``DelayProfile``), and forwards to the scheduler only a job's ``id``, ``subtime``,
``walltime``, ``res``, ``profile`` and ``extra_data``: the other members of a 4.2.1 job (the
SWF ``user``...) reach the scheduler only from ``extra_data``. So:

* :func:`to_v5` writes a 4.2.1 workload as a Batsim 5 one (``convert --batsim 5``): delay
  profiles become ``DelayProfile``, a job's other members move into an ``extra_data`` object;
* :func:`as_v5` is how ``simulate --batsim 5`` reads a workload: a Batsim 5 workload as it is, a
  4.2.1 one (a ``delay`` profile gives it away) as :func:`to_v5` converts it, so a study moves to
  Batsim 5 with its workloads unchanged and its schedulers still see ``user``;
* :func:`typed_profiles` and :func:`typed_job` give the forms the decision core reads (4.2.1's,
  what the v5 codec decodes from rc2's events: ``protocol.v5.forms``), and refuse in one line the
  profiles Batsim 5 would refuse (``protocol.descriptions``) or the embedded simulator cannot run.
"""

from __future__ import annotations

from ..protocol.descriptions import check_profile_description, workload_line
from ..protocol.members import Invalid
from ..protocol.v5 import forms as v5_forms
from ..protocol.v5.forms import profile_from_v5
from .loader import WorkloadError

__all__ = ["DELAY_PROFILE", "as_v5", "is_v4_workload", "to_v5", "typed_job", "typed_profiles"]

DELAY_PROFILE = "DelayProfile"
_JOB_MEMBERS = ("id", "subtime", "walltime", "res", "profile")  # what rc2 reads of a job, besides extra_data


def is_v4_workload(workload: dict) -> bool:
    """True when its profiles have 4.2.1's type names (``delay``...: ``descriptions.workload_line``):
    Batsim 5 would refuse the file. A workload mixing both lines' names is not (the rules refuse it)."""
    profiles = workload.get("profiles", {})
    try:
        return bool(profiles) and workload_line(profiles) == 4
    except Invalid:
        return False


def to_v5(workload: dict, name: str = "<workload>") -> dict:
    """A 4.2.1 workload (delay profiles) as Batsim 5 reads it; a Batsim 5 workload is returned as is."""
    profiles = {}
    for pname, profile in workload.get("profiles", {}).items():
        kind = profile.get("type")
        if kind not in ("delay", DELAY_PROFILE):
            raise WorkloadError(f"{name}: profile {pname!r} has type {kind!r}: only delay profiles are written as "
                                f"Batsim 5 profiles ({DELAY_PROFILE})")
        profiles[pname] = {**profile, "type": DELAY_PROFILE}
    jobs = [_v5_job(job, name) for job in workload.get("jobs", [])]
    return {**workload, "profiles": profiles, "jobs": jobs}


def _v5_job(job: dict, name: str) -> dict:
    out = {key: job[key] for key in _JOB_MEMBERS if key in job}
    if out.get("walltime", -1) in (-1, None):  # 4.2.1's "no walltime"; Batsim 5 wants the member left out
        out.pop("walltime", None)
    others = {key: value for key, value in job.items() if key not in _JOB_MEMBERS and key != "extra_data"}
    extra = job.get("extra_data")
    if others:
        if extra is not None and not isinstance(extra, dict):
            raise WorkloadError(f"{name}: job {job.get('id')!r} has an 'extra_data' that is not an object and other "
                                f"members ({', '.join(others)}): Batsim 5 forwards only 'extra_data'")
        extra = {**others, **(extra or {})}
    if extra is not None:
        out["extra_data"] = extra
    return out


def as_v5(workload: dict, name: str = "<workload>") -> dict:
    """The workload Batsim 5 would run for ``workload`` (see the module's docstring)."""
    return to_v5(workload, name) if is_v4_workload(workload) else workload


def typed_profiles(workload: dict, name: str = "<workload>") -> dict:
    """A Batsim 5 workload's profiles in the form the decision core reads (``{"type": "delay"}``,
    ``forms.profile_from_v5``); a profile Batsim 5 refuses (``descriptions``' rules) or that the
    embedded simulator cannot run is one line."""
    out = {}
    for pname, profile in workload.get("profiles", {}).items():
        try:
            check_profile_description(profile, batsim=5)
        except Invalid as problem:
            raise WorkloadError(f"{name}: profile {pname!r}: {problem}") from None
        kind = profile["type"]
        if kind != DELAY_PROFILE:
            raise WorkloadError(f"{name}: profile {pname!r} has type {kind!r}: the embedded simulator runs "
                                f"{DELAY_PROFILE} profiles only (run the real Batsim 5 for the others)")
        out[pname] = profile_from_v5(kind, {key: value for key, value in profile.items() if key != "type"})
    return out


def typed_job(job_id: str, job: dict) -> dict:
    """What the scheduler reads of a Batsim 5 workload job (``forms.typed_job``: what the v5 codec
    decodes from rc2's JobSubmittedEvent for it)."""
    return v5_forms.typed_job(job_id, job["subtime"], job.get("walltime"), job["res"], job["profile"],
                              job.get("extra_data"))
