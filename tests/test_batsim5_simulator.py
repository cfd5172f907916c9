"""The embedded simulator's Batsim 5 mode (``--batsim 5``) against the real Batsim 5.0.0-rc2.

The references are rc2's own runs (``tests/data/golden-v5``, copied from ``../shared/golden-v5``):
its jobs and schedule files, and every frame it sent in three recorded exchanges (``now`` and
event timestamps to the 12 decimals Batsim prints). KTH-5k's files stay in the shared folder.
"""

from __future__ import annotations

import csv
import gzip
import json
from dataclasses import replace

import pytest

from batsched_ml import cli
from batsched_ml.api import QUEUED, Scheduler
from batsched_ml.core.decision_core import DecisionCore
from batsched_ml.protocol import events as ev
from batsched_ml.protocol.coreset import CoreSet
from batsched_ml.protocol.v5.envelope import printed  # a date as rc2 prints it in JSON, read back
from batsched_ml.runner import build_scheduler, load_inputs, simulate
from batsched_ml.simulator.actors import Latency
from batsched_ml.simulator.engine import BATSIM_5, SimulationError, Simulator
from batsched_ml.workloads import load_workload

from conftest import DATA

GOLDEN5 = DATA / "golden-v5"
V5 = GOLDEN5 / "workloads"
OUT5 = GOLDEN5 / "outputs"
PLATFORM16 = DATA / "platform-16.xml"
# the names Batsim 5 gives the typed events the simulator sends
EVENT_NAMES = {ev.SimulationBegins: "SimulationBeginsEvent", ev.JobSubmitted: "JobSubmittedEvent",
               ev.JobCompleted: "JobCompletedEvent", ev.SimulationEnds: "SimulationEndsEvent",
               ev.RequestedCall: "RequestedCallEvent", ev.JobKilled: "JobsKilledEvent",
               ev.Notify: "AllStaticJobsHaveBeenSubmittedEvent"}


def _frames(name):
    return [json.loads(line) for line in (GOLDEN5 / "frames" / f"{name}.frames.jsonl").read_text().splitlines()]


class Recorder:
    """Wraps a scheduler callable, keeps each message as Batsim 5 would name it, and dates the
    reply as a JSON-mode EDC does: it read ``now`` from the 12 decimals rc2 printed and echoes
    that (rc2 then waits the sliver by which it may be later than its clock)."""

    def __init__(self, scheduler):
        self.scheduler, self.frames = scheduler, []

    def __call__(self, now, events):
        self.frames.append({"now": now, "events": [
            [e.timestamp, EVENT_NAMES[type(e)], getattr(e, "job_id", None) or ",".join(getattr(e, "job_ids", []))]
            for e in events]})
        read = printed(now)
        _, decisions = self.scheduler(read, events)
        return read, [replace(d, timestamp=read) for d in decisions]


def _assert_same_frames(ours, gold):
    """Same messages, same events (type, job), every date as rc2 printed it."""
    assert len(ours) == len(gold)
    for i, (o, g) in enumerate(zip(ours, gold)):
        # a RequestedCallEvent names its call (the typed event does not): compare the types only
        assert [e[1:] for e in o["events"]] == [[e[1], "" if e[1] == "RequestedCallEvent" else e[2]]
                                                for e in g["events"]], i
        assert printed(o["now"]) == g["now"], (i, o, g)
        assert [printed(a[0]) for a in o["events"]] == [b[0] for b in g["events"]], (i, o, g)


def _no_version(path):
    return [line for line in open(path) if '"batsim_version"' not in line]


# ------------------------------------------------------------------ SimGrid 4.0's kernel
def _run_kernel(*actors):
    from batsched_ml.simulator.kernel import Kernel

    kernel = Kernel()
    for code in actors:
        kernel.start(code(kernel))
    kernel.run()
    return kernel


def test_actions_ending_within_a_nanosecond_end_together_in_creation_order():
    """SimGrid's precision/timing: a sleep left with less than 1 ns ends in the same step as the
    one that set the clock; the actions of a step end in the order they were created."""
    from batsched_ml.simulator.kernel import sleep

    for late, together in ((5e-10, True), (2e-9, False)):
        woke = []

        def sleeper(name, duration):
            def code(kernel):
                yield from sleep(duration)
                woke.append((name, kernel.now))
            return code

        _run_kernel(sleeper("first", 1.0 + late), sleeper("second", 1.0))
        if together:
            assert woke == [("first", 1.0), ("second", 1.0)]
        else:
            assert woke == [("second", 1.0), ("first", 1.0 + late)]


