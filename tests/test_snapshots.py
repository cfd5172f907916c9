"""Snapshots of whole runs (issue 42): pausing, resuming byte for byte, forking, and their files.

The property tests draw from the whole configuration space (``snapshot_cases``): a run paused at a
drawn instant and resumed, and a run killed (SIGKILL) at drawn wall-clock moments and resumed from
its checkpoints, give the uninterrupted run's outputs byte for byte. CI runs a few fixed examples;
``test_slow_property_campaign.py -k snapshots`` runs thousands.
"""

from __future__ import annotations

import json
import shutil
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import snapshot_cases as cases
from configuration_space import cli_configurations
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from random_cases import workloads

from batsched_ml import checkpointing, snapshot_files
from batsched_ml.cli import main
from batsched_ml.runner import build_scheduler, in_process, load_inputs
from batsched_ml.core.decision_core import DecisionCore
from batsched_ml.simulator.engine import BATSIM_5, Simulator
from batsched_ml.snapshot_files import Snapshot, SnapshotError, keep_last, snapshots_in

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = str(ROOT / "platforms" / "cluster-100.xml")
SAMPLE = str(ROOT / "workloads" / "KTH-SP2-1k.json")
CI_SETTINGS = settings(deadline=None, derandomize=True, database=None, phases=[Phase.explicit, Phase.generate],
                       suppress_health_check=list(HealthCheck))
INSTANTS = st.one_of(st.sampled_from([0.0, 1.0, 600.0, 1000.5]), st.floats(0.0, 6000.0))


# ------------------------------------------------------------------ the properties
@settings(CI_SETTINGS, max_examples=25)
@given(workload=workloads(), case=cli_configurations(runnable=True), at=INSTANTS)
def test_a_run_paused_anywhere_and_resumed_is_the_run_never_paused(workload, case, at):
    problems, happened = cases.check_case(workload, case, at)
    event(happened)
    assert not problems, cases.describe(workload, case, at, problems)


@settings(CI_SETTINGS, max_examples=3)
@given(workload=workloads(max_jobs=16), case=cli_configurations(runnable=True), at=INSTANTS,
       every=st.sampled_from([50.0, 300.0, 1000.0]), delays=st.lists(st.floats(0.05, 0.6), min_size=2, max_size=2))
def test_a_run_killed_anywhere_resumes_from_its_checkpoints_to_the_same_outputs(workload, case, at, every, delays):
    problems, happened = cases.check_case(workload, case, at, every, delays)
    event(happened)
    assert not problems, cases.describe(workload, case, at, problems)


# ------------------------------------------------------------------ the Python API
def _simulator(config):
    nb_hosts, names, loaded = load_inputs(PLATFORM, [SAMPLE])
    scheduler = build_scheduler(**config)
    return Simulator(nb_hosts, loaded, host_names=names, dynamic_jobs=scheduler.may_requeue), scheduler, loaded


@pytest.mark.parametrize("config", [
    {"scheduler": "conservative", "reservations": "cores", "predictor": "ave2", "correction": "incremental"},
    {"scheduler": "probabilistic", "distribution": "hmm"},
    {"scheduler": "easy", "classifier": "random-forest", "kill_false_small": True, "period": 100000.0,
     "unix_start_time": 0, "n_estimators": 5},
    # trees drawing fewer rows than the history holds (models.SubsampledForest, rows_to_fit)
    {"scheduler": "easy", "classifier": "random-forest", "kill_false_small": True, "period": 100000.0,
     "unix_start_time": 0, "n_estimators": 5, "max_samples": 40, "min_samples_leaf": 2},
])
def test_simulator_snapshot_and_from_snapshot_in_python(tmp_path, config):
    """Paused twice, saved and loaded, resumed: the jobs file and the per-job tables are the run's."""
    sim, scheduler, _ = _simulator(config)
    sim.run(in_process(DecisionCore(scheduler)), prefix=str(tmp_path / "a"))
    expected = scheduler.job_details()
    sim, scheduler, loaded = _simulator(config)
    assert sim.run(in_process(DecisionCore(scheduler)), prefix=str(tmp_path / "b"), until=200000.0) is None
    assert sim.paused and sim.now < 200000.0
    for until in (400000.0, None):
        snapshot = sim.snapshot()
        assert snapshot.sim_time == pytest.approx(200000.0 if until else 400000.0)
        snapshot.save(tmp_path / "s.snapshot")
        sim = Simulator.from_snapshot(Snapshot.load(tmp_path / "s.snapshot"), 100, loaded)
        result = sim.resume(until=until)
        assert (result is None) == (until is not None)
    assert (tmp_path / "a_jobs.csv").read_bytes() == (tmp_path / "b_jobs.csv").read_bytes()
    assert sim.scheduler.core.scheduler.job_details() == expected


