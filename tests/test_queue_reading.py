"""The lazy queue reading and the profile horizons that let an EASY pass skip most of a burst."""

import random

from batsched_ml.config.compose import build_policy
from batsched_ml.core.job import Job
from batsched_ml.core.minindex import MinIndex
from batsched_ml.core.queue import JobQueue
from batsched_ml.policies.orders import SJBF
from batsched_ml.scheduling.core_profile import CoreProfile
from batsched_ml.scheduling.profile import CountProfile


def _job(seq, res, estimate, subtime=0.0):
    return Job(id=f"w0!{seq}", workload="w0", name=str(seq), subtime=subtime, walltime=estimate, res=res,
               profile="p", data={}, submission_time=subtime, seq=seq, estimate=estimate)


def _queue(policy, rng, n=300):
    queue = JobQueue(build_policy(policy))
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


def test_reading_some_sizes_keeps_the_queue_order_of_those_sizes_while_jobs_leave():
    rng = random.Random(6)
    queue, _ = _queue("saf", rng)
    wanted = [1, 3, 4]
    expected = [j for j in queue.ordered(0.0) if j.res in wanted]
    read = []
    for job in queue.iter_ordered(0.0, sizes=wanted):
        read.append(job)
        if rng.random() < 0.5:
            queue.remove(job)
    assert read == expected


def test_reading_some_sizes_keeps_the_queue_order_of_those_sizes():
    rng = random.Random(4)
    queue, _ = _queue("spf", rng)
    wanted = {2, 5}
    expected = [j for j in queue.ordered(0.0) if j.res in wanted]
    assert list(queue.iter_ordered(0.0, sizes=sorted(wanted))) == expected
    assert queue.smallest_request() == min(j.res for j in expected + queue.ordered(0.0))


def test_shortest_by_size_leaves_out_the_excluded_job():
    queue = JobQueue(build_policy("fcfs"))
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
            steps = profile.horizon_steps()
            for n in range(1, profile.available_now() + 1):  # the staircase is the same function
                assert horizon(n) == next(t for hi, t in steps if n <= hi)
            assert not steps or steps[-1][0] == profile.available_now()
            for n in range(1, 17):
                for duration in (0.5, 1.0, 5.0, 10.0, 20.0, 39.0, 80.0):
                    fits = profile.fits_now(_job(99, n, duration), duration) is not None
                    if fits:
                        assert profile.origin + duration <= horizon(n)
                    elif n <= profile.available_now():
                        assert profile.origin + duration > horizon(n)  # exact in both models


def test_min_index_finds_what_a_scan_finds():
    """Random adds, removes and queries against a sorted dict read from the start."""
    rng = random.Random(7)
    for n in (3, 40, 400, 2500):
        index, ref = MinIndex(), {}
        for step in range(n):
            if ref and rng.random() < 0.4:
                key = rng.choice(list(ref))
                index.remove(key)
                del ref[key]
            else:
                key = (rng.randint(0, 5 * n), step)
                value = rng.choice([rng.uniform(0, 100), float(rng.randint(0, 4)), float("inf")])
                index.add(key, value, ("job", key))
                ref[key] = value
            if rng.random() < 0.3:
                keys = sorted(ref)
                limit = rng.choice([rng.uniform(0, 100), 2.0, -1.0, float("inf")])
                after = rng.choice([None, rng.choice(keys) if keys else None, (rng.randint(0, 5 * n), -1)])
                expected = next(((k, ref[k], ("job", k)) for k in keys
                                 if (after is None or k > after) and ref[k] <= limit), None)
                assert index.first(limit, after) == expected
                assert [k for k, _, _ in index] == keys
                assert index.min_value() == min(ref.values(), default=float("inf"))
        assert len(index) == len(ref)


def _first_fitting_by_reading(queue, order, now, max_res, limits, exclude, rejected):
    jobs = queue.ordered(now) if order == "queue" else sorted(
        queue.ordered(now), key=lambda j: ((j.estimate, j.submission_time, j.id), j.seq))
    for job in jobs:
        if job.res <= max_res and job is not exclude and job not in rejected and job.estimate <= limits[job.res]:
            return job
    return None