def test_a_message_is_in_the_mailbox_once_its_sub_round_is_over():
    """Actors woken together run, then their simcalls are handled: a receiver running after a
    sender in the same sub-round still finds the mailbox empty, and finds the message after."""
    from batsched_ml.simulator.kernel import Route, receive, send, sleep, spawn

    seen = []

    def sender(kernel):
        yield from sleep(1.0)
        yield from send("m", "x", Route(1e-4, 8e-9))

    def receiver(kernel):
        yield from sleep(1.0)
        seen.append(kernel.mailbox_empty("m"))
        yield from spawn(sleep(0))  # a simcall: the receiver runs again in the next sub-round
        seen.append(kernel.mailbox_empty("m"))
        yield from receive("m")

    _run_kernel(sender, receiver)  # the sender was created first: it runs first
    assert seen == [True, False]


def test_a_message_takes_its_latency_then_its_byte():
    """Two steps, two roundings: rc2's first loopback message arrives at 0.000100008 exactly as
    SimGrid's double clock says it."""
    from batsched_ml.simulator.kernel import Route, receive, send

    got = []

    def sender(kernel):
        yield from send("m", "hello", Route(1e-4, 8e-9))

    def receiver(kernel):
        got.append((yield from receive("m")))
        got.append(kernel.now)

    _run_kernel(sender, receiver)
    assert got == ["hello", (0.0 + 1e-4) + 8e-9] and f"{got[1]:.12f}" == "0.000100008000"


# ------------------------------------------------------------------ rc2's own runs
def test_tiny_fcfs_is_rc2s_byte_for_byte(tmp_path):
    """tiny, FCFS: rc2's jobs.csv byte for byte, its schedule.json but for the version."""
    result, _ = simulate(PLATFORM16, V5 / "tiny.v5.json", build_scheduler("fcfs"), prefix=f"{tmp_path}/", batsim=5)
    assert result.jobs_csv == f"{tmp_path}/jobs.csv" and result.schedule_file == f"{tmp_path}/schedule.json"
    assert open(result.jobs_csv, "rb").read() == (OUT5 / "tiny-fcfs-process-json" / "jobs.csv").read_bytes()
    assert _no_version(result.schedule_file) == _no_version(OUT5 / "tiny-fcfs-process-json" / "schedule.json")
    info = json.loads((tmp_path / "real_exec_info.json").read_text())
    assert sorted(info) == ["memory_VmHWM_kB", "memory_VmPeak_kB", "time_in_edc_seconds", "time_in_simu_seconds"]


def test_tiny_easy_is_rc2s_byte_for_byte(tmp_path):
    """tiny, EASY: rc2's test ``easy`` gives 4.2.1 + batsched easy_bf's schedule here, and so do we."""
    sched = build_scheduler("easy", "fcfs", reservations="cores")
    result, _ = simulate(PLATFORM16, V5 / "tiny.v5.json", sched, prefix=f"{tmp_path}/e-", batsim=5)
    assert open(result.jobs_csv, "rb").read() == (OUT5 / "tiny-easy-lib" / "jobs.csv").read_bytes()
    assert _no_version(result.schedule_file) == _no_version(OUT5 / "tiny-easy-lib" / "schedule.json")


def test_tiny_fcfs_messages_are_rc2s():
    """The frames rc2 sent its process EDC in JSON mode: the same messages and events, every date
    to the 12 decimals rc2 prints (in binary mode, where no date is rounded, they are the same
    doubles to the last bit: docs/simulator.md)."""
    nb, names, loaded = load_inputs(PLATFORM16, V5 / "tiny.v5.json")
    core = DecisionCore(build_scheduler("fcfs"))
    recorder = Recorder(lambda now, events: (now, core.handle(now, events)))
    Simulator(nb, loaded, host_names=names, line=BATSIM_5).run(recorder)
    _assert_same_frames(recorder.frames, _frames("ref-process-edc-fcfs-json"))


def test_tiny_fcfs_dates_are_rc2s_to_the_last_bit():
    """Against rc2 in flatbuffers binary mode (no date rounded on the way): every frame's ``now``
    and event timestamps are the very doubles of SimGrid 4.0's clock."""
    nb, names, loaded = load_inputs(PLATFORM16, V5 / "tiny.v5.json")
    core = DecisionCore(build_scheduler("fcfs"))
    frames = []

    def exchange(now, events):
        frames.append([now.hex(), [[e.timestamp.hex(), EVENT_NAMES[type(e)]] for e in events]])
        return now, core.handle(now, events)

    Simulator(nb, loaded, host_names=names, line=BATSIM_5).run(exchange)
    gold = _frames("process-edc-fcfs-binary")
    assert frames == [[f["now"], [[float.fromhex(ts).hex(), kind] for ts, kind in f["events"]]] for f in gold]


