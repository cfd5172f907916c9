"""What a new user still tripped on (issue 26 §2, §3, §5, §6, §7): machines beyond what
batsched-ml handles, memory per ended job, outputs on every exit path, partial results that
looked whole, empty or wrong inputs, and the small things of the first hour. Each test goes
through the real CLI (``batsched_ml.cli.main`` or a subprocess) and asserts the one line and
the exit status."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from batsched_ml import cli, interrupts
from batsched_ml.config.validate import max_cores
from batsched_ml.protocol import codec

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = str(ROOT / "platforms" / "cluster-100.xml")
SAMPLE = str(ROOT / "workloads" / "KTH-SP2-1k.json")
SWF = ROOT / "tests" / "data" / "kth-excerpt.swf"
BEYOND = 100_000_000  # the machine: 10^8 cores


def run(capsys, *argv):
    """``batsched-ml ARGV`` in process: (exit status, stdout, stderr)."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def platform_xml(path: Path, nb_hosts: int) -> Path:
    """A cluster of ``nb_hosts`` hosts, written without expanding it (10^8 hosts is a short file)."""
    path.write_text(f"""<?xml version='1.0'?>
<platform version="4.1"><zone id="AS0" routing="Full">
<cluster id="compute" prefix="node" suffix="" radical="0-{nb_hosts - 1}" speed="1Gf" bw="125MBps" lat="50us"/>
<cluster id="master" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="125MBps" lat="50us">
<prop id="role" value="master"/></cluster></zone></platform>
""")
    return path


class StopAt:
    """Raise ``exc`` from the ``n``-th job completion an EASY scheduler sees (a Ctrl-C, a
    SIGTERM or a bug, mid-run)."""

    def __init__(self, monkeypatch, n, exc):
        from batsched_ml.scheduling.easy import EasyBackfilling

        original, calls = EasyBackfilling.on_job_completed, [0]

        def hook(sched, job, ctx):
            calls[0] += 1
            if calls[0] == n:
                raise exc
            original(sched, job, ctx)

        monkeypatch.setattr(EasyBackfilling, "on_job_completed", hook)


# ------------------------------------------------------------------ §2 machine size
def test_the_limit_is_the_one_serve_applies():
    assert max_cores() == codec.MAX_CORE_ID + 1 == 4_194_304
    begins = {"now": 0.0, "events": [{"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": {
        "nb_resources": max_cores() + 1, "nb_compute_resources": max_cores() + 1}}]}
    with pytest.raises(codec.ProtocolError, match=str(max_cores())):
        codec.decode(json.dumps(begins), direction=codec.EVENTS)


def test_generate_refuses_an_impossible_machine(tmp_path, capsys):
    code, out, err = run(capsys, "generate", "lublin", "--cores", BEYOND, "--jobs", 10,
                         "-w", tmp_path / "w.json", "-p", tmp_path / "p.xml")
    assert code == 2 and out == ""
    line = one_line(err)
    assert line.startswith("batsched-ml: error: cores must be") and "<= 4194304" in line and str(BEYOND) in line
    assert list(tmp_path.iterdir()) == []
    code, _, err = run(capsys, "generate", "lublin", "--cores", max_cores(), "--jobs", 2, "-w", tmp_path / "w.json")
    assert code == 0, err  # the limit itself is a machine


def test_convert_refuses_an_impossible_machine(tmp_path, capsys):
    code, _, err = run(capsys, "convert", SWF, "-w", tmp_path / "w.json", "--nodes", BEYOND)
    line = one_line(err)
    assert code == 2 and "--nodes" in line and "<= 4194304" in line
    trace = tmp_path / "big.swf"
    trace.write_text(f"; MaxProcs: {BEYOND}\n" + "1 0 0 60 4 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1\n")
    code, _, err = run(capsys, "convert", trace, "-w", tmp_path / "w.json", "-p", tmp_path / "p.xml")
    line = one_line(err)
    assert code == 2 and "MaxProcs" in line and "--nodes" in line and str(BEYOND) in line
    assert not (tmp_path / "w.json").exists() and not (tmp_path / "p.xml").exists()


