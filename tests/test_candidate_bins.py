"""The table of queued jobs' bins that a probabilistic pass reads (``CandidateBins``): its copy of
a static queue order, updated with arrivals and starts between passes, is the queue's own order
(``JobQueue.ordered``), rows given back are taken again, and a job's row holds its bins."""

from __future__ import annotations

import random

import numpy as np
import pytest

from batsched_ml.config.compose import build_policy
from batsched_ml.core.job import Job
from batsched_ml.core.queue import JobQueue
from batsched_ml.scheduling.candidate_bins import CandidateBins


def _job(seq, res, estimate, subtime):
    return Job(id=f"w0!{seq}", workload="w0", name=str(seq), subtime=subtime, walltime=estimate, res=res,
               profile="p", data={}, submission_time=subtime, seq=seq, estimate=estimate)


def _bins(job):
    n = 1 + job.seq % 3
    return np.full(n, 1.0 / n), job.estimate * np.arange(1, n + 1) / n


@pytest.mark.parametrize("policy", ["fcfs", "spf", "saf", "wfp3"])
def test_the_kept_order_is_the_queues_while_jobs_arrive_and_start(policy):
    rng = random.Random(policy)
    queue, table = JobQueue(build_policy(policy)), CandidateBins(3)
    seq, now, longest = 0, 0.0, 0

    def add(job):
        table.add(job, *_bins(job))

    for _ in range(300):  # passes
        now += rng.random()
        for _ in range(rng.randint(0, 4)):  # arrivals since the last pass
            seq += 1
            job = _job(seq, rng.randint(1, 16), float(rng.randint(1, 40)), now)
            queue.add(job, now)
            add(job)
        rows = table.queue_rows(queue, now, add)
        jobs = queue.ordered(now)
        longest = max(longest, len(jobs))
        assert [table.jobs[r] for r in rows.tolist()] == jobs
        assert table.res[rows].tolist() == [j.res for j in jobs]
        for job in jobs:
            masses, ends = _bins(job)
            row = table.row(job)
            assert table.masses[row, :len(masses)].tolist() == masses.tolist()
            assert not table.masses[row, len(masses):].any()
            assert table.last_ends[row] == ends[-1]
        for job in rng.sample(jobs, min(len(jobs), rng.randint(0, 4))):  # starts in the pass
            queue.remove(job)
            table.discard(job)
    assert seq > 2 * longest  # more jobs came than were ever queued at once ...
    assert len(table.last_ends) <= 2 * max(longest, 16)  # ... and the table is the longest queue's size


def test_jobs_queued_without_a_row_get_one_when_the_order_is_read():
    queue, table = JobQueue(build_policy("fcfs")), CandidateBins()
    jobs = [_job(i, 1 + i, 10.0 * (i + 1), float(i)) for i in range(5)]
    for job in jobs:
        queue.add(job, job.subtime)
    rows = table.queue_rows(queue, 5.0, lambda job: table.add(job, *_bins(job)))
    assert [table.jobs[r] for r in rows.tolist()] == jobs
    assert table.masses.shape[1] == 3  # widened to the longest row
