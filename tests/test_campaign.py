"""Campaigns: schema errors, cache and resume, failures, equality with `simulate`, a real Dask
scheduler + workers, windows, results files and the report."""

from __future__ import annotations

import csv
import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from batsched_ml.campaign import run as run_module  # noqa: E402
from batsched_ml.campaign.cache import ResultCache  # noqa: E402
from batsched_ml.campaign.report import write_report  # noqa: E402
from batsched_ml.campaign.results import COLUMNS, read_results  # noqa: E402
from batsched_ml.campaign.run import estimated_cost, run_campaign  # noqa: E402
from batsched_ml.campaign.spec import CampaignError, config_keys, load_campaign  # noqa: E402
from batsched_ml.cli import build_parser, main  # noqa: E402
from batsched_ml.workloads.jitter import JitterSpec, jitter_copies  # noqa: E402
from batsched_ml.workloads.windows import WindowSpec, split_windows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "workloads" / "KTH-SP2-1k.json"
PLATFORM = ROOT / "platforms" / "cluster-100.xml"

HEAD = f"""
[campaign]
name = "t"
baseline = "easy"

[traces.KTH1k]
workload = "{WORKLOAD}"
platform = "{PLATFORM}"
"""
CONFIGS = """
[configs.easy]
scheduler = "easy"

[configs.spf]
scheduler = "easy"
policy = "spf"
backfill_order = "sjbf"

[configs.conservative]
scheduler = "conservative"
reservations = "cores"
"""


def write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def quiet(msg):
    pass


def run(path, out, **kw):
    kw.setdefault("progress", False)
    return run_campaign(load_campaign(path), out, log=quiet, **kw)


def csv_rows(path: Path, drop=("wall_s",)) -> list[dict]:
    with open(path, newline="") as f:
        return [{k: v for k, v in r.items() if k not in drop} for r in csv.DictReader(f)]


# ---------------------------------------------------------------- schema
def test_config_keys_are_the_simulate_parsers_scheduler_flags():
    sim = next(a for a in build_parser()._subparsers._group_actions[0].choices.items() if a[0] == "simulate")[1]
    group = next(g for g in sim._action_groups if g.title == "scheduler")
    dests = {a.dest for a in group._group_actions} - {"seed", "option"}
    # seeds: a config's own runs, no flag; batsim: simulate's --batsim, outside the scheduler's flags
    assert sorted(config_keys()) == sorted([*dests, "options", "seeds", "batsim"])