def test_simulate_refuses_an_impossible_platform_before_building_it(tmp_path, capsys):
    """The issue's 10^8-core platform reached 8 GB: it is refused from its radical, in a few MB."""
    platform = platform_xml(tmp_path / "big.xml", BEYOND)
    tracemalloc.start()
    try:
        code, _, err = run(capsys, "simulate", "-p", platform, "-w", SAMPLE, "-e", tmp_path / "out" / "run")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    line = one_line(err)
    assert code == 2 and line.startswith("batsched-ml: error: ") and "compute hosts" in line and str(BEYOND) in line
    assert peak < 64 * 2**20, peak
    assert not any((tmp_path / "out").glob("run*"))  # nothing written for a refused input


def test_ended_jobs_keep_no_allocation_bitmask():
    """Memory per ended job must not grow with the machine: on 93,312 cores, a job allocated at the
    top of the machine kept a ~11 KB bitmask (in the simulator's record and the core's Job)."""
    from batsched_ml.core.decision_core import DecisionCore
    from batsched_ml.runner import build_scheduler, in_process
    from batsched_ml.simulator.engine import Simulator

    def retained(cores):
        jobs = [{"id": i, "subtime": float(i), "walltime": 100.0, "res": cores - 1 - i % 2, "profile": "p"}
                for i in range(200)]
        workload = {"jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 10.0}}}
        tracemalloc.start()
        try:
            sim = Simulator(cores, [("w0", workload)])
            core = DecisionCore(build_scheduler("easy"))
            before = tracemalloc.get_traced_memory()[0]
            sim.run(in_process(core))
            kept = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert all(j.alloc == 0 for j in core.jobs.values()) and all(j.alloc == 0 for j in sim.jobs.values())
        assert all(j.alloc_text == "" for j in sim.jobs.values())  # written to the jobs CSV, not kept
        return kept

    small, large = retained(240), retained(93_312)
    assert large - small < 200 * 1024, (small, large)  # was 200 x ~11.7 KB = 2.3 MB more


# ------------------------------------------------------------------ §2 outputs on every exit path
def test_interrupt_before_the_simulation_leaves_nothing_and_says_so(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("batsched_ml.runner.load_inputs", interrupted)
    code, _, err = run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "run", "--quiet")
    assert code == 130
    assert one_line(err) == "batsched-ml: interrupted before the simulation started: nothing was written"
    assert list(tmp_path.iterdir()) == []


def test_run_json_never_exists_without_both_csvs(tmp_path, capsys, monkeypatch):
    """Ctrl-C right after PREFIX_run.json is written, before the first event: both CSVs are there."""
    from batsched_ml import run_outputs

    original = run_outputs.write_run_description

    def write_then_interrupt(*args, **kwargs):
        path = original(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(run_outputs, "write_run_description", write_then_interrupt)
    code, _, err = run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "run", "--quiet")
    assert code == 130 and one_line(err).startswith("batsched-ml: interrupted: stopped at simulated time 0 s: 0 ")
    assert (tmp_path / "run_jobs.csv").read_text().startswith("job_id,workload_name,")
    assert "nb_jobs" in (tmp_path / "run_schedule.csv").read_text()
    assert json.loads((tmp_path / "run_run.json").read_text())["status"] == "interrupted"


def test_a_real_sigterm_finishes_both_csvs_and_marks_the_run(tmp_path):
    import signal
    import time

    from test_traces import SLOW_RUN  # a run slowed down enough to be stopped mid-way

    jobs = tmp_path / "slow_jobs.csv"
    proc = subprocess.Popen([sys.executable, "-c", SLOW_RUN, "simulate", "-p", PLATFORM, "-w", SAMPLE,
                             "-e", str(tmp_path / "slow"), "--quiet"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not (tmp_path / "slow_run.json").exists():
        time.sleep(0.05)
    time.sleep(0.5)
    assert proc.poll() is None, "the run ended before it could be stopped"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and out == ""
    assert one_line(err).startswith("batsched-ml: terminated (SIGTERM): stopped at simulated time")
    description = json.loads((tmp_path / "slow_run.json").read_text())
    assert description["status"] == "terminated" and description["stopped"]["jobs_written"] < 1000
    rows = jobs.read_text().splitlines()
    assert rows[0].startswith("job_id,") and len(rows) - 1 == description["stopped"]["jobs_written"]
    assert "nb_jobs" in (tmp_path / "slow_schedule.csv").read_text()


# ------------------------------------------------------------------ §3 partial results say so
@pytest.mark.parametrize("exc, code, status, said", [
    (KeyboardInterrupt(), 130, "interrupted", "was interrupted"),
    (interrupts.Terminated(), 143, "terminated", "was terminated (SIGTERM)"),
    (ValueError("broken plugin"), 2, "failed", "stopped on an error"),
])
def test_partial_run_is_marked_and_every_reader_warns(tmp_path, capsys, monkeypatch, exc, code, status, said):
    StopAt(monkeypatch, 200, exc)
    got, _, err = run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "run", "--quiet")
    assert got == code, err
    description = json.loads((tmp_path / "run_run.json").read_text())
    assert description["status"] == status
    stopped = description["stopped"]
    assert stopped["jobs_written"] >= 199 and sum(stopped[k] for k in ("jobs_written", "pending", "not_submitted")) == 1000
    jobs = tmp_path / "run_jobs.csv"
    warning = f"batsched-ml: warning: {jobs} is partial: its run {said} at simulated time"

    code, out, err = run(capsys, "metrics", jobs)
    assert code == 0 and one_line(err).startswith(warning) and "jobs" in out
    code, out, err = run(capsys, "metrics", jobs, "--json")
    assert code == 0 and one_line(err).startswith(warning) and json.loads(out)["jobs"] == stopped["jobs_written"]
    code, out, err = run(capsys, "check", jobs, "-p", PLATFORM)
    assert code == 0 and one_line(err).startswith(warning) and out.startswith("valid")


def test_plot_warns_about_a_partial_run(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    StopAt(monkeypatch, 300, KeyboardInterrupt())
    assert run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "cut", "--quiet")[0] == 130
    monkeypatch.undo()
    assert run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "whole", "--quiet")[0] == 0
    code, out, err = run(capsys, "plot", tmp_path / "whole_jobs.csv", tmp_path / "cut_jobs.csv", "-o", tmp_path / "f.svg")
    line = one_line(err)
    assert code == 0 and line.startswith(f"batsched-ml: warning: {tmp_path / 'cut_jobs.csv'} is partial")
    assert out.startswith("wrote")


def test_a_whole_run_is_marked_complete_and_read_without_warning(tmp_path, capsys):
    code, out, err = run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "run", "--quiet")
    assert code == 0 and err == ""
    assert json.loads((tmp_path / "run_run.json").read_text())["status"] == "complete"
    code, out, err = run(capsys, "metrics", tmp_path / "run_jobs.csv")
    assert code == 0 and err == ""


