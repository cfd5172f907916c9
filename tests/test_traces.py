"""Real traces from other machines (issue 14): local time zones, missing requested times,
interrupted runs, progress, per-job files, useful vs wasted utilisation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batsched_ml.classifiers import CalendarClock
from batsched_ml.cli import main
from batsched_ml.workloads import load_workload, read_swf, swf_to_workload
from batsched_ml.workloads.timezone import resolve_time_zone


def _line(job, submit, run, procs, req_time, user=1):
    return f"{job} {submit} 0 {run} {procs} -1 -1 {procs} {req_time} -1 1 {user} 7 -1 -1 -1 -1 -1\n"


def _swf(tmp_path: Path, body: str, header: str) -> Path:
    path = tmp_path / "t.swf"
    path.write_text(header + body)
    return path


# ------------------------------------------------------------------ 1. time zones
PARIS_HEADER = ("; UnixStartTime: 1091615532\n; TimeZone: 3600\n; TimeZoneString: Europe/Paris\n"
                "; MaxProcs: 8\n")


def test_named_zone_with_dst_for_calendar_features(tmp_path):
    # 1091615532 = 2004-08-04 10:32:12 UTC: Paris is on summer time (UTC+2) -> 12 h local;
    # a job submitted 150 days later (2005-01-01 10:32:12 UTC) is on winter time (UTC+1) -> 11 h.
    later = 150 * 86400
    body = _line(1, 0, 10, 1, 60) + _line(2, later, 10, 1, 60)
    workload, report = swf_to_workload(read_swf(_swf(tmp_path, body, PARIS_HEADER)))
    assert workload["swf"]["time_zone"] == "Europe/Paris" == report.time_zone
    assert "Europe/Paris" in str(report) and "daylight saving" in str(report)
    clock = CalendarClock.from_swf(workload["swf"])
    (hour0, *_), _ = clock.temporal(0.0)
    (hour1, _, dom, month, *_), _ = clock.temporal(float(later))
    assert (hour0, hour1, dom, month) == (12, 11, 1, 1)
    # the old behaviour (fixed numeric offset) would give 11 h in August
    assert CalendarClock(1091615532, 0, 3600).temporal(0.0)[0][0] == 11
    assert CalendarClock(1091615532, 0, "Europe/Paris").temporal(0.0)[0][0] == 12


def test_numeric_offset_only_and_no_zone_warns(tmp_path):
    body = _line(1, 0, 10, 1, 60)
    header = "; UnixStartTime: 0\n; TimeZone: -18000\n; MaxProcs: 8\n"
    workload, report = swf_to_workload(read_swf(_swf(tmp_path, body, header)))
    assert report.time_zone == workload["swf"]["time_zone"] == "UTC-05:00"
    assert "fixed offset" in report.time_zone_note
    assert CalendarClock.from_swf(workload["swf"]).temporal(0.0)[0][0] == 19  # 1969-12-31 19:00
    workload, report = swf_to_workload(read_swf(_swf(tmp_path, body, "; MaxProcs: 8\n")))
    assert report.time_zone == "UTC" and report.time_zone_note.startswith("warning:")
    assert "warning: no time zone" in str(report)


def test_unknown_zone_name_falls_back_to_offset_and_disagreement_is_said():
    choice = resolve_time_zone("Mars/Olympus", 3600)
    assert (choice.label, choice.source) == ("UTC+01:00", "TimeZone") and "unknown" in choice.note
    # LLNL-Atlas's header: TimeZone 3600 with US/Pacific
    choice = resolve_time_zone("US/Pacific", 3600, at=1163199901)
    assert choice.label == "US/Pacific" and "disagrees" in choice.note
    with pytest.raises(ValueError, match="unknown time zone"):
        CalendarClock(0, 0, "Mars/Olympus")


# ------------------------------------------------------------------ 2. missing requested times
MISSING = (_line(1, 0, 100, 2, 500) + _line(2, 10, 50, 1, -1) + _line(3, 20, 0, 1, 60)
           + _line(4, 30, 2000, 1, -1) + _line(5, 40, 30, 16, 40))


@pytest.mark.parametrize("choice, walltimes, kept", [
    ("runtime", {1: 500.0, 2: 50.0, 4: 2000.0, 5: 40.0}, 4),
    ("max", {1: 500.0, 2: 500.0, 4: 500.0, 5: 40.0}, 4),
    ("drop", {1: 500.0, 5: 40.0}, 2),
])
def test_missing_walltime_choices(tmp_path, choice, walltimes, kept):
    path = _swf(tmp_path, MISSING, "; MaxProcs: 8\n")
    out = tmp_path / "w.json"
    code = main(["convert", str(path), "-w", str(out), "--missing-walltime", choice])
    assert code == 0
    workload = load_workload(out)
    assert {j["id"]: j["walltime"] for j in workload["jobs"]} == walltimes
    cleaning = workload["swf"]["cleaning"]
    assert cleaning["missing_walltime"] == choice
    assert cleaning["dropped_run_time<=0"] == 1 and cleaning["processors_capped"] == 1
    assert cleaning["dropped_no_requested_time"] == (2 if choice == "drop" else 0)
    assert cleaning["walltime_filled"] == (0 if choice == "drop" else 2)
    # job 4 runs 2000 s: capped at the trace's largest requested time (500) with "max"
    assert cleaning["run_time_capped_at_walltime"] == (1 if choice == "max" else 0)
    assert len(workload["jobs"]) == kept
    if choice == "max":
        job4 = next(j for j in workload["jobs"] if j["id"] == 4)
        assert workload["profiles"][job4["profile"]]["delay"] == 500.0


def test_convert_prints_the_rule_counts(tmp_path, capsys):
    path = _swf(tmp_path, MISSING, "; MaxProcs: 8\n")
    assert main(["convert", str(path), "-w", str(tmp_path / "w.json")]) == 0
    out = capsys.readouterr().out
    assert "2 given walltime = their run time (--missing-walltime runtime)" in out
    assert "run_time<=0: 1" in out and "1 jobs capped" in out


def test_missing_walltime_max_without_any_requested_time(tmp_path, capsys):
    path = _swf(tmp_path, _line(1, 0, 10, 1, -1), "; MaxProcs: 8\n")
    assert main(["convert", str(path), "-w", str(tmp_path / "w.json"), "--missing-walltime", "max"]) == 2
    assert "no usable job has a requested time" in capsys.readouterr().err