def test_a_4_2_1_workload_runs_as_its_batsim5_conversion(tmp_path):
    """tiny's 4.2.1 workload (``delay`` profiles) under --batsim 5 gives rc2's run of the Batsim 5 one."""
    result, _ = simulate(PLATFORM16, DATA / "tiny.json.gz", build_scheduler("fcfs"), prefix=f"{tmp_path}/", batsim=5)
    assert open(result.jobs_csv, "rb").read() == (OUT5 / "tiny-fcfs-process-json" / "jobs.csv").read_bytes()


def test_kth5k_fcfs_is_rc2s_byte_for_byte(shared, tmp_path):
    """KTH-5k, FCFS, against rc2's test fcfs: every start (and every other number) as rc2 wrote it."""
    golden = shared / "golden-v5"
    if not golden.is_dir():
        pytest.skip("../shared/golden-v5 is not available")
    result, _ = simulate(DATA / "platform-100.xml", golden / "workloads" / "KTH-5k.v5.json.gz",
                         build_scheduler("fcfs"), prefix=f"{tmp_path}/", batsim=5)
    assert open(result.jobs_csv, "rb").read() == (golden / "outputs" / "kth5k-fcfs-lib" / "jobs.csv").read_bytes()
    assert _no_version(result.schedule_file) == _no_version(golden / "outputs" / "kth5k-fcfs-lib" / "schedule.json")


class Rc2Easy(Scheduler):
    """rc2's own test EDC ``easy`` (``test/edc-lib/easy.cpp``) on the public API, to run rc2's
    choices in our simulator: the queue head starts when it fits, else it gets a reservation at the
    earliest maximum finish time (start + walltime) that frees enough hosts, and later jobs
    backfill when they fit now and either fit beside the reservation or end before it (finish
    times compared as C++ ``float``s; the hosts left beside the reservation an unsigned counter);
    a job too large or without walltime is rejected; it schedules only after a submission or an
    end. Running jobs of equal finish times are visited in reverse start order, the order rc2's
    ``std::unordered_map`` gives them."""

    def __init__(self):
        self.queue, self.running, self.finish, self.due = [], {}, {}, False

    def on_simulation_begins(self, nb_cores, ctx):
        self.nb_hosts = nb_cores

    def on_job_submitted(self, job, ctx):
        if job.res > self.nb_hosts or job.walltime <= 0:
            ctx.reject(job, "rc2 easy: too large or no walltime")
        else:
            self.queue.append(job)
            self.due = True

    def on_job_completed(self, job, ctx):
        self.running.pop(job.id, None)
        self.due = True

    def _start(self, job, finish, ctx):
        self.running[job.id], self.finish[job.id] = job, finish
        ctx.execute(job, ctx.machine.lowest_free(job.res))
        self.queue.remove(job)

    def schedule(self, ctx):
        import numpy as np

        if not self.due:
            return
        self.due = False
        free, reserved_at, beside = ctx.machine.nb_free, np.float32(-1), 0
        waiting = list(self.queue)
        for index, job in enumerate(waiting):
            if job.res <= free:
                self._start(job, ctx.now + job.walltime, ctx)
                free -= job.res
                continue
            beside = free
            for running in sorted(reversed(list(self.running.values())), key=lambda j: self.finish[j.id]):
                beside += running.res
                if beside >= job.res:
                    beside -= job.res
                    reserved_at = np.float32(self.finish[running.id])
                    break
            waiting = waiting[index + 1:]
            break
        else:
            waiting = []
        for job in waiting:
            finish = np.float32(ctx.now + job.walltime)
            if job.res <= free and (job.res <= beside or finish <= reserved_at):
                self._start(job, float(finish), ctx)
                free -= job.res
                if finish > reserved_at:
                    beside = (beside - job.res) % (1 << 32)
            elif free == 0:
                break