def test_a_snapshot_is_taken_between_events_only():
    sim, scheduler, _ = _simulator({"scheduler": "easy"})
    with pytest.raises(RuntimeError, match="paused run"):
        sim.snapshot()  # not started
    seen = []

    def scheduler_call(now, events):
        if not seen:
            with pytest.raises(RuntimeError, match="paused run"):
                sim.snapshot()  # inside a message: the run is half-way through it
            seen.append(now)
        return exchange(now, events)

    exchange = in_process(DecisionCore(scheduler))
    sim.run(scheduler_call, until=1000.0)
    sim.replace_scheduler(exchange)  # (a closure does not pickle)
    assert seen and sim.snapshot().sim_time == 1000.0


def test_snapshot_holds_the_run_not_the_trace(tmp_path):
    """Jobs not yet submitted are references to the inputs: a snapshot early in a run is small, and
    loading it with other inputs is refused in one line."""
    sim, scheduler, _ = _simulator({"scheduler": "easy"})
    sim.run(in_process(DecisionCore(scheduler)), until=1.0)
    early = sim.snapshot()
    assert early.header["jobs"]["not_submitted"] > 990 and len(early.payload) < 20_000
    nb_hosts, names, loaded = load_inputs(PLATFORM, [SAMPLE])
    loaded[0][1]["jobs"] = loaded[0][1]["jobs"][:-1]
    with pytest.raises(SnapshotError, match="workloads w0 of 1000 jobs; the inputs given have 100 hosts and w0 of 999"):
        Simulator.from_snapshot(early, nb_hosts, loaded)


# ------------------------------------------------------------------ the files
def test_snapshot_files_are_signed_and_refused_when_changed_or_foreign(tmp_path, monkeypatch):
    path = tmp_path / "s.snapshot"
    Snapshot({"sim_time": 1.0}, b"payload").save(path)
    assert Snapshot.load(path).payload == b"payload"
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    (tmp_path / "t.snapshot").write_bytes(bytes(data))
    with pytest.raises(SnapshotError, match="not signed with this installation's key"):
        Snapshot.load(tmp_path / "t.snapshot")
    monkeypatch.setenv(snapshot_files.KEY_ENV, "another installation")
    with pytest.raises(SnapshotError, match="refusing to load it"):
        Snapshot.load(path)
    (tmp_path / "old.snapshot").write_bytes(path.read_bytes().replace(b"snapshot 3\n", b"snapshot 1\n", 1))
    with pytest.raises(SnapshotError, match="format 1; this batsched-ml reads formats 2 and 3"):
        Snapshot.load(tmp_path / "old.snapshot")


