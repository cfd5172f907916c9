"""What a new user sees on bad input (issue 15 §1, §8): one line naming the problem, exit 2,
no traceback; defaults and every argument described in --help; plugin options listed."""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from pathlib import Path

import pytest

from batsched_ml import cli
from batsched_ml.analysis import compute_metrics
from batsched_ml.config import validate
from batsched_ml.runner import build_scheduler

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
PLATFORM = str(DATA / "platform-16.xml")
WORKLOAD = str(DATA / "tiny.json.gz")
JOBS_CSV = str(DATA / "tiny.easy_jobs.csv")


def run(capsys, *argv):
    """``batsched-ml ARGV`` in process: (exit code, stdout, stderr)."""
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # argparse errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *fragments):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("batsched-ml"), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def simulate(tmp_path, *extra):
    return ("simulate", "-p", PLATFORM, "-w", WORKLOAD, "-e", str(tmp_path / "run"), *extra)


# ------------------------------------------------------------- §1 numeric flags
@pytest.mark.parametrize("argv, fragments", [
    (("--starvation-threshold", "-5"), ("--starvation-threshold", ">= 0", "-5")),
    (("--starvation-threshold", "nan"), ("--starvation-threshold", "nan")),
    (("--seed", "-1"), ("--seed", ">= 0")),
    (("--seed", "1.5"), ("--seed", "integer", "1.5")),
    (("--timeout", "0"), ("--timeout", "> 0")),
])
def test_simulate_rejects_out_of_range_flags(tmp_path, capsys, argv, fragments):
    code, _, err = run(capsys, *simulate(tmp_path, *argv))
    assert_one_line_error(code, err, *fragments)
    assert not (tmp_path / "run_jobs.csv").exists()


@pytest.mark.parametrize("argv, fragments", [
    (("metrics", JOBS_CSV, "--tau", "-1"), ("--tau", "> 0", "-1")),
    (("metrics", JOBS_CSV, "--tau", "inf"), ("--tau", "inf")),
    (("metrics", JOBS_CSV, "--nb-cores", "0"), ("--nb-cores", ">= 1")),
    (("serve", "--timeout", "-3"), ("--timeout", "> 0")),
    (("campaign", "run", "x.toml", "--workers", "-2"), ("--workers", ">= 0")),
    (("serve", "--starvation-threshold", "-5"), ("--starvation-threshold",)),
    (("convert", "x.swf", "-w", "x.json", "--max-jobs", "0"), ("--max-jobs", ">= 1")),
    (("convert", "x.swf", "-w", "x.json", "--nodes", "-4"), ("--nodes", ">= 1")),
    (("plot", JOBS_CSV, "-o", "x.png", "--tau", "0"), ("--tau", "> 0")),
])
def test_every_command_rejects_out_of_range_numbers(capsys, argv, fragments):
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, *fragments)


@pytest.mark.parametrize("options, fragment", [
    (("-o", "rjms_delay=-1"), "rjms_delay must be a number >= 0"),
    (("--predictor", "ave2", "-o", "predictor_window=0"), "-o predictor_window=0: window must be an integer >= 1"),
    (("--classifier", "random-forest", "-o", "small_threshold=2"), "-o small_threshold=2: small_threshold must"),
    (("--predictor", "ave2", "--correction", "doubling", "-o", "correction_factor=0.5"),
     "-o correction_factor=0.5: factor must be a number > 1"),
    (("--predictor", "eloss", "-o", "predictor_eta=-1"), "eta must be a number > 0"),
    (("--classifier", "random-forest", "-o", "n_estimators=0"), "n_estimators must be an integer >= 1"),
    (("--classifier", "random-forest", "-o", "period=-604800"), "period must be a number > 0"),
    (("--classifier", "gradient-boosting", "-o", "learning_rate=0"), "learning_rate must be a number > 0"),
])
def test_numeric_plugin_options_are_validated(tmp_path, capsys, options, fragment):
    code, _, err = run(capsys, *simulate(tmp_path, *options))
    assert_one_line_error(code, err, fragment)


