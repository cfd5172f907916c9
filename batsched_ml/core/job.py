"""The scheduler's view of a job."""

from __future__ import annotations

import math

from dataclasses import dataclass, field

# Life cycle as the decision core sees it.
QUEUED = "QUEUED"
RUNNING = "RUNNING"
FINISHED = "FINISHED"  # completed, walltime-killed or killed
REJECTED = "REJECTED"


@dataclass(slots=True, eq=False)
class Job:
    """One Batsim job (one attempt: a requeued copy is a new Job ``id#n``).

    ``estimate`` is the runtime the scheduler currently believes (the walltime
    unless a predictor says otherwise); queue orders and reservations use it.
    ``runtime`` is the actual runtime when the profile reveals it (a delay
    profile): only clairvoyant baselines may read it.
    """

    id: str
    """Batsim's job id, ``workload!name`` (``"w0!17"``)."""
    workload: str
    """The workload's name (``"w0"``)."""
    name: str
    """The job's name in its workload (``"17"``, or ``"17#1"`` for a requeued attempt)."""
    subtime: float
    """Submission time in the workload (seconds)."""
    walltime: float
    """Requested time (seconds), -1 when the job has none (``has_walltime``)."""
    res: int
    """Requested cores."""
    profile: str
    """Its profile's name."""
    data: dict
    """The job object as submitted: every field of the workload's job, e.g. ``data["user"]``."""
    submission_time: float
    """When the scheduler learned of it (``subtime`` plus Batsim's latencies)."""
    seq: int
    """Arrival order at the scheduler: the stable tie-break of every queue order."""
    runtime: float | None = None
    """The actual runtime when the profile reveals it (a delay profile): for clairvoyant baselines only."""
    estimate: float = 0.0
    """The runtime the scheduler currently believes: the walltime unless a predictor says otherwise,
    corrected while the job runs; queue orders and reservations use it."""
    state: str = QUEUED
    """``QUEUED``, ``RUNNING``, ``FINISHED`` or ``REJECTED``."""
    start_time: float = -1.0
    """When it started (-1 before): set by ``ctx.execute``, so within a pass a job started earlier in
    the same pass already has it."""
    end_time: float = -1.0
    """When it ended (-1 before)."""
    alloc: int = 0
    """Bitmask of its cores while it runs (0 once it ended: memory per job stays O(1))."""
    final_state: str = ""
    """Batsim's final state (``COMPLETED_SUCCESSFULLY``, ``COMPLETED_WALLTIME_REACHED``,
    ``COMPLETED_KILLED``, ``REJECTED``...), empty before."""
    attempt: int = 0
    """0 for the job itself, n for its n-th requeued copy."""
    original_id: str = ""
    """The id of the first attempt."""
    info: dict = field(default_factory=dict)
    """Scratch space where plugins may write (``info["small"]``, ``info["prediction"]``)."""

    @property
    def has_walltime(self) -> bool:
        """Whether it has a walltime (Batsim's -1 means none)."""
        return self.walltime > 0

    @property
    def walltime_cap(self) -> float:
        """The walltime, or infinity when there is none (what an estimate may grow to)."""
        return self.walltime if self.walltime > 0 else math.inf

    @property
    def expected_end(self) -> float:
        """When a running job is expected to end: ``start_time + estimate`` (a shadow time's input)."""
        return self.start_time + self.estimate
