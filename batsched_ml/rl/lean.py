"""The environment's lean simulation core: one episode of strict FCFS or textbook EASY with the agent
choosing the head job, at exact instants, in arrays -- the schedule of the full path (the embedded
simulator, the decision core and the agent versions of ``fcfs`` / ``easy``: ``agent``), start for
start, at a fraction of its cost.

**Why a second core.** A step's budget at 20,000 steps/s is 50 us, observation included; the full
path spends 70-140 us a step on Batsim's actor model (messages, protocol events, per-job objects)
and on the general schedulers' bookkeeping (profiles, per-size indexes, predictors, corrections),
none of which an episode with exact instants, no predictor and two fixed schedulers needs.
``tests/test_rl.py`` runs random agents through both cores and compares every start, every
decision and every observation, so the environment keeps the full path's semantics; the full path
is still used when an episode must write Batsim's outputs or see a predictor (``SchedulingEnv``).

**What it reproduces** (``simulator.engine`` with ``NO_LATENCY``, ``agent``, ``scheduling.easy``
with ``reservations="count"``): times in integer nanoseconds, the scheduler seeing them to the
microsecond; one scheduling pass per instant with events (completions and submissions together),
one more at the instant of the last submission (Batsim's ``NOTIFY no_more_static_job_to_submit``)
and one more at an instant where a job of zero run time ended; jobs larger than the machine, of no
cores, or (EASY) without a walltime rejected at submission. A pass asks the agent for the head
whenever two jobs or more wait, again after each start of the head; strict FCFS starts the head
while it fits; EASY starts it if it fits now, else reserves its earliest start ``R`` (where enough
running jobs are planned to have ended, ``start + walltime``) and starts, in FCFS order (submission
time, then the job's id as text: ``policies.orders.FCFS``), every other job that fits now without
delaying ``R``: ``res <= free`` and (``now + walltime <= R`` or
``res`` within the cores left over at ``R``). With one reservation the free cores only grow with
time, so these two numbers decide a job; EASY's profile computes the same thing in general.

**Costs.** The queued jobs are leaves of min-trees over the episode's jobs: in FCFS order (cores,
walltime), so that the first job that fits is found by descending only into subtrees that may hold
one, and in arrival order (queued or not), so that the window (the oldest queued jobs) is found by
visiting only subtrees that hold queued jobs: O(log n) per job found, whatever the queue's length.
Running jobs are a heap of ends and, for EASY, a sorted array of planned ends read until the head
fits (at most one entry per running job). The kernels (``lean_kernels``) are compiled by numba,
cached on disk.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from ..policies.network import TIME_SCALE, size_features, time_feature
from ..simulator.actors import ns, stamp
from . import observation

__all__ = ["LeanEpisode", "supports"]

INF = math.inf


def supports(workload: dict) -> bool:
    """Whether every job of ``workload`` has a delay profile (what the lean core simulates)."""
    profiles = workload.get("profiles", {})
    return all(profiles.get(job["profile"], {}).get("type") == "delay" for job in workload["jobs"])


class LeanEpisode:
    """One episode of ``workload`` (a Batsim workload dict of delay jobs, submission order) on
    ``nb_cores`` cores under ``backfill`` (``none``: strict FCFS, ``easy``), the agent seeing the
    oldest ``window`` queued jobs. ``advance(slot)`` runs to the next decision (True) or the end
    (False); ``observation()`` / ``features()`` describe the pending decision."""

    core = "lean"  # the environment's summary names the core that ran the episode

    def __init__(self, workload: dict, nb_cores: int, window: int, backfill: str):
        from . import lean_kernels as k  # numba compiles (or loads from its cache) on first use

        self._set_leaf, self._set_flag, self._window = k.set_leaf, k.set_flag, k.window
        self._plan, self._unplan, self._backfill, self._decision = k.plan, k.unplan, k.backfill, k.decision
        jobs = sorted(workload["jobs"], key=lambda j: j.get("subtime", 0.0))  # stable, as the simulator
        profiles = workload["profiles"]
        n = len(jobs)
        self.n, self.nb_cores, self.window, self.easy = n, nb_cores, window, backfill == "easy"
        subtime = np.array([float(j.get("subtime", 0.0)) for j in jobs])
        walltime = np.array([-1.0 if j.get("walltime", -1) is None else float(j.get("walltime", -1))
                             for j in jobs])
        delay = np.array([float(profiles[j["profile"]]["delay"]) for j in jobs])
        res = np.array([int(j["res"]) for j in jobs], np.int64)
        self.sub_ns = [ns(s) for s in subtime.tolist()]
        self.submit = np.array([stamp(t) for t in self.sub_ns])  # Batsim's microsecond stamps
        self.submit_list = self.submit.tolist()
        # the simulator ends a job at its walltime if it would run longer; the decision core's run time
        # (the reward's) is the profile's delay capped by a positive walltime
        sim_run = np.where((walltime >= 0) & (walltime <= delay), walltime, delay)
        self.run_ns = [ns(r) for r in sim_run.tolist()]
        self.runtime = np.where(walltime > 0, np.minimum(delay, walltime), delay)
        self.runtime_list = self.runtime.tolist()
        self.estimate = np.where(walltime > 0, walltime, INF)
        self.res_array = res
        self.res = res.tolist()
        self.span = self.estimate.tolist()
        admitted = (res > 0) & (res <= nb_cores)
        if self.easy:
            admitted &= walltime > 0
        self.admitted = admitted.tolist()
        fraction, log_size = size_features(res, nb_cores)
        # per job: estimate, cores, log_cores features, requested cores (``observation``'s rows)
        self.rows = np.column_stack((time_feature(self.estimate), fraction, log_size, res.astype(np.float64)))
        size = 1
        while size < max(n, 1):
            size *= 2
        self.leaves = size
        self.arrived = np.full(2 * size, INF)  # leaves in arrival order: 0 while the job is queued
        # leaves in FCFS's order (submission time, then id as text: ``policies.orders.FCFS``), the order
        # in which EASY backfills: cores and walltime while the job is queued, inf otherwise
        self.order = np.array(sorted(range(n), key=lambda i: (self.submit_list[i], f"w0!{jobs[i]['id']}", i)),
                              np.int64)
        self.rank = np.empty(n, np.int64)
        self.rank[self.order] = np.arange(n)
        self.rank_list = self.rank.tolist()
        self.min_res = np.full(2 * size, INF)
        self.min_span = np.full(2 * size, INF)
        self.start = np.full(n, -1.0)
        self.start_list = [-1.0] * n  # the same, for Python arithmetic
        self.free = nb_cores
        self.t = 0  # ns
        self.now = 0.0
        self.queued = 0
        self.next_sub = 0
        self.ends: list = []  # heap of (end ns, job)
        # EASY: the running jobs' planned ends (start + walltime), sorted, with their cores and numbers
        self.planned_end = np.empty(min(n, nb_cores) + 1)
        self.planned_res = np.empty(min(n, nb_cores) + 1, np.int64)
        self.planned_job = np.empty(min(n, nb_cores) + 1, np.int64)
        self.nb_planned = 0
        self.started: list = []  # jobs started since the owner last emptied it (rewards)
        self.extra_pass = None  # the instant of the last submission: one more pass there (NOTIFY)
        self.decisions = self.invalid_actions = self.nb_started = 0
        self.last_instant = 0
        self.slots = np.zeros(0, np.intp)
        self.jobs = self.machine = None  # the pending decision's observation
        self._backfilled = np.empty(max(n, 1), np.int64)
        self._slot_buffer = np.zeros(window, np.intp)

    # ------------------------------------------------------------- stepping
    def begin(self) -> bool:
        """Run to the first decision (True) or, if none comes, to the end (False)."""
        return self._continue(-1)

    def advance(self, slot) -> bool:
        """The agent's answer to the pending decision: a slot of the window (anything else is never
        executed: the oldest job instead). Runs to the next decision (True) or the end (False)."""
        self.decisions += 1
        slots = self.slots
        if not (isinstance(slot, (int, np.integer)) and 0 <= slot < len(slots)):
            self.invalid_actions += 1
            slot = 0
        return self._continue(int(slots[slot]))

    def _continue(self, pick: int) -> bool:
        """The pass goes on with the head ``pick`` (-1: ask for one), pass after pass."""
        res = self.res
        while True:
            if pick >= 0:
                if res[pick] <= self.free:
                    self._start(pick)
                else:
                    if self.easy:
                        self._reserve_and_backfill(pick)
                    if not self._next_pass():
                        return False
                pick = -1
            if self.queued >= 2:
                self._decide()
                return True
            if self.queued == 1:
                self._window(self.arrived, self.leaves, 1, self._slot_buffer)
                pick = int(self._slot_buffer[0])
            elif not self._next_pass():
                return False

    def _decide(self) -> None:
        """A decision is pending: its window and observation (fresh arrays: the agent may keep them)."""
        window = self.window
        self.jobs = np.zeros((window, len(observation.JOB_COLUMNS)), np.float32)
        self.machine = np.empty(len(observation.MACHINE_COLUMNS), np.float32)
        k = self._decision(self.arrived, self.leaves, window, self._slot_buffer, self.jobs, self.machine,
                           self.submit, self.rows, self.now, self.free, self.nb_cores, self.queued, TIME_SCALE,
                           1.0 / observation.QUEUE_BITS)
        self.slots = self._slot_buffer[:k]

    # --------------------------------------------------------------- events
    def _next_pass(self) -> bool:
        """Move to the next instant with events and apply them (a new pass begins); False at the end."""
        sub_ns, n, ends = self.sub_ns, self.n, self.ends
        t = ends[0][0] if ends else None
        if self.next_sub < n and (t is None or sub_ns[self.next_sub] < t):
            t = sub_ns[self.next_sub]
        if self.extra_pass is not None and (t is None or t > self.extra_pass):
            t = self.extra_pass  # the NOTIFY's own pass, nothing else at that instant
        if t is None:
            return False
        if t == self.extra_pass:
            self.extra_pass = None
        self.t, self.now, self.last_instant = t, stamp(t), t
        res = self.res
        while ends and ends[0][0] <= t:
            job = heapq.heappop(ends)[1]
            self.free += res[job]
            if self.easy:
                self.nb_planned = self._unplan(self.planned_end, self.planned_res, self.planned_job, self.nb_planned,
                                               self.start[job] + self.span[job], job)
        i = self.next_sub
        if i < n and sub_ns[i] <= t:
            admitted, set_leaf, min_res, min_span, leaves, span = (self.admitted, self._set_leaf, self.min_res,
                                                                   self.min_span, self.leaves, self.span)
            set_flag, arrived, rank = self._set_flag, self.arrived, self.rank_list
            while i < n and sub_ns[i] <= t:
                if admitted[i]:
                    set_flag(arrived, leaves, i, 0.0)
                    if self.easy:
                        set_leaf(min_res, min_span, leaves, rank[i], res[i], span[i])
                    self.queued += 1
                i += 1
            self.next_sub = i
            if i == n:
                self.extra_pass = t
        return True

    def _start(self, job: int) -> None:
        self.free -= self.res[job]
        self.queued -= 1
        self._set_flag(self.arrived, self.leaves, job, INF)
        if self.easy:
            self._set_leaf(self.min_res, self.min_span, self.leaves, self.rank_list[job], INF, INF)
        now = self.now
        self.start[job] = now
        self.start_list[job] = now
        heapq.heappush(self.ends, (self._decision_ns() + self.run_ns[job], job))
        if self.easy:
            self.nb_planned = self._plan(self.planned_end, self.planned_res, self.planned_job, self.nb_planned,
                                         now + self.span[job], self.res[job], job)
        self.started.append(job)
        self.nb_started += 1

    def _decision_ns(self) -> int:
        """The date of this pass's decisions in nanoseconds: the instant to the microsecond, as Batsim
        stamps it (a started job's end counts from there)."""
        return (self.t + 500) // 1000 * 1000

    def _reserve_and_backfill(self, head: int) -> None:
        """EASY: ``head`` does not fit now; it is given its earliest start and the other queued jobs
        that fit without delaying it start now, in FCFS order (one compiled call)."""
        count, self.nb_planned, self.free = self._backfill(
            self.min_res, self.min_span, self.arrived, self.leaves, self.rank, self.order, self.planned_end,
            self.planned_res, self.planned_job, self.nb_planned, self.free, head, self.res_array, self.estimate,
            self.now, self._backfilled)
        if count:
            start_ns = self._decision_ns()
            now, run_ns, ends, start, start_list = self.now, self.run_ns, self.ends, self.start, self.start_list
            for job in self._backfilled[:count].tolist():
                start[job] = now
                start_list[job] = now
                heapq.heappush(ends, (start_ns + run_ns[job], job))
                self.started.append(job)
            self.queued -= count
            self.nb_started += count

    # ---------------------------------------------------------- observation
    def observation(self) -> dict:
        """The pending decision's observation (``observation``'s ``jobs`` and ``machine``)."""
        return {"jobs": self.jobs, "machine": self.machine}

    def features(self) -> np.ndarray:
        """The float64 scoring features of the window's jobs (``policies.network.FEATURES``)."""
        slots = self.slots
        x = np.empty((len(slots), 4))
        x[:, 0] = time_feature(self.now - self.submit[slots])
        x[:, 1:] = self.rows[slots, :3]
        return x

    def window_jobs(self) -> list[dict]:
        """The window's jobs: submission time, estimate (walltime) and cores, oldest first."""
        return [{"submission_time": float(self.submit[s]), "estimate": float(self.estimate[s]),
                 "res": self.res[s]} for s in self.slots]

    # --------------------------------------------------------------- results
    def avebsld(self, tau: float) -> float:
        """The episode's AVEbsld (``evaluate.avebsld``'s operations, in submission order)."""
        ran = self.start >= 0
        if not ran.any():
            return 0.0
        run = self.runtime[ran]
        wait = self.start[ran] - self.submit[ran]
        return float(np.maximum((wait + run) / np.maximum(run, tau), 1.0).mean())

    @property
    def end_time(self) -> float:
        """The last instant with events (Batsim's SIMULATION_ENDS)."""
        return stamp(self.last_instant)