def test_a_run_that_never_finished_is_told(tmp_path, capsys):
    """A run killed outright (SIGKILL, out of memory) leaves its status at 'running'."""
    assert run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "run", "--quiet")[0] == 0
    description = tmp_path / "run_run.json"
    description.write_text(json.dumps(dict(json.loads(description.read_text()), status="running")))
    code, _, err = run(capsys, "metrics", tmp_path / "run_jobs.csv")
    assert code == 0 and "has not finished (still running, or killed)" in one_line(err)


def test_check_caps_repeated_messages_with_a_count(tmp_path, capsys, monkeypatch):
    StopAt(monkeypatch, 100, KeyboardInterrupt())
    assert run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "run", "--quiet")[0] == 130
    jobs = tmp_path / "run_jobs.csv"
    code, out, err = run(capsys, "check", jobs, "-w", SAMPLE, "-p", PLATFORM, "--json")
    missing = [v for v in json.loads(out) if v["kind"] == "missing"]
    assert code == 1 and len(missing) > 800  # --json keeps them all
    code, out, err = run(capsys, "check", jobs, "-w", SAMPLE, "-p", PLATFORM)
    lines = out.splitlines()
    assert code == 1 and "is partial" in one_line(err)
    assert sum(line.startswith("missing: ") for line in lines) == 20
    assert f"... and {len(missing) - 20:,} more missing (--json lists them all)" in lines
    # in the workload's order, the same from one run to the next
    assert lines[0] == f"missing: w0!{missing[0]['job'].partition('!')[2]}: in the workload but not in the output"