def test_fit_search_finds_the_first_fitting_job_of_the_pass_order():
    """A pass: limits per size only shrink, found jobs are started (removed) or rejected;
    the search must return what reading the queue in the pass's order returns, for static
    orders, SJBF, and starving jobs first (arrival order)."""
    rng = random.Random(8)
    for trial in range(60):
        policy = rng.choice(["fcfs", "spf", "saf"])
        threshold = rng.choice([None, 30.0])
        order = rng.choice(["queue", "sjbf"])
        queue = JobQueue(build_policy(policy), threshold, backfill_policy=SJBF())
        jobs = [_job(i, rng.randint(1, 8), float(rng.randint(1, 60)), subtime=float(rng.randint(0, 10) * i))
                for i in range(rng.randint(1, 120))]
        jobs.sort(key=lambda j: j.submission_time)
        for job in jobs:
            queue.add(job, job.submission_time)
        now = jobs[-1].submission_time + rng.choice([0.0, 50.0, 500.0])
        exclude = queue.first(now)
        search = queue.fit_search(now, order)
        limits = {res: float(rng.randint(0, 70)) for res in range(1, 9)}
        max_res, rejected = 8, set()
        while True:
            expected = _first_fitting_by_reading(queue, order, now, max_res, limits, exclude, rejected)
            steps = [(res, limits[res]) for res in range(1, max_res + 1)]
            got = search.next(max_res, steps, exclude)
            while got in rejected:  # rejected in another stream (starving jobs): rejected again
                search.reject(got)
                got = search.next(max_res, steps, exclude)
            assert got is expected
            if got is None:
                break
            if rng.random() < 0.2:
                search.reject(got)
                rejected.add(got)
            else:
                queue.remove(got)
            for res in limits:  # starting a job only shrinks what fits
                limits[res] = min(limits[res], limits[res] - rng.choice([0, 0, 5]))
            max_res = max(1, max_res - rng.choice([0, 1]))


def test_dynamic_orders_sorted_once_per_instant_stay_exact():
    """WFP3 / UNICEF: the head and the order at each instant, as jobs come and go."""
    rng = random.Random(9)
    for policy in ("wfp3", "unicef"):
        queue, jobs, now = JobQueue(build_policy(policy)), [], 0.0
        key = queue.policy.key
        for step in range(300):
            now += rng.choice([0.0, 0.0, 7.0, 60.0])
            if jobs and rng.random() < 0.4:
                queue.remove(jobs.pop(rng.randrange(len(jobs))))
            else:
                job = _job(step, rng.randint(1, 8), float(rng.randint(1, 500)), subtime=now)
                queue.add(job, now)
                jobs.append(job)
            expected = sorted(jobs, key=lambda j: (key(j, now), j.seq))
            assert queue.ordered(now) == expected
            assert queue.first(now) is (expected[0] if expected else None)


def test_some_jobs_in_queue_order():
    """``in_queue_order`` (a pass's new arrivals) sorts a subset as ``ordered`` places it: static,
    dynamic, and with starving jobs (arrival order first) that arrived out of time order."""
    rng = random.Random(12)
    for policy in ("fcfs", "spf", "saf", "wfp3"):
        for threshold in (None, 0.0, 100.0):
            queue, jobs = JobQueue(build_policy(policy), threshold), []
            for i in range(200):
                job = _job(i, rng.randint(1, 8), float(rng.randint(1, 50)), subtime=float(rng.randint(0, 400)))
                queue.add(job, job.subtime)
                jobs.append(job)
            for now in (0.0, 250.0, 600.0):
                order = queue.ordered(now)
                some = rng.sample(jobs, 30)
                assert queue.in_queue_order(some, now) == [j for j in order if j in set(some)]


def test_the_compiled_pass_order_follows_a_rekeyed_job():
    """``rekey`` (the classification's probe_after) moves a queued job in a static order: the copy
    of the order that conservative's compiled pass keeps between passes must follow it."""
    from batsched_ml.scheduling.conservative import QueueSeqs

    queue, order = JobQueue(build_policy("spf")), QueueSeqs()
    jobs = [_job(i, 1, float(10 + i)) for i in range(5)]
    for job in jobs:
        queue.add(job, 0.0)
        order.add(job)
    assert list(order.current(queue, 0.0)) == [0, 1, 2, 3, 4]
    jobs[4].estimate = 1.0
    queue.rekey(jobs[4], 1.0)
    assert list(order.current(queue, 1.0)) == [j.seq for j in queue.ordered(1.0)] == [4, 0, 1, 2, 3]


def test_a_pass_reads_the_spans_of_its_jobs_as_span_gives_them():
    """``ReservingScheduler.spans`` (a conservative pass in batsched's model reads the whole
    queue's spans at once): each job's ``span``, bit for bit, with and without the RJMS delay,
    in the order of the jobs given."""
    from batsched_ml.scheduling.conservative import ConservativeBackfilling

    rng = random.Random(5)
    jobs = [_job(i, 1, rng.choice([1.0, 0.1, 7.3, 86400.0, rng.uniform(1, 1e5)])) for i in range(200)]
    for reservations, delay in (("cores", None), ("cores", 0.3), ("count", None)):
        scheduler = ConservativeBackfilling(reservations=reservations, rjms_delay=delay)
        spans = scheduler.spans(jobs)
        assert [float(s) for s in spans] == [scheduler.span(job) for job in jobs]
    assert len(ConservativeBackfilling().spans([])) == 0
