"""The first-fit searches of the profiles against brute force (issue 13 §2).

``CountProfile._find`` resumes after a slice that breaks a window; ``earlier_fit`` and
``CoreProfile.reinsertion`` answer "where would this reservation move?" without removing
it. Each must give what the plain definitions give, on random profiles, and the
conservative pass that relies on them (with ``NoFitBefore``) the schedule of the plain
pass that re-inserts every job.
"""

from __future__ import annotations

import copy
import random

import pytest

from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.scheduling.conservative import ConservativeBackfilling
from batsched_ml.scheduling.core_profile import CoreProfile
from batsched_ml.scheduling.profile import CountProfile
from batsched_ml.simulator.engine import NO_LATENCY
from delay_workloads import random_delay_workload


class _Job:
    def __init__(self, seq, res):
        self.seq, self.res = seq, res


def _random_profile(rng: random.Random, cores: int, model=CountProfile):
    """A profile with a few running jobs and many first-fit reservations (as a queue leaves
    it), some removed again (holes), times on a coarse grid so that boundaries coincide."""
    now = rng.choice([0.0, 0.5, 7.3])
    profile = model(cores, now)
    jobs = []
    for seq in range(rng.randint(0, 40)):
        job = _Job(seq, rng.randint(1, cores))
        duration = rng.choice([0.1, 1.0, 2.5, 3.0, 10.0, 0.3 * rng.randint(1, 60)])
        used = profile.fits_now(job, duration)
        if rng.random() < 0.3 and used is not None:
            profile.place(job, now, now + duration, used)
        else:
            profile.add_first_fit(job, duration)
        jobs.append((job, duration))
    for job, _ in rng.sample(jobs, len(jobs) // 4):
        profile.remove(job)
    return profile, [(j, d) for j, d in jobs if j in profile]


def _brute_force_find(profile, n, duration):
    """The earliest slice start from which n cores stay free for ``duration``: every start
    tried, every slice of its window read."""
    times, free = profile.times, profile.free
    for i in range(len(times)):
        start = profile.origin if i == 0 else times[i]
        end = start + duration
        if all(free[k] >= n for k in range(i, len(times)) if k == i or times[k] < end):
            return i
    return None


@pytest.mark.parametrize("seed", range(200))
def test_find_is_the_earliest_window(seed):
    rng = random.Random(seed)
    cores = rng.choice([1, 4, 16])
    profile, _ = _random_profile(rng, cores)
    for _ in range(20):
        n = rng.randint(1, cores)
        duration = rng.choice([0.1, 0.3, 1.0, 2.5, 4.0, 30.0, 0.7 * rng.randint(1, 30)])
        expected = _brute_force_find(profile, n, duration)
        assert profile._find(n, duration) == (expected, n)
        first = profile._find(n, duration, first_only=True)
        assert first == ((0, n) if expected == 0 else None)


def _re_placements(rng: random.Random, profile, jobs):
    """For each future reservation in turn (after freeing some cores elsewhere half the time,
    as an early completion or a moved job does): ``(job, duration, reserved, moved)``, where
    ``moved`` is the placement that removing the job and calling ``add_first_fit`` gives, on
    a copy of the profile."""
    rng.shuffle(jobs)
    for job, duration in jobs:
        reserved = profile.placed.get(job)
        if reserved is None or reserved.start <= profile.origin:
            continue
        others = [j for j, _ in jobs if j is not job and j in profile]
        if others and rng.random() < 0.5:
            profile.remove(rng.choice(others))
        reference = copy.deepcopy(profile)
        twin = next(j for j in reference.placed if j.seq == job.seq)
        reference.remove(twin)
        yield job, duration, reserved, reference.add_first_fit(twin, duration)


@pytest.mark.parametrize("seed", range(200))
def test_earlier_fit_is_where_a_re_placement_lands(seed):
    rng = random.Random(1000 + seed)
    cores = rng.choice([2, 4, 16])
    profile, jobs = _random_profile(rng, cores)
    for job, duration, reserved, moved in _re_placements(rng, profile, jobs):
        expected = moved.start if moved.start < reserved.start else None
        assert moved.start <= reserved.start
        assert profile.earlier_fit(job, duration)[0] == expected
        if expected is not None:  # move it as the conservative pass does
            profile.remove(job)
            profile.place(job, expected, expected + duration, job.res)


@pytest.mark.parametrize("seed", range(150))
def test_core_reinsertion_is_what_a_re_placement_gives(seed):
    """batsched's model: same start and same cores, or where and on which cores it lands."""
    rng = random.Random(5000 + seed)
    cores = rng.choice([2, 4, 16])
    profile, jobs = _random_profile(rng, cores, CoreProfile)
    for job, duration, reserved, moved in _re_placements(rng, profile, jobs):
        same = moved.start == reserved.start and moved.used == reserved.used
        assert profile.reinsertion(job, duration) == (None if same else (moved.start, moved.used))
        if not same:
            profile.remove(job)
            profile.place(job, moved.start, moved.start + duration, moved.used)


def test_earlier_fit_refuses_what_it_cannot_answer():
    profile = CountProfile(4, 0.0)
    job = _Job(0, 2)
    profile.place(job, 0.0, 5.0, 2)
    with pytest.raises(ValueError):
        profile.earlier_fit(job, 5.0)  # started: not a future reservation
    later = _Job(1, 4)
    profile.add_first_fit(later, 3.0)
    with pytest.raises(ValueError):
        profile.earlier_fit(later, 4.0)  # placed for another duration


class _ReplanEveryJob(ConservativeBackfilling):
    """The plain conservative pass: every queued job removed and re-inserted at its first fit."""

    def schedule(self, ctx):
        now, profile = ctx.now, self.profile
        self.refresh_profile(now)
        for job in self.pass_candidates(now):
            reserved = profile.placed.get(job)
            profile.remove_if_present(job)
            self.settle(ctx, job, profile.add_first_fit(job, self.span(job)), reserved)
        self.wake_at_next_reservation(ctx)
        self.end_pass(ctx)


def _schedule_of(sched, workload, latency):
    result, core = simulate(workload["nb_res"], workload, sched, latency=latency)
    assert result.unfinished == []
    return sorted((j.name, j.start_time, str(j.alloc)) for j in core.jobs.values())


@pytest.mark.parametrize("seed", range(40))
def test_conservative_pass_equals_re_planning_every_job(seed):
    """Same start times and cores as the plain pass, for random workloads and options (both
    reservation models, policies, starvation, a predictor with corrections, exact instants)."""
    rng = random.Random(seed)
    cores = rng.choice([4, 8, 16])
    workload = random_delay_workload(rng, cores, rng.randint(5, 60))
    options = dict(policy=rng.choice(["fcfs", "spf", "wfp3"]), reservations=rng.choice(["count", "cores"]),
                   starvation_threshold=rng.choice([None, None, 50.0]))
    if rng.random() < 0.3:
        options.update(predictor="ave2", correction="incremental")
    latency = rng.choice([None, NO_LATENCY])
    fast = build_scheduler("conservative", **options)
    plain = build_scheduler("conservative", **options)
    plain.__class__ = _ReplanEveryJob
    assert _schedule_of(fast, workload, latency) == _schedule_of(plain, workload, latency)