def test_kth5k_rc2s_own_easy_is_rc2s_byte_for_byte(shared, tmp_path):
    """KTH-5k with rc2's test ``easy`` (a different EASY from ours: reservations at walltime ends,
    1,506 starts apart from batsched's), its choices run in our Batsim 5 mode: rc2's jobs.csv
    byte for byte. The timing holds under backfilling, over the whole trace."""
    golden = shared / "golden-v5"
    if not golden.is_dir():
        pytest.skip("../shared/golden-v5 is not available")
    result, _ = simulate(DATA / "platform-100.xml", golden / "workloads" / "KTH-5k.v5.json.gz", Rc2Easy(),
                         prefix=f"{tmp_path}/", batsim=5)
    assert open(result.jobs_csv, "rb").read() == (golden / "outputs" / "kth5k-easy-lib" / "jobs.csv").read_bytes()


def test_rc2s_own_easy_gives_batsched_easys_schedule_on_tiny(tmp_path):
    result, _ = simulate(PLATFORM16, V5 / "tiny.v5.json", Rc2Easy(), prefix=f"{tmp_path}/", batsim=5)
    assert open(result.jobs_csv, "rb").read() == (OUT5 / "tiny-easy-lib" / "jobs.csv").read_bytes()


@pytest.mark.parametrize("edc", ["fcfs", "easy"])
def test_the_real_rc2_equals_the_embedded_mode(tmp_path, edc):
    """With a real Batsim 5 (``BATSIM5_BIN``, its test EDC libraries in ``BATSIM5_EDC_LIB_DIR``):
    rc2 running its library ``fcfs`` / ``easy`` on tiny writes the jobs file our Batsim 5 mode
    writes with the same choices (our fcfs, the port of its easy)."""
    import os
    import subprocess

    binary, libs = os.environ.get("BATSIM5_BIN"), os.environ.get("BATSIM5_EDC_LIB_DIR")
    if not (binary and libs):
        pytest.skip("no real Batsim 5: set BATSIM5_BIN and BATSIM5_EDC_LIB_DIR (see docs/simulator.md)")
    real = tmp_path / "real"
    subprocess.run([binary, "-p", str(PLATFORM16), "-w", str(V5 / "tiny.v5.json"), "-e", f"{real}/",
                    "-l", os.path.join(libs, f"lib{edc}.so"), "{}"], check=True, capture_output=True, timeout=120)
    scheduler = build_scheduler("fcfs") if edc == "fcfs" else Rc2Easy()
    result, _ = simulate(PLATFORM16, V5 / "tiny.v5.json", scheduler, prefix=f"{tmp_path}/ours-", batsim=5)
    assert open(result.jobs_csv, "rb").read() == (real / "jobs.csv").read_bytes()
    assert _no_version(result.schedule_file) == _no_version(real / "schedule.json")


# ------------------------------------------------------------------ kill and requeue
class Tiny6EDC:
    """The Python EDC of ``py-json-kill-requeue``: FCFS on the lowest free hosts; when w0!16 arrives
    it kills w0!15 and registers it again as ``dyn!15-requeued`` on w0's profile (profile reuse),
    and it finishes registration once the static jobs are all submitted. Its choices (a job in a
    new workload, a reused profile) are not ones a batsched-ml scheduler makes: a scripted peer."""

    def __init__(self, nb_hosts):
        self.free, self.queue, self.res, self.alloc = (1 << nb_hosts) - 1, [], {}, {}

    def __call__(self, now, events):
        out = []
        for e in events:
            if type(e) is ev.JobSubmitted:
                self.res[e.job_id] = e.job["res"]
                self.queue.append(e.job_id)
                if e.job_id == "w0!16":
                    out.append(ev.KillJob(now, ["w0!15"]))
            elif type(e) is ev.JobCompleted:
                self.free |= self.alloc.pop(e.job_id)
            elif type(e) is ev.JobKilled:
                out.append(ev.RegisterJob(now, "dyn!15-requeued", {"id": "dyn!15-requeued", "subtime": now,
                                                                    "walltime": 53940.0, "res": 4,
                                                                    "profile": "w0!d3477"}))
            elif type(e) is ev.Notify:
                out.append(ev.Notify(now, ev.REGISTRATION_FINISHED))
        while self.queue and self.free.bit_count() >= self.res[self.queue[0]]:
            job = self.queue.pop(0)
            mask = 0
            for _ in range(self.res[job]):
                mask |= (self.free & ~mask) & -(self.free & ~mask)
            self.free &= ~mask
            self.alloc[job] = mask
            out.append(ev.ExecuteJob(now, job, CoreSet(mask)))
        return now, out


