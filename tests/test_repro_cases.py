"""The minimized cases of issue 23 (``tests/data/repro/<case>``: workload, platform, and the
``cmd.sh`` / ``check.sh`` they came with, whose comments say what was wrong), run through the
command line in this process, each with its ``check.sh``'s condition."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from batsched_ml.cli import main

from conftest import DATA

CASES = DATA / "repro"


def simulate(capsys, case: str, prefix: Path, *flags: str) -> tuple[int, str]:
    """``batsched-ml simulate`` on a case's inputs; (exit code, stderr)."""
    capsys.readouterr()
    code = main(["simulate", "-p", str(CASES / case / "p.xml"), "-w", str(CASES / case / "w.json"),
                 "-e", str(prefix), "--quiet", "--json", *flags])
    return code, capsys.readouterr().err


def starts(prefix: Path) -> dict:
    with open(f"{prefix}_jobs.csv") as f:
        return {row["job_id"]: float(row["starting_time"]) for row in csv.DictReader(f)}


def test_a_new_head_lets_an_older_job_backfill(tmp_path, capsys):
    """easy_head_change: SPF makes the arrival the head; its reservation leaves room for job 3."""
    assert simulate(capsys, "easy_head_change", tmp_path / "run", "--policy", "spf")[0] == 0
    assert starts(tmp_path / "run")["3"] < 2.0


def test_jobs_of_one_message_are_backfilled_in_queue_order(tmp_path, capsys):
    """easy_arrival_order: SPF says job 4 (walltime 20) before job 3 (walltime 50)."""
    assert simulate(capsys, "easy_arrival_order", tmp_path / "run", "--policy", "spf")[0] == 0
    s = starts(tmp_path / "run")
    assert s["4"] < s["3"]


def test_fcfs_ties_are_backfilled_in_submission_then_id_order(tmp_path, capsys):
    """easy_fcfs_tie_order: jobs 41 and 35 submitted together; FCFS's order is 35 first."""
    assert simulate(capsys, "easy_fcfs_tie_order", tmp_path / "run")[0] == 0
    s = starts(tmp_path / "run")
    assert s["35"] < s["41"]


@pytest.mark.parametrize("case", ["easy_head_change", "easy_arrival_order"])
def test_batsched_model_keeps_batscheds_incremental_pass(tmp_path, capsys, case):
    """Under ``--reservations cores`` batsched's reading stays (golden evidence: README): the
    new arrivals only, in arrival order, when nothing ended."""
    assert simulate(capsys, case, tmp_path / "run", "--policy", "spf", "--reservations", "cores")[0] == 0
    s = starts(tmp_path / "run")
    assert s["3"] > 2.0 if case == "easy_head_change" else s["3"] < s["4"]


@pytest.mark.parametrize("distribution", ["walltime", "user", "hmm", "forest"])
@pytest.mark.parametrize("classifier", ["clairvoyant", "random-forest"])
def test_probabilistic_with_a_classifier_runs(tmp_path, capsys, distribution, classifier):
    """prob_classifier: the seed was passed twice (TypeError traceback)."""
    code, err = simulate(capsys, "prob_classifier", tmp_path / "run", "--scheduler", "probabilistic",
                         "--distribution", distribution, "--classifier", classifier, "--seed", "3")
    assert code == 0, err
    assert "Traceback" not in err
    assert starts(tmp_path / "run") == {"0": pytest.approx(0.0004, abs=1e-3)}


def test_probabilistic_with_a_classifier_is_seeded_once(tmp_path):
    """The Python API: one ``seed`` reaches the classifier and the distribution."""
    from batsched_ml.runner import build_scheduler

    sched = build_scheduler("probabilistic", distribution="hmm", classifier="random-forest", seed=7)
    assert sched.classifier.get_params()["random_state"] == 7
    assert sched.scheduler.distribution.get_params()["random_state"] == 7


@pytest.mark.parametrize("rescan", ["always", "changes"])
@pytest.mark.parametrize("case, flags", [
    ("prob_walltime_vs_easy", ["--policy", "expr:r*n"]),
    ("prob_walltime_vs_easy_cores", ["--reservations", "cores"]),
])
def test_walltime_distribution_is_easy(tmp_path, capsys, case, flags, rescan):
    """prob_walltime_vs_easy (EASY's arrival order) and prob_walltime_vs_easy_cores (the head's
    reservation holds cores 0-2 in EASY's profile: job 30 may not take core 0)."""
    assert simulate(capsys, case, tmp_path / "easy", "--scheduler", "easy", *flags)[0] == 0
    assert simulate(capsys, case, tmp_path / "prob", "--scheduler", "probabilistic", "--distribution", "walltime",
                    "-o", f"rescan={rescan}", *flags)[0] == 0
    assert Path(f"{tmp_path}/prob_jobs.csv").read_bytes() == Path(f"{tmp_path}/easy_jobs.csv").read_bytes()
