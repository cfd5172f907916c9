"""Campaign task kinds (``campaign.kinds``): trainings as tasks whose files configs name ``@NAME``,
evaluations of orders under a protocol as configs, found by entry point; cached, resumable and
deterministic like simulations."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from batsched_ml.campaign.kinds import get_kind, kind_names, references, substitute
from batsched_ml.campaign.run import build_tasks, run_campaign
from batsched_ml.campaign.spec import CampaignError, load_campaign
from batsched_ml.cli import main

pytest.importorskip("cma")

ROOT = Path(__file__).resolve().parents[1]
KTH = ROOT / "workloads" / "KTH-SP2-1k.json"  # 1,000 KTH-SP2 jobs, 100 cores
PLATFORM = ROOT / "platforms" / "cluster-100.xml"

CAMPAIGN = f"""
[campaign]
name = "kinds"
baseline = "easy"
metrics = ["avebsld10", "max_wait"]

[traces.kth]
workload = "{KTH}"
platform = "{PLATFORM}"

[train.tiny]
kind = "train-policy"
traces = "kth"
seeds = [0, 1]
backfill = "easy"
generations = 2
population = 3
sequences = 1
sequence_length = 64
hidden = [3]

[configs.easy]
scheduler = "easy"

[configs.easy-rl]
policy = "rl:@tiny"

[configs.seq-fcfs]
kind = "evaluate-policy"
order = "fcfs"
backfill = true
sequences = 3
sequence_length = 100

