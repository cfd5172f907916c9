"""What a campaign's results and figures show a researcher (issue 40, section 3): jobs a run left
out of its metrics, one sign convention for every change, run labels with their options, figures
whose curves and values can be read, and a plugin that clashes with a built-in."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from batsched_ml.campaign.results import read_results  # noqa: E402
from batsched_ml.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "workloads" / "KTH-SP2-1k.json"
SMALL_MACHINE = ROOT / "platforms" / "cluster-16.xml"  # 159 of the sample's 1,000 jobs need more cores

CAMPAIGN = f"""
[campaign]
name = "small-machine"
baseline = "easy-fcfs"
metrics = ["avebsld10", "cum_bsld60", "mean_wait", "utilisation"]

[traces.KTH-1k]
workload = "{WORKLOAD}"
platform = "{SMALL_MACHINE}"

[configs.easy-fcfs]
scheduler = "easy"
policy = "fcfs"

[configs.easy-spf]
scheduler = "easy"
policy = "spf"

[[paper]]
trace = "KTH-1k"
config = "easy-spf"
metric = "avebsld10"
reduction = 40
source = "Table X"
"""


@pytest.fixture(scope="module")
def small_machine(tmp_path_factory):
    """The issue's campaign, run by the command line: (results dir, report text, stderr)."""
    tmp = tmp_path_factory.mktemp("small-machine")
    (tmp / "c.toml").write_text(CAMPAIGN)
    out = tmp / "out"
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["campaign", "run", str(tmp / "c.toml"), "-o", str(out), "--workers", "0", "-q"]) == 0
    return out, (out / "report" / "report.md").read_text(), err.getvalue()


# ---------------------------------------------------------------- jobs left out of the metrics
def test_rejected_jobs_are_in_results_csv_the_report_and_on_the_console(small_machine):
    out, report, err = small_machine
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["config"], r["rejected"], r["killed"], r["unfinished"], r["complete"]) for r in rows] == [
        ("easy-fcfs", "159", "0", "0", "False"), ("easy-spf", "159", "0", "0", "False")]
    typed = read_results(out)
    assert all(r["rejected"] == 159 and r["complete"] is False for r in typed)
    # the report: marked in its first line, a column of its trace table, a note under it
    assert "**2 with jobs that did not complete** (marked `!`)" in report.splitlines()[2]
    assert "| config | n | jobs not completed | avebsld10 |" in report
    assert "| easy-fcfs | 1 | ! 159 rejected | " in report
    assert "`easy-fcfs` 159 rejected of 1,000 jobs" in report
    # the console: one warning line naming the runs
    (line,) = [line for line in err.splitlines() if "did not complete every job" in line]
    assert line.startswith("batsched-ml: warning: 2 of 2 runs") and "KTH-1k/w0/easy-fcfs/s0: 159 of 1,000 jobs rejected" in line


def test_a_results_csv_without_the_new_columns_reads_them_from_the_metrics(small_machine, tmp_path):
    """A results directory written before the columns existed (the committed ones) reports them."""
    out, _, _ = small_machine
    old = tmp_path / "old"
    old.mkdir()
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    drop = ("complete", "rejected", "killed")
    with open(old / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, [c for c in rows[0] if c not in drop])
        writer.writeheader()
        writer.writerows({k: v for k, v in r.items() if k not in drop} for r in rows)
    (old / "campaign.toml").write_text((out / "campaign.toml").read_text())
    assert [(r["rejected"], r["complete"]) for r in read_results(old)] == [(159, False), (159, False)]
    assert main(["campaign", "report", str(old)]) == 0
    assert "| easy-spf | 1 | ! 159 rejected | " in (old / "report" / "report.md").read_text()


def test_a_complete_run_has_no_mark(tmp_path):
    text = CAMPAIGN.replace("cluster-16.xml", "cluster-100.xml").split("[configs.easy-spf]")[0]
    (tmp_path / "c.toml").write_text(text)
    assert main(["campaign", "run", str(tmp_path / "c.toml"), "-o", str(tmp_path / "out"), "--workers", "0",
                 "-q", "--no-report"]) == 0
    (row,) = read_results(tmp_path / "out")
    assert row["complete"] is True and (row["rejected"], row["killed"], row["unfinished"]) == (0, 0, 0)
    assert main(["campaign", "report", str(tmp_path / "out")]) == 0
    assert "not completed" not in (tmp_path / "out" / "report" / "report.md").read_text()