def test_valid_values_still_run(tmp_path, capsys):
    code, out, err = run(capsys, *simulate(tmp_path, "--starvation-threshold", "0", "--seed", "7"))
    assert code == 0, err
    assert (tmp_path / "run_jobs.csv").exists()
    code, out, _ = run(capsys, "metrics", JOBS_CSV, "--tau", "30", "--json")
    assert code == 0 and "avebsld_tau30" in out


def test_python_api_validates_too():
    with pytest.raises(ValueError, match="starvation_threshold must be a number >= 0"):
        build_scheduler("easy", policy="spf", starvation_threshold=-5)
    with pytest.raises(ValueError, match="seed must be an integer"):
        build_scheduler("easy", seed=-1)
    with pytest.raises(ValueError, match="tau must be a number > 0"):
        compute_metrics(JOBS_CSV, taus=(10.0, -1.0))
    with pytest.raises(ValueError, match="n_jobs must be a non-zero integer"):
        build_scheduler("easy", classifier="random-forest", n_jobs=0)
    assert build_scheduler("easy", starvation_threshold=0).starvation_threshold == 0.0


@pytest.mark.parametrize("value", [True, "5", math.nan, -math.inf, None])
def test_check_number_refuses_what_is_not_a_finite_number(value):
    with pytest.raises(validate.ValidationError, match="must be"):
        validate.positive(value, "x")


# ----------------------------------------------------------- §8 small CLI things
def test_unknown_policy_is_spelt_right(tmp_path, capsys):
    code, _, err = run(capsys, *simulate(tmp_path, "--policy", "sjf"))
    assert_one_line_error(code, err, "unknown policy 'sjf'", "spf")
    assert "policie" not in err


def test_option_without_equals_is_a_user_error(tmp_path, capsys):
    code, _, err = run(capsys, *simulate(tmp_path, "-o", "noequals"))
    assert_one_line_error(code, err, "batsched-ml: error: -o expects KEY=VALUE", "'noequals'")


def test_misspelt_option_lists_the_valid_keys(tmp_path, capsys):
    code, _, err = run(capsys, *simulate(tmp_path, "--predictor", "ave2", "-o", "predictor_windw=3"))
    assert_one_line_error(code, err, "'predictor_windw'", "did you mean 'predictor_window'",
                          "valid -o keys:", "rjms_delay")
    code, _, err = run(capsys, *simulate(tmp_path, "--classifier", "random-forest", "-o", "perod=3"))
    assert_one_line_error(code, err, "did you mean 'period'", "n_estimators", "small_threshold")


def test_option_that_has_a_flag_says_which_flag(tmp_path, capsys):
    code, _, err = run(capsys, *simulate(tmp_path, "-o", "policy=spf"))
    assert_one_line_error(code, err, "set by --policy")


def test_plugins_lists_options_with_defaults(capsys):
    code, out, _ = run(capsys, "plugins")
    assert code == 0
    lines = out.splitlines()
    ave2 = lines.index(next(line for line in lines if line.strip().startswith("ave2")))
    assert "-o predictor_window=2" in lines[ave2 + 1]
    assert "correction_factor=2.0" in out
    assert "n_estimators=30" in out and "small_threshold=0.5" in out
    assert "rjms_delay=null" in out
    assert "with any classifier:" in out and "period=604800.0" in out


def _all_parsers(parser, prefix="batsched-ml"):
    """Every (command line, parser) pair, sub-commands of sub-commands included."""
    import argparse

    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _all_parsers(sub, f"{prefix} {name}")


def test_help_describes_every_argument_and_shows_defaults(capsys):
    import argparse

    undocumented = [f"{name}: {a.dest}" for name, parser in _all_parsers(cli.build_parser())
                    for a in parser._actions if not a.help and not isinstance(a, argparse._SubParsersAction)]
    assert not undocumented, undocumented
    code, out, _ = run(capsys, "serve", "--help")
    assert code == 0
    assert "(default: tcp://127.0.0.1:28000)" in " ".join(out.split())
    code, out, _ = run(capsys, "metrics", "--help")
    assert "jobs_csv" in out and "PREFIX_jobs.csv" in out
    code, out, _ = run(capsys, "plot", "--help")
    assert "figure title" in out


