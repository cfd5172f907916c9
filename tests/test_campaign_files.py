"""Campaign files as data (issue 24 §8): inheritance (``extends``), matrices, traces found through a
traces directory, the report's aggregate tables, and the paper campaigns expanded into exactly the
configurations their explicit files gave."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from batsched_ml.campaign.aggregates import aggregate_table
from batsched_ml.campaign.spec import CampaignError, PaperRef, TableSpec, load_campaign
from batsched_ml.campaign.tasks import task_key
from batsched_ml.config.declare import RunConfig

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
DATA = ROOT / "tests" / "data"
WORKLOAD = ROOT / "workloads" / "KTH-SP2-1k.json"
PLATFORM = ROOT / "platforms" / "cluster-100.xml"
TRACE = f'[traces.KTH1k]\nworkload = "{WORKLOAD}"\nplatform = "{PLATFORM}"\n'


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def cli(*args, cwd=ROOT, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batsched_ml.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)


# ------------------------------------------------------------------ the paper campaigns
@pytest.mark.parametrize("name", ["carastan2017", "carastan2017-reduced", "gaussier2015", "nissimov2008",
                                  "zrigui2022", "sample"])
def test_campaign_files_give_the_configurations_of_their_explicit_versions(name, monkeypatch):
    """``campaigns_explicit.json`` records what the explicit campaign files of commit f4f327b gave
    (carastan2017-reduced was carastan2017-reduced-all.toml, an 842-line copy): every config's
    resolved RunConfig, flags and place, every trace's source and cut, the baseline, metrics and
    paper numbers. The files written with matrices, extends and bare trace names give the same, so
    the same cache keys: their results are the results of the explicit files."""
    monkeypatch.chdir(ROOT)  # learned: policies are relative to the repository
    expected = json.loads((DATA / "campaigns_explicit.json").read_text())[name]
    campaign = load_campaign(EXPERIMENTS / f"{name}.toml")
    assert list(campaign.configs) == list(expected["configs"])
    for config_name, spec in campaign.configs.items():
        want = expected["configs"][config_name]
        assert spec.config.to_dict() == want["config"], config_name
        assert task_key("inputs", spec.config, "v") == task_key("inputs", RunConfig(**want["config"]), "v")
        assert sorted(spec.argv) == sorted(want["argv"]), config_name  # flags (matrix order may differ)
    traces = {n: {"source": t.source, "file": None if t.path is None else t.path.name,
                  "platform": None if t.platform is None else t.platform.name, "generate": t.generate,
                  "max_jobs": t.max_jobs, "nodes": t.nodes, "windows": None if t.windows is None else vars(t.windows)}
              for n, t in campaign.traces.items()}
    assert traces == expected["traces"]
    assert (campaign.name, campaign.baseline, campaign.metrics) == (expected["name"], expected["baseline"],
                                                                     expected["metrics"])
    assert [vars(p) for p in campaign.paper] == expected["paper"]


def test_zrigui2022_seeds_runs_the_configs_of_zrigui2022():
    """``zrigui2022-seeds.toml`` copies the adopted config, its fixed-offset twin, the baseline and the
    traces from ``zrigui2022.toml`` (a file ``extends`` would bring every other config along): the
    copies must stay the same runs, so the two campaigns share seeds 0-4 through the cache."""
    seeds = load_campaign(EXPERIMENTS / "zrigui2022-seeds.toml")
    paper = load_campaign(EXPERIMENTS / "zrigui2022.toml")
    shared = [name for name in seeds.configs if name in paper.configs]
    assert shared == ["base-fcfs", "ci-fcfs-head-start-speculative-leaf50",
                      "ci-fcfs-head-start-speculative-leaf50-fixed-offset"]
    for name in shared:
        assert seeds.configs[name].config.to_dict() == paper.configs[name].config.to_dict(), name
        assert set(paper.seeds_of(name)) <= set(seeds.seeds_of(name)), name
    assert {n: t.source for n, t in seeds.traces.items()} == {n: t.source for n, t in paper.traces.items()}


def test_carastan2017_lays_out_table_4():
    campaign = load_campaign(EXPERIMENTS / "carastan2017.toml")
    assert campaign.tables == [TableSpec("avebsld10", "median", "setting", "policy",
                                         "Table 4: median AVEbsld (tau = 10 s) over the sequences")]
    assert campaign.configs["spt-actual"].axes == {"policy": "spt", "setting": "actual"}


# ------------------------------------------------------------------ extends
def test_a_campaign_extends_another_file_key_by_key(tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "parent.toml", f"""
[campaign]
name = "parent"
baseline = "easy"
metrics = ["avebsld10"]
[traces.KTH1k]
workload = "../w.json"
windows = {{ days = 2, count = 2, select = "first" }}
[configs.easy]
scheduler = "easy"
[configs.spf]
scheduler = "easy"
policy = "spf"
[[paper]]
trace = "KTH1k"
config = "spf"
metric = "avebsld10"
value = 3.0
""")
    shutil.copy(WORKLOAD, tmp_path / "w.json")
    child = write(tmp_path, "child.toml", """
