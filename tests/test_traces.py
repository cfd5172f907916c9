"""Real traces from other machines (issue 14): local time zones, missing requested times,
interrupted runs, progress, per-job files, useful vs wasted utilisation."""

from __future__ import annotations

import json
import subprocess
import sys
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
    assert "no time zone" not in str(report)  # the report goes to stdout, its warnings to stderr
    assert report.all_warnings()[0].startswith("no time zone")


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


# ------------------------------------------------------------------ shared helpers for runs
REPO = Path(__file__).resolve().parents[1]
PLATFORM = REPO / "platforms" / "cluster-100.xml"
SAMPLE = REPO / "workloads" / "KTH-SP2-1k.json"
DATA = Path(__file__).resolve().parent / "data"


def _simulate(tmp_path, *extra, prefix="run"):
    return main(["simulate", "-p", str(PLATFORM), "-w", str(SAMPLE), "-e", str(tmp_path / prefix), *extra])


class _StopAfter:
    """Patch a scheduler hook to raise ``exc`` on its ``n``-th call (a Ctrl-C or a crash mid-run)."""

    def __init__(self, monkeypatch, cls, n, exc):
        original = cls.on_job_completed
        self.calls = 0

        def hook(sched, job, ctx):
            self.calls += 1
            if self.calls == n:
                raise exc
            original(sched, job, ctx)

        monkeypatch.setattr(cls, "on_job_completed", hook)


def _assert_valid_partial(jobs_csv, schedule_csv, rows):
    from batsched_ml.analysis import compute_metrics, read_jobs_csv, read_schedule_csv

    table = read_jobs_csv(jobs_csv)  # parses: header, whole rows, numbers
    assert len(table) == rows > 0
    assert set(table.final_state) <= {"COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"}
    schedule = read_schedule_csv(schedule_csv)
    assert schedule["nb_jobs"] == rows and schedule["nb_computing_machines"] == 100
    assert compute_metrics(jobs_csv)["jobs"] == rows


# ------------------------------------------------------------------ 3. interrupted runs keep their outputs
def test_ctrl_c_leaves_valid_partial_csvs_and_one_line(tmp_path, monkeypatch, capsys):
    from batsched_ml.scheduling.easy import EasyBackfilling

    _StopAfter(monkeypatch, EasyBackfilling, 300, KeyboardInterrupt())
    assert _simulate(tmp_path) == 130
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith("batsched-ml: interrupted: stopped at simulated time")
    # the 300th completion was being handled: 299 jobs had ended (the 300th was sent to the
    # scheduler in the same message, and is written too since Batsim had ended it)
    import re

    written = int(re.search(r"(\d+) ended jobs kept in", err).group(1))
    assert written >= 299
    _assert_valid_partial(tmp_path / "run_jobs.csv", tmp_path / "run_schedule.csv", written)


def test_error_mid_run_keeps_partial_outputs(tmp_path, monkeypatch, capsys):
    from batsched_ml.core.scheduler import SchedulingError
    from batsched_ml.scheduling.easy import EasyBackfilling

    _StopAfter(monkeypatch, EasyBackfilling, 50, SchedulingError("broken plugin"))
    assert _simulate(tmp_path) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("batsched-ml: error: broken plugin (stopped at simulated time")
    assert "ended jobs kept in" in err and "\n" not in err
    assert (tmp_path / "run_jobs.csv").read_text().count("\n") > 40


def test_api_exception_carries_partial_outputs(tmp_path, monkeypatch):
    from batsched_ml.runner import build_scheduler, simulate
    from batsched_ml.scheduling.easy import EasyBackfilling

    _StopAfter(monkeypatch, EasyBackfilling, 120, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt) as info:
        simulate(PLATFORM, SAMPLE, build_scheduler("easy"), prefix=tmp_path / "api")
    partial = info.value.partial_outputs
    assert partial.jobs_csv == f"{tmp_path / 'api'}_jobs.csv"
    assert partial.jobs_written + partial.pending + partial.not_submitted == 1000
    _assert_valid_partial(partial.jobs_csv, partial.schedule_csv, partial.jobs_written)