def test_top_level_help_lists_plot(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "\n    plot " in out.split("commands:")[1]


def test_export_prefix_through_an_existing_file_says_so(tmp_path, capsys):
    blocker = tmp_path / "results"
    blocker.write_text("not a directory")
    code, _, err = run(capsys, "simulate", "-p", PLATFORM, "-w", WORKLOAD, "-e", str(blocker / "run"))
    assert_one_line_error(code, err, "is an existing file, not a directory", "output prefix")
    assert blocker.read_text() == "not a directory"
    code, _, err = run(capsys, "simulate", "-p", PLATFORM, "-w", WORKLOAD, "-e", str(tmp_path) + "/")
    assert_one_line_error(code, err, "names a directory", "DIR/NAME")


def test_convert_given_json_says_it_expects_swf(tmp_path, capsys):
    workload = ROOT / "workloads" / "KTH-SP2-1k.json"
    code, _, err = run(capsys, "convert", str(workload), "-w", str(tmp_path / "w.json"))
    assert_one_line_error(code, err, "this is JSON", "Standard Workload Format")
    assert len(err) < 400  # not the whole file
    assert not (tmp_path / "w.json").exists()


def test_a_long_bad_swf_line_is_shortened(tmp_path, capsys):
    bad = tmp_path / "bad.swf"
    bad.write_text("1 2 3 " + "x" * 5000 + "\n")
    code, _, err = run(capsys, "convert", str(bad), "-w", str(tmp_path / "w.json"))
    assert_one_line_error(code, err, "bad.swf:1")
    assert len(err) < 400


def test_the_installed_command_prints_no_traceback():
    done = subprocess.run([sys.executable, "-m", "batsched_ml.cli", "simulate", "-p", PLATFORM, "-w", WORKLOAD,
                           "--starvation-threshold", "-5"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("batsched-ml: error: argument --starvation-threshold")
    assert "Traceback" not in done.stderr


# ------------------------------------------------------- §5 benchmarks from a clone
BENCHMARKS = ROOT / "benchmarks"


@pytest.mark.parametrize("script, argv, needs", [
    ("bench_easy.py", ["--traces-dir", "{empty}"], "KTH-SP2-1996-2.1-cln.swf.gz"),
    ("bench_easy.py", ["CTC", "--traces-dir", "{empty}"], "CTC-SP2-1996-3.1-cln.swf.gz"),
    ("bench_predictors.py", ["--traces-dir", "{empty}"], "KTH-SP2-1996-2.1-cln.swf.gz"),
    ("bench_classification.py", ["--traces-dir", "{empty}"], "KTH-SP2-1996-2.1-cln.swf.gz"),
    ("predictors_experiment.py", ["SDSC-SP2", "--traces-dir", "{empty}"], "gaussier2015.toml reads"),
    ("bench_socket.py", ["--golden", "{empty}"], "batsched-ml convert KTH-SP2-1996-2.1-cln.swf.gz --max-jobs 5000"),
    ("bench_serve_vs_batsched.py", ["--batsim", "{empty}/batsim", "--golden", "{empty}"], "the batsim executable"),
])
def test_benchmark_without_its_data_says_what_it_needs(tmp_path, script, argv, needs):
    argv = [a.format(empty=tmp_path) for a in argv]
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *argv], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{script}: needs "), done.stderr
    assert needs in lines[0]
    if script not in ("bench_socket.py", "bench_serve_vs_batsched.py"):
        assert "Parallel Workloads Archive" in lines[0]
        assert "https://www.cs.huji.ac.il/labs/parallel/workload/" in lines[0]


def test_benchmark_takes_a_trace_path(tmp_path):
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_easy.py"), str(DATA / "kth-excerpt.swf"),
                           "--reservations", "count"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    row = done.stdout.splitlines()[1].split()
    assert row[:2] == ["kth-excerpt", "200"]


# ------------------------------------------------------------- issue 40 §2: metrics checks what it reads
def _tiny_csv_with(tmp_path, **row0) -> str:
    with open(JOBS_CSV, newline="") as f:
        rows = list(csv.DictReader(f))
    rows[0].update(row0)
    path = tmp_path / "edited_jobs.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


def test_metrics_refuses_a_start_before_the_submission(tmp_path, capsys):
    """It returned 0, leaked numpy's RuntimeWarning with a source line and printed geomean_wait nan."""
    path = _tiny_csv_with(tmp_path, submission_time="100.000000", starting_time="0.000400")
    code, out, err = run(capsys, "metrics", path)
    assert_one_line_error(code, err, f"{path} is not a valid schedule", "early-start: w0!15: started at 0.000400, "
                          "submitted at 100.000000", "batsched-ml check")
    assert out == "" and "RuntimeWarning" not in err and "nan" not in err


def test_metrics_refuses_a_job_written_twice(tmp_path, capsys):
    path = _tiny_csv_with(tmp_path)
    with open(path) as f:
        lines = f.read().splitlines()
    with open(path, "a") as f:
        f.write(lines[1] + "\n")
    code, _, err = run(capsys, "metrics", path)
    assert_one_line_error(code, err, "duplicate: w0!15: 1 attempt(s) written more than once")


def test_metrics_takes_a_file_whose_allocations_check_would_refuse(tmp_path, capsys):
    """No figure reads allocations (another simulator may write dummy ones): `check` judges them."""
    code, out, _ = run(capsys, "metrics", _tiny_csv_with(tmp_path, allocated_resources="0-2"))
    assert code == 0 and "avebsld" in out


@pytest.mark.parametrize("name, content, fragment", [
    ("w.json", '{"nb_res": 4, "jobs": [], "profiles": {}}\n', "this is JSON (a Batsim workload?), not a jobs CSV"),
    ("t.swf", "; Version: 2.2\n1 0 0 10 1 -1 -1 1 20 -1 1 1 1 1 1 -1 -1 -1\n", "this looks like an SWF trace, not a "
     "jobs CSV"),
])
def test_metrics_on_a_workload_says_what_it_is(tmp_path, capsys, name, content, fragment):
    """It listed 17 missing columns."""
    (tmp_path / name).write_text(content)
    code, _, err = run(capsys, "metrics", str(tmp_path / name))
    assert_one_line_error(code, err, fragment)
    assert "missing column" not in err


def test_metrics_on_the_shipped_workload_says_it_is_a_workload(capsys):
    code, _, err = run(capsys, "metrics", str(ROOT / "workloads" / "KTH-SP2-1k.json"))
    assert_one_line_error(code, err, "this is JSON (a Batsim workload?)")


# ------------------------------------------------------------- issue 40 §6: what the first hour meets
@pytest.mark.parametrize("argv, helps", [
    (("simulate", "-w", WORKLOAD), "batsched-ml simulate --help"),
    (("simulate", "-p", PLATFORM, "-w", WORKLOAD, "--bogus"), "batsched-ml simulate --help"),
    (("campaign", "run"), "batsched-ml campaign run --help"),
    (("plot", JOBS_CSV), "batsched-ml plot --help"),
    (("nosuchcommand",), "batsched-ml --help"),
])
def test_argparse_errors_start_like_every_other_error(capsys, argv, helps):
    """The README promises `batsched-ml: error:`; argparse wrote `batsched-ml simulate: error:`."""
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, f"(see: {helps})")
    assert err.startswith("batsched-ml: error: ")


def test_plot_help_says_no_extra_is_needed(capsys):
    """matplotlib is a core dependency: the 'plots' extra is no longer needed."""
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "'plots' extra" not in out
    code, out, _ = run(capsys, "plot", "--help")
    assert code == 0 and "extra" not in out


def test_run_json_ends_with_a_newline(tmp_path, capsys):
    code, _, _ = run(capsys, *simulate(tmp_path, "--quiet"))
    assert code == 0
    text = (tmp_path / "run_run.json").read_text()
    assert text.endswith("}\n") and '"status": "complete"' in text
