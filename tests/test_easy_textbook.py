"""EASY under ``--reservations count`` is textbook EASY (issue 23 §1).

Mu'alem & Feitelson's EASY: at every scheduling point, start the head of the queue while it
fits; give the head a reservation at the *shadow time* (the earliest planned end of running
jobs that frees enough cores for it) with some *extra* cores left over then; then try every
other waiting job, in queue order (or shortest-first for SJBF): it starts if it fits in the
free cores and either ends by the shadow time or needs no more than the extra cores (which it
then uses up). ``TextbookEasy`` below is that rule written from the paper, on core counts,
with none of our profile, queue indexes or search; ours must give the very same jobs file on
random workloads, for every policy, both backfill orders, with and without a starvation
threshold, under Batsim's latencies and with exact instants. The minimized cases of the issue are in ``test_repro_cases.py``.
"""

from __future__ import annotations

import random

import pytest

from batsched_ml.config.compose import build_policy
from batsched_ml.config.plugins import available
from batsched_ml.core.decision_core import DecisionCore
from batsched_ml.core.scheduler import CALL_MARGIN, EXACT_CALL_MARGIN, Scheduler
from batsched_ml.policies.orders import SJBF
from batsched_ml.runner import build_scheduler, in_process, load_inputs
from batsched_ml.simulator.engine import BATSIM_LATENCY, NO_LATENCY, Simulator

POLICIES = list(available("policies"))


class TextbookEasy(Scheduler):
    """EASY with a shadow time and extra cores, recomputed from scratch at every pass."""

    name = "textbook-easy"

    def __init__(self, policy: str, backfill_order: str, starvation_threshold=None):
        self.policy = build_policy(policy)
        self.sjbf = SJBF() if backfill_order == "sjbf" else None
        self.threshold = starvation_threshold
        self.waiting: list = []
        self.planned_end: dict = {}  # running job -> start + walltime

    def on_job_submitted(self, job, ctx):
        self.waiting.append(job)

    def on_job_completed(self, job, ctx):
        del self.planned_end[job]

    def _start(self, job, ctx):
        self.waiting.remove(job)
        ctx.execute(job, ctx.machine.lowest_free(job.res))
        self.planned_end[job] = ctx.now + job.walltime

    def schedule(self, ctx):
        now = ctx.now
        queue = sorted(self.waiting, key=lambda j: (self.policy.key(j, now), j.seq))
        if self.threshold is not None:  # the jobs waiting longer than it go first, oldest first
            starving = []
            for job in sorted(self.waiting, key=lambda j: j.seq):
                if job.submission_time >= now - self.threshold:
                    break
                starving.append(job)
            queue = starving + [j for j in queue if j not in starving]
        free = ctx.machine.nb_free
        while queue and queue[0].res <= free:  # the head starts whenever it fits
            self._start(queue[0], ctx)
            free -= queue.pop(0).res
        if len(queue) < 2:
            return
        head = queue[0]
        ends: dict = {}  # planned end -> cores released then (jobs ending together release together)
        for job, end in self.planned_end.items():
            ends[end] = ends.get(end, 0) + job.res
        shadow, extra = None, 0
        released = free
        for end in sorted(ends):
            released += ends[end]
            if released >= head.res:
                shadow, extra = end, released - head.res
                break
        candidates = queue[1:]
        if self.sjbf is not None:
            candidates.sort(key=lambda j: (self.sjbf.key(j, now), j.seq))
        for job in candidates:
            if job.res > free:
                continue
            ends_by_shadow = now + job.walltime <= shadow
            if ends_by_shadow or job.res <= extra:
                self._start(job, ctx)
                free -= job.res
                if not ends_by_shadow:
                    extra -= job.res


def textbook_workload(rng: random.Random) -> dict:
    """Jobs arriving in clumps (several in one message, some at the same instant), runtimes below
    their walltimes (no job outlives its plan: that rule is the profile's, not the paper's)."""
    cores = rng.choice([4, 8, 16, 32])
    jobs, profiles, t = [], {}, 0.0
    for i in range(rng.randint(5, 60)):
        if rng.random() < 0.5:
            t += rng.choice([0.0, 1.0, 7.0, 50.0 * rng.random()])
        walltime = float(rng.choice([10, 20, 50, 100, 500, 1000, rng.randint(2, 2000)]))
        runtime = round(walltime * rng.uniform(0.05, 0.9), 3)
        profiles[f"d{runtime}"] = {"type": "delay", "delay": runtime}
        jobs.append({"id": rng.randint(0, 10_000) * 100 + i, "subtime": t, "res": rng.randint(1, cores),
                     "walltime": walltime, "profile": f"d{runtime}"})
    rng.shuffle(jobs)  # a message's jobs in any order: the queue order must decide, not the arrival
    return {"nb_res": cores, "jobs": jobs, "profiles": profiles}


def _jobs_file(workload: dict, scheduler, latency, prefix) -> bytes:
    nb_hosts, names, loaded = load_inputs(workload["nb_res"], [workload])
    core = DecisionCore(scheduler, call_margin=EXACT_CALL_MARGIN if latency is NO_LATENCY else CALL_MARGIN)
    result = Simulator(nb_hosts, loaded, host_names=names, latency=latency).run(in_process(core), prefix=str(prefix))
    assert not result.unfinished
    with open(result.jobs_csv, "rb") as f:
        return f.read()


@pytest.mark.parametrize("seed", range(48))
def test_count_easy_is_textbook_easy(tmp_path, seed):
    rng = random.Random(seed)
    workload = textbook_workload(rng)
    policy = POLICIES[seed % len(POLICIES)]
    backfill_order = rng.choice(["queue", "sjbf"])
    threshold = rng.choice([None, None, 0.0, 30.0, 500.0])
    latency = rng.choice([BATSIM_LATENCY, NO_LATENCY])
    ours = _jobs_file(workload, build_scheduler("easy", policy, backfill_order=backfill_order,
                                                starvation_threshold=threshold), latency, tmp_path / "ours")
    textbook = _jobs_file(workload, TextbookEasy(policy, backfill_order, threshold), latency, tmp_path / "textbook")
    assert ours == textbook, f"policy {policy}, backfill order {backfill_order}, starvation threshold {threshold}"