extends = "sub/parent.toml"
[campaign]
name = "child"
[traces.KTH1k]
windows = { days = 3, count = 1 }
[configs.spf]
backfill_order = "sjbf"
[configs.conservative]
scheduler = "conservative"
""")
    c = load_campaign(child)
    assert (c.name, c.baseline, c.metrics) == ("child", "easy", ["avebsld10"])
    assert c.traces["KTH1k"].path.resolve() == tmp_path / "w.json"  # relative to the file that names it
    assert vars(c.traces["KTH1k"].windows) == {"days": 3, "count": 1, "select": "spread", "start_days": 0}
    assert list(c.configs) == ["easy", "spf", "conservative"]
    assert (c.configs["spf"].config.policy, c.configs["spf"].config.backfill_order) == ("spf", "sjbf")
    assert [p.config for p in c.paper] == ["spf"]


@pytest.mark.parametrize("files, message", [
    ({"a.toml": 'extends = "b.toml"\n', "b.toml": 'extends = "a.toml"\n'}, "extends makes a cycle: a.toml -> b.toml -> a.toml"),
    ({"a.toml": 'extends = "nope.toml"\n'}, "extends: cannot read"),
    ({"a.toml": 'extends = 3\n'}, "extends must be the path of another campaign file"),
    ({"a.toml": 'extends = "b.toml"\n', "b.toml": "[campaign\n"}, "b.toml: invalid TOML"),
])
def test_bad_extends_is_a_clear_error(tmp_path, files, message):
    for name, text in files.items():
        write(tmp_path, name, text)
    with pytest.raises(CampaignError, match=message) as err:
        load_campaign(tmp_path / "a.toml")
    assert "\n" not in str(err.value)


def test_a_config_extends_another_and_a_matrix_made_one(tmp_path):
    c = load_campaign(write(tmp_path, "c.toml", TRACE + """
