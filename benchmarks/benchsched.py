"""What the scheduling benchmarks share: ``simulate``'s scheduler flags and a timed run with an
optional cProfile report."""

from __future__ import annotations

import cProfile
import pstats
import time

from batsched_ml.config.compose import build_scheduler
from batsched_ml.config.declare import RunConfig, add_arguments
from batsched_ml.config.resolve import resolve


def add_scheduler_arguments(parser) -> None:
    """``simulate``'s scheduler flags, from their one declaration (``batsched_ml.config.declare``); the
    benchmarks' own ``--seed`` seeds their generated workload (the scheduler's seed stays 0)."""
    add_arguments(parser.add_argument_group("scheduler"), exclude=("seed",))


def scheduler_from(args):
    """The scheduler the flags describe, resolved as by ``simulate``; ``args.config`` is set to
    the resolved ``RunConfig`` (its fields: what the run used, defaults included)."""
    args.config = resolve(RunConfig.from_args(args))
    return build_scheduler(args.config)


def timed(run, profile: bool = False):
    """``(run(), wall s, CPU s)``; with ``profile``, print the 25 costliest calls afterwards."""
    profiler = cProfile.Profile() if profile else None
    t0, c0 = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    result = run()
    if profiler:
        profiler.disable()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return result, wall, cpu