[configs.seq-rl]
kind = "evaluate-policy"
order = "rl:@tiny"
backfill = true
sequences = 3
sequence_length = 100
"""


def write(tmp_path, text=CAMPAIGN, name="c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def run(path, out, **kwargs):
    return run_campaign(load_campaign(path), out, workers=0, progress=False, log=lambda *a, **k: None, **kwargs)


def rows_of(out) -> list[dict]:
    with open(Path(out) / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_kinds_are_plugins_simulate_built_in_and_the_rl_ones_registered():
    assert {"simulate", "train-policy", "evaluate-policy"} <= set(kind_names())
    assert get_kind("train-policy").output and get_kind("evaluate-policy").output is None
    with pytest.raises(CampaignError, match="unknown campaign task kind 'evaluate-polcy'; did you mean 'evaluate-policy'"):
        get_kind("evaluate-polcy")


def test_references_and_their_substitution_reach_nested_values():
    table = {"policy": "rl:@a", "options": {"x": ["@b", 3]}, "n": 2}
    assert references(table) == {"a", "b"}
    assert substitute(table, {"a": "/p/a.json"}) == {"policy": "rl:/p/a.json", "options": {"x": ["@b", 3]}, "n": 2}


def test_trainings_run_first_and_configs_read_their_files(tmp_path):
    out = tmp_path / "out"
    outcome = run(write(tmp_path), out)
    assert not outcome.failed and outcome.computed == 2 + 1 + 2 + 3 + 6  # trainings, easy, easy-rl, sequences
    trainings = list(csv.DictReader(open(out / "trainings.csv", newline="")))
    assert [(t["training"], t["seed"], t["status"]) for t in trainings] == [("tiny", "0", "ok"), ("tiny", "1", "ok")]
    for t in trainings:
        policy = json.loads((out / t["file"]).read_text())
        assert json.loads(t["metrics"])["generations"] == 2 and policy["metadata"]["generations"] == 2
    # a config naming @tiny runs each seed of the training on that seed's file (its own runs: seeds 0, 1)
    rows = rows_of(out)
    runs = {(r["config"], r["seed"], r["window"]) for r in rows}
    assert {("easy-rl", "0", "0"), ("easy-rl", "1", "0"), ("easy", "0", "0")} <= runs
    assert {(c, s, w) for c, s, w in runs if c == "seq-rl"} == {("seq-rl", s, w) for s in "01" for w in "012"}
    # the evaluation's sequences are the trace's windows, each its own task; its figure is evaluate-policy's
    from batsched_ml.rl.protocols import evaluate_orders

    policy = out / "trained" / "tiny.s1_policy.json"
    want = evaluate_orders(str(KTH), ["fcfs", f"rl:{policy}"], backfill=True, sequences=3, length=100)
    got = {c: [float(r["avebsld10"]) for r in rows if r["config"] == c and r["seed"] == s]
           for c, s in (("seq-fcfs", "0"), ("seq-rl", "1"))}
    assert got["seq-fcfs"] == want[0].values and got["seq-rl"] == want[1].values
    # the simulate config ran the trained file: the same as simulate --policy rl:FILE
    assert main(["simulate", "-p", str(PLATFORM), "-w", str(KTH), "-e", str(tmp_path / "s"), "--policy", f"rl:{policy}", "--quiet"]) == 0
    from batsched_ml.analysis import compute_metrics

    sim = compute_metrics(tmp_path / "s_jobs.csv")["avebsld_tau10"]
    assert float(next(r["avebsld10"] for r in rows if r["config"] == "easy-rl" and r["seed"] == "1")) == sim


def test_a_second_run_is_cached_and_another_directory_gives_the_same_results(tmp_path):
    path = write(tmp_path)
    run(path, tmp_path / "a")
    again = run(path, tmp_path / "a")
    assert again.computed == 0 and again.cached == again.tasks
    run(path, tmp_path / "b")  # same seeds, same results: the networks' weights and every figure
    for seed in (0, 1):
        a, b = (json.loads((tmp_path / d / "trained" / f"tiny.s{seed}_policy.json").read_text()) for d in "ab")
        assert a["layers"] == b["layers"]
    strip = lambda rows: [(r["config"], r["seed"], r["window"], r["avebsld10"], r["max_wait"]) for r in rows]  # noqa: E731
    assert strip(rows_of(tmp_path / "a")) == strip(rows_of(tmp_path / "b"))


def test_a_retrained_policy_is_a_new_run_of_the_configs_that_read_it(tmp_path):
    path = write(tmp_path)
    run(path, tmp_path / "out")
    keys = {t.config: t.key for t in build_tasks(load_campaign(path), tmp_path / "out") if t.seed == 0 and t.window <= 0}
    write(tmp_path, CAMPAIGN.replace("generations = 2", "generations = 3"))
    changed = {t.config: t.key for t in build_tasks(load_campaign(path), tmp_path / "out") if t.seed == 0 and t.window <= 0}
    assert changed["tiny"] != keys["tiny"] and changed["easy-rl"] != keys["easy-rl"] and changed["seq-rl"] != keys["seq-rl"]
    assert changed["easy"] == keys["easy"] and changed["seq-fcfs"] == keys["seq-fcfs"]


def test_a_failed_training_fails_what_needs_it_and_nothing_else(tmp_path, monkeypatch):
    from batsched_ml.rl import kinds

    def broken(self, task):
        raise RuntimeError("no luck")

    monkeypatch.setattr(kinds.TrainPolicyKind, "run", broken)
    outcome = run(write(tmp_path), tmp_path / "out")
    status = {(r["config"], r["seed"]): (r["status"], r["error"]) for r in rows_of(tmp_path / "out")}
    assert status[("easy", "0")] == ("ok", "") and status[("seq-fcfs", "0")][0] == "ok"
    assert status[("easy-rl", "0")] == ("error", "needs the training kth/w-1/tiny/s0, which did not finish")
    assert len(outcome.failed) == 2 + 2 + 6  # the trainings, and the runs that read them
    trainings = list(csv.DictReader(open(tmp_path / "out" / "trainings.csv", newline="")))
    assert {t["status"] for t in trainings} == {"error"} and "no luck" in trainings[0]["error"]


def test_naming_a_training_alone_runs_only_the_trainings(tmp_path):
    outcome = run(write(tmp_path), tmp_path / "out", configs=["tiny"])
    assert outcome.computed == 2 and not (tmp_path / "out" / "results.csv").read_text().strip().count("\n")
    assert (tmp_path / "out" / "trained" / "tiny.s0_policy.json").is_file()
    later = run(write(tmp_path), tmp_path / "out", configs=["easy-rl"])  # its training: cached
    assert later.cached == 2 and later.computed == 2 + 1  # easy-rl's two seeds and the baseline


@pytest.mark.parametrize("extra, message", [
    ('[configs.x]\npolicy = "rl:@nope"\n', r"\[configs.x\]: @nope names no training; trainings \(\[train.NAME\]\): tiny"),
    ('[configs.x]\npolicy = "rl:@tiny"\nseeds = [5]\n', r"\[configs.x\] seeds: \[train.tiny\] has no seed 5"),
    ('[configs.x]\nkind = "train-policy"\n', r"\[configs.x\]: kind 'train-policy' writes a file: it is a training"),
    ('[train.y]\nkind = "simulate"\ntraces = "kth"\n', r"\[train.y\]: kind 'simulate' writes no file"),
    ('[train.y]\nkind = "train-policy"\n', r"\[train.y\]: traces is required"),
    ('[configs.x]\nkind = "evaluate-policy"\norder = "f1"\ntraces = ["kht"]\n',
     r"traces: unknown trace 'kht' \(did you mean 'kth'\?\)"),
    ('[configs.x]\nkind = "evaluate-policy"\norder = "nope"\n', r"\[configs.x\]: .*unknown"),
    ('[configs.x]\nkind = "evaluate-policy"\norder = "f1"\nprotocol = "theirs"\n', r"unknown protocol 'theirs'"),
    ('[train.y]\nkind = "train-policy"\ntraces = "kth"\ntimesteps = 5\n', r"timesteps is a setting of another algorithm"),
    ('[train.y]\nkind = "train-policy"\ntraces = "kth"\nprotocol = "rlscheduler"\nstarvation_threshold = 60\n',
     r"a starvation threshold needs the batsched-ml protocol"),
])
def test_bad_tables_are_one_clear_error(tmp_path, extra, message):
    with pytest.raises(CampaignError, match=message):
        load_campaign(write(tmp_path, CAMPAIGN + extra))


def test_configs_run_on_their_traces_only_and_the_report_expects_nothing_elsewhere(tmp_path):
    text = CAMPAIGN.replace('[configs.seq-fcfs]\n', '[configs.seq-fcfs]\ntraces = ["other"]\n') + f"""
