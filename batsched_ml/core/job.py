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

    id: str  # "w0!17"
    workload: str  # "w0"
    name: str  # "17" (or "17#1" for a requeued attempt)
    subtime: float
    walltime: float  # -1 when the job has none
    res: int
    profile: str
    data: dict  # the job object as submitted (every extra workload field)
    submission_time: float  # when the scheduler learned of it
    seq: int  # arrival order at the scheduler (stable tie-breaks)
    runtime: float | None = None
    estimate: float = 0.0
    state: str = QUEUED
    start_time: float = -1.0
    end_time: float = -1.0
    alloc: int = 0  # bitmask of its cores while it runs (0 once it ended: memory per job stays O(1))
    final_state: str = ""
    attempt: int = 0
    original_id: str = ""  # id of the first attempt
    info: dict = field(default_factory=dict)  # scratch space for plugins (class, prediction, ...)

    @property
    def has_walltime(self) -> bool:
        return self.walltime > 0

    @property
    def walltime_cap(self) -> float:
        """The walltime, or infinity when there is none (what an estimate may grow to)."""
        return self.walltime if self.walltime > 0 else math.inf

    @property
    def expected_end(self) -> float:
        return self.start_time + self.estimate
