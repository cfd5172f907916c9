"""The reinforcement-learning environment (``batsched_ml/Scheduling-v0``), the scoring-network policy
(``--policy rl:FILE``) and its training (``train-policy``, evolution strategies).

The environment is checked with Gymnasium's own checker and vectorised; its masks, outputs (they
pass ``batsched-ml check``), determinism and rewards are checked against the decision core and
the simulator it drives; a greedy agent with a scoring network gives exactly the schedule of
``--scheduler fcfs --policy rl:FILE``; a trained policy gives the same schedule embedded and
through ``serve`` + ``simulate --connect``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

import batsched_ml.rl  # noqa: E402,F401 - registers the environment (gymnasium is imported)
from batsched_ml.cli import main as cli_main  # noqa: E402
from batsched_ml.policies.network import (FEATURES, NetworkError, NetworkPolicy, ScoringNetwork,  # noqa: E402
                                          job_features, load_network)
from batsched_ml.rl import ENV_ID  # noqa: E402
from batsched_ml.rl.agent import AgentQueue  # noqa: E402
from batsched_ml.rl.env import SchedulingEnv  # noqa: E402
from batsched_ml.rl.episodes import Sequences, load_trace  # noqa: E402
from batsched_ml.rl.evaluate import run_policy  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KTH = str(ROOT / "workloads" / "KTH-SP2-1k.json")  # 1,000 KTH-SP2 jobs, 100 cores
PLATFORM = str(ROOT / "platforms" / "cluster-100.xml")
TINY = (ROOT / "tests" / "data" / "platform-16.xml", ROOT / "tests" / "data" / "tiny.json.gz")


def make(**kwargs) -> SchedulingEnv:
    kwargs.setdefault("sequence_length", 150)
    return SchedulingEnv(KTH, PLATFORM, **kwargs)


def random_network(seed: int, hidden=(6,)) -> ScoringNetwork:
    shape = ScoringNetwork.shaped(hidden)
    return shape.with_parameters(np.random.default_rng(seed).normal(0, 1.5, shape.nb_parameters))


def play(env, choose, seed=0, options=None):
    """One episode; ``choose(env, obs, info) -> action``. Returns (return, steps, last info, actions)."""
    obs, info = env.reset(seed=seed, options=options)
    total, steps, actions = 0.0, 0, []
    while True:
        action = choose(env, obs, info)
        actions.append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
        steps += 1
        assert not truncated
        if terminated:
            return total, steps, info, actions


def random_agent(seed):
    rng = np.random.default_rng(seed)
    return lambda env, obs, info: int(rng.integers(np.count_nonzero(info["action_mask"])))


# ------------------------------------------------------------------ Gymnasium's contract


@pytest.mark.parametrize("backfill", ["none", "easy"])
def test_gymnasium_env_checker_passes(backfill):
    from gymnasium.utils.env_checker import check_env

    env = gym.make(ENV_ID, workload=KTH, platform=PLATFORM, sequence_length=120, backfill=backfill)
    check_env(env.unwrapped, skip_render_check=True)


def test_registered_under_its_id_and_by_module_prefix():
    env = gym.make(f"batsched_ml.rl:{ENV_ID}", workload=KTH, sequence_length=50)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    assert isinstance(env.unwrapped, SchedulingEnv) and env.unwrapped.nb_cores == 100  # the workload's nb_res


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vectorised_environments_run_episodes(mode):
    envs = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode=mode, workload=KTH, platform=PLATFORM,
                        sequence_length=60)
    try:
        obs, infos = envs.reset(seed=[3, 4])
        assert obs["jobs"].shape == (2, 128, 6)
        rng = np.random.default_rng(0)
        finished = np.zeros(2, int)
        for _ in range(2000):
            masks = infos["action_mask"]
            actions = [int(rng.integers(max(np.count_nonzero(m), 1))) for m in masks]
            obs, rewards, terminated, truncated, infos = envs.step(actions)
            finished += terminated
            if finished.min() >= 2:
                break
        assert finished.min() >= 2
    finally:
        envs.close()


# ------------------------------------------------------------------ semantics


@pytest.mark.parametrize("simulator", ["lean", "full"])
def test_observation_is_normalised_and_describes_the_window(simulator):
    env = make(simulator=simulator)
    obs, info = env.reset(seed=2)
    for _ in range(40):
        obs, _, terminated, _, info = env.step(0)
        if terminated:
            obs, info = env.reset()
        jobs, mask = obs["jobs"], info["action_mask"]
        k = int(mask.sum())
        assert k >= 2 and mask[:k].all() and not mask[k:].any()  # a choice; slots hold the oldest jobs
        assert (jobs >= 0).all() and (jobs <= 1).all() and (obs["machine"] >= 0).all()
        assert (jobs[:k, 5] == 1).all() and not jobs[k:].any()
        # what the agent sees is what the policy plugin computes (float32 of the same numbers)
        window = env.window_jobs()
        assert len(window) == k
        expected = job_features([info["time"] - j["submission_time"] for j in window], [j["estimate"] for j in window],
                                [j["res"] for j in window], 100)
        np.testing.assert_array_equal(env.window_features(), expected)
        np.testing.assert_allclose(jobs[:k, :4], expected, rtol=1e-6, atol=1e-7)
        free = round(float(obs["machine"][0]) * 100)
        assert (jobs[:k, 4] == [j["res"] <= free for j in window]).all()


def edge_workload(seed: int, nb_jobs: int = 400) -> dict:
    """Jobs that exercise the lean core's rules: fractional and equal submission times, run times of a
    millisecond (Batsim refuses a delay of 0), run times beyond the walltime (ended at it), no walltime
    (EASY rejects them), more cores than the machine (rejected)."""
    rng = np.random.default_rng(seed)
    subtimes = np.sort(np.round(np.cumsum(rng.exponential(40.0, nb_jobs)) * rng.choice([1.0, 1.0, 0.0], nb_jobs), 3))
    subtimes = np.maximum.accumulate(subtimes)
    jobs, profiles = [], {}
    for i, sub in enumerate(subtimes):
        delay = float(rng.choice([0.001, max(round(float(rng.exponential(300.0)), 4), 0.001), 60.0]))
        walltime = float(rng.choice([-1.0, 60.0, max(round(delay * float(rng.uniform(0.8, 4.0)), 2), 0.001), 3600.0],
                                    p=[0.03, 0.1, 0.77, 0.1]))
        res = int(rng.choice([1, 120, int(rng.integers(1, 101))], p=[0.01, 0.01, 0.98]))
        profiles[f"d{delay}"] = {"type": "delay", "delay": delay}
        jobs.append({"id": str(i), "subtime": float(sub), "walltime": walltime, "res": res, "profile": f"d{delay}"})
    return {"nb_res": 100, "jobs": jobs, "profiles": profiles}


def lockstep(lean, full, seed, options=None):
    """Run a random agent in both environments at once; every observation, mask, reward and summary must
    be equal. Returns the number of steps."""
    rng = np.random.default_rng(seed)
    (oa, ia), (ob, ib) = lean.reset(seed=seed, options=options), full.reset(seed=seed, options=options)
    steps = 0
    while True:
        assert (ia["action_mask"] == ib["action_mask"]).all()
        assert all((oa[key] == ob[key]).all() for key in ("jobs", "machine"))
        if "episode" in ia:
            ea, eb = dict(ia["episode"], jobs_csv=None), dict(ib["episode"], jobs_csv=None)
            assert (ea.pop("simulator"), eb.pop("simulator")) == ("lean", "full")
            assert ea == eb
            return steps
        assert (ia["time"], ia["queued"]) == (ib["time"], ib["queued"])
        np.testing.assert_array_equal(lean.window_features(), full.window_features())
        action = int(rng.integers(np.count_nonzero(ia["action_mask"]) + (steps % 17 == 0)))  # some masked
        action = min(action, lean.window - 1)
        (oa, ra, ta, _, ia), (ob, rb, tb, _, ib) = lean.step(action), full.step(action)
        assert (ra, ta) == (rb, tb)
        steps += 1


@pytest.mark.parametrize("backfill", ["none", "easy"])
def test_the_lean_core_runs_the_full_paths_episodes(backfill):
    """The default (lean) core takes the full path's every decision: same observations, masks, rewards
    and outcome, step for step, with a random agent, on KTH-SP2 sequences and on jobs at the edges of
    the rules (the full path: the embedded simulator, the decision core and the real fcfs / easy)."""
    for reward in ("bsld-step", "utilisation"):
        kwargs = dict(window=32, backfill=backfill, reward=reward, sequence_length=300)
        lean, full = make(simulator="lean", **kwargs), make(simulator="full", **kwargs)
        for seed in range(3):
            assert lockstep(lean, full, seed) > 100
    for seed in range(3):
        workload = edge_workload(seed)
        kwargs = dict(window=16, backfill=backfill, reward="bsld-step", sequence_length=400)
        lean, full = (SchedulingEnv(workload, simulator="lean", **kwargs),
                      SchedulingEnv(workload, simulator="full", **kwargs))
        assert lockstep(lean, full, seed, options={"start": 0}) > 50
    with pytest.raises(ValueError, match="simulator"):
        make(simulator="batsim")


def test_masked_actions_are_never_executed():
    """An action outside the mask starts the oldest job instead (and says so): the episode is the one
    where the agent always picks slot 0."""
    def invalid(env, obs, info):
        count = int(np.count_nonzero(info["action_mask"]))
        assert count < env.window  # so that an empty slot exists
        return count  # the first empty slot

    env = make(window=64)
    ret_invalid, steps, info, _ = play(env, invalid, seed=5)
    assert info["episode"]["invalid_actions"] == steps
    ret_oldest, steps2, info2, _ = play(env, lambda e, o, i: 0, seed=5)
    assert (ret_invalid, steps) == (ret_oldest, steps2)
    assert info2["episode"]["invalid_actions"] == 0

    # the queue itself: nothing but a slot of the window is ever taken
    picks = iter([-1, 99, "x", None, 1])
    queue = AgentQueue(lambda q, now: next(picks), window=4)
    queue.on_simulation_begins(8)

    class Job:
        def __init__(self, seq):
            self.seq, self.submission_time, self.res, self.estimate, self.id = seq, 0.0, 1, 10.0, f"w0!{seq}"
            self.subtime = 0.0

    jobs = [Job(i) for i in range(1, 4)]
    for job in jobs:
        queue.add(job, 0.0)
    for expected in (jobs[0], jobs[0], jobs[0], jobs[0]):
        queue._pick = None  # noqa: SLF001 - a new pass each time
        assert queue.first(0.0) is expected
    queue._pick = None  # noqa: SLF001
    assert queue.first(0.0) is jobs[1] and queue.invalid_actions == 4 and queue.decisions == 5


@pytest.mark.parametrize("simulator", ["lean", "full"])
def test_an_action_outside_the_action_space_raises(simulator):
    """Gymnasium's contract: step() takes an element of action_space. Slot 999 of 16, -1 and 2.7
    raise (they used to be taken as masked slots, 2.7 as slot 2); a masked slot inside the space
    starts the oldest job and says so; NumPy integers are actions."""
    env = make(window=16, simulator=simulator)
    _, info = env.reset(seed=1)
    for action in (999, 16, -1, 2.7, "1", None, np.float64(1.0)):
        with pytest.raises(ValueError, match=r"not in the action space Discrete\(16\)"):
            env.step(action)
    empty = int(np.count_nonzero(info["action_mask"]))
    assert empty < 16
    _, _, _, _, info = env.step(np.int64(empty))
    assert info["invalid_action"] is True
    _, _, _, _, info = env.step(np.int32(0))
    assert info["invalid_action"] is False


@pytest.mark.parametrize("backfill", ["none", "easy"])
def test_an_episode_schedule_passes_check_and_its_reward_is_its_avebsld(tmp_path, backfill, capsys):
    from batsched_ml.analysis import compute_metrics

    env = make(backfill=backfill, output_prefix=str(tmp_path / "ep"))
    ret, steps, info, _ = play(env, random_agent(1), seed=11)
    episode = info["episode"]
    jobs_csv = Path(episode["jobs_csv"])
    assert jobs_csv.name == "ep-1_jobs.csv" and (tmp_path / "ep-1_schedule.csv").exists()
    code = cli_main(["check", str(jobs_csv), "-w", str(tmp_path / "ep-1_workload.json"), "-p", PLATFORM])
    assert code == 0, capsys.readouterr()
    metrics = compute_metrics(jobs_csv, taus=(10.0,))
    assert metrics["jobs"] == 150 and episode["ran"] == 150
    assert ret == pytest.approx(-episode["avebsld"], rel=1e-9)
    assert episode["avebsld"] == pytest.approx(metrics["avebsld_tau10"], rel=1e-4)  # CSV: %f to the microsecond
    assert steps == episode["steps"] == episode["decisions"]


def test_step_rewards_add_up_to_the_end_reward():
    ret_end, _, info_end, actions = play(make(reward="bsld"), random_agent(4), seed=8)
    replay = iter(actions)
    ret_step, _, info_step, _ = play(make(reward="bsld-step"), lambda e, o, i: next(replay), seed=8)
    assert info_end["episode"]["avebsld"] == info_step["episode"]["avebsld"]
    assert ret_step == pytest.approx(ret_end, rel=1e-9)
    ret_util, _, info, _ = play(make(reward="utilisation"), lambda e, o, i: 0, seed=8)
    assert 0 < ret_util <= 1


def test_same_seed_same_episode_other_seed_other_sequence():
    def trajectory(seed, agent_seed):
        env = make()
        rng = np.random.default_rng(agent_seed)
        obs, info = env.reset(seed=seed)
        seen = [obs["jobs"].copy()]
        rewards = []
        while True:
            obs, reward, terminated, _, info = env.step(int(rng.integers(np.count_nonzero(info["action_mask"]))))
            seen.append(obs["jobs"].copy())
            rewards.append(reward)
            if terminated:
                return info["episode"], seen, rewards

    a, b = trajectory(3, 0), trajectory(3, 0)
    assert a[0] == b[0] and a[2] == b[2]
    assert all((x == y).all() for x, y in zip(a[1], b[1]))
    assert trajectory(4, 0)[0]["start"] != a[0]["start"]


def test_reset_options_choose_the_sequence_and_reset_abandons_a_running_episode():
    env = make()
    env.reset(seed=0, options={"start": 100})
    for _ in range(5):
        env.step(0)
    obs, info = env.reset(options={"start": 100})  # the first episode is dropped mid-way
    ret, _, info, _ = play(env, lambda e, o, i: 0, seed=None, options={"start": 100})
    assert info["episode"]["start"] == 100
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_bad_settings_are_refused_with_one_line():
    with pytest.raises(ValueError, match="backfill"):
        make(backfill="conservative")
    with pytest.raises(ValueError, match="reward"):
        make(reward="profit")
    with pytest.raises(ValueError, match="fewer than a sequence"):
        make(sequence_length=5000)
    with pytest.raises(ValueError, match="no such workload"):
        SchedulingEnv("missing.swf")


# ------------------------------------------------------------------ the policy plugin


def test_greedy_network_agent_gives_the_schedule_of_the_policy_plugin(tmp_path):
    """Under strict FCFS, an agent starting the best-scored job of its window runs the very schedule of
    ``--scheduler fcfs --policy rl:FILE`` (the window holds the whole queue here), byte for byte."""
    network = random_network(7)
    env = make(window=160, output_prefix=str(tmp_path / "env"))
    _, steps, info, _ = play(env, lambda e, o, i: network.best(e.window_features()), seed=0, options={"start": 300})
    assert steps > 50
    sequences = Sequences(load_trace(KTH), 150)
    result, _ = run_policy(NetworkPolicy(network), "none", 100, sequences.workload(300), tmp_path / "plugin")
    assert Path(result.jobs_csv).read_bytes() == Path(info["episode"]["jobs_csv"]).read_bytes()
    # and the order is not FCFS's: the network changed the schedule
    fcfs, _ = run_policy("fcfs", "none", 100, sequences.workload(300), tmp_path / "fcfs")
    assert Path(fcfs.jobs_csv).read_bytes() != Path(result.jobs_csv).read_bytes()


def test_network_file_round_trip_and_bad_files(tmp_path):
    network = random_network(1, hidden=(5, 3))
    network.machine_cores = 128
    network.save(tmp_path / "p.json")
    loaded = load_network(tmp_path / "p.json")
    x = np.random.default_rng(0).random((50, len(FEATURES)))
    np.testing.assert_array_equal(loaded.scores(x), network.scores(x))
    assert loaded.hidden == (5, 3) and loaded.machine_cores == 128
    # a row's score does not depend on the other rows it is scored with
    np.testing.assert_array_equal(network.scores(x[7:8]), network.scores(x)[7:8])
    data = json.loads((tmp_path / "p.json").read_text())
    for broken, message in [({**data, "format": "other"}, "not a scoring-network"),
                            ({**data, "version": 99}, "version"),
                            ({**data, "features": ["wait", "colour"]}, "unknown feature"),
                            ({**data, "layers": data["layers"][:1]}, "outputs")]:
        (tmp_path / "b.json").write_text(json.dumps(broken))
        with pytest.raises(NetworkError, match=message):
            load_network(tmp_path / "b.json")


def test_rl_policy_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "bad.json").write_text("{")
    for spec in ("rl:" + str(tmp_path / "missing.json"), "rl:" + str(tmp_path / "bad.json")):
        code = cli_main(["simulate", "-p", str(TINY[0]), "-w", str(TINY[1]), "-e", str(tmp_path / "x"),
                         "--policy", spec, "--quiet"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and err[0].startswith("batsched-ml: error: rl:"), err


# ------------------------------------------------------------------ training


def train(tmp_path, name, *extra) -> Path:
    out = tmp_path / name
    code = cli_main(["train-policy", KTH, "-o", str(out), "--sequence-length", "100", "--sequences", "1",
                     "--population", "3", "--hidden", "4", "-q", *extra])
    assert code == 0
    return out


def test_training_resumes_to_the_same_policy(tmp_path, capsys):
    straight = train(tmp_path, "a.json", "--generations", "3")
    train(tmp_path, "b.json", "--generations", "2")
    resumed = train(tmp_path, "b.json", "--generations", "3")  # the checkpoint is extended
    a, b = load_network(straight), load_network(resumed)
    np.testing.assert_array_equal(a.parameters(), b.parameters())
    assert a.metadata["simulated_jobs"] == b.metadata["simulated_jobs"] > 0
    assert a.metadata["generations"] == 3 and a.metadata["algorithm"] == "cma-es"
    assert not np.all(a.parameters() == 0)  # it moved from the all-FCFS start
    # other settings on the same checkpoint: refused, with what differs
    code = cli_main(["train-policy", KTH, "-o", str(resumed), "--sequence-length", "100", "--sequences", "1",
                     "--population", "4", "--hidden", "4", "-q", "--generations", "5"])
    err = capsys.readouterr().err
    assert code == 2 and "population: 3 -> 4" in err
    assert "generations" not in err  # a larger --generations is allowed, so it is no difference


def test_training_resumes_with_the_trace_given_by_another_path(tmp_path, capsys, monkeypatch):
    """--resume compared path strings: the same trace by a relative path was refused."""
    train(tmp_path, "c.json", "--generations", "1")
    monkeypatch.chdir(ROOT / "workloads")
    code = cli_main(["train-policy", "KTH-SP2-1k.json", "-o", str(tmp_path / "c.json"), "--sequence-length", "100",
                     "--sequences", "1", "--population", "3", "--hidden", "4", "--generations", "2"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "resuming from" in err and "at generation 1" in err
    assert load_network(tmp_path / "c.json").metadata["generations"] == 2
    # another trace is still refused, and named
    other = tmp_path / "other.json"
    other.write_bytes((ROOT / "workloads" / "KTH-SP2-1k.json").read_bytes())
    code = cli_main(["train-policy", str(other), "-o", str(tmp_path / "c.json"), "--sequence-length", "100",
                     "--sequences", "1", "--population", "3", "--hidden", "4", "--generations", "3", "-q"])
    assert code == 2 and "workload: " in capsys.readouterr().err


def test_trained_policy_gives_the_same_schedule_embedded_and_through_serve(tmp_path, capsys):
    from test_serve_cli import start_serve, tcp_endpoint

    policy = train(tmp_path, "tiny.json", "--generations", "2", "--backfill", "easy")
    spec = f"rl:{policy}"
    endpoint = tcp_endpoint()
    serve = start_serve(endpoint, "--scheduler", "easy", "--policy", spec)
    common = ["-p", str(TINY[0]), "-w", str(TINY[1]), "--quiet"]
    code = cli_main(["simulate", *common, "-e", str(tmp_path / "remote"), "--connect", endpoint, "--timeout", "20"])
    _, err = serve.communicate(timeout=30)
    assert code == 0 and serve.returncode == 0, err
    assert cli_main(["simulate", *common, "-e", str(tmp_path / "embedded"), "--scheduler", "easy", "--policy", spec]) == 0
    remote = (tmp_path / "remote_jobs.csv").read_bytes()
    assert remote == (tmp_path / "embedded_jobs.csv").read_bytes()
    assert json.loads((tmp_path / "embedded_run.json").read_text())["policy"] == spec
    capsys.readouterr()


def test_train_policy_stops_on_sigterm_keeping_what_it_did(tmp_path):
    """Interrupted (SIGTERM) after a generation: exit 143, one line saying what was kept and that a
    re-run resumes; the policy file of the last generation is there."""
    import signal
    import time

    out = tmp_path / "p.json"
    proc = subprocess.Popen([sys.executable, "-m", "batsched_ml.cli", "train-policy", KTH, "-o", str(out),
                             "--sequence-length", "100", "--sequences", "1", "--population", "3",
                             "--generations", "1000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while not (out.exists() and Path(str(out) + ".checkpoint.pkl").exists()) and time.monotonic() < deadline:
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("batsched-ml: terminated (SIGTERM): ") and "resume" in last, err
    assert load_network(out).metadata["generations"] >= 1


def test_ppo_path_trains_a_policy_the_plugin_runs(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("sb3_contrib")
    out = tmp_path / "ppo.json"
    code = cli_main(["train-policy", KTH, "-o", str(out), "--algorithm", "ppo", "--timesteps", "256",
                     "--sequence-length", "60", "--hidden", "4", "-q"])
    assert code == 0, capsys.readouterr().err
    network = load_network(out)
    assert network.metadata["algorithm"] == "maskable-ppo" and network.hidden == (4,)
    # the exported numpy network scores the window as the trained actor does (its logits)
    import torch
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(str(out) + ".ppo.zip", device="cpu")
    env = make(sequence_length=60)
    obs, info = env.reset(seed=0)
    tensor, _ = model.policy.obs_to_tensor(obs)
    with torch.no_grad():
        logits = model.policy.get_distribution(tensor).distribution.logits.numpy()[0]
    k = int(info["action_mask"].sum())
    expected = network.scores(obs["jobs"][:k, :4].astype(np.float64))
    np.testing.assert_allclose(logits[:k] - logits[:k].max(), expected - expected.max(), atol=1e-4)
    # resuming adds steps to the same model
    code = cli_main(["train-policy", KTH, "-o", str(out), "--algorithm", "ppo", "--timesteps", "512",
                     "--sequence-length", "60", "--hidden", "4", "-q"])
    assert code == 0 and load_network(out).metadata["timesteps"] >= 512
    assert cli_main(["simulate", "-p", str(TINY[0]), "-w", str(TINY[1]), "-e", str(tmp_path / "r"),
                     "--policy", f"rl:{out}", "--quiet"]) == 0


def test_a_campaign_runs_a_trained_policy_like_simulate(tmp_path, capsys):
    pytest.importorskip("distributed")
    from batsched_ml.analysis import compute_metrics
    from batsched_ml.campaign.results import read_results
    from batsched_ml.campaign.run import run_campaign
    from batsched_ml.campaign.spec import load_campaign

    network = random_network(5)
    network.save(tmp_path / "p.json")
    spec = f"rl:{tmp_path / 'p.json'}"
    (tmp_path / "c.toml").write_text(f"""
