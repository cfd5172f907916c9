"""An event-driven simulator that behaves like Batsim 4.2.1 towards its scheduler.

A heap of timed events, one message per distinct event time: everything that
happens at the same instant reaches the scheduler in one message, which is
answered once. Batsim's rules, as our protocol reference states them:

* a job is submitted at its ``subtime``; ``NOTIFY no_more_static_job_to_submit``
  follows the last static submission;
* a delay job ends after its delay, or is killed by the walltime
  (``COMPLETED_WALLTIME_REACHED``, also when delay == walltime);
* ``KILL_JOB`` is answered in a later message by ``JOB_COMPLETED``
  (``COMPLETED_KILLED``) then ``JOB_KILLED`` with the progress; a job that had
  already finished is listed in ``JOB_KILLED`` without progress;
* ``CALL_ME_LATER`` must be strictly in the future and yields ``REQUESTED_CALL``;
* dynamic jobs (``REGISTER_PROFILE`` / ``REGISTER_JOB``) need dynamic jobs
  enabled, and then the simulation lasts until ``NOTIFY registration_finished``;
* ``SIMULATION_ENDS`` is sent once nothing is left to happen.

The scheduler is any callable ``(now, events) -> (reply_now, decisions)``:
the in-process decision core or a remote one behind ZeroMQ.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field

from ..protocol import events as ev
from ..protocol.coreset import format_mask
from .outputs import JobsTracer


class SimulationError(RuntimeError):
    """The scheduler broke a rule Batsim enforces (Batsim would abort)."""


# Order of simultaneous events inside one message.
_COMPLETION, _KILL, _CALL = 0, 1, 2


@dataclass(slots=True, eq=False)
class SimJob:
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
    runtime: float = 0.0
    alloc: int = 0
    final_state: str = ""
    metadata: str = ""
    killing: bool = False


@dataclass(frozen=True)
class Latency:
    """Simulated delays of Batsim's own messaging, which decide how it groups events.

    Real Batsim (SimGrid) delivers a submission a little after its ``subtime``,
    starts the k-th job of a reply ``k * execute`` after the reply, and tells a
    job's end ``completion`` after it. Events then rarely coincide, so two
    completions or a completion and a submission at the same nominal second reach
    the scheduler in separate messages, in an order set by these delays. The
    defaults were read off the golden runs on a cluster platform
    (50 us links, 500 us backbone). ``NO_LATENCY`` gives the idealised model:
    everything at the same instant in one message.
    """

    submission: float = 0.0002
    execute: float = 0.0001
    completion: float = 0.0006


BATSIM_LATENCY = Latency()
NO_LATENCY = Latency(0.0, 0.0, 0.0)


@dataclass
class SimulationResult:
    end_time: float
    nb_jobs: int
    wall_time: float
    scheduling_time: float
    jobs_csv: str | None = None
    schedule_csv: str | None = None
    unfinished: list = field(default_factory=list)
    schedule: dict = field(default_factory=dict)
    messages: int = 0


class Simulator:
    def __init__(self, nb_hosts: int, workloads, *, host_names=None, dynamic_jobs: bool = False,
                 profile_reuse: bool = False, progress=None, latency: Latency = BATSIM_LATENCY):
        """``workloads``: list of (name, Batsim workload dict); names are ``w0``, ``w1``... in Batsim."""
        self.nb_hosts = nb_hosts
        self.host_names = host_names or [f"node{i}" for i in range(nb_hosts)]
        self.dynamic_jobs = dynamic_jobs
        self.profile_reuse = profile_reuse
        self.progress = progress
        self.latency = latency
        self.workloads = list(workloads)
        self.profiles = {name: dict(w.get("profiles", {})) for name, w in self.workloads}
        self.jobs: dict[str, SimJob] = {}
        self.static: list[SimJob] = []
        for name, workload in self.workloads:
            for data in workload["jobs"]:
                job = self._make_job(name, data)
                self.static.append(job)
        # Stable: equal subtimes keep workload order.
        self.static.sort(key=lambda j: j.subtime)

    def _make_job(self, workload: str, data: dict) -> SimJob:
        job_id = f"{workload}!{data['id']}"
        if job_id in self.jobs:
            raise SimulationError(f"job {job_id} is defined twice")
        profile_name = data["profile"]
        profile = self.profiles[workload].get(profile_name)
        if profile is None:
            raise SimulationError(f"job {job_id} uses undefined profile {profile_name!r}")
        walltime = data.get("walltime", -1)
        wire = dict(data)
        wire["id"] = job_id
        job = SimJob(job_id, workload, profile_name, profile, float(data.get("subtime", 0.0)),
                     -1.0 if walltime is None else float(walltime), int(data["res"]), wire)
        self.jobs[job_id] = job
        return job

    # ------------------------------------------------------------------ run
    def run(self, scheduler, prefix: str | None = None) -> SimulationResult:
        started = time.perf_counter()
        self._heap: list = []
        self._seq = 0
        self._busy = 0  # busy cores bitmask
        self._tracer = JobsTracer(self.nb_hosts)
        self._registration_open = self.dynamic_jobs
        self._pending_calls = 0
        self.scheduling_time = 0.0
        self.messages = 0
        self._scheduler = scheduler
        now = 0.0
        available_at = 0.0  # a scheduler replying with a later ``now`` is busy until then

        begins = ev.SimulationBegins(
            0.0, nb_resources=self.nb_hosts, nb_compute_resources=self.nb_hosts,
            allow_compute_sharing=False,
            config={"dynamic-jobs-enabled": self.dynamic_jobs, "dynamic-jobs-acknowledged": False,
                    "profile-reuse-enabled": self.profile_reuse, "profiles-forwarded-on-submission": False},
            compute_resources=[{"id": i, "name": n, "state": "idle", "properties": {"role": ""}}
                               for i, n in enumerate(self.host_names)],
            workloads={name: w.get("source", name) for name, w in self.workloads},
            profiles={name: dict(p) for name, p in self.profiles.items()})
        available_at = self._exchange(0.0, [begins])

        static, heap = self.static, self._heap
        next_static = 0
        nb_static = len(static)
        sub_latency = self.latency.submission
        notified_static_end = nb_static == 0
        done_since_report = 0
        while True:
            t_static = static[next_static].subtime + sub_latency if next_static < nb_static else None
            t_heap = heap[0][0] if heap else None
            if t_static is None and t_heap is None:
                if not notified_static_end:
                    notified_static_end = True
                    available_at = self._exchange(max(now, available_at),
                                                  [ev.Notify(now, ev.NO_MORE_STATIC_JOB_TO_SUBMIT)])
                    continue
                break
            t = t_heap if t_static is None or (t_heap is not None and t_heap < t_static) else t_static
            now = t if t >= available_at else available_at
            batch = []
            if t_static is not None and t_static <= now:
                # Submissions due by now go first, in a message of their own: in real Batsim,
                # job ends drift by microseconds of latency, so a completion at the same nominal
                # instant reaches the scheduler after the submission.
                while next_static < nb_static and static[next_static].subtime + sub_latency <= now:
                    job = static[next_static]
                    next_static += 1
                    job.state = "SUBMITTED"
                    job.subtime_actual = job.subtime
                    batch.append(ev.JobSubmitted(job.subtime + sub_latency, job.id, job.data))
                if next_static == nb_static and not notified_static_end:
                    notified_static_end = True
                    batch.append(ev.Notify(now, ev.NO_MORE_STATIC_JOB_TO_SUBMIT))
            else:
                # Completions, kills and calls due by now, in time order then kind order.
                while heap and heap[0][0] <= now:
                    t_event, kind, _, payload = heapq.heappop(heap)
                    if kind == _COMPLETION:
                        self._complete(payload, t_event, batch)
                    elif kind == _KILL:
                        self._kill(payload[0], payload[1], batch)
                    else:
                        self._pending_calls -= 1
                        batch.append(ev.RequestedCall(payload))
            if not batch:
                continue
            available_at = self._exchange(now, batch)
            if self.progress is not None:
                done_since_report += 1
                if done_since_report >= 500:
                    self.progress(next_static, nb_static)
                    done_since_report = 0

        end_time = max(now, available_at)
        unfinished = [j for j in self.jobs.values() if j.state in ("SUBMITTED", "RUNNING")]
        error = None
        if self._registration_open:
            error = ("the scheduler never sent NOTIFY registration_finished although dynamic jobs are "
                     "enabled: Batsim would wait forever")
        self._exchange(end_time, [ev.SimulationEnds(end_time)])
        for job in unfinished:
            self._tracer.unfinished(job)
        if self.progress is not None:
            self.progress(nb_static, nb_static)
        wall = time.perf_counter() - started
        schedule = self._tracer.schedule_values(end_time, self.scheduling_time, wall)
        result = SimulationResult(end_time, self._tracer.nb_jobs, wall, self.scheduling_time,
                                  unfinished=[j.id for j in unfinished], schedule=schedule,
                                  messages=self.messages)
        if prefix is not None:
            result.jobs_csv = f"{prefix}_jobs.csv"
            result.schedule_csv = f"{prefix}_schedule.csv"
            self._tracer.write_jobs(result.jobs_csv)
            self._tracer.write_schedule(result.schedule_csv, schedule)
        if error:
            raise SimulationError(error)
        return result

    # ------------------------------------------------------------ exchange
    def _exchange(self, now: float, events: list) -> float:
        """Send one message, apply the reply; returns when the scheduler is free again."""
        t0 = time.perf_counter()
        reply_now, decisions = self._scheduler(now, events)
        self.scheduling_time += time.perf_counter() - t0
        self.messages += 1
        if reply_now < now:
            raise SimulationError(f"the scheduler replied with now={reply_now} < {now}")
        self._started_in_reply = 0
        for decision in decisions:
            if decision.timestamp > reply_now:
                raise SimulationError(f"{decision.type} has timestamp {decision.timestamp} after now={reply_now}")
            self._apply(decision, max(now, decision.timestamp))
        return reply_now

    def _push(self, t: float, kind: int, payload) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, kind, self._seq, payload))

    def _apply(self, d, now: float) -> None:
        kind = type(d)
        if kind is ev.ExecuteJob:
            self._execute(d, now)
        elif kind is ev.CallMeLater:
            if not d.at > now:
                raise SimulationError(f"CALL_ME_LATER at {d.at} is not strictly after now={now}")
            self._pending_calls += 1
            self._push(d.at, _CALL, d.at)
        elif kind is ev.RejectJob:
            job = self._job(d.job_id, "REJECT_JOB")
            if job.state != "SUBMITTED":
                raise SimulationError(f"REJECT_JOB {d.job_id}: the job is {job.state}, not waiting")
            job.state = job.final_state = "REJECTED"
            self._tracer.job_ended(job)
        elif kind is ev.KillJob:
            self._push(now, _KILL, (list(d.job_ids), now))
        elif kind is ev.RegisterProfile:
            self._require_registration("REGISTER_PROFILE")
            profiles = self.profiles.setdefault(d.workload_name, {})
            if d.profile_name in profiles and not self.profile_reuse:
                raise SimulationError(f"REGISTER_PROFILE: profile {d.profile_name!r} already exists")
            profiles[d.profile_name] = d.profile
        elif kind is ev.RegisterJob:
            self._require_registration("REGISTER_JOB")
            workload, _, name = d.job_id.partition("!")
            if "subtime" not in d.job:
                raise SimulationError(f"REGISTER_JOB {d.job_id}: 'subtime' is required")
            self.profiles.setdefault(workload, {})
            data = dict(d.job)
            data["id"] = name
            job = self._make_job(workload, data)
            job.state = "SUBMITTED"
            job.subtime_actual = now
        elif kind is ev.SetJobMetadata:
            self._job(d.job_id, "SET_JOB_METADATA").metadata = d.metadata
        elif kind is ev.Notify:
            if d.kind == ev.REGISTRATION_FINISHED:
                self._registration_open = False
            elif d.kind == ev.CONTINUE_REGISTRATION:
                self._require_dynamic("NOTIFY continue_registration")
                self._registration_open = True
        else:
            raise SimulationError(f"unsupported decision {d!r}")

    def _require_dynamic(self, what: str) -> None:
        if not self.dynamic_jobs:
            raise SimulationError(f"{what} needs dynamic jobs (Batsim's --enable-dynamic-jobs)")

    def _require_registration(self, what: str) -> None:
        self._require_dynamic(what)
        if not self._registration_open:
            raise SimulationError(f"{what} after NOTIFY registration_finished")

    def _job(self, job_id: str, what: str) -> SimJob:
        job = self.jobs.get(job_id)
        if job is None:
            raise SimulationError(f"{what}: unknown job {job_id}")
        return job

    def _execute(self, d: ev.ExecuteJob, now: float) -> None:
        job = self._job(d.job_id, "EXECUTE_JOB")
        if job.state != "SUBMITTED":
            raise SimulationError(f"EXECUTE_JOB {d.job_id}: the job is {job.state}, not waiting")
        mask = d.alloc.mask
        if mask.bit_count() != job.res:
            raise SimulationError(f"EXECUTE_JOB {d.job_id}: {mask.bit_count()} cores allocated, "
                                  f"the job requests {job.res}")
        if mask >> self.nb_hosts:
            raise SimulationError(f"EXECUTE_JOB {d.job_id}: allocation {format_mask(mask)} exceeds the "
                                  f"{self.nb_hosts} hosts")
        if mask & self._busy:
            raise SimulationError(f"EXECUTE_JOB {d.job_id}: cores {format_mask(mask & self._busy)} are busy")
        profile = job.profile
        if profile.get("type") != "delay":
            raise SimulationError(f"job {job.id}: profile type {profile.get('type')!r} is not supported by the "
                                  "embedded simulator (only 'delay'); run real Batsim for it")
        self._busy |= mask
        job.state = "RUNNING"
        self._started_in_reply += 1
        job.start = now + self._started_in_reply * self.latency.execute
        job.alloc = mask
        delay = float(profile["delay"])
        if 0 < job.walltime <= delay:
            job.runtime = job.walltime
            job.final_state = ev.COMPLETED_WALLTIME_REACHED
        else:
            job.runtime = delay
            job.final_state = ev.COMPLETED_SUCCESSFULLY
        self._push(job.start + job.runtime + self.latency.completion, _COMPLETION, job)

    def _finish(self, job: SimJob) -> None:
        self._busy &= ~job.alloc
        self._tracer.job_ended(job)

    def _complete(self, job: SimJob, delivered: float, batch: list) -> None:
        if job.state != "RUNNING":  # killed before its natural end
            return
        job.state = job.final_state
        self._finish(job)
        batch.append(ev.JobCompleted(delivered, job.id, job.final_state, 0 if job.final_state ==
                                     ev.COMPLETED_SUCCESSFULLY else -1 if job.final_state ==
                                     ev.COMPLETED_KILLED else 1, format_mask(job.alloc)))

    def _kill(self, job_ids: list, now: float, batch: list) -> None:
        progress = {}
        for job_id in job_ids:
            job = self.jobs.get(job_id)
            if job is None:
                raise SimulationError(f"KILL_JOB: unknown job {job_id}")
            if job.state != "RUNNING":
                continue  # finished first: listed without progress
            elapsed = max(0.0, now - job.start)
            delay = float(job.profile["delay"])
            job.runtime = elapsed
            job.state = job.final_state = ev.COMPLETED_KILLED
            self._finish(job)
            batch.append(ev.JobCompleted(now, job.id, ev.COMPLETED_KILLED, -1, format_mask(job.alloc)))
            progress[job_id] = {"profile_name": job.profile_name,
                                "progress": elapsed / delay if delay > 0 else 1.0}
        batch.append(ev.JobKilled(now, job_ids, progress))

