"""The compiled conservative pass (``scheduling/compression/``) gives the Python pass's schedules.

Both passes run on the same workloads and must start every job at the same instant on
the same cores: random small workloads (arrivals over time, early and late completions,
policies, starvation, a predictor with corrections, Batsim's latencies or exact instants)
and bursts, where the compiled pass's block skipping and sharper bounds do most of the
work (a 600-job burst with a starvation threshold is where a rounding slip once showed).
"""

from __future__ import annotations

import filecmp
import random
from pathlib import Path

import numpy as np
import pytest

from batsched_ml.policies.orders import SPF
from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.scheduling import compression, conservative
from batsched_ml.scheduling.conservative import ConservativeBackfilling
from batsched_ml.scheduling.array_profile import ArrayCountProfile
from batsched_ml.scheduling.core_arrays import ArrayCoreProfile
from batsched_ml.scheduling.profile import CountProfile
from batsched_ml.simulator.engine import NO_LATENCY
from delay_workloads import random_delay_workload

class _Job:
    def __init__(self, seq, res):
        self.seq, self.res = seq, res


def _schedule(workload: dict, compiled, latency=None, **options) -> list:
    sched = build_scheduler("conservative", compiled=compiled, **options)
    assert sched.compiled is compiled
    result, core = simulate(workload["nb_res"], workload, sched, latency=latency)
    assert result.unfinished == []
    return sorted((j.name, j.start_time, str(j.alloc)) for j in core.jobs.values())


@pytest.mark.parametrize("seed", range(60))
def test_compiled_pass_gives_the_python_schedule(seed):
    rng = random.Random(seed)
    cores = rng.choice([4, 8, 16, 64, 200])  # 200: core counts beyond the exact run-cache levels
    burst = rng.random() < 0.4
    workload = random_delay_workload(rng, cores, rng.randint(5, 150), burst)
    options = dict(policy=rng.choice(["fcfs", "spf", "saf", "wfp3"]),
                   starvation_threshold=rng.choice([None, None, 50.0, 20000.0]))
    rng.choice(["queue", "sjbf"])  # was a backfill order, which conservative does not take: same examples
    if rng.random() < 0.3:
        options.update(predictor="ave2", correction="incremental")
    latency = rng.choice([None, NO_LATENCY])
    assert _schedule(workload, True, latency, **options) == _schedule(workload, False, latency, **options)


@pytest.mark.parametrize("options", [{}, {"starvation_threshold": 100000.0}, {"policy": "spf"}])
def test_compiled_burst_writes_the_same_jobs_file(tmp_path, options):
    """600 jobs at one instant on 64 cores: byte-identical jobs CSVs."""
    workload = random_delay_workload(random.Random(0), 64, 600, burst=True)
    for compiled in (True, False):
        simulate(64, workload, build_scheduler("conservative", compiled=compiled, **options),
                 prefix=str(tmp_path / f"run-{compiled}"))
    assert filecmp.cmp(tmp_path / "run-True_jobs.csv", tmp_path / "run-False_jobs.csv", shallow=False)


@pytest.mark.parametrize("seed", range(12))
def test_switching_between_the_passes_keeps_the_schedule(monkeypatch, seed):
    """By default a long queue is planned compiled and a short one in Python: moving the
    reservations between the two (here at 8 and 3 queued jobs) changes nothing."""
    monkeypatch.setattr(conservative, "COMPILED_FROM", 8)
    monkeypatch.setattr(conservative, "COMPILED_UNTIL", 3)
    rng = random.Random(100 + seed)
    workload = random_delay_workload(rng, rng.choice([4, 16]), rng.randint(30, 120), burst=False)
    options = dict(policy=rng.choice(["fcfs", "spf"]), starvation_threshold=rng.choice([None, 50.0]))
    switches = []
    to_arrays = ConservativeBackfilling._to_arrays
    monkeypatch.setattr(ConservativeBackfilling, "_to_arrays", lambda self: switches.append(1) or to_arrays(self))
    assert _schedule(workload, None, **options) == _schedule(workload, False, **options)
    assert switches  # the queue did reach the compiled pass


@pytest.mark.parametrize("seed", range(8))
def test_switching_between_the_core_profiles_keeps_the_schedule(monkeypatch, seed):
    """batsched's model: from ``CoreProfile`` to ``ArrayCoreProfile`` and back (here at 8 and 3
    queued jobs, on any machine) as the queue grows and shrinks, the same schedule as with
    ``CoreProfile`` throughout."""
    monkeypatch.setattr(conservative, "CORES_COMPILED_FROM", 8)
    monkeypatch.setattr(conservative, "CORES_COMPILED_UNTIL", 3)
    monkeypatch.setattr(conservative, "CORES_COMPILED_MACHINE", 1)
    rng = random.Random(200 + seed)
    workload = random_delay_workload(rng, rng.choice([4, 16, 70]), rng.randint(30, 120), burst=False)
    options = dict(policy=rng.choice(["fcfs", "spf"]), reservations="cores")
    switches = []
    from_lists = ArrayCoreProfile.from_lists
    monkeypatch.setattr(ArrayCoreProfile, "from_lists", classmethod(
        lambda cls, profile: switches.append(1) or from_lists(profile)))
    assert _schedule(workload, None, **options) == _schedule(workload, False, **options)
    assert switches  # the queue did reach the compiled profile


def test_compiled_option():
    assert ConservativeBackfilling().compiled is None  # automatic: compiled for long queues
    assert ConservativeBackfilling(reservations="cores").compiled is None  # batsched's model too
    assert ConservativeBackfilling(reservations="cores", compiled=True).compiled is True
    with pytest.raises(ValueError, match="true, false or null"):
        ConservativeBackfilling(compiled="yes")