[campaign]
name = "rl"
baseline = "easy"
[traces.tiny]
workload = "{TINY[1]}"
platform = "{TINY[0]}"
[configs.easy]
scheduler = "easy"
[configs.easy-rl]
policy = "{spec}"
""")
    outcome = run_campaign(load_campaign(tmp_path / "c.toml"), tmp_path / "out", workers=0, progress=False,
                           log=lambda *a, **k: None)
    rows = {r["config"]: r for r in read_results(tmp_path / "out")}
    assert rows["easy-rl"]["status"] == "ok", outcome
    assert cli_main(["simulate", "-p", str(TINY[0]), "-w", str(TINY[1]), "-e", str(tmp_path / "s"),
                     "--policy", spec, "--quiet"]) == 0
    expected = compute_metrics(tmp_path / "s_jobs.csv")["avebsld_tau10"]
    assert float(rows["easy-rl"]["avebsld10"]) == pytest.approx(expected, rel=1e-12)
    assert float(rows["easy-rl"]["avebsld10"]) != pytest.approx(float(rows["easy"]["avebsld10"]))
    capsys.readouterr()


def test_a_flag_of_the_other_algorithm_is_refused(tmp_path, capsys):
    code = cli_main(["train-policy", KTH, "-o", str(tmp_path / "p.json"), "--timesteps", "100"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == ["batsched-ml: error: --timesteps is a flag of --algorithm ppo, not of --algorithm es"]
    code = cli_main(["train-policy", KTH, "-o", str(tmp_path / "p.json"), "--algorithm", "ppo", "--generations", "3"])
    assert code == 2 and "--generations is a flag of --algorithm es" in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()


def test_the_estimate_feature_follows_the_configured_predictor():
    """With ``predictor="clairvoyant"`` the agent sees the actual runtimes, not the requested times."""
    def estimates(predictor):
        env = make(predictor=predictor)
        obs, info = env.reset(seed=0, options={"start": 200})
        seen = []
        for _ in range(30):
            seen.append(obs["jobs"][info["action_mask"], 1].copy())
            obs, _, terminated, _, info = env.step(0)
            if terminated:
                break
        return np.concatenate(seen)

    requested, actual = estimates(None), estimates("clairvoyant")
    assert len(requested) == len(actual) and (actual <= requested + 1e-6).all() and (actual < requested - 0.01).any()


# ------------------------------------------------------------------ issue 40 §6: the first hour


def test_the_default_sequence_length_works_on_the_bundled_sample():
    """1,024 jobs by default failed with a ValueError on the 1,000-job sample: the default is now the
    whole start range when it holds fewer; a length asked for explicitly says what fits."""
    env = SchedulingEnv(KTH)
    assert env.sequences.length == 1000
    _, steps, info, _ = play(env, lambda e, o, i: 0)
    assert info["episode"]["jobs"] == 1000 and steps > 0
    assert SchedulingEnv(KTH, start_range=(0.0, 0.8)).sequences.length == 800
    with pytest.raises(ValueError, match=r"1000 jobs in start range 0-1, fewer than a sequence of 1024: give a "
                                         r"sequence length of at most 1000"):
        SchedulingEnv(KTH, sequence_length=1024)


def test_the_docs_example_runs_from_a_clone(monkeypatch):
    """docs/rl.md's first example named an SDSC trace that is not shipped: it runs as written from the
    repository's root (with an agent of one's own)."""
    text = (ROOT / "docs" / "rl.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert "workloads/KTH-SP2-1k.json" in code
    monkeypatch.chdir(ROOT)
    printed = []
    namespace = {"my_agent": lambda obs, mask: int(mask.argmax()), "print": printed.append}
    exec(compile(code, "docs/rl.md", "exec"), namespace)
    assert len(printed) == 1 and printed[0] >= 1.0  # the episode's AVEbsld


def test_bench_rl_env_takes_lublin_specs():
    """The docs quote Lublin figures; the benchmark refused ``lublin:`` specs (no such file)."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_rl_env.py"), "lublin:32:300",
                           "--episodes", "1", "--backfill", "none", "--window", "8"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    row = [line for line in done.stdout.splitlines() if line.startswith("| lublin:32:300 |")]
    assert len(row) == 1 and "| none | 1 |" in row[0]


def test_ppo_progress_in_a_log_is_status_lines_not_a_carriage_return_bar():
    """PPO wrote tqdm's carriage-return bar into non-terminal logs (123 updates on one line): it now
    has the campaign's progress, a bar on a terminal only, status lines in steps otherwise."""
    import io
    import time

    from batsched_ml.rl.ppo import step_progress

    stream = io.StringIO()
    progress = step_progress(20_480, 1_024, True, stream=stream)  # resumed at 1,024 steps
    assert progress.mode == "lines"
    progress.first_after = progress.interval = 0.05
    progress.start()
    progress.advance(1_024)
    time.sleep(0.3)
    progress.close()
    text = stream.getvalue()
    assert "\r" not in text and text.count("\n") >= 2
    assert text.splitlines()[-1].startswith("train-policy (ppo): 2,048/20,480 steps, ")
    assert "ETA" in text and "tasks" not in text
    assert step_progress(100, 0, False, stream=stream).mode == "off"