def test_tiny6_kill_requeue_is_rc2s(tmp_path):
    """Kill, registration acknowledged by a JobSubmittedEvent, a job in a new workload on a reused
    profile: rc2's frames to the 12 decimals, its jobs.csv byte for byte (the requeued job's
    submission time is the registration's date, its energy 0), its schedule.json."""
    nb, names, loaded = load_inputs(PLATFORM16, V5 / "tiny6.v5.json")
    sim = Simulator(nb, loaded, host_names=names, line=BATSIM_5, dynamic_jobs=True, profile_reuse=True,
                    acknowledge_dynamic_jobs=True)
    recorder = Recorder(Tiny6EDC(nb))
    result = sim.run(recorder, prefix=f"{tmp_path}/")
    _assert_same_frames(recorder.frames, _frames("py-json-kill-requeue"))
    assert open(result.jobs_csv, "rb").read() == (OUT5 / "tiny6-killrequeue-json" / "jobs.csv").read_bytes()
    assert _no_version(result.schedule_file) == _no_version(OUT5 / "tiny6-killrequeue-json" / "schedule.json")


def _route(latencies_us, bandwidths_mbps):
    """A route of Batsim's small_platform.xml from a host to master_host: its links' latencies
    (``"59.904us"`` is ``59.904 * 1e-6`` for SimGrid) summed in route order, its byte at the
    slowest link's bandwidth."""
    latency = 0.0
    for lat in latencies_us:
        latency += lat * 1e-6
    return latency, 1 / (min(bandwidths_mbps) * 1e6)


# Batsim's platforms/small_platform.xml: a 15 us loopback at 498 MBps on master_host, and each
# compute host (in Batsim's order: by name) reaching it through its own chain of links
SMALL_PLATFORM = Latency(loopback=15 * 1e-6, loopback_transfer=1 / 498e6, node_routes=(
    _route([189.98, 59.904, 514.433, 59.904, 136.931, 514.433, 479.78],
           [11.618875, 41.279125, 34.285625, 41.279125, 118.6825, 34.285625, 10.099625]),  # Bourassa
    _route([270.544, 514.433, 59.904, 136.931, 514.433, 479.78],
           [8.158, 34.285625, 41.279125, 118.6825, 34.285625, 10.099625]),  # Fafard
    _route([278.066, 514.433, 479.78], [27.94625, 34.285625, 10.099625]),  # Ginette
    _route([1461.517], [7.20975]),  # Jupiter
))


class KillAtFive(Scheduler):
    """The EDC of the golden 4.2.1 kill-requeue scenario, on the public API: each job starts on the
    lowest free hosts when it arrives, w0!0 with a call at 5 s that kills it; the killed job is
    requeued at once; registration ends when the requeued attempt has run."""

    may_requeue = True

    def __init__(self):
        self.waiting, self.requeued_ran = [], False

    def on_job_submitted(self, job, ctx):
        self.waiting.append(job)

    def on_job_killed(self, job, progress, ctx):
        ctx.requeue(job)

    def on_requested_call(self, ctx):
        ctx.kill(ctx.jobs["w0!0"])

    def on_job_completed(self, job, ctx):
        self.requeued_ran = self.requeued_ran or job.attempt > 0

    def schedule(self, ctx):
        first = any(job.id == "w0!0" for job in self.waiting)
        for job in self.waiting:
            ctx.execute(job, ctx.machine.lowest_free(job.res))
        self.waiting = []
        if first:
            ctx.call_me_later(5.0)

    def registration_finished(self):
        return self.requeued_ran


def test_the_4_2_1_kill_requeue_scenario_has_rc2s_instants(tmp_path):
    """The golden 4.2.1 scenario redone on rc2 (small_platform.xml, dynamic registration only): the
    kill lands at 5.000030 (4.2.1: 5.000075), and every frame is rc2's to the 12 decimals."""
    nb, _, loaded = load_inputs(4, V5 / "kill-requeue.v5.json")
    sim = Simulator(nb, loaded, host_names=["Bourassa", "Fafard", "Ginette", "Jupiter"], line=BATSIM_5,
                    dynamic_jobs=True, latency=SMALL_PLATFORM)
    core = DecisionCore(KillAtFive())
    recorder = Recorder(lambda now, events: (now, core.handle(now, events)))
    result = sim.run(recorder, prefix=f"{tmp_path}/")
    _assert_same_frames(recorder.frames, _frames("py-json-kill-requeue-v4scenario"))
    rows = {r["job_id"]: r for r in csv.DictReader(open(result.jobs_csv))}
    assert rows["0"]["final_state"] == "COMPLETED_KILLED" and rows["0"]["finish_time"] == "5.000030"
    assert rows["0#1"]["profile"] == "w0!p0#1" and rows["0#1"]["consumed_energy"] == "0.000000"


