"""The ``rlscheduler`` protocol: RLScheduler's (Zhang et al., SC'20) table reproduced exactly.

Its sequence sampling is gym 0.21's seeding without gym (checked against numbers gym 0.21 printed);
its rules on hand-made sequences (their backfilling: a reservation computed once, a scan in
submission order, a strict ``<``; without backfilling the chosen job blocks); their README's
heuristic cells to the printed two decimals on Lublin-1 and SDSC-SP2 (``../shared``) and Lublin-2
(their ``data/lublin_256_new2``: looked for in ``../shared/traces`` or ``$RLSCHEDULER_DATA``, skipped
without it); the checkpoint reader on a bundle written here; and the protocol switch leaves the
default protocol's results as they were.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_dir

from batsched_ml.cli import main as cli_main
from batsched_ml.policies.network import AGENT_FEATURES, NetworkError, NetworkPolicy, ScoringNetwork
from batsched_ml.rl.legacy_seeding import gym021_np_random, seed_words
from batsched_ml.rl.protocols import evaluate_orders, get_protocol
from batsched_ml.rl.rlscheduler.checkpoint import CheckpointError, read_checkpoint
from batsched_ml.rl.rlscheduler.model import RLSchedulerModel
from batsched_ml.rl.rlscheduler.sequences import RLSchedulerSequences
from batsched_ml.rl.rlscheduler.simulator import RLSchedulerEpisode
from batsched_ml.rl.rlscheduler.trace import RLSchedulerTrace, load_rlscheduler_trace

ROOT = Path(__file__).resolve().parents[1]

# Their README's table (make_table_script.py --score_type bsld): FCFS, WFP3, UNI, SJF, F1 as printed.
PUBLISHED = {
    ("lublin_256.swf.gz", False): (7273.77, 19753.53, 22274.74, 277.35, 258.37),
    ("SDSC-SP2-1998-4.2-cln.swf.gz", False): (1727.54, 3000.88, 1848.45, 2680.55, 1232.06),
    ("lublin_256_new2", False): (7842.47, 9523.18, 11265.31, 787.89, 698.34),
    ("lublin_256.swf.gz", True): (235.82, 133.87, 307.23, 73.31, 75.07),
    ("SDSC-SP2-1998-4.2-cln.swf.gz", True): (1595.12, 1083.12, 548.01, 2167.84, 1098.22),
    ("lublin_256_new2", True): (247.61, 318.35, 379.59, 91.99, 148.25),
}
COLUMNS = ("fcfs", "wfp3-published", "unicef-published", "sjf", "f1")


def _their_file(name: str) -> Path | None:
    """A trace of their table: ../shared/traces (plain or .gz), or $RLSCHEDULER_DATA (their data/ folder)."""
    folders = [Path(os.environ["RLSCHEDULER_DATA"])] if os.environ.get("RLSCHEDULER_DATA") else []
    shared = shared_dir()
    if shared is not None:
        folders.append(shared / "traces")
    for folder in folders:
        for candidate in (folder / name, folder / f"{name}.gz", folder / name.removesuffix(".gz")):
            if candidate.is_file():
                return candidate
    return None


# ------------------------------------------------------------------ sampling
def test_gym021_seeding_is_reproduced_without_gym():
    # printed by gym 0.21.0's seeding.np_random(seed) (numpy 1.26) in a separate environment
    assert [gym021_np_random(1).randint(1024, 10_000 - 1024 - 1) for _ in range(1)] == [1981]
    rng = gym021_np_random(1)
    assert [rng.randint(1024, 10_000 - 1024 - 1) for _ in range(10)] == [1981, 2756, 4299, 8850, 3316, 2714, 5228,
                                                                        7762, 4022, 7085]
    gym_printed = {0: [233474672, 1047681358, 925097030], 2: [416108740, 1053210160, 644341613],
                   7: [108348976, 534420763, 724480720], 12345: [91530079, 546782002, 1022714786]}
    for seed, values in gym_printed.items():
        assert gym021_np_random(seed).randint(0, 1 << 30, 3).tolist() == values
    assert seed_words(2 ** 64) == seed_words(0)  # gym reduces integer seeds modulo 2**64
    with pytest.raises(ValueError):
        seed_words(-1)


def test_sampling_imports_no_gym():
    code = ("import sys; sys.modules['gym'] = None\n"
            "from batsched_ml.rl.legacy_seeding import gym021_np_random\n"
            "print(gym021_np_random(1).randint(1024, 8975))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1981"


def _tiny_trace(jobs, nodes: int = 4, name: str = "tiny") -> RLSchedulerTrace:
    """``jobs``: (submit, run, requested time, processors) rows, in job-id order."""
    a = np.array(jobs, dtype=np.int64)
    minus = np.full(len(a), -1, np.int64)
    maxima = {"run_time": int(a[:, 1].max()), "memory": 0, "user": 0, "group": 0, "executable": 0}
    return RLSchedulerTrace(name, np.arange(1, len(a) + 1), a[:, 0], a[:, 1], a[:, 2], a[:, 3], minus, minus, minus,
                            minus, nodes, nodes, maxima)


def test_evaluation_starts_are_theirs_and_deterministic():
    trace = _tiny_trace([(i, 10, 10, 1) for i in range(10_000)])
    sequences = RLSchedulerSequences(trace, 1024)
    assert sequences.starts(10, 1) == [1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085]
    assert sequences.starts(10, 1) == sequences.starts(10, 1)
    assert sequences.starts(3, 2) != sequences.starts(3, 1)
    sdsc = _tiny_trace([(i, 10, 10, 1) for i in range(12_000)], name="SDSC-SP2-1998-4.2-cln.swf")
    assert RLSchedulerSequences(sdsc, 1024).starts(10, 1)[:3] == [1981, 2756, 4299]  # their first 10,000 jobs only


# --------------------------------------------------------------------- rules
# J0-J4 on 4 nodes: J1 ends before J0; J2 (the whole machine) is chosen while J1 and J0 run; J3 (earlier,
# requested 30 s) and J4 (later, requested 5 s) arrive while no node is free.
JOBS = [(0, 100, 100, 2), (1, 20, 20, 2), (2, 10, 10, 4), (3, 30, 30, 2), (4, 5, 5, 2)]


def test_their_backfilling_scans_in_submission_order_whatever_the_order():
    episode = RLSchedulerEpisode(_tiny_trace(JOBS), 0, 5, backfill=True)
    episode.run_order("sjf")
    # J2's reservation is J0's requested end (100); at J1's end (21) J3 fits and ends by then: it starts
    # though SJF ranks J4 first, and J4 waits for J3's end (51)
    assert episode.sched == [0, 1, 100, 21, 51]


def test_without_backfilling_the_chosen_job_blocks_and_is_not_revisited():
    episode = RLSchedulerEpisode(_tiny_trace(JOBS), 0, 5, backfill=False)
    episode.run_order("sjf")
    assert episode.sched == [0, 1, 100, 110, 110]  # J4 (SJF's pick at 100) blocks until J2 ends; J3 follows
    expected = [1.0, 1.0, 108 / 10, 137 / 30, 111 / 10]
    assert episode.bounded_slowdowns() == [expected[j] for j in episode.order_started]
    assert episode.score() == sum(b / 5 for b in [expected[j] for j in episode.order_started])


def test_the_reservation_is_computed_once_and_backfilled_jobs_end_strictly_before_it():
    # J0 requested 50 s but runs 100: J1's reservation stays 50; J2 (ends at 15) is backfilled, J3 (arrives
    # at 60, after the reservation) waits for J0 although a node is free (EASY would start it at 60)
    late = [(0, 100, 50, 3), (1, 50, 50, 2), (10, 5, 5, 1), (60, 5, 5, 1)]
    episode = RLSchedulerEpisode(_tiny_trace(late), 0, 4, backfill=True)
    episode.run_order("fcfs")
    assert episode.sched == [0, 100, 10, 100]
    # a job that would end exactly at the reservation is not backfilled (strict <)
    edge = [(0, 100, 100, 3), (1, 50, 50, 2), (2, 98, 98, 1), (3, 96, 96, 1)]
    episode = RLSchedulerEpisode(_tiny_trace(edge), 0, 4, backfill=True)
    episode.run_order("fcfs")
    assert episode.sched == [0, 100, 100, 3]


def test_published_wfp3_and_unicef_read_a_wait_from_start_time_minus_one():
    # J2 and J3 queue while J1 waits for J0; at 100, J3 has waited much longer for its request: the correct
    # WFP3 runs it first, the published one (static keys, w = -(s + 1)) the earlier, longer J2
    jobs = [(0, 100, 100, 4), (1, 10, 10, 4), (2, 1000, 1000, 4), (60, 10, 10, 4)]
    for correct, published in (("wfp3", "wfp3-published"), ("unicef", "unicef-published")):
        ours = RLSchedulerEpisode(_tiny_trace(jobs), 0, 4, backfill=False)
        ours.run_order(correct)
        theirs = RLSchedulerEpisode(_tiny_trace(jobs), 0, 4, backfill=False)
        theirs.run_order(published)
        assert ours.order_started == [0, 1, 3, 2]
        assert theirs.order_started == [0, 1, 2, 3]


def test_a_job_larger_than_the_machine_is_refused_with_one_line():
    with pytest.raises(ValueError, match="never start it"):
        RLSchedulerEpisode(_tiny_trace([(0, 10, 10, 5), (1, 10, 10, 1)]), 0, 2, backfill=False)


# ----------------------------------------------------- their table, exactly
@pytest.mark.parametrize("backfill", [False, True], ids=["without-backfilling", "with-backfilling"])
@pytest.mark.parametrize("name", ["lublin_256.swf.gz", "SDSC-SP2-1998-4.2-cln.swf.gz", "lublin_256_new2"])
def test_their_readme_heuristic_cells_to_the_printed_two_decimals(name, backfill):
    path = _their_file(name)
    if path is None:
        pytest.skip(f"{name} is not in ../shared/traces nor in $RLSCHEDULER_DATA")
    results = evaluate_orders(path, COLUMNS, protocol="rlscheduler", backfill=backfill)
    assert [r.starts for r in results][0] == [1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085]
    assert tuple(round(r.mean, 2) for r in results) == PUBLISHED[(name, backfill)]


def test_the_shared_lublin_256_is_their_trace():
    path = _their_file("lublin_256.swf.gz")
    if path is None:
        pytest.skip("lublin_256.swf.gz is not in ../shared/traces")
    trace = load_rlscheduler_trace(path)
    assert (len(trace), trace.max_nodes, trace.max_procs) == (10_000, 256, 256)
    assert (trace.request_time == trace.run).all()  # no requested times: exact estimates


# ------------------------------------------------------------------- agents
def test_the_environment_under_their_protocol_is_the_evaluators_greedy_agent(tmp_path):
    pytest.importorskip("gymnasium")
    from batsched_ml.rl.env import SchedulingEnv

    trace = _tiny_trace([(i * 37 % 5000 + i * 20, 50 + (i * 7919) % 3000, 60 + (i * 7919) % 3000, 1 + i % 7)
                         for i in range(600)], nodes=16)
    trace = RLSchedulerTrace(**{**trace.__dict__, "submit": np.sort(trace.submit)})
    path = tmp_path / "tiny.swf"
    lines = ["; MaxNodes: 16", "; MaxProcs: 16"]
    lines += [f"{i + 1} {s} -1 {r} {n} -1 -1 {n} {q} -1 1 -1 -1 -1 -1 -1 -1 -1"
              for i, (s, r, q, n) in enumerate(zip(trace.submit, trace.run, trace.request_time, trace.procs))]
    path.write_text("\n".join(lines) + "\n")
    network = ScoringNetwork.shaped((4,), AGENT_FEATURES)
    network = network.with_parameters(np.random.default_rng(3).normal(0, 1, network.nb_parameters))
    network.save(tmp_path / "net.json")
    env = SchedulingEnv(str(path), protocol="rlscheduler", backfill="rlscheduler", sequence_length=256)
    [expected] = evaluate_orders(path, [f"rl:{tmp_path / 'net.json'}"], protocol="rlscheduler", backfill=True,
                                 sequences=2, length=256)
    for start, value in zip(expected.starts, expected.values):
        obs, info = env.reset(options={"start": start})
        total = 0.0
        while True:
            assert env.observation_space.contains(obs)
            fits = obs["jobs"][:, :5][info["action_mask"]].astype(np.float64)
            np.testing.assert_allclose(fits, env._lean.features(fits_now=True), atol=1e-6)
            action = network.best(env._lean.features(fits_now=True))
            obs, reward, terminated, _, info = env.step(action)
            total += reward
            if terminated:
                break
        assert info["episode"]["avebsld"] == value
        assert info["episode"]["simulator"] == "rlscheduler"
        assert total == pytest.approx(-value, rel=1e-12)


def _tiny_swf(tmp_path, jobs: int = 600, nodes: int = 16) -> Path:
    """An SWF file of ``jobs`` varied jobs on ``nodes`` nodes (their header fields)."""
    lines = [f"; MaxNodes: {nodes}", f"; MaxProcs: {nodes}"]
    for i in range(jobs):
        run, procs = 50 + (i * 7919) % 3000, 1 + i % 7
        lines.append(f"{i + 1} {i * 30} -1 {run} {procs} -1 -1 {procs} {run + 60} -1 1 -1 -1 -1 -1 -1 -1 -1")
    path = tmp_path / "tiny.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("algorithm", ["es", "ppo"])
def test_train_policy_under_their_protocol_reads_fits_now(tmp_path, capsys, algorithm):
    if algorithm == "ppo":
        pytest.importorskip("torch")
        pytest.importorskip("sb3_contrib")
    path, out = _tiny_swf(tmp_path), tmp_path / "net.json"
    budget = ["--generations", "2", "--population", "4", "--sequences", "2"] if algorithm == "es" else \
        ["--timesteps", "256"]
    assert cli_main(["train-policy", str(path), "-o", str(out), "--algorithm", algorithm, "--protocol", "rlscheduler",
                     "--backfill", "rlscheduler", "--fits-now", "--sequence-length", "64", "--hidden", "3", "-q",
                     *budget]) == 0, capsys.readouterr().err
    capsys.readouterr()
    network = ScoringNetwork.from_dict(json.loads(out.read_text()))
    assert network.features == AGENT_FEATURES and network.metadata["config"]["protocol"] == "rlscheduler"
    assert cli_main(["evaluate-policy", str(path), "--protocol", "rlscheduler", "--orders", f"rl:{out}",
                     "--sequences", "2", "--sequence-length", "64", "--backfill", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["mean"] >= 1.0
    assert cli_main(["simulate", "-p", str(ROOT / "tests" / "data" / "platform-16.xml"), "-w",
                     str(ROOT / "tests" / "data" / "tiny.json.gz"), "-e", str(tmp_path / "r"), "--policy", f"rl:{out}",
                     "--quiet"]) == 2  # an agent's network is no queue order: one line
    assert "not a queue order" in capsys.readouterr().err
    assert cli_main(["train-policy", str(path), "-o", str(out), "--backfill", "easy", "--protocol", "rlscheduler",
                     "-q"]) == 2
    assert "backfill must be one of none, rlscheduler" in capsys.readouterr().err


def test_an_agent_network_is_not_a_queue_order():
    network = ScoringNetwork.shaped((2,), AGENT_FEATURES)
    with pytest.raises(NetworkError, match="not a queue order"):
        NetworkPolicy(network)


# ------------------------------------------------------------ their models
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _write_bundle(folder: Path, tensors: dict) -> None:
    """A TensorFlow tensor bundle, written from the format's description (one data block, no compression)."""
    data, entries = b"", []
    for name in sorted(tensors):
        raw = np.asarray(tensors[name], "<f4").tobytes()
        shape = b"".join(b"\x12" + _varint(len(d)) + d for d in (b"\x08" + _varint(n) for n in tensors[name].shape))
        entry = b"\x08\x01" + b"\x12" + _varint(len(shape)) + shape + b"\x20" + _varint(len(data)) + b"\x28" + \
            _varint(len(raw))
        entries.append((name.encode(), entry))
        data += raw

    def block(items):
        body = b"".join(_varint(0) + _varint(len(k)) + _varint(len(v)) + k + v for k, v in items)
        return body + struct.pack("<II", 0, 1)

    first = block([(b"", b"")] + entries)
    index = block([(entries[-1][0], _varint(0) + _varint(len(first)))])
    table = first + b"\x00\x00\x00\x00\x00" + index + b"\x00\x00\x00\x00\x00"
    handles = _varint(0) + _varint(0) + _varint(len(first) + 5) + _varint(len(index))
    table += handles.ljust(40, b"\x00") + struct.pack("<Q", 0xDB4775248B80FB57)
    variables = folder / "simple_save" / "variables"
    variables.mkdir(parents=True)
    (variables / "variables.index").write_bytes(table)
    (variables / "variables.data-00000-of-00001").write_bytes(data)