[configs.grid]
scheduler = "easy"
matrix = { policy = ["fcfs", "spf"] }
[configs.sjbf]
extends = "grid-spf"
backfill_order = "sjbf"
[configs.sjbf-starving]
extends = "sjbf"
starvation_threshold = 3600
"""))
    assert list(c.configs) == ["grid-fcfs", "grid-spf", "sjbf", "sjbf-starving"]
    last = c.configs["sjbf-starving"].config
    assert (last.scheduler, last.policy, last.backfill_order, last.starvation_threshold) == ("easy", "spf", "sjbf", 3600)
    assert c.configs["sjbf"].axes == {"policy": "spf"}  # inherited with the rest


@pytest.mark.parametrize("configs, message", [
    ('[configs.a]\nextends = "b"\n[configs.b]\nextends = "a"\n', "a cycle: a -> b -> a"),
    ('[configs.a]\nextends = "eassy"\n[configs.easy]\n', "'eassy': no such config (did you mean 'easy'?)"),
    ('[configs.m]\nmatrix = { policy = ["fcfs", "spf"] }\nname = "{policy}-{size}"\n', "{size} is not an axis"),
    ('[configs.m]\nmatrix = { policy = ["fcfs", "spf"], reservations = ["count", "cores"] }\nname = "x-{policy}"\n',
     "gives 'x-fcfs' twice"),
    ('[configs.m]\nmatrix = { policy = [] }\n', "a list of values"),
    ('[configs.m]\nmatrix = { policy = ["fcfs"] }\n[configs.m-fcfs]\n', "config 'm-fcfs' is defined twice"),
    ('[configs.m]\nmatrix = { policy = ["fcfs", "nope"] }\n', "[configs.m-nope]"),
    ('[configs.a]\naxes = { policy = 3 }\n', "axes must be a table of labels"),
    ('[configs.a]\nname = "x"\n', "unknown key 'name'"),
    ('[configs.m]\nmatrix = { queue = { short = "spf" } }\n', "would set 'queue', which is not a setting"),
])
def test_bad_config_inheritance_or_matrix_is_a_clear_error(tmp_path, configs, message):
    with pytest.raises(CampaignError, match=re.escape(message)) as err:
        load_campaign(write(tmp_path, "c.toml", TRACE + configs))
    assert "\n" not in str(err.value)


def test_a_matrix_crosses_a_base_with_its_axes_first_axis_outermost(tmp_path):
    c = load_campaign(write(tmp_path, "c.toml", TRACE + """
[configs.first]
scheduler = "fcfs"
[configs.m]
starvation_threshold = 100
name = "{queue}/{model}"
[configs.m.matrix.queue]
fifo = { policy = "fcfs" }
short = { policy = "spf" }
[configs.m.matrix.model]
textbook = { scheduler = "easy", reservations = "count" }
batsched = { scheduler = "easy", reservations = "cores" }
"""))
    assert list(c.configs) == ["first", "fifo/textbook", "fifo/batsched", "short/textbook", "short/batsched"]
    made = c.configs["short/batsched"]
    assert (made.config.policy, made.config.reservations, made.config.starvation_threshold) == ("spf", "cores", 100)
    assert made.axes == {"queue": "short", "model": "batsched"}
    # flags in the order the keys were merged: the base's, then each axis's
    assert made.argv == ("--starvation-threshold", "100", "--policy", "spf", "--scheduler", "easy",
                         "--reservations", "cores")


# ------------------------------------------------------------------ traces directory
SWF = DATA / "kth-excerpt.swf"


def two_traces(tmp_path: Path) -> Path:
    return write(tmp_path, "two.toml", """