[traces.other]
workload = "{KTH}"
"""
    out = tmp_path / "out"
    run(write(tmp_path, text), out)
    ran = {(r["trace"], r["config"]) for r in rows_of(out)}
    assert ("other", "seq-fcfs") in ran and ("kth", "seq-fcfs") not in ran and ("other", "easy-rl") in ran
    from batsched_ml.campaign.report import write_report

    report = write_report(out, out / "report").read_text()
    assert "missing" not in report and "Incomplete" not in report  # nothing expected where a config does not run
    assert "| seq-fcfs (on other) | `batsched-ml evaluate-policy --orders fcfs --backfill --sequences 3" in report


def test_the_rl_campaign_files_train_what_the_committed_policies_were_trained_with(monkeypatch):
    """experiments/rlscheduler.toml's trainings are the commands that wrote experiments/policies/rlscheduler/
    (the campaign's es-lublin2-rlscheduler seed 0 gave that file's weights bit for bit, 2026-12-07), and
    each of RLScheduler's published cells names a config that runs on its trace."""
    from batsched_ml.rl.kinds import TrainPolicyKind

    monkeypatch.setenv("RLSCHEDULER_DATA", str(ROOT))
    campaign = load_campaign(ROOT / "experiments" / "rlscheduler.toml")
    compared = 0
    for name, training in campaign.trainings.items():
        committed = ROOT / "experiments" / "policies" / "rlscheduler" / f"{name}-s0.json"
        if not committed.is_file():
            continue
        want = json.loads(committed.read_text())["metadata"]["config"]
        got = TrainPolicyKind.config(training.settings, ("<trace>",))
        got = {k: list(v) if isinstance(v, tuple) else v for k, v in vars(got).items()}
        assert {k: got[k] for k in want if k != "workload"} == {k: v for k, v in want.items() if k != "workload"}
        # files written before the bound's settings existed lack them: they must be at their defaults
        assert {k: got[k] for k in got.keys() - want.keys()}.items() <= {"starvation_threshold": None,
                                                                          "tail_weight": 0.0}.items()
        compared += 1
    assert compared >= 6
    cells = [p for p in campaign.paper if p.metric == "avebsld10"]
    assert len(cells) == 36 and all(campaign.configs[p.config].runs_on(p.trace) for p in cells)
    assert load_campaign(ROOT / "experiments" / "rl-sequences.toml").trainings.keys() == {
        "rl-lublin-256-none", "rl-lublin-256-easy", "rl-sdsc-sp2-none", "rl-sdsc-sp2-easy"}


def test_an_order_naming_an_unset_variable_fails_its_runs_only(tmp_path, monkeypatch):
    """Their models are data a user may not have ($RLSCHEDULER_MODELS): the file loads, those runs fail
    saying why, and the rest runs; a set variable is checked when the file is read."""
    monkeypatch.delenv("BATSCHED_ML_NO_SUCH_DIR", raising=False)
    extra = '[configs.theirs]\nkind = "evaluate-policy"\norder = "rlscheduler-model:$BATSCHED_ML_NO_SUCH_DIR/m"\n' \
            'sequences = 2\nsequence_length = 100\n'
    path = write(tmp_path, CAMPAIGN + extra)
    outcome = run(path, tmp_path / "out", configs=["theirs"])
    status = {(r["config"], r["window"]): r["status"] for r in rows_of(tmp_path / "out")}
    assert status == {("easy", "0"): "ok", ("theirs", "0"): "error", ("theirs", "1"): "error"}
    assert len(outcome.failed) == 2 and "BATSCHED_ML_NO_SUCH_DIR" in outcome.failed[0]
    monkeypatch.setenv("BATSCHED_ML_NO_SUCH_DIR", str(tmp_path))
    with pytest.raises(CampaignError, match=r"\[configs.theirs\]: .*rlscheduler-model:/"):
        load_campaign(path)