# ------------------------------------------------------------------ §5 empty or wrong inputs
def test_convert_without_a_usable_job_is_an_error_unless_allowed(tmp_path, capsys):
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 8\n1 0 0 0 1 -1 -1 1 60 -1 1 1 7 -1 -1 -1 -1 -1\n")  # run time 0
    code, out, err = run(capsys, "convert", trace, "-w", tmp_path / "w.json", "-p", tmp_path / "p.xml")
    line = one_line(err)
    assert code == 2 and out == "" and line.startswith(f"batsched-ml: error: {trace}: no usable job")
    assert "1 run_time<=0" in line and "--allow-empty" in line
    assert not (tmp_path / "w.json").exists() and not (tmp_path / "p.xml").exists()
    code, out, err = run(capsys, "convert", trace, "-w", tmp_path / "w.json", "--allow-empty")
    assert code == 0 and "warning" not in out and "kept 0" in out
    assert "batsched-ml: warning: no job kept, the workload is empty" in err.splitlines()
    assert "note:" not in err and all(line.count("warning:") == 1 for line in err.splitlines())


@pytest.mark.parametrize("compressed", [False, True])
def test_an_swf_trace_given_as_workload_is_named(tmp_path, capsys, compressed):
    trace = tmp_path / ("t.swf.gz" if compressed else "t.swf")
    trace.write_bytes(gzip.compress(SWF.read_bytes()) if compressed else SWF.read_bytes())
    for argv in (("simulate", "-p", PLATFORM, "-w", trace, "-e", tmp_path / "run"),
                 ("check", ROOT / "tests" / "data" / "tiny.easy_jobs.csv", "-w", trace)):
        code, _, err = run(capsys, *argv)
        line = one_line(err)
        assert code == 2 and "malformed JSON" not in line
        assert f"{trace}: this looks like an SWF trace" in line and "run `batsched-ml convert" in line
    headerless = tmp_path / "bare.swf"
    headerless.write_text("".join(line + "\n" for line in SWF.read_text().splitlines() if not line.startswith(";")))
    code, _, err = run(capsys, "simulate", "-p", PLATFORM, "-w", headerless, "-e", tmp_path / "run")
    assert code == 2 and "looks like an SWF trace" in one_line(err)
    broken = tmp_path / "broken.json"
    broken.write_text('{"jobs": [')
    code, _, err = run(capsys, "simulate", "-p", PLATFORM, "-w", broken, "-e", tmp_path / "run")
    assert code == 2 and "malformed JSON" in one_line(err)  # a JSON file is still told as such


# ------------------------------------------------------------------ §6 the first hour
def test_simulate_o_without_equals_hints_at_e(tmp_path, capsys):
    code, _, err = run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-o", "runs/x")
    line = one_line(err)
    assert code == 2 and "-o expects KEY=VALUE" in line and "-e runs/x" in line