[campaign]
name = "two"
[traces.A]
swf = "a.swf"
max_jobs = 40
[traces.B]
swf = "b.swf"
max_jobs = 40
[configs.easy]
scheduler = "easy"
""")


def test_bare_trace_names_are_found_in_the_traces_directory(tmp_path, monkeypatch):
    traces = tmp_path / "traces"
    traces.mkdir()
    shutil.copy(SWF, traces / "a.swf")
    shutil.copy(SWF, traces / "b.swf")
    path = two_traces(tmp_path)
    monkeypatch.delenv("BATSCHED_ML_TRACES", raising=False)
    assert load_campaign(path, traces_dir=traces).traces["A"].path == traces / "a.swf"
    monkeypatch.setenv("BATSCHED_ML_TRACES", str(traces))
    assert load_campaign(path).traces["B"].path == traces / "b.swf"
    monkeypatch.delenv("BATSCHED_ML_TRACES")
    shutil.copy(SWF, tmp_path / "a.swf")  # next to the campaign file when no directory is given
    c = load_campaign(path)
    assert c.traces["A"].path == tmp_path / "a.swf" and c.traces["A"].missing is None
    assert "b.swf not found next to the campaign file" in c.traces["B"].missing
    with pytest.raises(CampaignError, match="--traces-dir"):
        load_campaign(path, traces_dir=tmp_path / "nowhere")


def test_a_missing_file_with_a_directory_is_named_when_its_trace_runs(tmp_path):
    c = load_campaign(write(tmp_path, "c.toml", '[traces.T]\nworkload = "data/w.json"\n[configs.a]\n'))
    with pytest.raises(CampaignError, match=re.escape(f"[traces.T] workload: file not found: {tmp_path}/data/w.json")):
        c.require_inputs()


def test_a_trace_runs_without_the_other_traces_files(tmp_path, monkeypatch):
    """``--trace A`` needs only A's file; without it, the missing file is one line and exit 2,
    before any work, naming the file and how to give the directory."""
    monkeypatch.delenv("BATSCHED_ML_TRACES", raising=False)
    traces = tmp_path / "traces"
    traces.mkdir()
    shutil.copy(SWF, traces / "a.swf")
    path = two_traces(tmp_path)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "BATSCHED_ML_TRACES"}
    done = cli("campaign", "run", path, "--traces-dir", traces, "-o", out, "--workers", "0", "-q", "--no-report",
               env=env)
    assert done.returncode == 2 and not out.exists(), done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "[traces.B] swf: b.swf not found in the traces directory" in lines[0], done.stderr
    done = cli("campaign", "check", path, env=env)
    assert done.returncode == 2 and "--traces-dir DIR or BATSCHED_ML_TRACES=DIR" in done.stderr
    assert "Parallel Workloads Archive" in done.stderr
    done = cli("campaign", "check", path, "--traces-dir", traces, "--trace", "A", env=env)
    assert done.returncode == 0, done.stderr
    done = cli("campaign", "run", path, "--traces-dir", traces, "--trace", "A", "-o", out, "--workers", "0", "-q",
               "--no-report", env=env)
    assert done.returncode == 0, done.stderr
    rows = (out / "results.csv").read_text().splitlines()
    assert len(rows) == 2 and rows[1].startswith("A,0,easy,0,ok,")


# ------------------------------------------------------------------ report tables
def test_aggregate_table_lays_out_a_statistic_by_two_axes():
    rows = [{"trace": "T", "config": config, "status": status, "avebsld10": value, "window": w, "seed": 0}
            for config, values in {"fcfs-easy": [1.0, 5.0, 3.0], "spf-easy": [2.0, 4.0, 10.0],
                                   "fcfs-actual": [7.0, 8.0, 9.0]}.items()
            for w, (value, status) in enumerate(zip(values, ["ok", "ok", "ok"]))]
    rows.append({"trace": "T", "config": "spf-easy", "status": "error", "avebsld10": 1000.0, "window": 3, "seed": 0})
    axes = {"fcfs-easy": {"policy": "fcfs", "setting": "easy"}, "spf-easy": {"policy": "spf", "setting": "easy"},
            "fcfs-actual": {"policy": "fcfs", "setting": "actual"}}
    paper = [PaperRef("T", "spf-easy", "avebsld10", value=4.5), PaperRef("T", "fcfs-easy", "mean_wait", value=1.0)]
    lines = aggregate_table(TableSpec("avebsld10", "median", "setting", "policy"), rows, ["T"], list(axes), axes,
                            paper)
    assert "| trace | setting | n | fcfs | spf |" in lines
    assert "| T | easy | 3 | 3.00 | 4.00 (4.50) |" in lines  # medians of the runs that ran; the paper's value
    assert "| T | actual | 3 | 8.00 | - |" in lines
    flat = aggregate_table(TableSpec("avebsld10", "max"), rows, ["T"], list(axes), axes, [])
    assert "| spf-easy | 10.0 |" in flat



def test_a_table_place_holds_a_config_per_trace_with_the_papers_value_to_its_decimals():
    """RLScheduler's table: each trace's learned policy is its own config at the same (order, backfill)
    place; ``decimals`` prints ours and theirs alike; ``traces``/``configs`` keep a table to some."""
    rows = [{"trace": t, "config": c, "status": "ok", "avebsld10": v, "window": w, "seed": 0}
            for t, c, values in (("A", "fcfs-with", [1234.5, 1.0]), ("A", "a-ours-with", [10.0, 20.0]),
                                 ("B", "fcfs-with", [7.0, 9.0]), ("B", "b-ours-with", [3.0, 4.0]))
            for w, v in enumerate(values)]
    axes = {"fcfs-with": {"order": "fcfs", "backfill": "with"}, "a-ours-with": {"order": "ours", "backfill": "with"},
            "b-ours-with": {"order": "ours", "backfill": "with"}}
    paper = [PaperRef("A", "fcfs-with", "avebsld10", value=617.75), PaperRef("B", "b-ours-with", "avebsld10", value=3.5)]
    spec = TableSpec("avebsld10", rows="order", columns="backfill", decimals=2)
    lines = aggregate_table(spec, rows, ["A", "B"], list(axes), axes, paper)
    assert "| A | fcfs | 2 | 617.75 (617.75) |" in lines
    assert "| A | ours | 2 | 15.00 |" in lines and "| B | ours | 2 | 3.50 (3.50) |" in lines  # each trace's own
    only = aggregate_table(TableSpec("avebsld10", traces=("B",), configs=("fcfs-with",)), rows, ["A", "B"],
                           list(axes), axes, [])
    assert "| config | B |" in only and "| fcfs-with | 8.00 |" in only
    assert not any("ours" in line for line in only)

def test_the_report_has_the_campaigns_tables_and_its_copy_runs_again(tmp_path, capsys):
    from batsched_ml.cli import main

    path = write(tmp_path, "c.toml", '[campaign]\nname = "t"\nmetrics = ["avebsld10"]\n' + TRACE + """