def test_their_checkpoint_format_is_read_and_their_network_scores_in_float32(tmp_path):
    rng = np.random.default_rng(0)
    sizes = [8, 32, 16, 8, 1]
    tensors = {}
    for i, name in enumerate(("pi/dense", "pi/dense_1", "pi/dense_2", "pi/dense_3")):
        tensors[f"{name}/kernel"] = rng.normal(size=(sizes[i], sizes[i + 1])).astype(np.float32)
        tensors[f"{name}/bias"] = rng.normal(size=sizes[i + 1]).astype(np.float32)
    tensors["v/dense/kernel"] = rng.normal(size=(8, 32)).astype(np.float32)
    _write_bundle(tmp_path, tensors)
    read = read_checkpoint(tmp_path / "simple_save")
    assert set(read) == set(tensors)
    for name, value in tensors.items():
        np.testing.assert_array_equal(read[name], value)
    model = RLSchedulerModel.load(tmp_path)
    obs = rng.random((128, 8)).astype(np.float32)
    mask = np.arange(128) < 5
    h = obs
    for i, name in enumerate(("pi/dense", "pi/dense_1", "pi/dense_2", "pi/dense_3")):
        h = h @ tensors[f"{name}/kernel"] + tensors[f"{name}/bias"]
        h = np.maximum(h, 0) if i < 3 else h
    logits = model.logits(obs, mask)
    np.testing.assert_allclose(logits[:5], h[:5, 0], rtol=1e-6)
    assert (logits[5:] < -1e5).all()
    with pytest.raises(CheckpointError, match="no variables.index"):
        read_checkpoint(tmp_path / "nowhere")


