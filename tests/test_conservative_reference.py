"""Our conservative backfilling against an independent one (``benchmarks/conservative_reference.py``).

The reference is a short event loop written from the algorithm's definition (Mu'alem &
Feitelson): every queued job holds a reservation at its earliest fit, all of them re-placed
in queue order when a job ends (or a reservation's start has come), the new arrivals alone
(in queue order too) otherwise. It shares no code with the schedulers. On random workloads
our scheduler (counting model, exact instants, FCFS) must start every job at the same
instant. Before jobs arriving together were placed in queue order, 124 of 300 such
workloads differed.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def integer_workload(rng: random.Random, cores: int, nb_jobs: int) -> dict:
    """Whole seconds, as in the traces (the reference keeps exact floats, our simulator a
    microsecond clock): clumped arrivals, many at one instant; jobs that end long before
    their walltime (compressions), exactly at it, or are killed at it."""
    jobs, profiles, t = [], {}, 0
    for i in range(nb_jobs):
        if rng.random() < 0.5:
            t += rng.choice([0, 1, 17, rng.randint(0, 300)])
        runtime = rng.randint(1, 600)
        walltime = max(1, int(runtime * rng.choice([0.5, 1.0, 1.0, 2.0, 5.0])))
        profiles[f"d{runtime}"] = {"type": "delay", "delay": runtime}
        jobs.append({"id": i, "subtime": t, "res": rng.randint(1, cores), "walltime": walltime,
                     "profile": f"d{runtime}"})
    return {"nb_res": cores, "jobs": jobs, "profiles": profiles}


def _reference():
    spec = importlib.util.spec_from_file_location("conservative_reference",
                                                  ROOT / "benchmarks/conservative_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", range(60))
def test_conservative_starts_every_job_when_the_reference_does(seed):
    ref = _reference()
    rng = random.Random(seed)
    cores = rng.choice([4, 8, 16, 64])
    workload = integer_workload(rng, cores, rng.randint(5, 150))
    jobs = ref.window_jobs(workload)
    assert ref.ours(jobs, workload, cores, "conservative") == ref.conservative(jobs, cores)


def test_reference_conservative_waits_where_easy_backfills():
    """The mechanism behind conservative's higher AVEbsld: EASY protects only the head's
    reservation, conservative every queued job's. "short" arrives when a core is idle and
    would end long before the head (``wide``) can start; under conservative a queued job
    (``second``) already holds that core from t=20 to 80 and the head the whole machine
    from 100 to 150: the first hole is at 150."""
    ref = _reference()
    jobs = [{"name": "A", "subtime": 0.0, "res": 2, "runtime": 100.0, "walltime": 100.0},
            {"name": "B", "subtime": 0.0, "res": 1, "runtime": 20.0, "walltime": 20.0},
            {"name": "wide", "subtime": 1.0, "res": 4, "runtime": 50.0, "walltime": 50.0},
            {"name": "second", "subtime": 2.0, "res": 2, "runtime": 60.0, "walltime": 60.0},
            {"name": "short", "subtime": 3.0, "res": 1, "runtime": 30.0, "walltime": 30.0}]
    conservative, easy = ref.conservative(jobs, 4), ref.easy(jobs, 4)
    assert (easy["short"], easy["second"], easy["wide"]) == (3.0, 33.0, 100.0)
    assert (conservative["short"], conservative["second"], conservative["wide"]) == (150.0, 20.0, 100.0)
    assert ref.avebsld(jobs, conservative) > ref.avebsld(jobs, easy)
