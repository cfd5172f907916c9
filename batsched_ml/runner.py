"""Wiring shared by the CLI, the benchmarks and the tests: build a scheduler from
options, run it in the embedded simulator, compute the metrics."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .core.decision_core import DecisionCore
from .core.scheduler import CALL_MARGIN, EXACT_CALL_MARGIN
from .plugins import load
from .validation import output_prefix
from .workloads import load_workload, read_platform

if TYPE_CHECKING:  # the simulator is imported when one runs: ``serve`` builds its scheduler here without it
    from .simulator.engine import SimulationResult


def build_scheduler(scheduler: str = "easy", policy: str = "fcfs", reservations: str = "count",
                    backfill_order: str = "queue", starvation_threshold: float | None = None, *,
                    predictor: str | None = None, correction: str | None = None,
                    correction_timing: str = "immediate", classifier: str | None = None,
                    kill_false_small: bool = False, seed: int = 0, distribution: str | None = None,
                    **options):
    """Instantiate the scheduler plugin ``scheduler`` with its options.

    ``predictor``/``correction``/``correction_timing`` attach a runtime estimator (see ``predictors``;
    options ``predictor_<param>`` and ``correction_<param>`` go to their constructors);
    ``classifier`` wraps the scheduler in small/large classification (see
    ``classifiers``), killing false-small jobs when ``kill_false_small``.
    """
    from .options import check_option_keys
    from .validation import seed as check_seed

    seed = check_seed(seed)
    check_option_keys(options, scheduler, predictor=predictor, correction=correction, classifier=classifier,
                      distribution=distribution)
    if distribution is not None:  # runtime distributions (--scheduler probabilistic), seeded by --seed
        options.update(distribution=distribution, seed=seed)
    estimator = None
    estimator_options = dict(options.pop("predictor_options", None) or {})
    for key in [k for k in options if k.startswith(("predictor_", "correction_"))]:
        value = options.pop(key)
        estimator_options[key.removeprefix("predictor_")] = value
    if predictor is not None or correction is not None:
        from .predictors import build_estimator

        estimator = build_estimator(predictor or "requested", correction, seed=seed, timing=correction_timing,
                                    **estimator_options)
    elif estimator_options:
        raise ValueError(f"predictor/correction options {sorted(estimator_options)} given without "
                         "--predictor or --correction")
    cls = load("schedulers", scheduler)
    if classifier is not None:
        from .classifiers import build_classification_scheduler

        options.pop("seed", None)  # the wrapper takes --seed, and hands it on to a scheduler that takes one
        return build_classification_scheduler(
            cls, classifier=classifier, kill_false_small=kill_false_small, seed=seed, policy=policy,
            reservations=reservations, backfill_order=backfill_order,
            starvation_threshold=starvation_threshold, estimator=estimator, **options)
    if kill_false_small:
        raise ValueError("--kill-false-small needs --classifier")
    return cls(policy=policy, reservations=reservations, backfill_order=backfill_order,
               starvation_threshold=starvation_threshold, estimator=estimator, **options)


def in_process(core: DecisionCore):
    """The embedded transport: the simulator calls the decision core directly."""

    def exchange(now, events):
        return now, core.handle(now, events)

    return exchange


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


def simulate(platform, workloads, scheduler, prefix=None, *, dynamic_jobs: bool | None = None,
             progress=None, latency=None) -> tuple[SimulationResult, DecisionCore]:
    """Run ``scheduler`` (a Scheduler instance) on a platform file and workload files or dicts.

    ``dynamic_jobs`` defaults to what the scheduler needs (requeueing schedulers need them);
    ``latency`` to Batsim's message timing (``simulator.engine.NO_LATENCY``: exact instants).
    """
    from .simulator.engine import BATSIM_LATENCY, NO_LATENCY, Simulator

    nb_hosts, names, loaded = load_inputs(platform, workloads)
    if dynamic_jobs is None:
        dynamic_jobs = scheduler.may_requeue
    exact = latency is not None and latency == NO_LATENCY
    core = DecisionCore(scheduler, call_margin=EXACT_CALL_MARGIN if exact else CALL_MARGIN)
    sim = Simulator(nb_hosts, loaded, host_names=names, dynamic_jobs=dynamic_jobs, progress=progress,
                    latency=BATSIM_LATENCY if latency is None else latency)
    if prefix is not None:
        output_prefix(prefix)
    result = sim.run(in_process(core), prefix=None if prefix is None else str(prefix))
    return result, core