[configs.m]
name = "{policy}-{reservations}"
matrix = { policy = ["fcfs", "spf"], reservations = ["count", "cores"] }
[[tables]]
metric = "avebsld10"
rows = "reservations"
columns = "policy"
""")
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["campaign", "run", str(path), "-o", str(out), "--workers", "0", "-q"]) == 0
    # after the last task, the report's writing is said (it was ~50 s of silence on a large campaign)
    err = capsys.readouterr().err.splitlines()
    writing = next(i for i, line in enumerate(err) if line.startswith(f"writing the report in {out / 'report'}"))
    assert err[writing + 1].startswith(f"report: {out / 'report' / 'report.md'} (written in ")
    md = (out / "report" / "report.md").read_text()
    assert "### avebsld10: mean over each configuration's runs" in md
    assert "| trace | reservations | n | fcfs | spf |" in md and "| KTH1k | cores | 1 |" in md
    copy = load_campaign(out / "campaign.toml")  # the campaign as run: expanded, self-contained
    assert list(copy.configs) == ["fcfs-count", "fcfs-cores", "spf-count", "spf-cores"]
    assert "matrix" not in (out / "campaign.toml").read_text()
    assert [c.config for c in copy.configs.values()] == [c.config for c in load_campaign(path).configs.values()]


def test_validation_campaigns_run_the_adopted_config_and_the_same_deterministic_runs():
    """``validation.toml``'s learned config is the classification config adopted in
    ``zrigui2022-seeds.toml`` (the one README recommends), and ``validation-jitter.toml`` runs its
    deterministic configs, on the same eleven traces, on jitter copies: one definition of each."""
    plain = load_campaign(EXPERIMENTS / "validation.toml")
    jitter = load_campaign(EXPERIMENTS / "validation-jitter.toml")
    adopted = load_campaign(EXPERIMENTS / "zrigui2022-seeds.toml").configs["ci-fcfs-head-start2w-speculative-leaf50"]
    assert plain.configs["ci-head-start2w"].config.to_dict() == adopted.config.to_dict()
    assert plain.seeds_of("ci-head-start2w") == [0, 1, 2]
    assert list(jitter.configs) == [c for c, spec in plain.configs.items() if spec.config.classifier is None]
    for name, spec in jitter.configs.items():
        assert spec.config.to_dict() == plain.configs[name].config.to_dict(), name
    assert list(jitter.traces) == list(plain.traces) and len(plain.traces) == 11
    for name, trace in jitter.traces.items():
        assert (trace.source, trace.nodes, trace.windows) == (plain.traces[name].source, plain.traces[name].nodes,
                                                              None)
        assert trace.jitter is not None and trace.jitter.copies == 3 and plain.traces[name].jitter is None