def test_the_key_is_created_once_per_installation_readable_by_its_owner_only(tmp_path, monkeypatch):
    monkeypatch.delenv(snapshot_files.KEY_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    key = snapshot_files.signing_key()
    path = tmp_path / "batsched-ml" / "snapshot.key"
    assert path.stat().st_mode & 0o777 == 0o600 and len(key) == 64
    assert snapshot_files.signing_key() == key


def test_a_killed_write_leaves_the_previous_snapshot_whole(tmp_path, monkeypatch):
    path = tmp_path / "s.snapshot"
    Snapshot({"sim_time": 1.0}, b"first").save(path)

    def killed(*args):
        raise KeyboardInterrupt  # the process stops between the write and the rename

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        Snapshot({"sim_time": 2.0}, b"second" * 1000).save(path)
    assert Snapshot.load(path).payload == b"first" and [p.name for p in tmp_path.iterdir()] == ["s.snapshot"]


def test_keep_last_keeps_the_latest_dates(tmp_path):
    for t in (5, 100, 20, 7):
        Snapshot({"sim_time": t}, b"").save(tmp_path / snapshot_files.snapshot_name(t))
    (tmp_path / ".snapshot-000000000001s.snapshot.tmp-999999999").write_bytes(b"torn")  # a dead writer's
    keep_last(tmp_path, 2)
    assert [p.name for p in snapshots_in(tmp_path)] == [snapshot_files.snapshot_name(20),
                                                         snapshot_files.snapshot_name(100)]
    assert len(list(tmp_path.iterdir())) == 2


def test_a_later_snapshot_writes_only_what_changed_and_needs_the_frames_beside_it(tmp_path):
    """What ended or grew before a snapshot is in shared frames that the next one lists and does not
    write again; a snapshot whose frame is missing or changed is refused in one line."""
    sim, scheduler, loaded = _simulator({"scheduler": "easy", "predictor": "ave2", "correction": "incremental"})
    sim.run(in_process(DecisionCore(scheduler)), prefix=str(tmp_path / "a"), until=300000.0)
    first = sim.snapshot()
    first_written = first.save(tmp_path / "1.snapshot")
    sim.resume(until=320000.0)
    second = sim.snapshot()
    written = second.save(tmp_path / "2.snapshot")
    assert [f.digest for f in second.frames[:len(first.frames)]] == [f.digest for f in first.frames]
    assert len(second.frames) == len(first.frames) + 1 and written < first_written / 3
    assert Simulator.from_snapshot(Snapshot.load(tmp_path / "2.snapshot"), 100, loaded).now == sim.now
    frame = tmp_path / "frames" / f"{second.frames[0].digest}.frame"
    data = frame.read_bytes()
    frame.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(SnapshotError, match="was changed since it was written"):
        Snapshot.load(tmp_path / "2.snapshot")
    frame.unlink()
    with pytest.raises(SnapshotError, match="needs its frame .* the frames/ folder beside it"):
        Snapshot.load(tmp_path / "2.snapshot")


def test_format_2_snapshots_with_zlib_frames_are_still_read(tmp_path):
    """Format 3 compresses the shared frames with Zstandard; a format-2 snapshot (zlib frames) loads
    and runs on to the same end as the format-3 one."""
    import zlib

    import zstandard

    from batsched_ml.snapshot_files import Frame

    config = {"scheduler": "easy", "predictor": "ave2", "correction": "incremental"}
    sim, scheduler, loaded = _simulator(config)
    sim.run(in_process(DecisionCore(scheduler)), prefix=str(tmp_path / "a"), until=300000.0)
    snapshot = sim.snapshot()
    assert snapshot.frames and all(f.data.startswith(b"\x28\xb5\x2f\xfd") for f in snapshot.frames)
    old = Snapshot(snapshot.header, snapshot.payload,
                   [Frame(zlib.compress(zstandard.ZstdDecompressor().decompress(f.data), 1)) for f in snapshot.frames])
    ends = []
    for i, taken in enumerate([snapshot, old]):
        resumed = Simulator.from_snapshot(taken, 100, _simulator(config)[2], prefix=str(tmp_path / f"r{i}"))
        resumed.resume()
        ends.append((tmp_path / f"r{i}_jobs.csv").read_bytes())
    assert ends[0] == ends[1] and ends[0].count(b"\n") > 10


def test_keep_last_deletes_the_frames_only_the_deleted_snapshots_needed(tmp_path):
    from batsched_ml.snapshot_files import Frame

    shared, own = Frame(b"shared"), Frame(b"of the replaced run")
    Snapshot({"sim_time": 1}, b"", [shared]).save(tmp_path / snapshot_files.snapshot_name(1))
    Snapshot({"sim_time": 2}, b"", [shared]).save(tmp_path / snapshot_files.snapshot_name(2))
    Snapshot({"sim_time": 9}, b"", [shared, own]).save(tmp_path / snapshot_files.snapshot_name(9))
    keep_last(tmp_path, 1, newest=tmp_path / snapshot_files.snapshot_name(2))  # a run resumed from 1 wrote 2
    assert [p.name for p in snapshots_in(tmp_path)] == [snapshot_files.snapshot_name(2)]
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == [f"{shared.digest}.frame"]
    assert Snapshot.load(tmp_path / snapshot_files.snapshot_name(2)).frames[0].data == b"shared"


def test_incremental_containers_refuse_what_an_earlier_snapshot_could_not_see():
    from batsched_ml.incremental import AppendOnlyList, JournaledDict

    items = AppendOnlyList([1, 2])
    items += [3]
    pieces = [items.changes_since(0)]
    items.append(4)
    pieces.append(items.changes_since(3))
    assert AppendOnlyList.rebuilt(pieces) == [1, 2, 3, 4]
    for change in (lambda: items.pop(), lambda: items.__setitem__(0, 9), lambda: items.sort()):
        with pytest.raises(TypeError, match="only grows"):
            change()
    table = JournaledDict(a=[0], b=[0])
    start = table.version()
    table["c"] = [1]
    table["a"][0] += 1  # changed in place: written only once touched
    assert table.changes_since(start) == [("c", [1])]
    table.touch("a")
    rebuilt = JournaledDict.rebuilt([table.changes_since(0)])
    assert rebuilt == {"a": [1], "b": [0], "c": [1]} and list(rebuilt) == ["a", "b", "c"]
    with pytest.raises(TypeError, match="only grows"):
        del table["a"]


# ------------------------------------------------------------------ the command line
def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def paused(tmp_path, capsys):
    """A KTH-SP2 run paused at day 3 with its snapshot; (snapshot, the uninterrupted run's jobs CSV)."""
    code, _, _ = run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "a", "--quiet")
    assert code == 0
    code, _, err = run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "b", "--quiet",
                       "--stop-at", "3d", "--checkpoint-every", "1d", "--checkpoint-keep", "2")
    assert code == 0 and err.count("\n") == 1
    snapshot = tmp_path / "b_checkpoints" / snapshot_files.snapshot_name(3 * 86400)
    assert err.strip().endswith(f"resume with: batsched-ml simulate --resume {snapshot}")
    assert len(snapshots_in(tmp_path / "b_checkpoints")) == 2
    assert json.loads((tmp_path / "b_run.json").read_text())["status"] == "paused"
    return snapshot, tmp_path / "a_jobs.csv"