def test_in_process_requeue_is_acknowledged_and_consumed(tmp_path):
    """In-process under Batsim 5 a requeueing scheduler asks what ``serve --batsim 5`` asks:
    registrations acknowledged; the acknowledgement is a message of its own (the requeued job is
    submitted when Batsim reads the registration) that the transport consumes."""
    seen = []

    class Requeuer(KillAtFive):
        def on_job_submitted(self, job, ctx):
            seen.append((job.id, ctx.now))
            super().on_job_submitted(job, ctx)

    result, _ = simulate(4, V5 / "kill-requeue.v5.json", Requeuer(), prefix=f"{tmp_path}/", batsim=5)
    rows = {r["job_id"]: r for r in csv.DictReader(open(result.jobs_csv))}
    assert [job for job, _ in seen] == ["w0!0", "w0!1", "w0!2", "w0!0#1"]  # once each: the ack is not a submission
    assert rows["0#1"]["final_state"] == "COMPLETED_SUCCESSFULLY"
    registered = float(rows["0#1"]["submission_time"])
    assert registered > float(rows["0"]["finish_time"])  # Batsim reads the registration after the kill's reply
    nb, _, loaded = load_inputs(4, V5 / "kill-requeue.v5.json")
    unacknowledged = Simulator(nb, loaded, line=BATSIM_5, dynamic_jobs=True)
    core = DecisionCore(Requeuer())
    quiet = unacknowledged.run(lambda now, events: (now, core.handle(now, events)))
    assert result.messages == quiet.messages + 1  # the acknowledgement's own message


# ------------------------------------------------------------------ rules that differ from 4.2.1
def _one_job(delay=10.0, profile_type="DelayProfile"):
    return {"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "walltime": 100, "res": 1, "profile": "p"}],
            "profiles": {"p": {"type": profile_type, "delay": delay}}}


def _call_at(at, calls):
    """A scheduler (the simulator's ``(now, events) -> (now, decisions)``) that starts the job and
    asks one call at ``at``; it records when the calls come."""

    def scheduler(now, events):
        decisions = []
        for event in events:
            if type(event) is ev.JobSubmitted:
                decisions += [ev.ExecuteJob(now, event.job_id, CoreSet(1)), ev.CallMeLater(now, at)]
            elif type(event) is ev.RequestedCall:
                calls.append(now)
        return now, decisions

    return scheduler


def _run(workload, scheduler, line=BATSIM_5):
    nb, _, loaded = load_inputs(4, workload)
    return Simulator(nb, loaded, line=line).run(scheduler)


def test_calls_are_at_whole_milliseconds_and_a_date_reached_is_answered_at_once():
    """rc2 takes a call's date in whole seconds or milliseconds (the v5 codec rounds up) and answers
    a date already reached at once; Batsim 4.2.1 would abort on that one."""
    from batsched_ml.simulator.lines import BATSIM_4

    late = []
    _run(_one_job(), _call_at(2.0004, late))
    assert late == [pytest.approx(2.001 + 0.000100008, abs=1e-12)]  # the waiter's message takes a loopback
    past = []
    _run(_one_job(), _call_at(0.0, past))
    assert len(past) == 1 and past[0] < 0.001
    with pytest.raises(SimulationError, match="not strictly after"):
        _run(_one_job(profile_type="delay"), _call_at(0.0, []), BATSIM_4)


