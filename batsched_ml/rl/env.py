"""``batsched_ml/Scheduling-v0``: a Gymnasium environment stepping the embedded simulator one
scheduling decision at a time.

**What runs.** An episode is one job sequence (``episodes``) simulated by the embedded
simulator (``simulator.engine``, Batsim's semantics, exact instants: ``NO_LATENCY``) talking
to the decision core (``core.decision_core``), whose scheduler is the real ``fcfs`` or
``easy`` with the agent choosing which queued job runs next (``agent``). A step is one such
choice; a pass may ask several (one after each start) or none (a queue of one job). The
outputs are the simulator's: with ``output_prefix`` each episode writes Batsim's
``PREFIX_jobs.csv`` / ``PREFIX_schedule.csv`` and its workload, which ``batsched-ml check``
and ``simulate`` read.

**Observation, action, reward**: ``observation`` (the oldest ``window`` queued jobs' features
and the machine, in [0, 1]), a slot of that window (``action_mask`` in ``info`` and
``action_masks()``: the slots that hold a job; a slot without a job is never executed -- the
oldest job is started instead and ``info["invalid_action"]`` says so; an action outside
``action_space`` raises ValueError), ``reward``
(``-AVEbsld`` at the end by default).

**Two cores, one schedule.** By default an episode runs in the lean core (``lean``): the same
schedule as the full path below, start for start and decision for decision (the tests compare both
on random agents), in arrays, 4-7 times faster -- the environment's speed target (20,000 steps a
second) is beyond what Batsim's actor model and the general schedulers cost a step. The full path
runs when an episode must write Batsim's outputs (``output_prefix``), sees a predictor, has jobs
other than delay jobs, or when asked (``simulator="full"``).

**Inversion of control in the full path: why a greenlet.** The simulator calls the decision core,
which calls the scheduler, which asks "which job next?" three calls deep, possibly several times in one
pass; Gymnasium's ``step()`` is called by the agent. The simulation runs in a greenlet (a
coroutine with its own stack): the chooser switches to the agent with the observation and is
resumed by ``step`` with the action. The alternatives were worse: making the simulator's loop a
generator suspends it between *messages* only, so every layer below (decision core, scheduler
pass) would also have to become resumable, or each choice would be a separate, fictitious
message with empty events to the decision core; threads cost a lock hand-off and two context
switches per step (tens of microseconds, the whole budget). A greenlet round trip costs about
a microsecond, and nothing of the simulator, the decision core or the schedulers changes: the
environment runs the very code ``simulate`` runs. ``greenlet`` is a small, long-kept C extension
(SQLAlchemy's and gevent's), with wheels for every platform.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
from greenlet import GreenletExit, greenlet

from ..runner import simulate
from ..simulator.engine import NO_LATENCY
from . import lean as lean_core
from . import observation
from .agent import agent_scheduler
from .evaluate import avebsld
from .protocols import get_protocol
from .registration import ENV_ID, register
from .reward import Reward

__all__ = ["SchedulingEnv", "ENV_ID", "SIMULATORS"]

SIMULATORS = ("lean", "full")
SNAPSHOT_HORIZON = 7 * 86400.0  # seconds of submissions an episode from a snapshot covers


@dataclass
class _Paused:
    """The end of an episode from a snapshot: its jobs have ended (the run itself goes on)."""

    end_time: float
    jobs_csv: str | None


class SchedulingEnv(gym.Env):
    """Choose the next job of an HPC batch scheduler (see the module docstring).

    ``workload``: an SWF trace, a Batsim JSON workload (path or dict) or ``lublin:CORES``;
    ``platform``: the machine (a core count or a SimGrid XML; default the trace's size);
    ``sequence_length`` jobs per episode (default 1,024, or all the jobs of the start range when
    the trace has fewer, as the bundled 1,000-job sample), starting within ``start_range`` (fractions of
    the trace); ``window`` action slots (128, as RLScheduler); ``backfill``: ``none`` or
    ``easy``; ``reward`` and ``tau`` (see ``reward``); ``predictor``: a runtime predictor plugin
    whose estimates the agent sees instead of the requested times; ``output_prefix``: write
    each episode's Batsim outputs as ``PREFIX-<episode>_jobs.csv`` ... and its workload as
    ``PREFIX-<episode>_workload.json``; ``simulator``: ``lean`` (the default: the lean core whenever
    the episode allows it) or ``full`` (always the embedded simulator and the decision core);
    ``protocol``: ``batsched-ml`` (the default, all of the above) or ``rlscheduler`` (RLScheduler's
    trace reading, sequences and simulator, ``backfill`` ``none`` or ``rlscheduler``: ``protocols``).

    ``reset(options={"start": i})`` runs the sequence starting at job ``i`` of the trace
    (evaluation on fixed sequences); otherwise starts are drawn from the seeded ``np_random``.

    ``reset(options={"snapshot": S, "horizon": seconds})`` starts the episode from a snapshot of a
    real run instead (``simulate --stop-at`` / ``--checkpoint-every``; ``S`` a file or a list of
    files, one drawn per episode): the agent takes over the machine and the queue as they were
    (``forking.fork``) and the episode lasts until every job submitted within ``horizon`` (default
    one week) after the snapshot has ended; its jobs are those that had not started at the snapshot.
    """

    metadata = {"render_modes": []}
    MAX_RESAMPLES = 100  # a drawn sequence where no job ever waits beside another has no decision

    def __init__(self, workload, platform=None, *, sequence_length: int | None = None, start_range=(0.0, 1.0),
                 window: int = 128, backfill: str = "none", reward: str = "bsld", tau: float = 10.0,
                 predictor: str | None = None, output_prefix: str | None = None, simulator: str = "lean",
                 protocol: str = "batsched-ml"):
        self.protocol = get_protocol(protocol)
        self.protocol.check_backfill(backfill)
        nb_cores = _machine_size(platform)
        self.trace = self.protocol.load_trace(workload, nb_cores)
        self.sequences = self.protocol.sequences(self.trace, sequence_length, start_range)
        self.nb_cores = self.trace.nb_cores
        self.window, self.backfill, self.predictor = int(window), backfill, predictor
        if self.protocol.name == "batsched-ml":
            agent_scheduler(None, backfill, self.window)  # check the settings now, not at the first reset
        elif predictor is not None or output_prefix is not None:
            raise ValueError(f"the {self.protocol.name} protocol runs its own simulator: no predictor, "
                             "no output_prefix")
        self.reward_fn = Reward(reward, tau)
        self.output_prefix = output_prefix
        if simulator not in SIMULATORS:
            raise ValueError(f"simulator must be one of {', '.join(SIMULATORS)}, got {simulator!r}")
        self.simulator = simulator
        self.observation_space = observation.observation_space(self.window)
        self.action_space = gym.spaces.Discrete(self.window)
        self._run = None
        self._lean = None  # the episode in the lean core (None: the full path's greenlet, or no episode)
        self._queue = None
        self._pending = None
        self._mask = observation.empty(self.window)[1]
        self._episode = 0
        self._steps = 0
        self._start = None
        self._carry = 0.0
        self._episode_jobs = None  # ids of a snapshot episode's jobs (None: a sequence of the trace)
        self._scratch = None  # a snapshot episode's outputs when output_prefix is None

    # ------------------------------------------------------------- Gymnasium
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._stop()
        if (options or {}).get("snapshot") is not None:
            return self._reset_from_snapshot(options["snapshot"], float(options.get("horizon", SNAPSHOT_HORIZON)))
        fixed = (options or {}).get("start")
        for _ in range(1 if fixed is not None else self.MAX_RESAMPLES):
            start = int(fixed) if fixed is not None else self.sequences.sample_start(self.np_random)
            event = self._begin(start)
            if event[0] == "decision":
                obs, self._carry, _, _, info = self._outcome(event)  # jobs started before the first decision
                return obs, info
        where = f"the sequence at job {fixed}" if fixed is not None else f"{self.MAX_RESAMPLES} sequences drawn"
        raise ValueError(f"{self.trace.name}: {where} never had two jobs waiting: no decision to learn from")

    def step(self, action):
        lean = self._lean
        if lean is None and (self._run is None or self._run.dead):
            raise RuntimeError("the episode is over (or never began): call reset()")
        if type(action) is not int or not 0 <= action < self.window:
            action = self._in_action_space(action)
        self._steps += 1
        invalid = not self._mask[action]
        if lean is not None:
            event = ("decision",) if lean.advance(action) else ("end",)
        else:
            try:
                event = self._run.switch(action)
            except BaseException:
                self._run = None  # the simulation failed (its error propagates): this episode is over
                raise
        obs, reward, terminated, truncated, info = self._outcome(event)
        reward, self._carry = reward + self._carry, 0.0
        info["invalid_action"] = invalid
        return obs, reward, terminated, truncated, info

    def _in_action_space(self, action) -> int:
        """``action`` as a slot, or ValueError: Gymnasium's contract is an action of ``action_space``
        (a NumPy integer is one, 2.7 and slot 999 of a 128-slot window are not)."""
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in the action space {self.action_space} "
                             f"(a slot 0..{self.window - 1})")
        return int(action)

    def window_features(self) -> np.ndarray:
        """The float64 scoring features (``policies.network.FEATURES``) of the current decision's
        window, one row per slot holding a job: what ``--policy rl:FILE`` computes for the same
        jobs (the observation holds them in float32)."""
        if self._lean is not None:
            return self._lean.features()
        queue = self._queue
        return queue.features(queue.slots, queue.now)

    def window_jobs(self) -> list[dict]:
        """The current decision's window, oldest first: each job's ``submission_time``, ``estimate``
        (its walltime, or the predictor's estimate) and ``res`` (cores)."""
        if self._lean is not None:
            return self._lean.window_jobs()
        return [{"submission_time": j.submission_time, "estimate": j.estimate, "res": j.res}
                for j in self._queue.window_jobs()]

    def action_masks(self) -> np.ndarray:
        """The slots holding a job (sb3-contrib's MaskablePPO reads this)."""
        return self._mask

    def close(self) -> None:
        self._stop()

    # --------------------------------------------------------------- episodes from snapshots
    def _reset_from_snapshot(self, snapshots, horizon: float):
        """An episode from a snapshot of a real run (see the class docstring)."""
        from ..checkpointing import load_run, recorded_inputs
        from ..forking import fork
        from ..snapshot_files import Snapshot

        if isinstance(snapshots, (list, tuple)):
            snapshots = snapshots[int(self.np_random.integers(len(snapshots)))]
        snapshot = snapshots if isinstance(snapshots, Snapshot) else Snapshot.load(snapshots)
        platform, workloads = recorded_inputs(snapshot.header)
        self._episode += 1
        self._start, self._steps, self._lean = f"snapshot at {snapshot.sim_time:.0f} s", 0, None
        self._scratch = tempfile.TemporaryDirectory(prefix="batsched-rl-")
        prefix = (f"{self.output_prefix}-{self._episode}" if self.output_prefix is not None
                  else str(Path(self._scratch.name) / "episode"))
        Path(prefix).parent.mkdir(parents=True, exist_ok=True)
        sim = load_run(snapshot, platform, workloads, prefix=prefix)
        scheduler = agent_scheduler(self._choose, self.backfill, self.window,
                                    _estimator(self.predictor) if self.predictor else None)
        self._queue = scheduler.queue
        core, _ = fork(sim, scheduler)
        at = sim.now
        self._episode_jobs = {j.id for j in core.jobs.values() if j.start_time < 0 and j.state == "QUEUED"}
        self._episode_jobs |= {j.id for j in sim.jobs.values()
                               if j.state == "NOT_SUBMITTED" and j.subtime < snapshot.sim_time + horizon}
        self.reward_fn.reset(len(self._episode_jobs))
        self._run = greenlet(self._simulate_from)
        event = self._run.switch(sim, snapshot.sim_time + horizon, at)
        if event[0] != "decision":
            raise ValueError(f"the snapshot at {snapshot.sim_time:.0f} s leaves no decision within {horizon:g} s")
        obs, self._carry, _, _, info = self._outcome(event)
        return obs, info

    def _simulate_from(self, sim, end: float, at: float):
        """A snapshot's episode, in its greenlet: the run until its jobs have ended."""
        from ..forking import run_window

        result = run_window(sim, end)
        if result is None:
            sim.close()
            result = _Paused(sim.now, None)
        return ("end", result, sim.scheduler.core)

    # --------------------------------------------------------------- episode
    def _begin(self, start: int):
        self._start, self._steps = start, 0
        self._episode += 1
        own = self.protocol.episode(self.sequences, start, self.backfill, self.window)
        if own is not None:  # a protocol with its own simulator
            self.reward_fn.reset(self.sequences.length)
            return self._begin_lean(own)
        workload = self.sequences.workload(start)
        self.reward_fn.reset(sum(1 for job in workload["jobs"] if 0 < job["res"] <= self.nb_cores))
        if (self.simulator == "lean" and self.output_prefix is None and self.predictor is None
                and lean_core.supports(workload)):
            return self._begin_lean(lean_core.LeanEpisode(workload, self.nb_cores, self.window, self.backfill))
        estimator = _estimator(self.predictor) if self.predictor else None
        scheduler = agent_scheduler(self._choose, self.backfill, self.window, estimator)
        self._queue = scheduler.queue
        prefix = None
        if self.output_prefix is not None:
            prefix = f"{self.output_prefix}-{self._episode}"
            Path(prefix).parent.mkdir(parents=True, exist_ok=True)
            from ..workloads import write_workload

            write_workload(workload, f"{prefix}_workload.json")
        self._run = greenlet(self._simulate)
        return self._run.switch(workload, scheduler, prefix)

    def _begin_lean(self, episode):
        """Run an array-based episode (the lean core, or a protocol's simulator) to its first decision."""
        self._lean = episode
        if episode.begin():
            return ("decision",)
        self._lean = None  # over without a decision: reset draws another sequence
        return ("end",)

    def _simulate(self, workload, scheduler, prefix):
        """The whole simulation, in the episode's greenlet."""
        result, core = simulate(self.nb_cores, workload, scheduler, prefix, latency=NO_LATENCY)
        return ("end", result, core)

    def _choose(self, queue, now):
        """The scheduler asks which job runs next: hand the decision to the agent, return its slot."""
        self._pending = observation.build(queue, now)
        return self._run.parent.switch(("decision",))

    def _outcome(self, event):
        if self._lean is not None:
            return self._lean_outcome(event)
        queue = self._queue
        started, queue.started = queue.started, []
        reward = self.reward_fn.jobs_started(started)
        if event[0] == "decision":
            obs, self._mask = self._pending
            info = {"action_mask": self._mask, "time": queue.now, "queued": len(queue)}
            return obs, reward, False, False, info
        _, result, core = event
        self._run = None
        reward += self.reward_fn.final(self.nb_cores, result.end_time)
        obs, self._mask = observation.empty(self.window)
        info = {"action_mask": self._mask, "episode": self.summary(core, result)}
        return obs, reward, True, False, info

    def _lean_outcome(self, event):
        episode = self._lean
        started, episode.started = episode.started, []
        reward = 0.0
        if started:
            start, submit, runtime, res = episode.start_list, episode.submit_list, episode.runtime_list, episode.res
            reward = self.reward_fn.started_now([(start[j] - submit[j], runtime[j], res[j]) for j in started])
        if event[0] == "decision":
            self._mask = observation.mask(self.window, len(episode.slots))
            info = {"action_mask": self._mask, "time": episode.now, "queued": episode.queued}
            return episode.observation(), reward, False, False, info
        self._lean = None
        reward += self.reward_fn.final(self.nb_cores, episode.end_time)
        obs, self._mask = observation.empty(self.window)
        summary = self._summary(episode.core, episode.n, episode.nb_started, episode.decisions, episode.invalid_actions,
                                episode.avebsld(self.reward_fn.tau), episode.end_time, None)
        return obs, reward, True, False, {"action_mask": self._mask, "episode": summary}

    def summary(self, core, result) -> dict:
        """The finished episode's figures (``info["episode"]`` at its last step): of its jobs only
        when it started from a snapshot."""
        jobs = list(core.jobs.values())
        if self._episode_jobs is not None:
            jobs = [j for j in jobs if (j.original_id or j.id) in self._episode_jobs]
        ran = sum(1 for j in jobs if j.start_time >= 0)
        return self._summary("full", len(jobs), ran, self._queue.decisions, self._queue.invalid_actions,
                             avebsld(jobs, self.reward_fn.tau), result.end_time, result.jobs_csv)

    def _summary(self, simulator, jobs, ran, decisions, invalid_actions, episode_avebsld, makespan, jobs_csv) -> dict:
        """``info["episode"]``: the same figures whichever core ran the episode."""
        return {"start": self._start, "jobs": jobs, "ran": ran, "steps": self._steps, "decisions": decisions,
                "invalid_actions": invalid_actions, "avebsld": episode_avebsld, "tau": self.reward_fn.tau,
                "makespan": makespan, "jobs_csv": jobs_csv, "simulator": simulator}

    def _stop(self) -> None:
        """Abandon an episode still running (its greenlet ends; partial outputs are closed)."""
        self._lean = None
        self._episode_jobs = None
        run, self._run = self._run, None
        if run is not None and not run.dead:
            run.throw(GreenletExit)


def _machine_size(platform) -> int | None:
    if platform is None:
        return None
    if isinstance(platform, (int, np.integer)):
        return int(platform)
    from ..workloads import read_platform

    return read_platform(platform).nb_hosts


def _estimator(predictor: str):
    from ..config.compose import build_estimator

    return build_estimator(predictor)


register()