def test_levels_bound_every_core_count_from_below():
    """A core count's level threshold is at most the count (so a cached run length bounds
    the count's from above), exact up to ``EXACT_LEVELS``."""
    for cores in (1, 64, 128, 129, 1152, 100_000):
        level, thresholds = compression.levels(cores)
        counts = np.arange(cores + 1)
        assert np.all(thresholds[level] <= counts)
        assert np.all(np.diff(thresholds) > 0) and thresholds[-1] == cores
        exact = counts[: compression.EXACT_LEVELS + 1]
        assert np.array_equal(thresholds[level[exact]], exact)


def test_queue_order_kept_between_passes_is_the_queue_order():
    """The seqs array the compiled pass keeps follows arrivals and starts like the queue."""
    rng = random.Random(3)
    workload = random_delay_workload(rng, 8, 120, burst=False)
    sched = ConservativeBackfilling(policy=SPF(), compiled=True)
    seen = []
    original = sched._compiled_pass

    def checked(ctx):
        original(ctx)
        seen.append(len(sched.queue))
        if sched._queue_seqs.keys is not None and len(sched._queue_seqs.keys) == len(sched.queue):
            assert sched._queue_seqs.keys.tolist() == [j.seq for j in sched.queue.ordered(ctx.now)]

    sched._compiled_pass = checked
    simulate(8, workload, sched)
    assert max(seen) > 5  # the queue did grow: the check had something to compare


@pytest.mark.parametrize("seed", range(20))
def test_array_profile_keeps_the_list_profiles_slices(seed):
    """``ArrayCountProfile`` (the compiled pass's slices, kept as arrays between passes)
    does each slice operation as ``CountProfile`` does: same slices after every step of
    random placements, releases and moves of the present, with coinciding boundaries."""
    rng = random.Random(seed)
    cores, now = 16, 0.0
    lists = CountProfile(cores, now)
    arrays = ArrayCountProfile.from_lists(CountProfile(cores, now))
    placed = []
    for step in range(300):
        action = rng.random()
        if action < 0.5 or not placed:
            job = _Job(step, rng.randint(1, cores))
            start = now + rng.choice([0.0, 0.5, 1.0, 2.0, 0.25 * rng.randint(0, 40)])
            end = start + rng.choice([0.5, 1.0, 3.0, 0.25 * rng.randint(1, 40), float("inf")])
            for profile in (lists, arrays):
                profile.place(job, start, end, job.res)
            placed.append(job)
        elif action < 0.85:
            job = placed.pop(rng.randrange(len(placed)))
            for profile in (lists, arrays):
                profile.remove(job)
        else:
            now += rng.choice([0.25, 0.5, 1.0, 2.5])
            for profile in (lists, arrays):
                for job in profile.overdue(now):
                    profile.remove(job)
            placed = [job for job in placed if job in lists]
            for profile in (lists, arrays):
                profile.update_first_slice(now)
        assert arrays.times.tolist() == lists.times and arrays.free.tolist() == lists.free, step
        assert arrays.available_now() == lists.available_now()
    back = arrays.to_lists()
    assert type(back) is CountProfile and back.times == lists.times and back.free == lists.free
    assert back.placed == arrays.placed


def test_a_changed_kernel_source_drops_every_cached_kernel(tmp_path, monkeypatch):
    """numba checks a cached kernel against its own file only, and the kernels call each other
    across files: a change to any source of the package removes all of them from the cache, once
    (``compression._drop_stale_kernels``), and nothing else."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))

    def check():
        monkeypatch.setattr(compression, "_checked", False)
        compression._drop_stale_kernels()

    check()
    (cache,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    (marker,) = cache.glob("kernels-*.sources")
    kernels = [cache / "search.first_window-92.py311.nbi", cache / "passes.run_pass-47.py311.1.nbc"]
    unrelated = cache / "elsewhere.f-10.py311.nbi"
    for path in (*kernels, unrelated):
        path.write_bytes(b"cached")
    check()  # the same sources: the cache stays
    assert all(p.exists() for p in (*kernels, unrelated))
    marker.rename(cache / "kernels-0123456789abcdef.sources")  # written for other sources
    check()
    assert not any(p.exists() for p in kernels) and unrelated.exists()
    assert [p.name for p in cache.glob("kernels-*.sources")] == [marker.name]


@pytest.mark.parametrize("reservations", ["count", "cores"])
def test_compiled_passes_load_numba_without_scipy_linalg(reservations):
    """The compiled conservative passes (``compression.compress``, ``ArrayCoreProfile``) load
    numba as ``release_kernel`` does, without its BLAS probe (``scipy.linalg``, 0.3 CPU s of a
    fresh process); the schedule is the Python pass's and scipy.linalg still imports."""
    import subprocess
    import sys

    script = f"""
import random, sys
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from delay_workloads import random_delay_workload
from batsched_ml.runner import build_scheduler, simulate
workload = random_delay_workload(random.Random(3), 64, 120, True)
def schedule(compiled):
    sched = build_scheduler("conservative", compiled=compiled, reservations={reservations!r})
    _, core = simulate(64, workload, sched)
    return sorted((j.name, j.start_time, str(j.alloc)) for j in core.jobs.values())
assert "numba" not in sys.modules
same = schedule(True) == schedule(False)
print("numba" in sys.modules, "scipy.linalg" in sys.modules, same)
import scipy.linalg.cython_blas
print(scipy.linalg.cython_blas.__name__)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False", "True", "scipy.linalg.cython_blas"]
