"""Typed Batsim 4.2.1 protocol messages.

Events flow Batsim -> scheduler, decisions flow scheduler -> Batsim. Both
transports (the ZeroMQ server and the embedded simulator) exchange exactly these
objects with the decision core; only the JSON codec knows the wire format.
Field names follow the protocol's ``data`` members (see ``batsim-protocol.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from .coreset import CoreSet

# Job states reported by JOB_COMPLETED.
COMPLETED_SUCCESSFULLY = "COMPLETED_SUCCESSFULLY"
COMPLETED_FAILED = "COMPLETED_FAILED"
COMPLETED_WALLTIME_REACHED = "COMPLETED_WALLTIME_REACHED"
COMPLETED_KILLED = "COMPLETED_KILLED"
JOB_STATES = (COMPLETED_SUCCESSFULLY, COMPLETED_FAILED, COMPLETED_WALLTIME_REACHED, COMPLETED_KILLED)

# NOTIFY kinds.
NO_MORE_STATIC_JOB_TO_SUBMIT = "no_more_static_job_to_submit"
NO_MORE_EXTERNAL_EVENT_TO_OCCUR = "no_more_external_event_to_occur"
EVENT_MACHINE_UNAVAILABLE = "event_machine_unavailable"
EVENT_MACHINE_AVAILABLE = "event_machine_available"
REGISTRATION_FINISHED = "registration_finished"
CONTINUE_REGISTRATION = "continue_registration"


# --------------------------------------------------------------------------- events


@dataclass(slots=True)
class SimulationBegins:
    timestamp: float
    nb_resources: int
    nb_compute_resources: int
    allow_compute_sharing: bool = False
    config: dict = field(default_factory=dict)
    compute_resources: list = field(default_factory=list)
    workloads: dict = field(default_factory=dict)
    profiles: dict = field(default_factory=dict)  # {workload: {profile_name: profile}}
    extra: dict = field(default_factory=dict)  # any other member, kept for re-encoding
    type = "SIMULATION_BEGINS"

    @property
    def dynamic_jobs_enabled(self) -> bool:
        return bool(self.config.get("dynamic-jobs-enabled", False))


@dataclass(slots=True)
class JobSubmitted:
    timestamp: float
    job_id: str
    job: dict  # {id, subtime, walltime, res, profile, + workload extra fields}
    profile: dict | None = None  # present when Batsim forwards profiles
    type = "JOB_SUBMITTED"


@dataclass(slots=True)
class JobCompleted:
    timestamp: float
    job_id: str
    job_state: str
    return_code: int
    alloc: str
    mask: int | None = field(default=None, compare=False)  # ``alloc`` parsed, when the sender has it
    type = "JOB_COMPLETED"


@dataclass(slots=True)
class JobKilled:
    timestamp: float
    job_ids: list
    job_progress: dict  # {job_id: {profile_name, progress}}; absent for a job that finished first
    type = "JOB_KILLED"


@dataclass(slots=True)
class RequestedCall:
    timestamp: float
    type = "REQUESTED_CALL"


@dataclass(slots=True)
class SimulationEnds:
    timestamp: float
    type = "SIMULATION_ENDS"


@dataclass(slots=True)
class Notify:
    """NOTIFY in either direction; ``resources`` only for machine availability."""

    timestamp: float
    kind: str
    resources: str | None = None
    type = "NOTIFY"


@dataclass(slots=True)
class OtherEvent:
    """Energy / workflow events (RESOURCE_STATE_CHANGED, QUERY, ANSWER, FROM_JOB_MSG).

    Schedulers of this project do not act on them; they are parsed so that a
    message carrying them is still valid, and answered harmlessly.
    """

    timestamp: float
    type: str
    data: dict


OTHER_EVENT_TYPES = ("RESOURCE_STATE_CHANGED", "QUERY", "ANSWER", "FROM_JOB_MSG")


# ------------------------------------------------------------------------ decisions


@dataclass(slots=True)
class ExecuteJob:
    timestamp: float
    job_id: str
    alloc: CoreSet
    mapping: dict | None = None
    type = "EXECUTE_JOB"


@dataclass(slots=True)
class RejectJob:
    timestamp: float
    job_id: str
    reason: str = ""  # for logs and reports only; not part of the wire message
    type = "REJECT_JOB"


@dataclass(slots=True)
class KillJob:
    timestamp: float
    job_ids: list
    type = "KILL_JOB"


@dataclass(slots=True)
class CallMeLater:
    timestamp: float
    at: float  # the protocol's data.timestamp: when to be called back
    type = "CALL_ME_LATER"


@dataclass(slots=True)
class RegisterProfile:
    timestamp: float
    workload_name: str
    profile_name: str
    profile: dict
    type = "REGISTER_PROFILE"


@dataclass(slots=True)
class RegisterJob:
    timestamp: float
    job_id: str
    job: dict  # {id, subtime, walltime, res, profile, ...}
    type = "REGISTER_JOB"


@dataclass(slots=True)
class SetJobMetadata:
    timestamp: float
    job_id: str
    metadata: str
    type = "SET_JOB_METADATA"


Event = SimulationBegins | JobSubmitted | JobCompleted | JobKilled | RequestedCall | SimulationEnds | Notify | OtherEvent
Decision = ExecuteJob | RejectJob | KillJob | CallMeLater | RegisterProfile | RegisterJob | SetJobMetadata | Notify


@dataclass(slots=True)
class Message:
    """One protocol message: the envelope ``{"now": ..., "events": [...]}``."""

    now: float
    events: list = field(default_factory=list)


def split_job_id(job_id: str) -> tuple[str, str]:
    """``"w0!17"`` -> ``("w0", "17")``; raises ValueError unless exactly one ``!``."""
    parts = job_id.split("!")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise ValueError(f"job id {job_id!r} is not of the form 'workload!name'")
    return parts[0], parts[1]