def test_a_paused_run_resumes_past_146_years(tmp_path, capsys):
    """Dates in ns pass 2**62 after 146 simulated years: a resumed run with no checkpoint period
    goes on to the end there (the property campaign's seed 7 found it taking such a date for a
    checkpoint due)."""
    workload = tmp_path / "far.json"
    workload.write_text(json.dumps({"nb_res": 4, "profiles": {"d": {"type": "delay", "delay": 10.0}}, "jobs": [
        {"id": "1", "subtime": 0.0, "walltime": 100.0, "res": 1, "profile": "d"},
        {"id": "2", "subtime": 5e9, "walltime": 100.0, "res": 1, "profile": "d"}]}))
    platform = PLATFORM
    code, _, _ = run(capsys, "simulate", "-p", platform, "-w", workload, "-e", tmp_path / "a", "--quiet")
    assert code == 0
    code, _, err = run(capsys, "simulate", "-p", platform, "-w", workload, "-e", tmp_path / "b", "--quiet",
                       "--stop-at", "20")
    assert code == 0, err
    code, _, err = run(capsys, "simulate", "--resume", tmp_path / "b_checkpoints" / snapshot_files.snapshot_name(20),
                       "--quiet")
    assert code == 0, err
    assert (tmp_path / "b_jobs.csv").read_bytes() == (tmp_path / "a_jobs.csv").read_bytes()


def test_resume_refuses_another_run_in_one_line(paused, tmp_path, capsys, monkeypatch):
    snapshot, _ = paused
    code, _, err = run(capsys, "simulate", "--resume", snapshot, "--scheduler", "conservative")
    assert code == 2 and err.count("\n") == 1
    assert "--scheduler easy -> conservative" in err and f"use --fork {snapshot}" in err
    changed = tmp_path / "w.json"
    data = json.loads(Path(SAMPLE).read_text())
    data["jobs"][3]["res"] += 1
    changed.write_text(json.dumps(data))
    code, _, err = run(capsys, "simulate", "--resume", snapshot, "-w", changed)
    assert code == 2 and f"workload {changed} is not the snapshot's" in err and err.count("\n") == 1
    monkeypatch.setattr(checkpointing, "code_fingerprint", lambda: "another")
    code, _, err = run(capsys, "simulate", "--resume", snapshot)
    assert code == 2 and "batsched-ml's code changed since it was written" in err


