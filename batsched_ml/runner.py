"""Wiring shared by the CLI, the benchmarks and the tests: build a scheduler from settings,
run it in the embedded simulator."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .config.compose import build_scheduler as build
from .config.declare import RunConfig
from .config.validate import output_prefix
from .core.decision_core import DecisionCore
from .core.scheduler import CALL_MARGIN, EXACT_CALL_MARGIN
from .protocol import events as ev
from .workloads import load_workload, read_platform, sample_path

if TYPE_CHECKING:  # the simulator is imported when one runs: ``serve`` builds its scheduler here without it
    from .simulator.engine import SimulationResult


def build_scheduler(scheduler: str | None = None, policy: str | None = None, **settings):
    """The scheduler of a run, from ``RunConfig`` fields given by name (``reservations="cores"``,
    ``predictor="eloss"``, ``seed=3``, ``preset="easy++"``...; the scheduler ``easy`` unless given or
    preset); any other keyword is an ``-o`` option (``small_threshold=0.35``). The same validation
    as the command line (``config.resolve``)."""
    config = RunConfig.from_kwargs(scheduler=scheduler, policy=policy, **settings)
    return build(config)


class InProcess:
    """The embedded transport: the simulator calls the decision core directly (an object, not a
    closure: a snapshot of the run pickles it with the core).

    ``acknowledged``: Batsim answers each job the core registers with a JOB_SUBMITTED (Batsim 5's
    ``acknowledge_dynamic_jobs``); like the v5 codec of ``serve``, the transport consumes that
    acknowledgement (the core submitted the job when it registered it) and passes the rest on."""

    __slots__ = ("core", "acknowledged", "unacknowledged")

    def __init__(self, core: DecisionCore, acknowledged: bool = False):
        self.core, self.acknowledged, self.unacknowledged = core, acknowledged, set()

    def __call__(self, now, events):
        unacknowledged = self.unacknowledged
        if unacknowledged:
            events = [e for e in events if not (type(e) is ev.JobSubmitted and e.job_id in unacknowledged
                                                and not unacknowledged.discard(e.job_id))]
        decisions = self.core.handle(now, events)
        if self.acknowledged:
            unacknowledged.update(d.job_id for d in decisions if type(d) is ev.RegisterJob)
        return now, decisions


def in_process(core: DecisionCore, acknowledged: bool = False) -> InProcess:
    return InProcess(core, acknowledged)


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
            data = dict(data, source=str(Path(sample_path(w)).resolve()))
        loaded.append((f"w{i}", data))
    return nb_hosts, names, loaded


def prepare(platform, workloads, scheduler, *, dynamic_jobs: bool | None = None, progress=None, latency=None,
            batsim=4):
    """``(Simulator, DecisionCore)`` of ``scheduler`` on a platform file (or host count) and
    workload files or dicts, ready to ``run`` with ``transport(sim, core)`` (see ``simulate``)."""
    from .simulator.engine import BATSIM_LATENCY, NO_LATENCY, Simulator
    from .simulator.lines import line_of

    line = line_of(batsim)
    nb_hosts, names, loaded = load_inputs(platform, workloads)
    if dynamic_jobs is None:
        dynamic_jobs = scheduler.may_requeue
    profile_reuse = acknowledged = False
    if line.major == 5:  # the features serve --batsim 5 asks for in its hello
        from .protocol.v5.handshake import features_for

        features = features_for(dynamic_jobs)
        dynamic_jobs, profile_reuse = features.dynamic_registration, features.profile_reuse
        acknowledged = features.acknowledge_dynamic_jobs
    exact = latency is not None and latency == NO_LATENCY
    core = DecisionCore(scheduler, call_margin=EXACT_CALL_MARGIN if exact else CALL_MARGIN)
    sim = Simulator(nb_hosts, loaded, host_names=names, dynamic_jobs=dynamic_jobs, profile_reuse=profile_reuse,
                    progress=progress, latency=BATSIM_LATENCY if latency is None else latency, line=line,
                    acknowledge_dynamic_jobs=acknowledged)
    return sim, core


def transport(sim, core: DecisionCore) -> InProcess:
    """The in-process transport of a run ``prepare`` built (acknowledging what its Batsim line does)."""
    return InProcess(core, sim.acknowledge_dynamic_jobs)


def simulate(platform, workloads, scheduler, prefix=None, *, dynamic_jobs: bool | None = None,
             progress=None, latency=None, on_start=None, watch=None, batsim=4) -> tuple[SimulationResult, DecisionCore]:
    """Run ``scheduler`` (a Scheduler instance) on a platform file and workload files or dicts.

    ``dynamic_jobs`` defaults to what the scheduler needs (requeueing schedulers need them);
    ``latency`` to Batsim's message timing (``simulator.engine.NO_LATENCY``: exact instants);
    ``batsim``: the Batsim line to behave like, 4 (4.2.1) or 5 (5.0.0-rc2: the scheduler then asks
    for the features ``serve --batsim 5`` asks for: dynamic registration with acknowledgements
    when it requeues); ``on_start()`` runs once the inputs are read and the output files open
    (see ``Simulator.run``); ``watch``: the run loop's watch (``checkpointing.Checkpointer``:
    snapshots; Batsim 4.2.1 runs only).
    """
    from .simulator.lines import line_of

    if prefix is not None:
        output_prefix(prefix, separator=line_of(batsim).file_separator)  # before reading the inputs: told at once
    sim, core = prepare(platform, workloads, scheduler, dynamic_jobs=dynamic_jobs, progress=progress,
                        latency=latency, batsim=batsim)
    result = sim.run(transport(sim, core), prefix=None if prefix is None else str(prefix), on_start=on_start,
                     watch=watch)
    return result, core