# ------------------------------------------------- the default protocol
def test_the_protocol_switch_changes_nothing_in_the_default_protocol(capsys):
    pytest.importorskip("gymnasium")
    from batsched_ml.rl.env import SchedulingEnv
    from batsched_ml.rl.episodes import Sequences, load_trace
    from batsched_ml.rl.evaluate import sequence_bsld

    kth = str(ROOT / "workloads" / "KTH-SP2-1k.json")
    platform = str(ROOT / "platforms" / "cluster-100.xml")
    sequences = Sequences(load_trace(kth, 100), 200, (0.8, 1.0))
    starts = sequences.starts(3, 2020)
    direct = {order: [sequence_bsld(spec, "easy", sequences, s) for s in starts]
              for order, spec in (("fcfs", "fcfs"), ("sjf", "spf"), ("f1", "f1"))}
    assert cli_main([
        "evaluate-policy", kth, "--orders", "fcfs,sjf,f1", "--backfill", "--sequences", "3",
        "--sequence-length", "200", "--cores", "100", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["order"] for r in rows] == ["fcfs", "sjf", "f1"]
    for row in rows:
        assert [s["start"] for s in row["sequences"]] == starts
        assert [s["bsld"] for s in row["sequences"]] == direct[row["order"]]
        assert row["ci_low"] <= row["mean"] <= row["ci_high"]
    episodes = []
    for kwargs in ({}, {"protocol": "batsched-ml"}):
        env = SchedulingEnv(kth, platform, sequence_length=150, backfill="easy", **kwargs)
        obs, info = env.reset(seed=4)
        actions = np.random.default_rng(0)
        trail = []
        while True:
            obs, reward, terminated, _, info = env.step(int(actions.integers(0, 3)))
            trail.append((reward, obs["jobs"].tobytes()))
            if terminated:
                break
        episodes.append((trail, info["episode"]))
    assert episodes[0] == episodes[1]


def test_evaluate_policy_errors_are_one_line(capsys, tmp_path):
    path = tmp_path / "t.swf"
    path.write_text("; MaxNodes: 4\n" + "".join(f"{i} {i} -1 10 1 -1 -1 1 10 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
                                               for i in range(1, 3000)))
    for argv, message in ((["--protocol", "rlscheduler", "--orders", "fcfs,nope"], "unknown order 'nope'"),
                          (["--protocol", "rlscheduler", "--orders", "rlscheduler-model:x#sample=a"], "#sample=K"),
                          (["--protocol", "rlscheduler", "--orders", "fcfs", "--sequence-length", "2000"], "too few"),
                          (["--orders", "nope"], "nope")):
        assert cli_main(["evaluate-policy", str(path), *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("batsched-ml: error:") and message in err and "\n" not in err
    assert get_protocol("rlscheduler").backfills == ("none", "rlscheduler")
    with pytest.raises(ValueError, match="unknown protocol"):
        get_protocol("theirs")