def test_resume_after_the_jobs_file_was_rewritten_is_refused(paused, capsys):
    snapshot, _ = paused
    jobs = snapshot.parent.parent / "b_jobs.csv"
    jobs.write_text(jobs.read_text().replace("COMPLETED_SUCCESSFULLY", "COMPLETED_SUCCESSFULLz", 1))
    code, _, err = run(capsys, "simulate", "--resume", snapshot)
    assert code == 2 and "is not the one the snapshot was written with" in err


def test_resume_from_an_older_snapshot_cuts_what_came_after(paused, capsys):
    snapshot, expected = paused
    kept = snapshot.parent.parent / "kept"  # (the resumed run keeps its own 2 latest only)
    shutil.copytree(snapshot.parent, kept)  # a snapshot goes with the frames/ beside it
    older = snapshots_in(kept)[0]
    assert run(capsys, "simulate", "--resume", snapshot, "--quiet")[0] == 0
    assert run(capsys, "simulate", "--resume", older, "--quiet")[0] == 0
    assert (snapshot.parent.parent / "b_jobs.csv").read_bytes() == expected.read_bytes()
    resumed = json.loads((snapshot.parent.parent / "b_run.json").read_text())["resumed"]
    assert [r["snapshot"] for r in resumed] == [str(snapshot), str(older)]


def test_fork_says_what_each_component_takes_over(paused, tmp_path, capsys):
    snapshot, expected = paused
    code, _, err = run(capsys, "simulate", "--fork", snapshot, "-e", tmp_path / "f", "--quiet", "--predictor",
                       "ave2", "--correction", "incremental", "--fork-window", "2d")
    lines = err.strip().splitlines()
    assert code == 0 and lines[0].startswith("batsched-ml: fork: scheduler easy takes over ")
    assert "batsched-ml: fork: predictor ave2 starts fresh (the snapshot's run had no predictor)" in lines
    assert lines[-1].startswith("batsched-ml: fork window over")
    description = json.loads((tmp_path / "f_run.json").read_text())
    assert description["status"] == "window" and description["fork"]["at"] == 3 * 86400
    assert set(description["fork"]["components"]) == {"scheduler", "policy", "predictor", "correction"}
    # the jobs that had ended at the snapshot are in the fork's outputs as they were
    ended = (snapshot.parent.parent / "b_jobs.csv").read_bytes()
    assert (tmp_path / "f_jobs.csv").read_bytes().startswith(ended) and expected.read_bytes().startswith(ended)
    code, _, err = run(capsys, "simulate", "--fork", snapshot, "-e", snapshot.parent.parent / "b")
    assert code == 2 and "a fork writes its own outputs" in err


def test_a_fork_into_the_same_classification_goes_on_as_the_run(tmp_path, capsys):
    """The classification taken over whole (classifier, divider, history, classes): the fork is the
    run itself."""
    flags = ["--classifier", "random-forest", "--kill-false-small", "-o", "period=60000", "-o",
             "unix_start_time=0", "-o", "n_estimators=5"]
    assert run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "a", "--quiet", *flags)[0] == 0
    assert run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "b", "--quiet", "--stop-at",
               "4d", *flags)[0] == 0
    snapshot = tmp_path / "b_checkpoints" / snapshot_files.snapshot_name(4 * 86400)
    code, _, err = run(capsys, "simulate", "--fork", snapshot, "-e", tmp_path / "f", "--quiet", *flags)
    assert code == 0 and "classifier random-forest takes over the snapshot's classification" in err
    assert (tmp_path / "f_jobs.csv").read_bytes() == (tmp_path / "a_jobs.csv").read_bytes()


def test_the_bundled_samples_by_name_pause_and_resume(tmp_path, capsys):
    """``sample:NAME`` inputs are recorded by the bundled file they name (they used to be opened as a
    path named ``sample:...`` when the snapshot was written)."""
    names = ["-p", "sample:cluster-100", "-w", "sample:KTH-SP2-1k", "--quiet"]
    assert run(capsys, "simulate", *names, "-e", tmp_path / "a")[0] == 0
    code, _, err = run(capsys, "simulate", *names, "-e", tmp_path / "b", "--stop-at", "2d")
    assert code == 0, err
    snapshot = tmp_path / "b_checkpoints" / snapshot_files.snapshot_name(2 * 86400)
    assert run(capsys, "simulate", "--resume", snapshot, "--quiet")[0] == 0
    assert (tmp_path / "b_jobs.csv").read_bytes() == (tmp_path / "a_jobs.csv").read_bytes()