@pytest.mark.parametrize("argv, help_of", [
    (("simulate", "-p", PLATFORM, "-w", SAMPLE, "--output", "x"), "batsched-ml simulate"),
    (("metrics", "a_jobs.csv", "--bogus"), "batsched-ml metrics"),
    (("campaign", "run", "x.toml", "--bogus"), "batsched-ml campaign run"),
])
def test_unrecognized_arguments_point_to_the_command_help(capsys, argv, help_of):
    code, _, err = run(capsys, *argv)
    line = one_line(err)
    assert code == 2 and line.startswith("batsched-ml: error: unrecognized arguments")  # as every error
    assert line.endswith(f"(see: {help_of} --help)")


@pytest.mark.parametrize("argv", [
    ("metrics", ROOT / "tests" / "data" / "tiny.easy_jobs.csv"),
    ("check", ROOT / "tests" / "data" / "tiny.easy_jobs.csv"),
    ("plugins",),
    ("--help",),
    ("simulate", "--help"),
    ("simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", "{tmp}/run", "--quiet"),
    ("convert", SWF, "-w", "{tmp}/w.json"),
])
def test_a_closed_pipe_is_a_normal_end(tmp_path, argv):
    """``batsched-ml ... | head -3``: the reader is gone before we write; exit 0, nothing on stderr."""
    argv = [str(a).replace("{tmp}", str(tmp_path)) for a in argv]
    proc = subprocess.Popen([sys.executable, "-m", "batsched_ml.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # before the interpreter has even started: every write meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert err == ""


def test_policy_help_and_error_name_expr_and_learned(capsys):
    code, out, _ = run(capsys, "simulate", "--help")
    policy_help = " ".join(out.split("--policy POLICY", 2)[2].split("--reservations")[0].split())
    assert code == 0 and "expr:" in policy_help and "learned:" in policy_help
    code, _, err = run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "--policy", "spt")
    line = one_line(err)
    assert code == 2 and "unknown policy 'spt'" in line and "expr:FORMULA" in line and "learned:FILE.json" in line


def test_top_level_help_is_plain_and_lists_every_command(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "``" not in out
    commands = out.split("commands:", 1)[1]
    for command in ("convert", "simulate", "serve", "metrics", "plot", "check", "plugins", "campaign",
                    "generate", "learn-policy"):
        assert re.search(rf"^\s+{re.escape(command)}\b", commands, re.M), command


def test_outputs_line_labels_its_number(tmp_path, capsys):
    code, out, _ = run(capsys, "simulate", "-p", PLATFORM, "-w", SAMPLE, "-e", tmp_path / "run", "--quiet")
    line = [x for x in out.splitlines() if x.startswith("outputs: ")][0]
    assert code == 0 and re.search(r"\(simulation wall time \d+\.\d\d s\)$", line), line


def test_learn_policy_prints_readable_coefficients(tmp_path, capsys):
    out_file = tmp_path / "pol.json"
    code, out, err = run(capsys, "learn-policy", "--cores", 256, "--tuples", 2, "--trials", 64, "--jobs", 300,
                         "--top", 3, "--starts", 1, "--bases", "log10,sqrt", "--operators", "/",
                         "--workers", 0, "-q", "-o", out_file)
    assert code == 0, err
    shown = [line.split("  ", 1)[1] for line in out.splitlines() if line.startswith("#")]
    assert len(shown) == 3
    for formula, entry in zip(shown, json.loads(out_file.read_text())["functions"]):
        numbers = re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]\d+)?(?=\*)", formula)
        assert len(numbers) == 3, formula
        assert all(len(re.sub(r"e.*|[-.]", "", n).lstrip("0")) <= 3 for n in numbers), formula
        assert [float(n) for n in numbers] == pytest.approx(entry["coefficients"], rel=5e-3)
        assert entry["expression"].count("*") == 3 and repr(entry["coefficients"][0]) in entry["expression"]