SLOW_RUN = """
import sys, time
from batsched_ml.scheduling.easy import EasyBackfilling
original = EasyBackfilling.on_job_completed
def slow(self, job, ctx):
    time.sleep(0.004)
    original(self, job, ctx)
EasyBackfilling.on_job_completed = slow
from batsched_ml.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_real_sigint_on_a_streaming_run(tmp_path):
    """A real Ctrl-C (SIGINT) on a run in another process: the jobs CSV already had rows on disk
    before the end (streamed), and the run ends with exit 130 and one line."""
    import signal
    import subprocess
    import sys
    import time

    jobs = tmp_path / "slow_jobs.csv"
    proc = subprocess.Popen([sys.executable, "-c", SLOW_RUN, "simulate", "-p", str(PLATFORM), "-w", str(SAMPLE),
                             "-e", str(tmp_path / "slow"), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if jobs.exists() and jobs.read_text().count("\n") > 20:
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    streamed = jobs.read_text().count("\n") - 1
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.startswith("batsched-ml: interrupted: stopped at simulated time") and err.count("\n") == 1
    rows = jobs.read_text().count("\n") - 1
    assert 20 <= streamed <= rows < 1000
    _assert_valid_partial(jobs, tmp_path / "slow_schedule.csv", rows)


# ------------------------------------------------------------------ 4. progress that tells the truth
class _Recorder:
    def __init__(self):
        self.seen = []

    def simulation_status(self, status):
        self.seen.append(status)


def test_progress_counts_finished_jobs_with_queue(tmp_path):
    from batsched_ml.runner import build_scheduler, simulate

    rec = _Recorder()
    simulate(PLATFORM, SAMPLE, build_scheduler("fcfs"), progress=rec)
    finished = [s.finished for s in rec.seen]
    assert finished == sorted(finished) and finished[-1] == 1000 and rec.seen[-1].done
    # strict FCFS on KTH queues: with every job submitted, many are still waiting, and the
    # progress is far from 100% (the old bar counted submissions and showed 100% there)
    late = [s for s in rec.seen if not s.done and s.queued > 50]
    assert late and all(s.finished < s.total for s in late)
    times = [s.sim_time for s in rec.seen]
    assert times == sorted(times) and times[-1] > 86400


def test_status_lines_on_a_non_terminal():
    import io

    from batsched_ml.progress import ProgressReporter
    from batsched_ml.runner import build_scheduler, simulate

    ticks = iter(range(0, 10_000, 7))  # a fake clock: 7 s per status
    stream = io.StringIO()
    reporter = ProgressReporter("lines", stream, interval=30.0, first_after=5.0, clock=lambda: next(ticks))
    simulate(PLATFORM, SAMPLE, build_scheduler("fcfs"), progress=reporter)
    lines = stream.getvalue().splitlines()
    assert lines and reporter.lines == len(lines)
    first = lines[0]
    assert first.startswith("simulating: ") and "/1000 jobs finished" in first
    assert "queued" in first and "running" in first and "ETA" in first and "simulated time" in first
    assert "7 s elapsed" in first  # not before first_after
    assert ProgressReporter.for_cli(quiet=False, stream=io.StringIO()).mode == "lines"
    assert ProgressReporter.for_cli(quiet=True, stream=io.StringIO()).mode == "off"


def test_bar_on_a_terminal_shows_finished_jobs_and_queue():
    import io

    from batsched_ml.progress import ProgressReporter
    from batsched_ml.simulator.engine import SimStatus

    stream = io.StringIO()
    reporter = ProgressReporter("bar", stream)
    reporter.simulation_status(SimStatus(2 * 86400.0, 250, 1000, 42, 7, 900))
    reporter.close()
    text = stream.getvalue()
    assert "250/1000" in text and "queue 42" in text and "running 7" in text and "sim 2.0 d" in text


def test_quiet_and_short_runs_print_nothing_on_stderr(tmp_path, capsys):
    assert _simulate(tmp_path, "--quiet", "--scheduler", "fcfs") == 0
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------ 5. --json stays a summary
def test_json_is_a_summary_and_per_job_detail_goes_to_files(tmp_path, capsys):
    import csv

    assert _simulate(tmp_path, "--json", "--quiet", "--classifier", "random-forest",
                     "--predictor", "ave2", "--correction", "incremental") == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and len(out) < 40_000
    data = json.loads(out)
    assert "jobs" not in data["scheduler"]["classification"]
    files = data["files"]
    assert set(files) == {"jobs", "schedule", "run", "classes", "predictions"}
    with open(files["classes"]) as f:
        classes = list(csv.DictReader(f))
    assert len(classes) == 1000 and set(classes[0]) == {"job_id", "predicted_small", "true_small"}
    assert {c["predicted_small"] for c in classes} <= {"0", "1"}
    first_week = [c for c in classes if c["true_small"] == ""]  # classified before any divider
    assert first_week and all(c["predicted_small"] == "0" for c in first_week)
    with open(files["predictions"]) as f:
        predictions = list(csv.DictReader(f))
    assert len(predictions) == data["scheduler"]["predictions"]["nb_jobs"]
    assert all(float(p["prediction"]) >= 1.0 and int(p["res"]) >= 1 for p in predictions)
    assert json.loads(Path(files["run"]).read_text())["label"] == \
        "easy fcfs, ave2/incremental, random-forest"


# ------------------------------------------------------------------ 6. useful vs wasted work
def test_useful_and_wasted_utilisation_on_kill_and_requeue():
    import csv

    from batsched_ml.analysis import compute_metrics

    path = DATA / "kill-requeue_jobs.csv"
    m = compute_metrics(path, nb_cores=4)
    rows = list(csv.DictReader(open(path)))
    killed = sum(int(r["requested_number_of_resources"]) * float(r["execution_time"])
                 for r in rows if r["final_state"] == "COMPLETED_KILLED")
    busy = sum(int(r["requested_number_of_resources"]) * float(r["execution_time"]) for r in rows)
    assert killed > 0
    assert m["wasted_core_seconds"] == pytest.approx(killed)
    assert m["useful_core_seconds"] == pytest.approx(busy - killed)
    capacity = 4 * m["makespan"]
    assert m["useful_utilisation"] == pytest.approx((busy - killed) / capacity)
    assert m["wasted_utilisation"] == pytest.approx(killed / capacity)
    assert m["useful_utilisation"] + m["wasted_utilisation"] == pytest.approx(m["utilisation"])
    assert m["useful_utilisation"] < m["utilisation"]


def test_a_killed_final_attempt_is_wasted_too(tmp_path):
    from batsched_ml.analysis import compute_metrics

    header = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,"
              "success,final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,"
              "stretch,allocated_resources,consumed_energy,metadata")
    path = tmp_path / "k_jobs.csv"
    path.write_text(header + "\n"
                    '1,w0,p,0.000000,2,100.000000,0,COMPLETED_KILLED,0.000000,10.000000,10.000000,0,10,1,0-1,-1,""\n'
                    '2,w0,p,0.000000,1,100.000000,1,COMPLETED_SUCCESSFULLY,0.000000,20.000000,20.000000,0,20,1,2,-1,""\n')
    m = compute_metrics(path, nb_cores=4)
    assert (m["wasted_core_seconds"], m["useful_core_seconds"]) == (20.0, 20.0)
    assert m["useful_utilisation"] == pytest.approx(20.0 / 80.0)


def test_classifier_report_and_metrics_share_one_wasted_figure(tmp_path):
    """Batsim's latencies make the scheduler's own view of a killed attempt (decision to kill
    notice) differ from Batsim's execution time: the report now shows the metrics' figure."""
    from batsched_ml.analysis import compute_metrics
    from batsched_ml.run_outputs import complete_report
    from batsched_ml.runner import simulate
    from test_classification import RACE, sched

    s = sched()
    result, _ = simulate(4, RACE, s, prefix=tmp_path / "race")
    metrics = compute_metrics(result.jobs_csv, nb_cores=4)
    report = complete_report(s.report(), metrics)
    from batsched_ml.analysis import read_jobs_csv

    table = read_jobs_csv(result.jobs_csv)
    killed = table.final_state == "COMPLETED_KILLED"
    assert report["classification"]["kills"] == killed.sum() >= 1
    assert report["classification"]["wasted_core_seconds"] == metrics["wasted_core_seconds"]
    assert metrics["wasted_core_seconds"] == pytest.approx(
        (table.requested_number_of_resources[killed] * table.execution_time[killed]).sum())
    assert "jobs" not in report["classification"] and "jobs" in s.report()["classification"]


# ------------------------------------------------------------------ issue 15 §2: rejection reasons
def test_rejections_say_why_in_metadata_and_on_stderr(tmp_path, capsys):
    from batsched_ml.analysis import read_jobs_csv
    from batsched_ml.workloads import write_platform, write_workload

    jobs = [{"id": i, "subtime": i, "walltime": 100, "res": 1, "profile": "d10"} for i in range(3)]
    jobs += [{"id": 10 + i, "subtime": 5, "walltime": 100, "res": 8, "profile": "d10"} for i in range(5)]
    jobs += [{"id": 20, "subtime": 6, "walltime": -1, "res": 1, "profile": "d10"}]
    write_workload({"nb_res": 4, "jobs": jobs, "profiles": {"d10": {"type": "delay", "delay": 10}}},
                   tmp_path / "w.json")
    write_platform(4, tmp_path / "p.xml")
    code = main(["simulate", "-p", str(tmp_path / "p.xml"), "-w", str(tmp_path / "w.json"),
                 "-e", str(tmp_path / "rej"), "--quiet"])
    assert code == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "rejected 6 jobs (reasons in the jobs CSV's metadata column):"
    assert err[1] == "  5 requests 8 cores but the machine has 4: w0!10, w0!11, w0!12, ..."
    assert err[2] == "  1 has no walltime (backfilling needs one): w0!20"
    table = read_jobs_csv(tmp_path / "rej_jobs.csv")
    meta = dict(zip(table.job_id, table.metadata))
    assert meta["10"] == "requests 8 cores but the machine has 4"
    assert meta["20"] == "has no walltime (backfilling needs one)" and meta["0"] == ""


# ------------------------------------------------------------------ issue 15 §7: plots for papers
def test_plot_defaults_for_papers(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    import matplotlib.image

    from batsched_ml.analysis.plots import plot_runs

    assert _simulate(tmp_path, "--quiet", prefix="a") == 0
    assert _simulate(tmp_path, "--quiet", "--policy", "spf", "--backfill-order", "sjbf", prefix="b") == 0
    runs = [tmp_path / "a_jobs.csv", tmp_path / "b_jobs.csv"]
    out = tmp_path / "new" / "dir" / "cum.png"  # a missing directory is created
    fig = plot_runs(runs, out, title="KTH-SP2, first 1000 jobs")
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == ["easy fcfs", "easy spf, sjbf"]
    assert ax.get_title() == "KTH-SP2, first 1000 jobs"
    assert ax.yaxis.get_offset_text().get_text() == ""  # no 1e6 offset
    assert all("e" not in t.get_text() for t in ax.get_yticklabels())
    assert matplotlib.image.imread(out).shape[:2] == (1260, 2100)  # 7 x 4.2 in at 300 dpi
    # waits under 1 s where they are: a symlog axis from 0, not clipped to 1 s
    fig = plot_runs(runs, tmp_path / "w.pdf", kind="wait-ecdf", labels=["A", "B"])
    ax = fig.axes[0]
    assert ax.get_xscale() == "symlog" and ax.get_xlim()[0] == 0.0
    assert min(ax.lines[0].get_xdata()) < 0.01
    assert (tmp_path / "w.pdf").read_bytes()[:5] == b"%PDF-"
    assert [line.get_label() for line in ax.lines] == ["A", "B"]


def test_plot_of_an_empty_run_warns(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    empty = tmp_path / "e_jobs.csv"
    empty.write_text((DATA / "tiny.easy_jobs.csv").read_text().splitlines()[0] + "\n")
    assert main(["plot", str(empty), "-o", str(tmp_path / "e.svg"), "--title", "nothing"]) == 0
    captured = capsys.readouterr()
    assert "batsched-ml: warning:" in captured.err and "no executed job" in captured.err
    assert (tmp_path / "e.svg").exists()


def _jobs_csv_with_waits(path: Path, waits) -> Path:
    """A Batsim jobs CSV of one 100 s job per wait, submitted every 1,000 s."""
    head = (DATA / "tiny.easy_jobs.csv").read_text().splitlines()[0]
    rows = []
    for i, wait in enumerate(waits):
        sub, start = 1000.0 * i, 1000.0 * i + wait
        rows.append(f"{i},w0,p,{sub},1,200.0,1,COMPLETED_SUCCESSFULLY,{start},100.0,{start + 100},{wait},"
                    f"{wait + 100},{(wait + 100) / 100},0,-1.0,")
    path.write_text("\n".join([head, *rows]) + "\n")
    return path


def test_wait_ecdf_stays_readable_when_most_jobs_do_not_wait(tmp_path):
    """95% of the jobs start at once (Batsim's 0.3 ms latency): the share axis starts at 0.9, so the
    5% that waited fill half the figure instead of a sliver at its top."""
    pytest.importorskip("matplotlib")
    from batsched_ml.analysis.plots import plot_runs

    mostly = _jobs_csv_with_waits(tmp_path / "a_jobs.csv", [0.0003] * 95 + [30, 300, 3000, 30000, 60000])
    fig = plot_runs([mostly], tmp_path / "w.png", kind="wait-ecdf", labels=["a"])
    ax = fig.axes[0]
    assert ax.get_ylim() == (0.9, 1.0)
    assert "(axis from 0.9: 95.0% or more did not wait)" in ax.get_ylabel()
    half = _jobs_csv_with_waits(tmp_path / "b_jobs.csv", [0.0] * 50 + [100.0] * 50)
    fig = plot_runs([mostly, half], tmp_path / "w2.png", kind="wait-ecdf", labels=["a", "b"])
    assert fig.axes[0].get_ylim() == (0.0, 1.0) and fig.axes[0].get_ylabel() == "share of jobs"


def test_long_titles_are_wrapped_not_cut(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.image

    from batsched_ml.analysis.plots import TITLE_WIDTH, plot_runs

    title = ("SDSC-SP2 (first 200,000 jobs): cumulative bounded slowdown (tau = 60 s) over time "
             "(window 0, seed 0), every configuration of the campaign")
    run = _jobs_csv_with_waits(tmp_path / "a_jobs.csv", [0.0, 10.0, 100.0])
    fig = plot_runs([run], tmp_path / "t.png", title=title)
    shown = fig.axes[0].get_title()
    assert shown.replace("\n", " ") == title and all(len(line) <= TITLE_WIDTH for line in shown.splitlines())
    assert matplotlib.image.imread(tmp_path / "t.png").shape[:2] == (1260, 2100)


def test_empty_workload_warns_in_convert_and_simulate(tmp_path, capsys):
    path = _swf(tmp_path, _line(1, 0, 0, 1, 60), "; MaxProcs: 8\n")  # its only job has run time 0
    assert main(["convert", str(path), "-w", str(tmp_path / "w.json"), "-p", str(tmp_path / "p.xml"),
                 "--allow-empty"]) == 0
    out, err = capsys.readouterr()
    assert "batsched-ml: warning: no job kept, the workload is empty\n" in err and "warning" not in out
    assert main(["simulate", "-p", str(tmp_path / "p.xml"), "-w", str(tmp_path / "w.json"),
                 "-e", str(tmp_path / "e"), "--quiet"]) == 0
    assert "warning: the workload has no job" in capsys.readouterr().err


def test_timezone_option_overrides_the_workload_zone_and_is_validated(tmp_path):
    """`-o timezone` applies on top of the workload's own calendar (no need to restate
    unix_start_time), accepts a tz name or seconds, and a bad value is one line, exit 2."""
    import warnings

    from batsched_ml.config.validate import ValidationError
    from batsched_ml.workloads.loader import write_workload

    workload = load_workload(SAMPLE)
    workload["swf"] = {"UnixStartTime": 1_000_000_000, "TimeZoneString": "Europe/Stockholm"}
    path = tmp_path / "w.json"
    write_workload(workload, path)
    own = CalendarClock.resolve({"w": str(path)}, {})
    assert own.timezone == "Europe/Stockholm" and own.utc_base == 1_000_000_000
    shifted = CalendarClock.resolve({"w": str(path)}, {"timezone": "3600"})
    assert shifted.timezone == "UTC+01:00" and shifted.utc_base == own.utc_base
    named = CalendarClock.resolve({"w": str(path)}, {"timezone": "America/Los_Angeles"})
    assert named.timezone == "America/Los_Angeles"
    assert named.local(0) != own.local(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a given zone without a calendar is not "no calendar"
        assert CalendarClock.resolve({}, {"timezone": 7200}).timezone == "UTC+02:00"
    for bad in ("Mars/Olympus", "90000", "2h"):
        with pytest.raises(ValidationError, match="time zone"):
            CalendarClock.resolve({}, {"timezone": bad})
    done = subprocess.run([sys.executable, "-m", "batsched_ml.cli", "simulate", "-w", str(path), "-p", str(PLATFORM),
                           "--classifier", "random-forest", "-o", "timezone=Mars/Olympus", "--quiet"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "unknown time zone 'Mars/Olympus'" in done.stderr and "Traceback" not in done.stderr