# ---------------------------------------------------------------- one sign convention
def _cells(report: str, section: str, config: str) -> list[str]:
    body = report.split(section, 1)[1]
    line = next(line for line in body.splitlines() if line.startswith(f"| {config} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_every_table_gives_a_change_with_one_sign_and_its_word(small_machine):
    """The same change reads the same in the trace table, the Intervals table and beside the paper:
    ``100 * (config / baseline - 1)``, and better or worse by the metric."""
    out, report, _ = small_machine
    rows = {r["config"]: r for r in read_results(out)}
    base, spf = rows["easy-fcfs"], rows["easy-spf"]
    bsld = 100 * (spf["avebsld10"] / base["avebsld10"] - 1)
    util = 100 * (spf["utilisation"] / base["utilisation"] - 1)
    assert bsld < 0 and util < 0  # SPF: lower slowdown (better), lower utilisation (worse)
    top = _cells(report, "## KTH-1k", "easy-spf")
    assert top[3].endswith(f"({bsld:+.1f}% better)") and top[6].endswith(f"({util:+.1f}% worse)")
    intervals = _cells(report, "### Intervals", "easy-spf")
    assert intervals[3].startswith(f"{bsld:+.1f}% [") and intervals[3].endswith("better (jobs)")
    assert intervals[9] == f"{util:+.1f}% worse"
    # the paper's reduction of 40% is the change -40.0%; the gap is ours - the paper's, in points
    paper = next(line for line in report.splitlines() if line.startswith("| KTH-1k | easy-spf | avebsld10 vs easy-fcfs"))
    assert f"| {bsld:+.1f}% better | -40.0% better | {bsld + 40:+.1f} pts |" in paper
    assert not re.search(r"reduction \[95% CI\]|positive is lower", report)


def test_format_change_words_by_metric():
    from batsched_ml.analysis.uncertainty import format_change

    assert format_change(-12.6, "utilisation") == "-12.6% worse"
    assert format_change(105.0, "cum_bsld60") == "+105.0% worse"
    assert format_change(-63.4, "avebsld10", -76.0, -47.2) == "-63.4% [-76.0, -47.2] better"
    assert format_change(2.0, "mean_wait", -1.0, 5.1) == "+2.0% [-1.0, +5.1] worse ~"
    assert format_change(3.0, "jobs") == "+3.0%"  # no direction: no word
    assert format_change(None, "avebsld10") == "-"


# ---------------------------------------------------------------- labels name the options
def _simulate(tmp_path, prefix, *flags) -> Path:
    assert main(["simulate", "-p", str(ROOT / "platforms" / "cluster-100.xml"), "-w", str(WORKLOAD),
                 "-e", str(tmp_path / prefix), "--quiet", *flags]) == 0
    return tmp_path / f"{prefix}_jobs.csv"


def test_runs_that_differ_by_an_option_have_different_labels_and_legends(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    import json

    from batsched_ml.analysis.plots import plot_runs

    runs = [_simulate(tmp_path, "a", "--scheduler", "probabilistic", "-o", "tau=0"),
            _simulate(tmp_path, "b", "--scheduler", "probabilistic", "-o", "tau=0.2", "-o", "rescan=always"),
            _simulate(tmp_path, "c", "--scheduler", "probabilistic")]
    labels = [json.loads(p.with_name(p.name.replace("_jobs.csv", "_run.json")).read_text())["label"] for p in runs]
    # the non-default options in short form; an option given at its default (rescan=always) is not one
    assert labels == ["probabilistic fcfs, walltime distribution, tau=0",
                      "probabilistic fcfs, walltime distribution, tau=0.2",
                      "probabilistic fcfs, walltime distribution"]
    fig = plot_runs(runs, tmp_path / "cum.png")
    assert [line.get_label() for line in fig.axes[0].lines] == labels


def test_serve_names_its_configuration_with_its_options():
    from batsched_ml.config.declare import RunConfig
    from batsched_ml.config.resolve import resolve, run_label

    assert run_label(resolve(RunConfig(scheduler="conservative", options={"compiled": False}))) == \
        "conservative fcfs, compiled=false"


# ---------------------------------------------------------------- figures that can be read
def test_curves_differ_by_line_style_and_marker_not_only_colour(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from batsched_ml.analysis.plots import plot_runs

    runs = [_simulate(tmp_path, "a"), _simulate(tmp_path, "b", "--policy", "spf"),
            _simulate(tmp_path, "c", "--policy", "saf")]
    for kind in ("cumbsld", "wait-ecdf"):
        lines = plot_runs(runs, tmp_path / f"{kind}.png", kind=kind, colors=["C0"] * 3).axes[0].lines
        styles = {(line.get_linestyle(), line.get_marker()) for line in lines}
        assert len(styles) == 3 and all(line.get_markevery() is not None for line in lines)
        # a few markers per curve, not one per job
        assert all(line.get_markevery()[1] <= 0.1 for line in lines)


def test_spread_starts_at_zero_and_bars_carry_their_values(tmp_path):
    pytest.importorskip("matplotlib")
    from batsched_ml.analysis.plots import plot_bars, plot_class_bars, plot_spread

    fig = plot_spread({"a": [900.0, 905.0, 910.0], "b": [950.0, 960.0]}, tmp_path / "s.png", "avebsld10")
    ax = fig.axes[0]
    assert ax.get_ylim()[0] == 0.0  # 900-960 drawn from 0: the gap at its true size
    assert {t.get_text() for t in ax.texts} == {"905.0", "955.0"}  # each mean bar's value
    fig = plot_bars({"a": 2680.2, "b": 980.02}, tmp_path / "b.png", "avebsld10")
    assert [t.get_text() for t in fig.axes[0].texts] == ["2,680", "980.0"]
    fig = plot_class_bars({"a": (12.5, 3.25), "b": (None, 4.0)}, tmp_path / "c.png", "bsld")
    assert [t.get_text() for t in fig.axes[0].texts] == ["12.5", "", "3.25", "4.00"]


# ---------------------------------------------------------------- a plugin named like a built-in
def _installed_package(tmp_path: Path, name: str = "easy") -> dict:
    """A distribution ``evil-easy 0.1`` on PYTHONPATH that declares scheduler ``name``: the
    environment of a subprocess that sees it, as if it were pip-installed."""
    import os

    site = tmp_path / "site"
    info = site / "evil_easy-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil-easy\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[batsched_ml.schedulers]\n{name} = evil_easy:Easy\n")
    (site / "evil_easy.py").write_text("from batsched_ml.scheduling.fcfs import StrictFCFS as Easy\n")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))


def _cli(env, *args):
    return subprocess.run([sys.executable, "-m", "batsched_ml.cli", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_plugin_named_like_a_built_in_is_refused_naming_both_distributions(tmp_path):
    env = _installed_package(tmp_path)
    flags = ["simulate", "-p", str(ROOT / "platforms" / "cluster-100.xml"), "-w", str(WORKLOAD), "--quiet"]
    done = _cli(env, *flags, "-e", str(tmp_path / "easy"), "--scheduler", "easy")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("batsched-ml: error: scheduler 'easy' is declared by batsched-ml ")
    assert "(batsched_ml.scheduling.easy:EasyBackfilling) and by evil-easy 0.1 (evil_easy:Easy)" in line
    # the other names work, and the listing shows the clash where the plugin is
    assert _cli(env, *flags, "-e", str(tmp_path / "fcfs"), "--scheduler", "fcfs").returncode == 0
    listing = _cli(env, "plugins").stdout
    assert "BROKEN: scheduler 'easy' is declared by batsched-ml" in listing


def test_the_docs_say_a_built_in_name_is_refused():
    text = (ROOT / "docs" / "plugins" / "index.md").read_text()
    assert "replaces it" not in text and "name of a built-in is refused" in text
