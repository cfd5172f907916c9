"""Wiring shared by the CLI, the benchmarks and the tests: build a scheduler from settings,
run it in the embedded simulator."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .compose import build_scheduler as build
from .config import RunConfig
from .core.decision_core import DecisionCore
from .core.scheduler import CALL_MARGIN, EXACT_CALL_MARGIN
from .validation import output_prefix
from .workloads import load_workload, read_platform

if TYPE_CHECKING:  # the simulator is imported when one runs: ``serve`` builds its scheduler here without it
    from .simulator.engine import SimulationResult


def build_scheduler(scheduler: str = "easy", policy: str | None = None, **settings):
    """The scheduler of a run, from ``RunConfig`` fields given by name (``reservations="cores"``,
    ``predictor="eloss"``, ``seed=3``...); any other keyword is an ``-o`` option
    (``small_threshold=0.35``). The same validation as the command line (``compose.resolve``)."""
    config = RunConfig.from_kwargs(scheduler=scheduler, policy=policy, **settings)
    return build(config)


class InProcess:
    """The embedded transport: the simulator calls the decision core directly (an object, not a
    closure: a snapshot of the run pickles it with the core)."""

    __slots__ = ("core",)

    def __init__(self, core: DecisionCore):
        self.core = core

    def __call__(self, now, events):
        return now, self.core.handle(now, events)


def in_process(core: DecisionCore) -> InProcess:
    return InProcess(core)


def load_inputs(platform, workloads):
    """``(nb_hosts, host_names, [(name, workload dict), ...])`` from a platform file (or a host
    count) and workload files (or dicts); workloads are named ``w0``, ``w1``... as Batsim does,
    and remember their file path (Batsim passes it in SIMULATION_BEGINS)."""
    if isinstance(platform, int):
        nb_hosts, names = platform, None
    else:
        plat = read_platform(platform)
        nb_hosts, names = plat.nb_hosts, plat.host_names
    if not isinstance(workloads, (list, tuple)):
        workloads = [workloads]
    loaded = []
    for i, w in enumerate(workloads):
        data = w if isinstance(w, dict) else load_workload(w)
        if not isinstance(w, dict):
            data = dict(data, source=str(Path(w).resolve()))
        loaded.append((f"w{i}", data))
    return nb_hosts, names, loaded


def prepare(platform, workloads, scheduler, *, dynamic_jobs: bool | None = None, progress=None, latency=None):
    """``(Simulator, DecisionCore)`` of ``scheduler`` on a platform file (or host count) and
    workload files or dicts, ready to ``run`` (see :func:`simulate`)."""
    from .simulator.engine import BATSIM_LATENCY, NO_LATENCY, Simulator

    nb_hosts, names, loaded = load_inputs(platform, workloads)
    if dynamic_jobs is None:
        dynamic_jobs = scheduler.may_requeue
    exact = latency is not None and latency == NO_LATENCY
    core = DecisionCore(scheduler, call_margin=EXACT_CALL_MARGIN if exact else CALL_MARGIN)
    sim = Simulator(nb_hosts, loaded, host_names=names, dynamic_jobs=dynamic_jobs, progress=progress,
                    latency=BATSIM_LATENCY if latency is None else latency)
    return sim, core


def simulate(platform, workloads, scheduler, prefix=None, *, dynamic_jobs: bool | None = None,
             progress=None, latency=None, on_start=None, watch=None) -> tuple[SimulationResult, DecisionCore]:
    """Run ``scheduler`` (a Scheduler instance) on a platform file and workload files or dicts.

    ``dynamic_jobs`` defaults to what the scheduler needs (requeueing schedulers need them);
    ``latency`` to Batsim's message timing (``simulator.engine.NO_LATENCY``: exact instants);
    ``on_start()`` runs once the inputs are read and the output files open (see ``Simulator.run``);
    ``watch``: the run loop's watch (``checkpointing.Checkpointer``: snapshots).
    """
    if prefix is not None:
        output_prefix(prefix)  # before reading the inputs: a bad prefix is told at once
    sim, core = prepare(platform, workloads, scheduler, dynamic_jobs=dynamic_jobs, progress=progress,
                        latency=latency)
    result = sim.run(in_process(core), prefix=None if prefix is None else str(prefix), on_start=on_start,
                     watch=watch)
    return result, core