def test_connect_refuses_snapshot_flags(capsys):
    code, _, err = run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "--connect", "tcp://127.0.0.1:1",
                       "--checkpoint-every", "7d")
    assert code == 2 and "--checkpoint-every needs the scheduler in this process" in err


@pytest.mark.parametrize("flags", [["--checkpoint-every", "1d"], ["--stop-at", "3d"], ["--resume", "x.snapshot"],
                                   ["--fork", "x.snapshot", "-e", "elsewhere"]])
def test_batsim_5_refuses_snapshots_in_one_line(tmp_path, capsys, flags):
    """Batsim 5's kernel runs a simulation to its end in one go: a pause, hence a snapshot, is refused
    before anything runs, and a run without snapshot flags is not slowed by a watch."""
    code, _, err = run(capsys, "simulate", "--batsim", "5", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "r",
                       "--quiet", *flags)
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"batsched-ml: error: {flags[0]}: ")
    assert "Batsim 5.0.0-rc2 line's kernel" in err and not list(tmp_path.iterdir())
    sim, scheduler, _ = _simulator({"scheduler": "easy"})
    sim.line = BATSIM_5
    with pytest.raises(SnapshotError, match="for Batsim 4.2.1 runs"):
        sim.run(in_process(DecisionCore(scheduler)), until=1000.0)


@pytest.mark.parametrize("text, seconds", [("90", 90.0), ("10min", 600.0), ("12h", 43200.0), ("7d", 604800.0),
                                           ("2w", 1209600.0), ("1.5d", 129600.0)])
def test_durations(text, seconds):
    from batsched_ml.config.validate import duration

    assert duration(text, "--checkpoint-every") == seconds


def test_sigterm_writes_a_snapshot_and_its_last_words_say_how_to_resume(tmp_path):
    from test_traces import SLOW_RUN

    proc = subprocess.Popen([sys.executable, "-c", SLOW_RUN, "simulate", "-p", PLATFORM, "-w", SAMPLE,
                             "-e", str(tmp_path / "slow"), "--quiet"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (tmp_path / "slow_run.json").exists():
        time.sleep(0.05)
    time.sleep(0.5)
    assert proc.poll() is None, "the run ended before it could be stopped"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err.count("\n") == 1, err
    snapshot = snapshots_in(tmp_path / "slow_checkpoints")[-1]
    assert err.startswith("batsched-ml: terminated (SIGTERM): stopped at simulated time")
    assert err.strip().endswith(f"snapshot {snapshot}; resume with: batsched-ml simulate --resume {snapshot}")
    done = subprocess.run([sys.executable, "-m", "batsched_ml.cli", "simulate", "--resume", str(snapshot),
                           "--quiet"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    code = main(["simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", str(tmp_path / "whole"), "--quiet"])
    assert code == 0
    assert (tmp_path / "slow_jobs.csv").read_bytes() == (tmp_path / "whole_jobs.csv").read_bytes()


# ------------------------------------------------------------------ reinforcement learning from real states
def test_an_rl_episode_starts_from_a_snapshot_of_a_real_run(paused):
    """The agent takes over the loaded machine and the queue of day 3 of KTH-SP2 (not an empty
    machine), for the jobs submitted within a day; its actions decide their starts."""
    from batsched_ml.rl.env import SchedulingEnv

    snapshot, _ = paused
    env = SchedulingEnv(SAMPLE, 100, sequence_length=256, simulator="full", backfill="easy")
    obs, info = env.reset(seed=0, options={"snapshot": [str(snapshot)], "horizon": 86400.0})
    assert info["time"] >= 3 * 86400 and info["queued"] >= 2 and env.observation_space.contains(obs)
    steps, done = 0, False
    while not done:
        action = int(np.flatnonzero(info["action_mask"])[-1])  # the last job of the window: not FCFS
        obs, reward, done, _, info = env.step(action)
        steps += 1
    episode = info["episode"]
    assert steps == episode["decisions"] and episode["jobs"] == episode["ran"] > 10
    assert episode["makespan"] > 4 * 86400 and env.reset(seed=1)[1]["queued"] >= 1  # sequences still work
