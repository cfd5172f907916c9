"""The lazy queue reading and the profile horizons that let an EASY pass skip most of a burst."""

import random

from batsched_ml.core.job import Job
from batsched_ml.core.queue import JobQueue
from batsched_ml.plugins import resolve_policy
from batsched_ml.scheduling.profile import CoreProfile, CountProfile


def _job(seq, res, estimate, subtime=0.0):
    return Job(id=f"w0!{seq}", workload="w0", name=str(seq), subtime=subtime, walltime=estimate, res=res,
               profile="p", data={}, submission_time=subtime, seq=seq, estimate=estimate)


def _queue(policy, rng, n=300):
    queue = JobQueue(resolve_policy(policy))
    jobs = [_job(i, rng.randint(1, 8), float(rng.randint(1, 50))) for i in range(n)]
    for job in jobs:
        queue.add(job, 0.0)
    return queue, jobs


def test_lazy_reading_matches_the_order_while_jobs_leave():
    rng = random.Random(3)
    for policy in ("fcfs", "spf", "saf"):
        queue, _ = _queue(policy, rng)
        expected = queue.ordered(0.0)
        read = []
        for job in queue.iter_ordered(0.0):
            read.append(job)
            if rng.random() < 0.3:
                queue.remove(job)  # started during the pass
        assert read == expected


def test_reading_some_sizes_keeps_the_queue_order_of_those_sizes():
    rng = random.Random(4)
    queue, _ = _queue("spf", rng)
    wanted = {2, 5}
    expected = [j for j in queue.ordered(0.0) if j.res in wanted]
    assert list(queue.iter_ordered(0.0, sizes=sorted(wanted))) == expected
    assert queue.smallest_request() == min(j.res for j in expected + queue.ordered(0.0))


def test_shortest_by_size_leaves_out_the_excluded_job():
    queue = JobQueue(resolve_policy("fcfs"))
    a, b, c = _job(0, 2, 10.0), _job(1, 2, 30.0), _job(2, 3, 5.0)
    for job in (a, b, c):
        queue.add(job, 0.0)
    assert list(queue.shortest_by_size(8)) == [(2, 10.0), (3, 5.0)]
    assert list(queue.shortest_by_size(8, exclude=a)) == [(2, 30.0), (3, 5.0)]
    assert list(queue.shortest_by_size(2, exclude=b)) == [(2, 10.0)]


def test_horizon_bounds_every_fit_now():
    """A job of n cores fits now only if it ends by horizon(n), in both models."""
    rng = random.Random(5)
    for model in (CountProfile, CoreProfile):
        for _ in range(30):
            profile = model(16, 0.0)
            for seq in range(rng.randint(1, 8)):
                job = _job(seq, rng.randint(1, 8), 0.0)
                profile.add_first_fit(job, float(rng.randint(1, 40)))
            horizon = profile.horizons()
            for n in range(1, 17):
                for duration in (0.5, 1.0, 5.0, 10.0, 20.0, 39.0, 80.0):
                    fits = profile.fits_now(_job(99, n, duration), duration) is not None
                    if fits:
                        assert profile.origin + duration <= horizon(n)
                    elif model is CountProfile:
                        assert profile.origin + duration > horizon(n)  # exact for counts