def test_profiles_batsim5_cannot_run_are_one_line(tmp_path, capsys):
    workload = tmp_path / "w.json"
    parallel = {"type": "ParallelTaskProfile", "cpu": [1], "com": [0]}
    workload.write_text(json.dumps({**_one_job(), "profiles": {"p": parallel}}))
    code = cli.main(["simulate", "--batsim", "5", "-p", str(PLATFORM16), "-w", str(workload), "-e", f"{tmp_path}/",
                     "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "ParallelTaskProfile" in err[0] and "DelayProfile" in err[0]
    workload.write_text(json.dumps(_one_job(delay=0)))
    code = cli.main(["simulate", "--batsim", "5", "-p", str(PLATFORM16), "-w", str(workload), "-e", f"{tmp_path}/",
                     "--quiet"])
    assert code == 2 and "'delay' must be a strictly positive number" in capsys.readouterr().err


def test_a_job_without_walltime_converts_to_one_without_the_member():
    """4.2.1's ``walltime: -1`` (none) is refused by Batsim 5, which wants the member left out."""
    from batsched_ml.workloads import validate_workload
    from batsched_ml.workloads.batsim5 import to_v5, typed_job

    v4 = {"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "walltime": -1, "res": 1, "profile": "p", "user": 7}],
          "profiles": {"p": {"type": "delay", "delay": 10}}}
    v5 = to_v5(v4)
    assert v5["jobs"] == [{"id": 1, "subtime": 0, "res": 1, "profile": "p", "extra_data": {"user": 7}}]
    validate_workload(v5)
    assert typed_job("w0!1", v5["jobs"][0]) == {"id": "w0!1", "subtime": 0, "walltime": -1, "res": 1, "profile": "p",
                                                "user": 7}


def test_batsim4_names_a_batsim5_workload():
    with pytest.raises(SimulationError, match="simulate with --batsim 5"):
        simulate(4, _one_job(), build_scheduler("fcfs"))


def test_job_metadata_has_no_batsim5_form():
    def tagger(now, events):
        return now, [ev.SetJobMetadata(now, e.job_id, "x") for e in events if type(e) is ev.JobSubmitted]

    with pytest.raises(SimulationError, match="SET_JOB_METADATA has no Batsim 5.0.0-rc2 form"):
        _run(_one_job(), tagger)


# ------------------------------------------------------------------ command line and tools
def test_simulate_writes_rc2s_files_under_its_prefix_rules(tmp_path, capsys, monkeypatch):
    """``-e DIR/`` gives DIR/jobs.csv (rc2 adds nothing to its prefix), ``-e DIR/x-`` DIR/x-jobs.csv;
    our run description follows the same rule; the default prefix is rc2's, out/."""
    base = ["simulate", "--batsim", "5", "-p", str(PLATFORM16), "-w", str(V5 / "tiny.v5.json"), "--quiet"]
    assert cli.main([*base, "-e", f"{tmp_path}/a/"]) == 0
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["jobs.csv", "real_exec_info.json", "run.json",
                                                                 "schedule.json"]
    assert json.loads((tmp_path / "a" / "run.json").read_text())["batsim"] == "5.0.0-rc2"
    assert cli.main([*base, "-e", f"{tmp_path}/a/x-"]) == 0
    assert (tmp_path / "a" / "x-jobs.csv").is_file() and (tmp_path / "a" / "x-run.json").is_file()
    monkeypatch.chdir(tmp_path)
    assert cli.main(base) == 0
    assert (tmp_path / "out" / "jobs.csv").is_file() and (tmp_path / "out" / "schedule.json").is_file()
    capsys.readouterr()


def test_simulate_connect_batsim5_writes_rc2s_files_and_refuses_batsim4s_flag(tmp_path, capsys):
    """``simulate --connect --batsim 5`` is the same Batsim 5 mode over a socket: rc2's files under
    rc2's prefix rule, a run description naming the scheduler and the line; Batsim 4.2.1's
    ``--enable-dynamic-jobs`` is one line (the scheduler's hello asks for dynamic registration)."""
    from test_server import ServerThread

    endpoint = f"ipc://{tmp_path}/s.ipc"
    server = ServerThread(build_scheduler("easy"), endpoint, timeout=20.0, batsim="5")
    base = ["simulate", "--batsim", "5", "-p", str(PLATFORM16), "-w", str(V5 / "tiny.v5.json"), "--quiet"]
    assert cli.main([*base, "-e", f"{tmp_path}/c/", "--connect", endpoint, "--timeout", "20"]) == 0
    assert server.join() == 0, server.errors
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["jobs.csv", "real_exec_info.json", "run.json",
                                                                 "schedule.json"]
    run = json.loads((tmp_path / "c" / "run.json").read_text())
    assert (run["batsim"], run["connect"], run["status"]) == ("5.0.0-rc2", endpoint, "complete")
    assert cli.main([*base, "-e", f"{tmp_path}/d/", "--connect", endpoint, "--enable-dynamic-jobs"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--enable-dynamic-jobs is a Batsim 4.2.1 flag" in err[0]
    assert not (tmp_path / "d").exists()


def test_metrics_check_and_plot_read_batsim5_outputs(tmp_path, capsys):
    """metrics reads the machine size in schedule.json; check knows DelayProfile run times; plot
    labels a run from its run.json."""
    from batsched_ml.analysis import compute_metrics
    from batsched_ml.analysis.checker import check_files
    from batsched_ml.analysis.plots import run_label

    assert cli.main(["simulate", "--batsim", "5", "-p", str(PLATFORM16), "-w", str(V5 / "tiny.v5.json"),
                     "-e", f"{tmp_path}/run/", "--scheduler", "easy", "--quiet"]) == 0
    capsys.readouterr()
    jobs = tmp_path / "run" / "jobs.csv"
    header, first, *rest = jobs.read_text().splitlines()
    assert run_label(jobs).startswith("easy")
    assert compute_metrics(str(jobs))["nb_cores"] == 16
    assert check_files(str(jobs), [str(V5 / "tiny.v5.json")], 16) == []

    other = tmp_path / "other"  # the same run, 5 s longer for its first job, on a machine said larger
    other.mkdir()
    row = first.split(",")
    assert row[2] == "w0!d3477"  # the profile column names workload!profile
    for column in (9, 10, 12):  # execution, finish and turnaround times: consistent with each other
        row[column] = "%f" % (float(row[column]) + 5)
    (other / "jobs.csv").write_text("\n".join([header, ",".join(row), *rest]) + "\n")
    schedule = json.loads((tmp_path / "run" / "schedule.json").read_text())
    (other / "schedule.json").write_text(json.dumps({**schedule, "nb_computing_machines": 64}))
    assert compute_metrics(str(other / "jobs.csv"))["nb_cores"] == 64
    wrong = check_files(str(other / "jobs.csv"), [str(V5 / "tiny.v5.json")], 64)
    assert [v.message for v in wrong if v.kind == "runtime"] == [
        "COMPLETED_SUCCESSFULLY after 3482.000000 s; delay 3477 and walltime 53940 give COMPLETED_SUCCESSFULLY "
        "after 3477 s"]  # (the longer job also overlaps the next one on its hosts)


def test_convert_writes_batsim5_workloads_whose_users_reach_the_scheduler(tmp_path, capsys):
    out = tmp_path / "k.v5.json"
    assert cli.main(["convert", str(DATA / "kth-excerpt.swf"), "-w", str(out), "--batsim", "5"]) == 0
    capsys.readouterr()
    workload = load_workload(out)
    assert {p["type"] for p in workload["profiles"].values()} == {"DelayProfile"}
    assert workload["jobs"][0]["extra_data"]["user"] == 12 and "user" not in workload["jobs"][0]
    users = []

    class Users(Scheduler):
        def on_job_submitted(self, job, ctx):
            users.append(job.data.get("user"))

        def schedule(self, ctx):
            for job in [j for j in ctx.jobs.values() if j.state == QUEUED]:
                if ctx.machine.nb_free >= job.res:
                    ctx.execute(job, ctx.machine.lowest_free(job.res))

    simulate(100, workload, Users(), batsim=5)
    assert users[0] == 12 and None not in users


def test_a_campaign_config_can_run_under_batsim5(tmp_path):
    """``batsim = 5`` (campaign-wide or per config) runs that config's tasks on the Batsim 5 line
    (the 4.2.1 workload read as its Batsim 5 conversion), rc2's schedule file kept beside the jobs
    CSV; the other configs stay on 4.2.1."""
    pytest.importorskip("distributed")
    from batsched_ml.campaign.run import run_campaign
    from batsched_ml.campaign.spec import CampaignError, load_campaign

    text = f"""
[campaign]
name = "lines"
baseline = "four"
[traces.tiny]
workload = "{DATA / 'tiny.json.gz'}"
platform = "{PLATFORM16}"
[configs.four]
scheduler = "fcfs"
[configs.five]
scheduler = "fcfs"
batsim = 5
"""
    path = tmp_path / "c.toml"
    path.write_text(text)
    campaign = load_campaign(path)
    assert campaign.configs["five"].batsim == 5 and "--batsim" in campaign.configs["five"].argv
    run_campaign(campaign, tmp_path / "results", workers=0, progress=False, log=lambda m: None)
    runs = tmp_path / "results" / "runs"
    five = gzip.decompress(next(runs.glob("*five*_jobs.csv.gz")).read_bytes())
    assert five == (OUT5 / "tiny-fcfs-process-json" / "jobs.csv").read_bytes()
    assert list(runs.glob("*five*_schedule.json.gz")) and list(runs.glob("*four*_schedule.csv.gz"))
    path.write_text(text.replace("batsim = 5", "batsim = 6"))
    with pytest.raises(CampaignError, match="batsim must be 4"):
        load_campaign(path)
