"""Without the DP when every running job has one possible end left (point masses): the risks
``point_mass_risks`` gives are the DP's (``ReleaseOutlook.risks``) bit for bit, on random states
with simultaneous ends, candidates wider than the window, several bins per candidate and jobs
whose cores share a divisor (the DP's units)."""

from __future__ import annotations

import numpy as np
import pytest

from batsched_ml.scheduling.release_dp import ReleaseOutlook, point_mass_risks


def random_state(rng):
    n = int(rng.integers(0, 12))
    unit = int(rng.choice([1, 1, 2, 8]))
    cores = unit * rng.integers(1, 9, size=n)
    times = np.sort(rng.choice([10.0, 20.0, 30.0, 45.5, 60.0, 100.0], size=n))  # ties on purpose
    jobs = rng.permutation(n)  # job i's one event is at times[position of i]
    missing = int(rng.integers(1, max(2, int(cores.sum()) + 4)))
    c = int(rng.integers(1, 8))
    sizes = unit * rng.integers(1, 12, size=c)
    bins = int(rng.integers(1, 5))
    q = rng.random((c, bins)) * (rng.random((c, bins)) < 0.8)
    q /= np.maximum(q.sum(axis=1, keepdims=True), 1e-300)
    ends = np.sort(rng.choice([5.0, 10.0, 15.0, 20.0, 30.0, 50.0, 60.0, 200.0], size=(c, bins)), axis=1)
    return times, jobs, cores, missing, sizes, q, ends


@pytest.mark.parametrize("seed", range(300))
def test_point_masses_give_the_dps_risks_exactly(seed):
    times, jobs, cores, missing, sizes, q, ends = random_state(np.random.default_rng(seed))
    dp = ReleaseOutlook(times, jobs, np.ones(len(times)), cores, missing, sizes.tolist())
    expected = dp.risks(sizes, q, ends)  # full sums, no early exit
    got = point_mass_risks(times, jobs, cores, missing, sizes, q, ends)
    assert got.tolist() == expected.tolist()


def test_no_running_job_is_no_risk():
    q, ends = np.ones((2, 1)), np.full((2, 1), 50.0)
    assert point_mass_risks([], [], [], 3, np.array([1, 4]), q, ends).tolist() == [0.0, 0.0]


def test_the_released_cores_decide_as_easy():
    # the head lacks 4 cores; two jobs of 4 cores end at t=10 and t=20: the head starts at 10
    cores, q = [4, 4], np.ones((3, 1))
    ends = np.array([[10.0], [11.0], [11.0]])  # ends when the head starts, or after it
    got = point_mass_risks([10.0, 20.0], [0, 1], cores, 4, np.array([2, 2, 5]), q, ends)
    assert got.tolist() == [0.0, 1.0, 1.0]  # running past 10 on 2 or 5 cores: 4 released < 4 + r
    # both end at 10: 8 cores released, so a 4-core job running on leaves the head its 4, a 5-core one does not
    got = point_mass_risks([10.0, 10.0], [0, 1], cores, 4, np.array([4, 5]), q[:2], ends[1:])
    assert got.tolist() == [0.0, 1.0]
