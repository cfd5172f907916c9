"""Conservative backfilling never leaves a startable job waiting with no event to come (issue 13 §1)."""

from __future__ import annotations

import json

import pytest

from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.simulator.engine import NO_LATENCY

from conftest import DATA


def _run(name, latency=None, **options):
    workload = json.loads((DATA / name).read_text())
    sched = build_scheduler("conservative", **options)
    result, core = simulate(workload["nb_res"], workload, sched, latency=latency)
    return result, core


@pytest.mark.parametrize("reservations", ["count", "cores"])
def test_four_job_case_runs_every_job(reservations):
    """Jobs killed at their walltime end a few microseconds late under Batsim's latencies:
    the queued jobs re-planned then must still all run, in conservative order."""
    result, core = _run("stall-4jobs.workload.json", reservations=reservations)
    assert result.unfinished == []
    jobs = {j.name: j for j in core.jobs.values()}
    assert all(j.start_time >= j.submission_time for j in jobs.values())
    if reservations == "count":
        # 26 (1 core) starts with 24 as soon as 23 frees the machine; 27 (5 cores) after 26
        assert jobs["26"].start_time == pytest.approx(jobs["24"].start_time)
        assert jobs["27"].start_time >= jobs["26"].end_time


@pytest.mark.parametrize("reservations", ["count", "cores"])
def test_spf_starvation_exact_instants_runs_every_job(reservations):
    """Exact instants, SPF with a starvation threshold: a microsecond-stamped clock must not
    push the job whose reservation has begun behind later reservations. Jobs 2 (3,600 s) and
    3 (300 s) arrive together: the counting model reserves for them in queue order (3 first),
    batsched's model in the order they were released (2 first)."""
    result, core = _run("stall-spf-starvation.workload.json", latency=NO_LATENCY, policy="spf",
                        starvation_threshold=5000, reservations=reservations)
    assert result.unfinished == []
    jobs = {j.name: j for j in core.jobs.values()}
    first, second = ("3", "2") if reservations == "count" else ("2", "3")
    # the first one's reservation began when job 1 ended: it starts then, and the others follow it
    assert jobs[first].start_time == pytest.approx(jobs["1"].end_time)
    assert jobs[second].start_time >= jobs[first].end_time
    if reservations == "cores":
        assert jobs["4"].start_time >= jobs["2"].end_time


def test_idle_machine_with_a_future_reservation_asks_to_be_called():
    """A reservation nothing running is planned to end before gets a CALL_ME_LATER."""
    from batsched_ml.core.decision_core import DecisionCore
    from batsched_ml.core.machine import Machine

    sched = build_scheduler("conservative")
    core = DecisionCore(sched)
    core.machine = Machine(4)
    sched.on_simulation_begins(4, core._ctx)
    job = core.new_job("w0!1", {"id": "1", "res": 4, "walltime": 100, "profile": "p"}, 0.0)
    sched.queue.add(job, 0.0)
    # a stale reservation in the future with nothing running: as left by a broken re-plan
    placement = sched.profile.place(job, 50.0, 150.0, 4)
    sched.note_reservation(placement)
    ctx = core._ctx
    ctx.now, ctx.decisions, ctx._calls = 10.0, [], set()
    sched.wake_at_next_reservation(ctx)
    assert [type(d).__name__ for d in ctx.decisions] == ["CallMeLater"]
    assert ctx.decisions[0].at >= 50.0
