"""The embedded simulator against real Batsim + batsched runs, and Batsim's rules."""

from __future__ import annotations

import csv
import gzip

import pytest

from batsched_ml.core.decision_core import DecisionCore
from batsched_ml.core.scheduler import Scheduler
from batsched_ml.protocol import events as ev
from batsched_ml.protocol.coreset import CoreSet
from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.simulator.engine import NO_LATENCY, SimulationError, Simulator

from conftest import DATA


def _rows(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return {r["job_id"]: r for r in csv.DictReader(f)}


def _share_within(ours, golden, tolerance=5.0):
    assert set(ours) == set(golden)
    close = sum(abs(float(ours[k]["starting_time"]) - float(golden[k]["starting_time"])) <= tolerance
                for k in golden)
    return close / len(golden)


@pytest.mark.parametrize("scheduler,policy,variant", [
    ("fcfs", "fcfs", "fcfs"),
    ("easy", "fcfs", "easy"),
    ("easy", "spf", "easy_spf"),
    ("conservative", "fcfs", "conservative"),
])
def test_kth5k_matches_real_batsim(shared, tmp_path, scheduler, policy, variant):
    """Every job within 5 s of real Batsim + batsched, and nearly all to Batsim's own latencies
    (50 us): only SimGrid's float rounding of exact ties can tell the two apart."""
    golden = shared / "golden"
    # batsched's model (cores reservations) for the backfilling ones; fcfs reserves nothing
    sched = build_scheduler(scheduler, policy, **({} if scheduler == "fcfs" else {"reservations": "cores"}))
    result, _ = simulate(golden / "platform-100.xml", golden / "KTH-5k.json.gz", sched, prefix=tmp_path / "o")
    ours = _rows(result.jobs_csv)
    gold = _rows(golden / "outputs" / f"KTH-5k.{variant}_jobs.csv.gz")
    assert _share_within(ours, gold) == 1.0
    assert _share_within(ours, gold, 5e-5) >= 0.99
    assert [ours[k]["final_state"] for k in gold] == [gold[k]["final_state"] for k in gold]


def test_tiny_messages_match_the_real_transcript():
    """Our simulator sends batsched the very messages real Batsim sent it: same dates (to the
    microsecond Batsim prints) and the same events, message by message."""
    import json

    golden = []
    for line in (DATA / "transcripts" / "tiny-easy_bf.log").read_text().splitlines():
        who, _, payload = line.partition(" ")
        if who == "BATSIM":
            message = json.loads(payload)
            golden.append((message["now"], sorted((e["type"], e["data"].get("job_id", "")) for e in message["events"])))
    core = DecisionCore(build_scheduler("easy", "fcfs", reservations="cores"))
    ours = []

    def exchange(now, events):
        ours.append((now, sorted((e.type, getattr(e, "job_id", "")) for e in events)))
        return now, core.handle(now, events)

    from batsched_ml.runner import load_inputs

    nb_hosts, names, loaded = load_inputs(DATA / "platform-16.xml", DATA / "tiny.json.gz")
    Simulator(nb_hosts, loaded, host_names=names).run(exchange)
    assert len(ours) == len(golden)
    for (t_gold, events_gold), (t_ours, events_ours) in zip(golden, ours):
        assert t_ours == pytest.approx(t_gold, abs=5e-7)
        assert events_ours == events_gold


def test_tiny_matches_batsched_exactly(tmp_path):
    """60 jobs on 16 cores: every start time within 0.01 s and the same cores as batsched."""
    sched = build_scheduler("easy", "fcfs", reservations="cores")
    result, _ = simulate(DATA / "platform-16.xml", DATA / "tiny.json.gz", sched, prefix=tmp_path / "o")
    ours, gold = _rows(result.jobs_csv), _rows(DATA / "tiny.easy_jobs.csv")
    assert set(ours) == set(gold)
    for k in gold:
        assert abs(float(ours[k]["starting_time"]) - float(gold[k]["starting_time"])) < 0.01, k
        assert ours[k]["allocated_resources"] == gold[k]["allocated_resources"], k


def test_jobs_csv_is_deterministic(tmp_path):
    paths = []
    for i in range(2):
        sched = build_scheduler("easy", "wfp3")
        result, _ = simulate(DATA / "platform-16.xml", DATA / "tiny.json.gz", sched, prefix=tmp_path / f"r{i}")
        paths.append(result.jobs_csv)
    assert open(paths[0], "rb").read() == open(paths[1], "rb").read()


def test_output_columns_are_batsims(tmp_path):
    sched = build_scheduler("fcfs")
    result, _ = simulate(DATA / "platform-16.xml", DATA / "tiny.json.gz", sched, prefix=tmp_path / "o")
    header = open(result.jobs_csv).readline()
    assert header == open(DATA / "tiny.easy_jobs.csv").readline()
    sched_header = open(result.schedule_csv).readline().strip().split(",")
    assert sched_header == open(DATA / "tiny.easy_schedule.csv").readline().strip().split(",")


def _workload(jobs, profiles=None):
    profiles = profiles or {f"d{j['delay']}": {"type": "delay", "delay": j["delay"]} for j in jobs}
    return {"nb_res": 4, "profiles": profiles,
            "jobs": [{"id": j["id"], "subtime": j.get("subtime", 0), "walltime": j.get("walltime", 100),
                      "res": j.get("res", 1), "profile": f"d{j['delay']}"} for j in jobs]}


class Recorder(Scheduler):
    """Runs every job at once on the lowest cores and records the messages it gets."""

    def __init__(self, actions=None):
        self.messages = []
        self.actions = actions or {}

    def on_job_submitted(self, job, ctx):
        self.messages.append((ctx.now, "submitted", job.id))
        ctx.execute(job, ctx.machine.lowest_free(job.res))

    def on_job_completed(self, job, ctx):
        self.messages.append((ctx.now, job.final_state, job.id))

    def on_job_killed(self, job, progress, ctx):
        self.messages.append((ctx.now, "killed", job.id, progress))

    def on_requested_call(self, ctx):
        self.messages.append((ctx.now, "call"))
        action = self.actions.get("call")
        if action:
            action(ctx)

    def schedule(self, ctx):
        action = self.actions.pop(("at", ctx.now), None)
        if action:
            action(ctx)


def _run(workload, scheduler, latency=NO_LATENCY, dynamic=False):
    core = DecisionCore(scheduler)
    sim = Simulator(4, [("w0", workload)], latency=latency, dynamic_jobs=dynamic)
    return sim.run(lambda now, events: (now, core.handle(now, events))), core


def test_walltime_kill_also_when_delay_equals_walltime():
    rec = Recorder()
    _run(_workload([{"id": 1, "delay": 10, "walltime": 10}, {"id": 2, "delay": 30, "walltime": 20},
                    {"id": 3, "delay": 5, "walltime": 20}]), rec)
    ends = {m[2]: (m[0], m[1]) for m in rec.messages if m[1] != "submitted"}
    assert ends["w0!1"] == (10, ev.COMPLETED_WALLTIME_REACHED)
    assert ends["w0!2"] == (20, ev.COMPLETED_WALLTIME_REACHED)
    assert ends["w0!3"] == (5, ev.COMPLETED_SUCCESSFULLY)


def test_kill_answers_completed_then_killed_in_one_message_and_race():
    """A running job gets JOB_COMPLETED(KILLED) then JOB_KILLED with progress; a finished one, no progress."""
    batches = []
    rec = Recorder({("at", 0.0): lambda ctx: ctx.call_me_later(4.0),
                    "call": lambda ctx: (ctx.kill(ctx.jobs["w0!1"]), ctx.kill(ctx.jobs["w0!2"]))})
    core = DecisionCore(rec)

    def exchange(now, events):
        batches.append([type(e).__name__ for e in events])
        return now, core.handle(now, events)

    Simulator(4, [("w0", _workload([{"id": 1, "delay": 10}, {"id": 2, "delay": 4}]))],
              latency=NO_LATENCY).run(exchange)
    assert any(b[:2] == ["JobCompleted", "JobKilled"] for b in batches)
    killed = [m for m in rec.messages if m[1] == "killed"]
    assert ("w0!1" in [m[2] for m in killed]) and ("w0!2" in [m[2] for m in killed])
    progress = {m[2]: m[3] for m in killed}
    assert progress["w0!1"] == pytest.approx(0.4)
    assert progress["w0!2"] is None  # it finished at 4 s, as the kill was sent


def test_call_me_later_must_be_in_the_future():
    class Bad(Recorder):
        def schedule(self, ctx):
            ctx.decisions.append(ev.CallMeLater(ctx.now, ctx.now))

    with pytest.raises(SimulationError, match="strictly after"):
        _run(_workload([{"id": 1, "delay": 1}]), Bad())


def test_busy_core_allocation_is_refused():
    class Clash(Recorder):
        def on_job_submitted(self, job, ctx):
            ctx.decisions.append(ev.ExecuteJob(ctx.now, job.id, CoreSet(1)))

    with pytest.raises(SimulationError, match="busy"):
        _run(_workload([{"id": 1, "delay": 5}, {"id": 2, "delay": 5}]), Clash())


def test_requeue_as_dynamic_job_and_registration(tmp_path):
    """Kill w0!1 at 3 s, requeue it as w0!1#1 on a fresh profile: a separate row, nothing lost."""

    class Requeuer(Recorder):
        may_requeue = True

        def __init__(self):
            super().__init__({("at", 0.0): lambda ctx: ctx.call_me_later(3.0),
                              "call": lambda ctx: ctx.kill(ctx.jobs["w0!1"])})
            self.done = False

        def on_job_killed(self, job, progress, ctx):
            super().on_job_killed(job, progress, ctx)
            if progress is not None:
                ctx.requeue(job)
            self.done = True

        def registration_finished(self):
            return self.done

    core = DecisionCore(Requeuer())
    sim = Simulator(4, [("w0", _workload([{"id": 1, "delay": 10}]))], latency=NO_LATENCY, dynamic_jobs=True)
    sim.run(lambda now, events: (now, core.handle(now, events)), prefix=str(tmp_path / "r"))
    rows = _rows(tmp_path / "r_jobs.csv")
    assert rows["1"]["final_state"] == "COMPLETED_KILLED"
    assert rows["1#1"]["final_state"] == "COMPLETED_SUCCESSFULLY"
    assert rows["1#1"]["profile"] == "d10#1"
    assert float(rows["1#1"]["submission_time"]) == 3.0


def test_requeueing_scheduler_refuses_batsim_without_dynamic_jobs():
    class Requeuer(Recorder):
        may_requeue = True

    with pytest.raises(Exception, match="enable-dynamic-jobs"):
        _run(_workload([{"id": 1, "delay": 1}]), Requeuer())


def test_oversized_and_walltimeless_jobs_are_rejected_with_a_reason(tmp_path):
    workload = _workload([{"id": 1, "delay": 5, "res": 9}, {"id": 2, "delay": 5}])
    workload["jobs"].append({"id": 3, "subtime": 0, "res": 1, "profile": "d5"})  # no walltime
    sched = build_scheduler("easy")
    result, core = simulate(4, workload, sched, prefix=tmp_path / "o")
    rows = _rows(result.jobs_csv)
    assert set(rows) == {"1", "2", "3"}
    assert rows["1"]["final_state"] == "REJECTED" and rows["3"]["final_state"] == "REJECTED"
    reasons = dict(core.rejected)
    assert "machine has 4" in reasons["w0!1"] and "walltime" in reasons["w0!3"]


def test_batsim_latency_model_times(tmp_path):
    """With Batsim's latencies a job submitted at t starts at t + 0.0003 like in the golden runs."""
    sched = build_scheduler("fcfs")
    result, _ = simulate(4, _workload([{"id": 1, "delay": 5, "subtime": 10}]), sched, prefix=tmp_path / "o")
    row = _rows(result.jobs_csv)["1"]
    assert row["starting_time"] == "10.000300"
    assert row["finish_time"] == "15.000300"