@pytest.mark.parametrize("body, message", [
    ("[configs.a]\nschedulr = 'easy'\n", "unknown key 'schedulr' (did you mean 'scheduler'?); valid keys: scheduler, policy"),
    ("[configs.a]\nseed = 3\n", "seeds are set in [campaign]"),
    ("[configs.a]\nreservations = 'bogus'\n", "reservations must be one of count, cores, got 'bogus'"),
    ("[configs.a]\nstarvation_threshold = 'soon'\n", "starvation_threshold expects a number, not 'soon'"),
    ("[configs.a]\nkill_false_small = 1\n", "is a switch"),
    ("[configs.a]\nclassifier = 'no-such-model'\n", "no-such-model"),
    ("[configs.a]\noptions = { no_plugin_takes_this = 1 }\n", "no_plugin_takes_this"),
    ("[configs.a]\nscheduler = 'fcfs'\nbackfill_order = 'sjbf'\n", "scheduler 'fcfs' takes no --backfill-order"),
    ("[configs.a]\ncorrection = 'incremental'\n", "--correction needs --predictor"),
    ("[configs.a]\nscheduler = 'conservative'\noptions = { compiled = 'False' }\n", "compiled is a switch"),
    ("[configs.a]\ndistribution = 'hmm'\n", "scheduler 'easy' takes no --distribution"),
])
def test_bad_config_is_a_clear_error(tmp_path, body, message):
    path = write(tmp_path, HEAD.replace('baseline = "easy"', "") + body)
    with pytest.raises(CampaignError, match=re.escape(message)) as err:
        load_campaign(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("text, message", [
    ('[campaign]\nname = "x"\nbasline = "a"\n[traces.T]\nswf = "nope.swf"\n[configs.a]\n', "unknown key 'basline'"),
    ('[configs.a]\n', "no trace"),
    ('[traces.T]\nswf = "nope.swf"\nworkload = "w.json"\n[configs.a]\n', "exactly one of"),
    (HEAD + CONFIGS + '[[paper]]\ntrace = "KTH1k"\nconfig = "nope"\nmetric = "avebsld10"\nvalue = 1\n',
     "unknown config 'nope'"),
    (HEAD + CONFIGS + '[[paper]]\ntrace = "KTH1k"\nconfig = "easy"\nmetric = "bsld"\nvalue = 1\n',
     "unknown metric 'bsld'"),
    (HEAD.replace('baseline = "easy"', 'baseline = "fcfs"') + CONFIGS, "baseline 'fcfs' is not a config"),
    (HEAD + 'windows = { days = 0 }\n' + CONFIGS, "days must be > 0"),
    (HEAD + 'windows = { days = 2, count = 3, every = 1 }\n' + CONFIGS, "unknown key 'every'"),
    ("[campaign\n", "invalid TOML"),
])
def test_bad_campaign_file_is_a_clear_error(tmp_path, text, message):
    with pytest.raises(CampaignError, match=message):
        load_campaign(write(tmp_path, text))


def test_config_becomes_the_simulate_flags(tmp_path):
    c = load_campaign(write(tmp_path, HEAD + CONFIGS + """
[configs.ci]
classifier = "random-forest"
kill_false_small = true
options = { small_threshold = 0.35, history = "previous-weeks", max_depth = "null" }
"""))
    assert c.configs["spf"].argv == ("--scheduler", "easy", "--policy", "spf", "--backfill-order", "sjbf")
    assert c.configs["ci"].argv == ("--classifier", "random-forest", "--kill-false-small", "-o", "small_threshold=0.35",
                                    "-o", "history=previous-weeks", "-o", "max_depth=null")
    assert c.seeds == [0] and c.baseline == "easy"


def test_config_seeds_override_the_campaign_seeds(tmp_path):
    from batsched_ml.campaign.run import build_tasks

    c = load_campaign(write(tmp_path, HEAD + CONFIGS + """
[configs.ci]
classifier = "random-forest"
seeds = [0, 1, 2]
"""))
    assert c.configs["ci"].seeds == (0, 1, 2) and c.configs["easy"].seeds is None
    assert c.configs["ci"].argv == ("--classifier", "random-forest")  # seeds pick runs, they are no flag
    tasks = build_tasks(c, tmp_path / "out")
    assert [(t.config, t.seed) for t in tasks] == [("easy", 0), ("spf", 0), ("conservative", 0),
                                                   ("ci", 0), ("ci", 1), ("ci", 2)]
    with pytest.raises(CampaignError, match=r"\[configs.ci\] seeds must be a list of distinct integers"):
        load_campaign(write(tmp_path, HEAD + CONFIGS + "[configs.ci]\nseeds = [1, 1]\n"))


def test_cli_rejects_a_bad_file_with_exit_2(tmp_path, capsys):
    path = write(tmp_path, HEAD + "[configs.a]\npolicy = 3.5\nwat = 1\n")
    assert main(["campaign", "run", str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("batsched-ml: error:") and "unknown key 'wat'" in err and len(err.splitlines()) == 1


def test_a_campaign_typo_gets_a_did_you_mean(tmp_path):
    """``seed`` in [campaign] got only the list of valid keys (issue 40 §6)."""
    with pytest.raises(CampaignError, match=re.escape("[campaign]: unknown key 'seed' (did you mean 'seeds'?)")):
        load_campaign(write(tmp_path, HEAD.replace('name = "t"', 'name = "t"\nseed = [0, 1]') + CONFIGS))


def test_every_problem_of_a_campaign_file_is_reported_at_once(tmp_path, capsys):
    """One run names them all, on one line (it stopped at the first: three typos took three runs)."""
    text = (HEAD.replace('name = "t"', 'name = "t"\nseed = [0, 1]\nmetrics = ["avebsld10", "mean_wiat"]') + CONFIGS
            + "[configs.a]\npolcy = 'spf'\n[configs.b]\nscheduler = 'nope'\n")
    path = write(tmp_path, text)
    assert main(["campaign", "run", str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"batsched-ml: error: {path}: 4 problems: ")
    for part in ("unknown key 'seed' (did you mean 'seeds'?)", "[configs.a]: unknown key 'polcy' (did you mean "
                 "'policy'?)", "[configs.b]", "'nope'", "unknown metric 'mean_wiat' (did you mean 'mean_wait'?)"):
        assert part in err, part
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- engine
@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The three-config campaign run once on a real local cluster of two workers."""
    tmp = tmp_path_factory.mktemp("local")
    path = write(tmp, HEAD + CONFIGS)
    outcome = run(path, tmp / "out", workers=2)
    return path, tmp / "out", outcome


def test_local_run_writes_one_row_per_task(local_run):
    _, out, outcome = local_run
    assert (outcome.computed, outcome.cached, outcome.failed, outcome.interrupted) == (3, 0, [], False)
    rows = read_results(out)
    assert [r["config"] for r in rows] == ["easy", "spf", "conservative"]
    assert all(r["status"] == "ok" and r["jobs"] == 1000 and r["window"] == 0 for r in rows)
    with open(out / "results.csv") as f:
        assert tuple(next(csv.reader(f))) == COLUMNS
    assert rows[0]["avebsld10"] != rows[1]["avebsld10"]  # the configs really differ
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(out / "results.parquet").to_pylist()
    assert [t["avebsld10"] for t in table] == [r["avebsld10"] for r in rows]
    assert json.loads(table[2]["metrics"]) == rows[2]["metrics"]


def test_results_equal_separate_simulate_runs(local_run, tmp_path, capsys):
    _, out, _ = local_run
    rows = {r["config"]: r for r in read_results(out)}
    for config, flags in (("spf", ["--policy", "spf", "--backfill-order", "sjbf"]),
                          ("conservative", ["--scheduler", "conservative", "--reservations", "cores"])):
        prefix = tmp_path / config
        assert main(["simulate", "-p", str(PLATFORM), "-w", str(WORKLOAD), "-e", str(prefix), "--json", *flags]) == 0
        metrics = json.loads(capsys.readouterr().out)["metrics"]
        assert rows[config]["metrics"] == metrics
        assert rows[config]["avebsld10"] == metrics["avebsld_tau10"]
        ours = gzip.decompress((out / "runs" / f"KTH1k.w0.{config}.s0_jobs.csv.gz").read_bytes())
        assert ours == Path(f"{prefix}_jobs.csv").read_bytes()


def test_second_run_is_all_cache_and_a_changed_config_reruns_alone(local_run, tmp_path):
    path, out, _ = local_run
    work = tmp_path / "out"
    shutil.copytree(out, work)
    again = run(path, work, workers=0)
    assert (again.computed, again.cached) == (0, 3)
    assert csv_rows(work / "results.csv", drop=()) == csv_rows(out / "results.csv", drop=())
    changed = write(tmp_path, HEAD + CONFIGS.replace('policy = "spf"', 'policy = "saf"'))
    third = run(changed, work, workers=0)
    assert (third.computed, third.cached) == (1, 2)
    rows = {r["config"]: r for r in read_results(work)}
    before = {r["config"]: r for r in read_results(out)}
    assert rows["spf"]["key"] != before["spf"]["key"] and rows["spf"]["avebsld10"] != before["spf"]["avebsld10"]
    assert rows["easy"] == before["easy"]


def test_recorded_costs_put_the_longest_tasks_first(local_run, tmp_path, monkeypatch):
    path, out, _ = local_run
    rates = ResultCache(out).costs()
    rows = {r["config"]: r for r in read_results(out)}
    assert sorted(rates.values()) == sorted(r["wall_s"] / r["jobs"] for r in rows.values())
    work = tmp_path / "out"
    shutil.copytree(out, work)
    seen = []

    def record(fn, items, **kw):
        seen.extend(items)
        return iter(())

    monkeypatch.setattr(run_module, "iter_tasks", record)
    new_seed = write(tmp_path, HEAD.replace('baseline = "easy"', 'baseline = "easy"\nseeds = [1]') + CONFIGS)
    run(new_seed, work, workers=2)   # all three are new tasks, of equal size: ordered by their configs' costs
    assert [t.config for t in seen] == sorted(rows, key=lambda c: -rows[c]["wall_s"])
    assert estimated_cost(seen[0], {}) == seen[0].nb_jobs   # nothing known: by size


def test_interrupted_campaign_resumes(tmp_path, monkeypatch):
    path = write(tmp_path, HEAD + CONFIGS)
    real, calls = run_module.run_task, []

    def interrupted_after_one(task):
        if calls:
            raise KeyboardInterrupt
        calls.append(task)
        return real(task)

    monkeypatch.setattr(run_module, "run_task", interrupted_after_one)
    first = run(path, tmp_path / "out", workers=0)
    assert first.interrupted and first.computed == 1 and len(read_results(tmp_path / "out")) == 1
    monkeypatch.setattr(run_module, "run_task", real)
    second = run(path, tmp_path / "out", workers=0)
    assert (second.interrupted, second.computed, second.cached) == (False, 2, 1)
    assert [r["config"] for r in read_results(tmp_path / "out")] == ["easy", "spf", "conservative"]


def test_failing_task_is_recorded_and_the_rest_completes(tmp_path, dask_scheduler_address, capsys):
    bad = json.loads(WORKLOAD.read_text())
    bad["jobs"] = bad["jobs"][:50]
    bad["profiles"]["weird"] = {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}
    bad["jobs"][10]["profile"] = "weird"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    path = write(tmp_path, HEAD + CONFIGS + f'[traces.bad]\nworkload = "bad.json"\nplatform = "{PLATFORM}"\n')
    code = main(["campaign", "run", str(path), "-o", str(tmp_path / "out"), "--dask", dask_scheduler_address,
                 "--no-report", "-q"])
    assert code == 1
    err = capsys.readouterr().err
    assert "3 task(s) failed" in err and "bad/w0/easy/s0: SimulationError" in err
    rows = read_results(tmp_path / "out")
    assert [r["status"] for r in rows] == ["ok"] * 3 + ["error"] * 3
    assert all("not supported by the embedded simulator" in r["error"] for r in rows[3:])


def test_dask_scheduler_and_two_workers_give_the_local_results(local_run, dask_scheduler_address, tmp_path):
    path, out, _ = local_run
    outcome = run(path, tmp_path / "remote", scheduler_address=dask_scheduler_address)
    assert outcome.computed == 3 and not outcome.failed
    assert csv_rows(tmp_path / "remote" / "results.csv") == csv_rows(out / "results.csv")


# ---------------------------------------------------------------- windows, seeds, report
def test_split_windows_are_disjoint_rebased_and_spread():
    workload = json.loads(WORKLOAD.read_text())  # 9.2 days of KTH
    windows = split_windows(workload, WindowSpec(days=2))
    assert [s for s, _ in windows] == [0.0, 2 * 86400.0, 4 * 86400.0, 6 * 86400.0]
    ids = [j["id"] for _, w in windows for j in w["jobs"]]
    assert len(ids) == len(set(ids))
    for start, w in windows:
        assert all(0 <= j["subtime"] < 2 * 86400 for j in w["jobs"])
        assert w["swf"]["subtime_offset"] == workload["swf"]["subtime_offset"] + start
        assert set(w["profiles"]) == {j["profile"] for j in w["jobs"]}
    assert [s for s, _ in split_windows(workload, WindowSpec(days=2, count=2))] == [0.0, 6 * 86400.0]
    assert [s for s, _ in split_windows(workload, WindowSpec(days=2, count=2, select="first"))] == [0.0, 2 * 86400.0]
    with pytest.raises(ValueError, match="holds 4 whole windows"):
        split_windows(workload, WindowSpec(days=2, count=5))


def test_jitter_copies_move_each_submission_later_by_less_than_the_given_seconds():
    workload = json.loads(WORKLOAD.read_text())
    first = {j["id"]: j for j in workload["jobs"]}
    copies = jitter_copies(workload, JitterSpec(copies=3, seconds=0.5, seed=4))
    for k, (start, copy) in enumerate(copies):
        assert start == 0.0 and copy["jitter"] == {"copy": k, "seconds": 0.5, "seed": 4}
        assert sorted(j["id"] for j in copy["jobs"]) == sorted(first)
        shifts = [j["subtime"] - first[j["id"]]["subtime"] for j in copy["jobs"]]
        assert all(0 <= d < 0.5 + 1e-6 for d in shifts) and max(shifts) > 0.4
        assert [j["subtime"] for j in copy["jobs"]] == sorted(j["subtime"] for j in copy["jobs"])
        assert all(dict(j, subtime=0) == dict(first[j["id"]], subtime=0) for j in copy["jobs"])
        assert copy["profiles"] == workload["profiles"] and copy["swf"] == workload["swf"]
    assert copies[0][1]["jobs"] != copies[1][1]["jobs"]
    # copy k is the same whatever the number of copies, and a new seed draws new copies
    assert jitter_copies(workload, JitterSpec(copies=1, seconds=0.5, seed=4))[0][1] == copies[0][1]
    assert jitter_copies(workload, JitterSpec(copies=1, seconds=0.5, seed=5))[0][1]["jobs"] != copies[0][1]["jobs"]
    for bad, message in (({"copies": 0}, "copies must be an integer >= 1"),
                         ({"copies": 2, "seconds": 0}, "seconds must be a number > 0"),
                         ({"copies": 2, "seed": -1}, "seed must be an integer >= 0")):
        with pytest.raises(ValueError, match=message):
            JitterSpec(**bad)


def test_jitter_copies_run_as_the_traces_windows_with_intervals(tmp_path):
    pytest.importorskip("matplotlib")
    text = HEAD + 'jitter = { copies = 3, seconds = 1.0 }\n' + CONFIGS.split("[configs.conservative]")[0]
    out = tmp_path / "out"
    outcome = run(write(tmp_path, text), out, workers=0)
    rows = read_results(out)
    assert outcome.computed == 6
    assert sorted((r["config"], r["window"], r["window_start"]) for r in rows) == \
        [(c, w, 0.0) for c in ("easy", "spf") for w in (0, 1, 2)]
    assert len({r["mean_wait"] for r in rows if r["config"] == "easy"}) == 3  # three different traces
    inputs = next((out / "inputs").glob("KTH1k-*"))
    assert sorted(p.name for p in inputs.glob("jitter*.json")) == ["jitter000.json", "jitter001.json", "jitter002.json"]
    assert main(["campaign", "report", str(out), "-o", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    row = next(line for line in md.split("### Intervals")[1].splitlines() if line.startswith("| spf |"))
    assert row.startswith("| spf | 3 |")  # the interval over the three copies, paired copy by copy
    # the figures say what the windows are: jittered copies of one trace, not windows of it
    assert "avebsld10 of every run across jittered copies (dots; bar: mean)" in md and "across windows" not in md
    assert "over time (copy 0, seed 0)" in md
    for extra, message in (("windows = { days = 3 }\n", "give windows or jitter, not both"),
                           ("", "jitter: copies is required")):
        bad = HEAD + extra + ("jitter = { copies = 2 }\n" if extra else "jitter = { seconds = 2 }\n") + CONFIGS
        with pytest.raises(CampaignError, match=message):
            load_campaign(write(tmp_path, bad, "bad.toml"))


def test_windows_seeds_and_report_with_paper_numbers(tmp_path):
    pytest.importorskip("matplotlib")
    text = HEAD.replace('baseline = "easy"', 'baseline = "easy"\nseeds = [0, 1]\nmetrics = ["avebsld10", "mean_wait"]')
    text += 'windows = { days = 3, count = 2 }\n' + CONFIGS + """
[[paper]]
trace = "KTH1k"
config = "spf"
metric = "avebsld10"
reduction = 40
source = "Table X"

[[paper]]
trace = "KTH1k"
config = "easy"
metric = "avebsld10"
value = 10.0
"""
    out = tmp_path / "out"
    outcome = run(write(tmp_path, text), out, workers=0)
    rows = read_results(out)
    assert outcome.computed == 12 and len(rows) == 12
    assert sorted({(r["window"], r["window_start"]) for r in rows}) == [(0, 0.0), (1, 6 * 86400.0)]
    assert sum(r["jobs"] for r in rows if r["config"] == "easy" and r["seed"] == 0) < 1000
    assert main(["campaign", "report", str(out), "-o", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    easy = [r["avebsld10"] for r in rows if r["config"] == "easy"]
    spf = [r["avebsld10"] for r in rows if r["config"] == "spf"]
    ours = 100 * ((sum(spf) / 4) / (sum(easy) / 4) - 1)  # the change; the paper's reduction of 40 is -40%
    assert f"| KTH1k | spf | avebsld10 vs easy | Table X | {ours:+.1f}% " in md
    assert f"{ours + 40:+.1f} pts" in md
    assert "![KTH1k: avebsld10 of every run across windows and seeds (dots; bar: mean)](KTH1k-spread.png)" in md
    import matplotlib.image

    for name in ("KTH1k-spread.png", "KTH1k-cumbsld.png", "KTH1k-wait-ecdf.png"):
        assert matplotlib.image.imread(tmp_path / "rep" / name).shape[:2] == (1260, 2100)  # all one size
    assert "| spf | `--scheduler easy --policy spf --backfill-order sjbf` |" in md
    # the interval table: 4 runs per config (2 windows x 2 seeds), the reduction paired by window and seed
    from batsched_ml.analysis.uncertainty import paired_reduction

    row = next(line for line in md.split("### Intervals")[1].splitlines() if line.startswith("| spf |"))
    by_run = {c: {(r["window"], r["seed"]): r["avebsld10"] for r in rows if r["config"] == c} for c in ("easy", "spf")}
    red = paired_reduction(by_run["spf"], by_run["easy"])
    assert row.startswith("| spf | 4 |") and f"{-red.estimate:+.1f}% [{-red.high:+.1f}, {-red.low:+.1f}]" in row


def test_report_splits_small_and_large_jobs_by_the_classifier_dividers(tmp_path):
    """Figure 8 of Zrigui et al.: every config's jobs split by one classifier run's weekly dividers."""
    from batsched_ml.analysis.metrics import merge_attempts, per_job_bsld, read_jobs_csv
    from batsched_ml.campaign.report import class_split, run_report

    text = HEAD + CONFIGS.split("[configs.spf]")[0] + """
[configs.ci]
classifier = "random-forest"
kill_false_small = true
options = { period = 86400 }
"""
    out = tmp_path / "out"
    run(write(tmp_path, text), out, workers=0)
    rows = read_results(out)
    values, ref = class_split(rows, "KTH1k", ["easy", "ci"], out)
    assert ref == "ci" and set(values) == {"easy", "ci"}
    assert values["easy"][2:] == values["ci"][2:]          # the same jobs are small in both runs
    n_small, n_large = values["ci"][2:]
    assert n_small > 50 and n_large > 50
    assert rows[1]["report"] == "runs/KTH1k.w0.ci.s0_report.json"
    weekly = run_report(out, rows[1])["classification"]["weekly"]
    first = min(w["week"] for w in weekly if w["divider"] is not None)
    for config, row in zip(("easy", "ci"), rows):
        records = merge_attempts(read_jobs_csv(out / "runs" / f"KTH1k.w0.{config}.s0_jobs.csv.gz"))
        bsld = per_job_bsld(records, 60.0)
        before = records.submission < first * 86400.0
        assert n_small + n_large == (~before).sum()
        small, large = values[config][:2]
        # the two classes and the weeks left out make up the whole cumulative bsld
        assert small * n_small + large * n_large + bsld[before].sum() == pytest.approx(row["cum_bsld60"])
    assert main(["campaign", "report", str(out), "-o", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "small and large jobs (Zrigui et al. 2022, Figure 8)" in md and "| ci | " in md
    if "KTH1k-classes.png" in md:  # with matplotlib: the same size as every other figure
        import matplotlib.image

        assert matplotlib.image.imread(tmp_path / "rep" / "KTH1k-classes.png").shape[:2] == (1260, 2100)


def test_generated_trace_through_the_lublin_model(tmp_path):
    pytest.importorskip("batsched_ml.workloads.lublin")
    text = ('[traces.L]\ngenerate = "lublin:cores=64,jobs=200"\n[configs.easy]\nscheduler = "easy"\n')
    out = tmp_path / "out"
    run(write(tmp_path, text), out, workers=0)
    (row,) = read_results(out)
    assert row["status"] == "ok" and row["jobs"] == 200


def _interrupt_a_run(out: Path, signum) -> str:
    """Start `campaign run` on the sample, send ``signum`` once a task is stored; its stderr
    (exit 130 for SIGINT, 143 for SIGTERM)."""
    import signal
    import subprocess
    import sys
    import time

    cmd = [sys.executable, "-m", "batsched_ml.cli", "campaign", "run", str(ROOT / "experiments" / "sample.toml"),
           "-o", str(out), "-q", "--workers", "0", "--no-report"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not len(list(out.glob("cache/*.json"))) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err and err.count("run the same command again to resume") == 1, err
    return err


def test_ctrl_c_exits_130_and_the_next_run_resumes(tmp_path):
    """A real SIGINT to `batsched-ml campaign run` (as Ctrl-C sends), then a resume."""
    import signal

    out = tmp_path / "out"
    err = _interrupt_a_run(out, signal.SIGINT)
    stored = len(read_results(out))
    assert f"batsched-ml: interrupted: {stored} of 10 tasks stored in {out / 'results.csv'}" in err
    assert 1 <= stored < 10
    resumed = run(ROOT / "experiments" / "sample.toml", out, workers=0)
    assert (resumed.cached, resumed.computed) == (stored, 10 - stored)


def test_check_prints_each_config_as_simulate_flags(capsys):
    assert main(["campaign", "check", str(ROOT / "experiments" / "sample.toml")]) == 0
    out = capsys.readouterr().out
    assert "campaign sample: 1 trace(s)" in out
    assert "eloss-triple: batsched-ml simulate ... --predictor eloss --correction incremental --backfill-order sjbf" in out


def test_generator_string_is_parsed_and_a_missing_generator_is_a_clear_error(tmp_path):
    import importlib.util

    from batsched_ml.campaign.traces import parse_generate

    text = '[traces.L]\ngenerate = "lublin:cores=64,jobs=200,seed=3"\n[configs.easy]\n'
    if importlib.util.find_spec("batsched_ml.workloads.lublin") is None:
        with pytest.raises(CampaignError, match="lublin generator .* is not installed"):
            load_campaign(write(tmp_path, text))
    else:
        assert parse_generate("lublin:cores=64,jobs=200,seed=3", "x") == {"model": "lublin", "cores": 64,
                                                                            "jobs": 200, "seed": 3}
    with pytest.raises(CampaignError, match="unknown model 'feitelson'"):
        parse_generate({"model": "feitelson"}, "x")


def test_sigterm_stops_like_ctrl_c(tmp_path):
    import signal

    assert "batsched-ml: terminated (SIGTERM): " in _interrupt_a_run(tmp_path / "out", signal.SIGTERM)
    assert 1 <= len(read_results(tmp_path / "out")) < 10


def test_subset_keeps_the_baseline_and_rejects_unknown_names(tmp_path):
    c = load_campaign(write(tmp_path, HEAD + CONFIGS + '[[paper]]\ntrace = "KTH1k"\nconfig = "spf"\n'
                                                       'metric = "avebsld10"\nvalue = 1\n'))
    sub = c.subset(configs=["conservative"])
    assert list(sub.configs) == ["easy", "conservative"] and sub.paper == [] and list(sub.traces) == ["KTH1k"]
    with pytest.raises(CampaignError, match="unknown trace 'CTC'; traces: KTH1k"):
        c.subset(traces=["CTC"])


# ---------------------------------------------------------------- real data (issue 23 §4)
def _small_trace(tmp_path: Path, jobs: int = 40) -> Path:
    """The first ``jobs`` jobs of the sample workload: under 500 scheduler messages."""
    small = json.loads(WORKLOAD.read_text())
    small["jobs"] = small["jobs"][:jobs]
    small["profiles"] = {j["profile"]: small["profiles"][j["profile"]] for j in small["jobs"]}
    path = tmp_path / "small.json"
    path.write_text(json.dumps(small))
    return path


def test_a_report_over_200_kb_lives_in_a_file_not_in_results_csv(tmp_path):
    """A classifier retrained every 3,000 s reports ~265 periods (the issue's 200k-job trace: a
    146,796-character cell that `campaign report` could no longer read)."""
    pytest.importorskip("matplotlib")
    text = HEAD + CONFIGS.split("[configs.spf]")[0] + """
[configs.ci]
classifier = "random-forest"
options = { period = 3000, n_estimators = 3, max_depth = 4 }
"""
    out = tmp_path / "out"
    outcome = run(write(tmp_path, text), out, workers=0)
    assert outcome.failed == []
    easy, ci = read_results(out)
    assert easy["report"] is None and ci["report"] == "runs/KTH1k.w0.ci.s0_report.json"
    report_file = out / ci["report"]
    assert report_file.stat().st_size > 200_000
    assert report_file.read_text().endswith("}\n")  # a text file ends its last line (issue 40 §6)
    assert len(json.loads(report_file.read_text())["classification"]["weekly"]) > 200  # no period dropped
    with open(out / "results.csv", newline="") as f:
        assert max(len(cell) for row in csv.reader(f) for cell in row) < 5_000
    pq = pytest.importorskip("pyarrow.parquet")
    assert pq.read_table(out / "results.parquet").column("report").to_pylist() == [None, ci["report"]]
    assert main(["campaign", "report", str(out)]) == 0
    md = (out / "report" / "report.md").read_text()
    assert "small and large jobs (Zrigui et al. 2022, Figure 8)" in md  # the split read the report file


def test_report_reads_an_older_results_csv_with_a_huge_inline_report(local_run, tmp_path, capsys):
    """results.csv files written before the reports moved out held them in a cell: still readable."""
    _, out, _ = local_run
    work = tmp_path / "out"
    shutil.copytree(out, work)
    rows = read_results(work)
    rows[1]["report"] = {"classification": {"weekly": [{"week": i, "note": "x" * 1000} for i in range(200)]}}
    with open(work / "results.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for r in rows:
            writer.writerow(["" if r.get(c) is None else json.dumps(r[c]) if isinstance(r[c], dict) else r[c]
                             for c in COLUMNS])
    assert (work / "results.csv").stat().st_size > 200_000
    assert main(["campaign", "report", str(work)]) == 0
    assert read_results(work)[1]["report"]["classification"]["weekly"][199]["week"] == 199
    # a subset run rewrites results.csv: the inline report of a row it keeps moves to a file
    assert main(["campaign", "run", str(work / "campaign.toml"), "-o", str(work), "--config", "conservative",
                 "--workers", "0", "-q", "--no-report"]) == 0
    kept = read_results(work)[1]
    assert kept["report"] == "runs/KTH1k.w0.spf.s0_report.json"
    assert json.loads((work / kept["report"]).read_text())["classification"]["weekly"][199]["week"] == 199


def test_a_subset_run_keeps_the_other_tasks_rows(local_run, tmp_path, capsys):
    path, out, _ = local_run
    work = tmp_path / "out"
    shutil.copytree(out, work)
    before = {r["config"]: r for r in read_results(work)}
    changed = write(tmp_path, HEAD + CONFIGS.replace('policy = "spf"', 'policy = "saf"'))
    assert main(["campaign", "run", str(changed), "-o", str(work), "--config", "spf", "--workers", "0", "-q"]) == 0
    assert "3 tasks" not in capsys.readouterr().err  # only the subset ran: easy (cached) and spf
    rows = {r["config"]: r for r in read_results(work)}
    assert list(rows) == ["easy", "spf", "conservative"]
    assert rows["conservative"] == before["conservative"] and rows["easy"] == before["easy"]
    assert rows["spf"]["avebsld10"] != before["spf"]["avebsld10"]
    md = (work / "report" / "report.md").read_text()
    assert "| conservative | 1 |" in md and "| spf | 1 |" in md and "Incomplete" not in md


def test_an_interrupted_subset_run_keeps_the_rows_it_did_not_redo(local_run, tmp_path, monkeypatch):
    """Ctrl-C before the subset's task finished: its earlier row stays (a run never shrinks the
    results), the report says the run was interrupted, and nothing else moves."""
    path, out, _ = local_run
    work = tmp_path / "out"
    shutil.copytree(out, work)
    before = read_results(work)
    changed = write(tmp_path, HEAD + CONFIGS.replace('policy = "spf"', 'policy = "saf"'))

    def interrupted(task):
        raise KeyboardInterrupt()

    monkeypatch.setattr(run_module, "run_task", interrupted)
    outcome = run_campaign(load_campaign(changed), work, workers=0, progress=False, log=lambda m: None,
                           configs=["spf"])
    assert outcome.interrupted and outcome.stored == 1  # easy, cached; spf was not redone
    assert read_results(work) == before


def test_a_task_past_its_time_limit_is_a_timeout_and_the_campaign_goes_on(tmp_path, monkeypatch, capsys):
    """The limit is checked every 500 scheduler messages: 1 ms stops each 1,000-job run at its
    first check (~2,000 messages in all), while the 40-job trace ends before any check. The
    tasks run on a real local cluster, whose workers leave nothing in the temporary folder."""
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # the workers' (spawned after this)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # this process's
    _small_trace(tmp_path)
    text = (HEAD.replace('baseline = "easy"', 'baseline = "easy"\ntask_timeout = 0.001')
            + f'[traces.small]\nworkload = "small.json"\nplatform = "{PLATFORM}"\n' + CONFIGS)
    out = tmp_path / "out"
    assert main(["campaign", "run", str(write(tmp_path, text)), "-o", str(out), "--workers", "2", "-q"]) == 1
    rows = read_results(out)
    assert [(r["trace"], r["status"]) for r in rows] == [("KTH1k", "timeout")] * 3 + [("small", "ok")] * 3
    assert all(re.fullmatch(r"stopped after 0.001 s \(task_timeout\): \d+ of 1,000 jobs finished", r["error"])
               for r in rows[:3])
    err = capsys.readouterr().err
    assert "3 task(s) failed or timed out" in err and "timeout: KTH1k/w0/easy/s0: stopped after" in err
    assert len(list((out / "cache").glob("*.json"))) == 4  # the three small runs and costs.json: timeouts run again
    md = (out / "report" / "report.md").read_text()
    assert "Not run yet" not in md and "## Failed runs" in md
    assert "- KTH1k w0 spf seed 0 (timeout): stopped after 0.001 s" in md
    assert "`easy` 0 of 1 runs (1 timeout)" in md and "| easy | 0 |" not in md
    assert not list(scratch.rglob("batsched-*"))  # no task directory, no worker folder


def test_report_names_missing_runs_instead_of_empty_rows(tmp_path, monkeypatch):
    """An interrupted campaign's report: the configs that did not run are named, not `0 | -`."""
    path = write(tmp_path, HEAD.replace('baseline = "easy"', 'baseline = "easy"\nseeds = [0, 1]') + CONFIGS)
    real, calls = run_module.run_task, []

    def interrupted_after_three(task):
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(task)
        return real(task)

    monkeypatch.setattr(run_module, "run_task", interrupted_after_three)
    out = tmp_path / "out"
    assert run(path, out, workers=0).interrupted
    done = {(r["config"], r["seed"]) for r in read_results(out)}
    assert len(done) == 3
    md = (write_report(out, out / "report")).read_text()
    section = md.split("## KTH1k")[1].split("\n## ")[0]
    table = [line for line in section.splitlines() if line.startswith("| ")]
    for config in ("easy", "spf", "conservative"):
        n = sum(c == config for c, _ in done)
        if n == 0:
            assert f"`{config}` 0 of 2 runs (2 missing)" in md
            assert not any(line.startswith(f"| {config} |") for line in table)
        elif n == 1:
            assert f"| {config} | 1 of 2 |" in md and f"`{config}` 1 of 2 runs (1 missing)" in md
        else:
            assert f"| {config} | 2 |" in md
    assert "3 runs (3 ok), 3 missing" in md and "It was interrupted: run it again" in md


def test_a_config_keeps_its_colour_in_every_traces_figures(tmp_path, monkeypatch, capsys):
    """Trace B runs only `easy` and `conservative` (a subset): `conservative` is the second curve
    there, the third on trace A, and has the same colour in both."""
    pytest.importorskip("matplotlib")
    from batsched_ml.analysis import plots

    _small_trace(tmp_path, 120)
    text = HEAD.replace("[traces.KTH1k]", "[traces.A]").replace(f'workload = "{WORKLOAD}"', 'workload = "small.json"')
    text += f'[traces.B]\nworkload = "small.json"\nplatform = "{PLATFORM}"\n' + CONFIGS
    path, out = write(tmp_path, text), tmp_path / "out"
    run(path, out, workers=0, traces=["A"])
    run(path, out, workers=0, traces=["B"], configs=["conservative"])
    drawn = {}
    real = plots.plot_runs

    def recording(jobs_csvs, output, kind="cumbsld", tau=60.0, labels=None, title=None, colors=None):
        drawn[(title.split(":")[0], kind)] = dict(zip(labels, colors))
        return real(jobs_csvs, output, kind, tau, labels, title, colors)

    monkeypatch.setattr(plots, "plot_runs", recording)
    write_report(out, out / "report")
    assert list(drawn[("A", "cumbsld")]) == ["easy", "spf", "conservative"]
    assert list(drawn[("B", "cumbsld")]) == ["easy", "conservative"]
    for trace, kind in drawn:
        for config, color in drawn[(trace, kind)].items():
            assert color == drawn[("A", "cumbsld")][config]


def test_report_without_matplotlib_says_how_to_get_the_figures(local_run, tmp_path, monkeypatch):
    import sys

    _, out, _ = local_run
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed: importing it fails
    heard = []
    md = write_report(out, tmp_path / "rep", log=heard.append).read_text()
    assert heard == ["batsched-ml: note: the report has no figures: figures need matplotlib, which is not "
                     "installed here: pip install matplotlib"]
    assert "No figures in this report: figures need matplotlib" in md and ".png" not in md
    assert not list((tmp_path / "rep").glob("*.png"))


def test_a_subset_run_keeps_the_rows_of_a_configs_own_seeds(tmp_path):
    """A config with its own seeds beside the campaign's [0]: a later subset run on another
    config keeps all of that config's rows, not only seed 0's (they were dropped before)."""
    from batsched_ml.campaign.results import write_results
    from batsched_ml.campaign.run import _kept_rows

    c = load_campaign(write(tmp_path, HEAD + CONFIGS + "\n[configs.ci]\nclassifier = \"random-forest\"\nseeds = [0, 1, 2]\n"))
    assert c.seeds_of("ci") == [0, 1, 2] and c.seeds_of("spf") == [0]
    out = tmp_path / "out"
    out.mkdir()
    rows = [{"trace": "KTH1k", "window": 0, "config": cfg, "seed": s, "status": "ok", "avebsld10": 1.0}
            for cfg, seeds in (("easy", [0]), ("ci", [0, 1, 2])) for s in seeds]
    write_results(out, rows)
    kept = _kept_rows(out, c, c.subset(configs=["spf"]), [], set())
    assert sorted((r["config"], r["seed"]) for r in kept) == [("ci", 0), ("ci", 1), ("ci", 2)]
