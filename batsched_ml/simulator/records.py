"""What the simulator keeps of a job, and what a run gives back (its result, what an early stop
left behind, its progress)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, eq=False)
class SimJob:
    """A job as the simulator follows it: its workload entry, its state and its dates (seconds,
    and nanoseconds where the timing needs them exact)."""

    id: str
    workload: str
    profile_name: str
    profile: dict
    subtime: float
    walltime: float
    res: int
    data: dict  # the JOB_SUBMITTED ``job`` object
    state: str = "NOT_SUBMITTED"
    subtime_actual: float = 0.0
    start: float = -1.0
    start_t: float = -1  # the start in the platform's unit (ns for Batsim 4.2.1, seconds for rc2)
    subtime_ns: int = 0
    runtime: float = 0.0
    alloc: int = 0  # bitmask of its cores while it runs; 0 once it ended (see BatsimServer.record_end)
    alloc_text: str = ""  # the allocation as Batsim writes it, while its row is written (then "")
    final_state: str = ""
    metadata: str = ""
    registered: bool = False  # by the scheduler (REGISTER_JOB), not read from a workload


@dataclass
class SimulationResult:
    end_time: float
    nb_jobs: int
    wall_time: float
    scheduling_time: float
    jobs_csv: str | None = None
    schedule_file: str | None = None  # PREFIX_schedule.csv (4.2.1) or PREFIXschedule.json (rc2)
    unfinished: list = field(default_factory=list)
    schedule: dict = field(default_factory=dict)
    messages: int = 0

    @property
    def schedule_csv(self) -> str | None:
        """The schedule file under its 4.2.1 name (kept for callers written before Batsim 5)."""
        return self.schedule_file


@dataclass
class PartialOutputs:
    """What a run stopped early left behind (attached to the exception as ``partial_outputs``)."""

    sim_time: float  # simulated seconds reached
    jobs_written: int  # rows in the jobs file: jobs that had ended
    pending: int  # jobs queued or running when it stopped (not in the file)
    not_submitted: int  # jobs whose submission time had not come
    jobs_csv: str | None = None
    schedule_file: str | None = None

    @property
    def schedule_csv(self) -> str | None:
        return self.schedule_file

    def describe(self) -> str:
        where = f" in {self.jobs_csv}" if self.jobs_csv else ""
        return (f"stopped at simulated time {self.sim_time:.0f} s: {self.jobs_written} ended jobs kept{where}, "
                f"{self.pending} queued or running and {self.not_submitted} not yet submitted are not")


@dataclass(frozen=True)
class SimStatus:
    """Where a run is, for progress displays (``Simulator(progress=...)``)."""

    sim_time: float  # simulated seconds
    finished: int  # jobs that reached their final state (a killed-and-requeued job counts once)
    total: int  # jobs of the workloads
    queued: int
    running: int
    messages: int
    done: bool = False
