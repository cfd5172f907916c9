"""Metrics from Batsim jobs CSVs: golden Batsim figures, requeue accounting, edge cases."""

from __future__ import annotations

import csv
import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_dir  # tests/ is on sys.path (pytest's rootdir conftest)
from batsched_ml.analysis import (
    compute_metrics,
    cumulative_bsld,
    format_metrics,
    merge_attempts,
    per_job_bsld,
    read_jobs_csv,
    read_schedule_csv,
)

def _golden_outputs() -> Path:
    shared = shared_dir()
    if shared is None:
        pytest.skip("../shared (golden Batsim runs) is not available")
    return shared / "golden" / "outputs"
DATA = Path(__file__).resolve().parent / "data"

# The header exactly as the protocol notes give it (not taken from the code under test).
HEADER = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,"
          "requested_time,success,final_state,starting_time,execution_time,finish_time,"
          "waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata")


def row(job_id, sub, res=1, start=None, run=None, state="COMPLETED_SUCCESSFULLY", workload="w0"):
    """One jobs-CSV line as Batsim writes it; ``start=None`` makes a rejected job (empty times)."""
    head = f"{job_id},{workload},p{job_id},{sub:.6f},{res},1000.000000"
    if start is None:
        return f'{head},0,REJECTED,,,,,,,,-1.000000,""'
    fin = start + run
    ok = int(state == "COMPLETED_SUCCESSFULLY")
    return (f"{head},{ok},{state},{start:.6f},{run:.6f},{fin:.6f},{start - sub:.6f},"
            f'{fin - sub:.6f},{(fin - sub) / run:.6f},0-{res - 1},-1.000000,""')


def write_jobs(path: Path, rows, header=HEADER) -> Path:
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


# ------------------------------------------------------------------ golden Batsim outputs
KTH_FIGURES = {  # golden README: AVEbsld tau=10, tau=60, mean wait (s), full KTH-SP2
    "easy": (82.65, 28.75, 6586.9),
    "easy_spf": (43.26, 14.67, 4600.8),
    "conservative": (83.85, 28.07, 7598.9),
    "fcfs": (6818.3, 2185.3, 353950.4),
}


def _golden(variant: str) -> tuple[Path, Path]:
    jobs = _golden_outputs() / f"KTH-SP2-1996-2.1-cln.{variant}_jobs.csv.gz"
    if not jobs.is_file():
        pytest.skip(f"golden outputs not available ({jobs})")
    return jobs, jobs.parent / f"KTH-SP2-1996-2.1-cln.{variant}_schedule.csv"


def _half_unit(figure: float) -> float:
    """Tolerance of a figure printed with its own number of decimals (rounding)."""
    text = repr(figure)
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10 ** -decimals + 1e-9


@pytest.mark.parametrize("variant", sorted(KTH_FIGURES))
def test_golden_kth_figures(variant):
    jobs, schedule_path = _golden(variant)
    m = compute_metrics(jobs)
    bsld10, bsld60, wait = KTH_FIGURES[variant]
    assert m["avebsld_tau10"] == pytest.approx(bsld10, abs=_half_unit(bsld10))
    assert m["avebsld_tau60"] == pytest.approx(bsld60, abs=_half_unit(bsld60))
    assert m["mean_wait"] == pytest.approx(wait, abs=_half_unit(wait))

    # Cross-check against Batsim's own summary (printed with 6 decimals).
    s = read_schedule_csv(schedule_path)
    assert m["mean_wait"] == pytest.approx(s["mean_waiting_time"], abs=1e-5)
    assert m["max_wait"] == pytest.approx(s["max_waiting_time"], abs=1e-5)
    assert m["mean_turnaround"] == pytest.approx(s["mean_turnaround_time"], abs=1e-5)
    assert m["makespan"] == pytest.approx(s["makespan"], abs=1e-5)
    assert m["jobs"] == m["attempts"] == s["nb_jobs"]
    assert m["completed"] == s["nb_jobs_success"]
    assert m["walltime_reached"] == s["nb_jobs_killed"]  # Batsim counts walltime kills as killed
    assert m["rejected"] == s["nb_jobs_rejected"] == 0
    # nb_cores found through the sibling schedule CSV; utilisation matches time_computing.
    assert m["nb_cores"] == s["nb_computing_machines"]
    busy = m["utilisation"] * m["nb_cores"] * m["makespan"]
    assert busy == pytest.approx(s["time_computing"], rel=1e-9)
    json.dumps(m, allow_nan=False)


@pytest.mark.parametrize("variant, bsld10", [("easy", 111.2), ("pybatsim-easyBackfill", 326.6)])
def test_golden_kth5k_figures(variant, bsld10):
    """The README's KTH-5k figures for batsched easy_bf and pybatsim's easyBackfill."""
    jobs = _golden_outputs() / f"KTH-5k.{variant}_jobs.csv.gz"
    if not jobs.is_file():
        pytest.skip(f"golden outputs not available ({jobs})")
    m = compute_metrics(jobs)
    assert m["avebsld_tau10"] == pytest.approx(bsld10, abs=0.05)
    s = read_schedule_csv(jobs.parent / f"KTH-5k.{variant}_schedule.csv")
    assert m["mean_wait"] == pytest.approx(s["mean_waiting_time"], abs=1e-5)


def test_golden_cumulative_bsld_ends_at_total():
    jobs, _ = _golden("easy")
    records = merge_attempts(read_jobs_csv(jobs))
    times, cum = cumulative_bsld(records, 60.0)
    assert len(times) == len(records)
    assert np.all(np.diff(times) >= 0) and np.all(np.diff(cum) >= 0)
    assert cum[-1] == pytest.approx(compute_metrics(records)["avebsld_tau60"] * len(records))


def test_read_schedule_csv_types(tmp_path):
    p = tmp_path / "x_schedule.csv"
    p.write_text("batsim_version,makespan,nb_computing_machines,nb_jobs\n4.2,15.000150,4,3\n")
    s = read_schedule_csv(p)
    assert s == {"batsim_version": "4.2", "makespan": 15.00015, "nb_computing_machines": 4,
                 "nb_jobs": 3}
    assert isinstance(s["nb_computing_machines"], int) and isinstance(s["makespan"], float)


# ------------------------------------------------------------------ requeued attempts
def test_real_batsim_kill_requeue_file():
    """Batsim's own output of a kill after 5 s and a requeue as ``0#1``."""
    path = DATA / "kill-requeue_jobs.csv"
    with open(path, newline="") as f:
        raw = {r["job_id"]: r for r in csv.DictReader(f)}
    killed, again = raw["0"], raw["0#1"]
    assert killed["final_state"] == "COMPLETED_KILLED"

    records = merge_attempts(read_jobs_csv(path))
    assert sorted(records.job_id) == ["0", "1", "2"]
    job0 = records.select_ids(["w0!0"])
    assert len(job0) == 1 and job0.attempts[0] == 2 and job0.killed_attempts[0] == 1
    assert job0.submission[0] == float(killed["submission_time"])
    assert job0.start[0] == float(again["starting_time"])
    assert job0.wait[0] == pytest.approx(
        float(again["starting_time"]) - float(killed["submission_time"]))
    assert job0.wait[0] > float(again["waiting_time"])  # the lost 5 s count as waiting
    assert job0.run[0] == float(again["execution_time"])
    assert job0.final_state[0] == "COMPLETED_SUCCESSFULLY"
    wasted = int(killed["requested_number_of_resources"]) * float(killed["execution_time"])
    assert job0.wasted_core_seconds[0] == pytest.approx(wasted)

    m = compute_metrics(path, nb_cores=4)
    assert (m["jobs"], m["attempts"], m["requeued_jobs"], m["killed_attempts"]) == (3, 4, 1, 1)
    assert (m["completed"], m["killed"], m["rejected"]) == (3, 0, 0)
    assert m["wasted_core_seconds"] == pytest.approx(wasted)
    # bsld of the final attempts, with job 0's wait counted from its first submission
    first_sub = {"0": killed, "1": raw["1"], "2": raw["2"]}
    expected = []
    for base, final in (("0", again), ("1", raw["1"]), ("2", raw["2"])):
        run = float(final["execution_time"])
        wait = float(final["starting_time"]) - float(first_sub[base]["submission_time"])
        expected.append(max((wait + run) / max(run, 10.0), 1.0))
    assert m["avebsld_tau10"] == pytest.approx(sum(expected) / 3)
    busy = sum(int(r["requested_number_of_resources"]) * float(r["execution_time"])
               for r in raw.values())
    assert m["utilisation"] == pytest.approx(busy / (4 * float(raw["0#1"]["finish_time"])))


def test_requeue_merge_uses_attempt_numbers_not_file_order(tmp_path):
    path = write_jobs(tmp_path / "r_jobs.csv", [
        row("7#2", 80.0, res=2, start=100.0, run=200.0),
        row("7", 0.0, res=2, start=10.0, run=30.0, state="COMPLETED_KILLED"),
        row("7#1", 40.0, res=2, start=50.0, run=30.0, state="COMPLETED_KILLED"),
        row("7", 5.0, res=1, start=5.0, run=20.0, workload="w1"),  # same id, other workload
        row("13", 1.0, res=3, start=2.0, run=4.0),
    ])
    r = merge_attempts(read_jobs_csv(path))
    assert len(r) == 3
    job = r.select_ids(["w0!7"])
    assert (job.submission[0], job.start[0], job.wait[0], job.run[0]) == (0.0, 100.0, 100.0, 200.0)
    assert (job.attempts[0], job.killed_attempts[0]) == (3, 2)
    assert job.wasted_core_seconds[0] == 2 * 30.0 + 2 * 30.0
    assert job.core_seconds[0] == 2 * (30.0 + 30.0 + 200.0)
    assert job.final_state[0] == "COMPLETED_SUCCESSFULLY"
    other = r.select_ids(["w1!7"])
    assert (other.attempts[0], other.wait[0], other.wasted_core_seconds[0]) == (1, 0.0, 0.0)
    assert len(r.select_ids([7])) == 2 and len(r.select_ids(["13"])) == 1

    m = compute_metrics(path)
    assert (m["jobs"], m["attempts"], m["requeued_jobs"], m["killed_attempts"]) == (3, 5, 1, 2)
    assert m["avebsld_tau10"] == pytest.approx(((100 + 200) / 200 + 1 + 1) / 3)
    assert m["utilisation"] is None  # no nb_cores, no sibling schedule


def test_duplicate_attempt_is_an_error(tmp_path):
    path = write_jobs(tmp_path / "d_jobs.csv", [row("3", 0.0, start=1.0, run=2.0),
                                                row("3", 0.0, start=4.0, run=2.0)])
    with pytest.raises(ValueError, match="d_jobs.csv.*'3'"):
        merge_attempts(read_jobs_csv(path))


# ------------------------------------------------------------------ metric definitions
def test_rejected_job_counted_but_not_timed(tmp_path):
    path = write_jobs(tmp_path / "x_jobs.csv", [
        row("1", 0.0, start=50.0, run=100.0),
        row("2", 10.0),  # rejected
    ])
    table = read_jobs_csv(path)
    assert np.isnan(table.starting_time[1]) and np.isnan(table.stretch[1])
    m = compute_metrics(path, nb_cores=2)
    assert (m["jobs"], m["rejected"], m["completed"]) == (2, 1, 1)
    assert m["avebsld_tau10"] == pytest.approx(1.5)
    assert m["mean_wait"] == m["max_wait"] == 50.0
    assert m["first_submission"] == 0.0 and m["last_finish"] == m["makespan"] == 150.0
    assert m["utilisation"] == pytest.approx(100.0 / (2 * 150.0))
    b = per_job_bsld(merge_attempts(table), 10.0)
    assert b[0] == pytest.approx(1.5) and np.isnan(b[1])
    json.dumps(m, allow_nan=False)


def test_all_rejected_gives_none_not_nan(tmp_path):
    m = compute_metrics(write_jobs(tmp_path / "x_jobs.csv", [row("1", 0.0)]))
    assert m["jobs"] == m["rejected"] == 1
    assert m["avebsld_tau10"] is None and m["mean_wait"] is None and m["makespan"] is None
    json.dumps(m, allow_nan=False)


def test_tau_bounds_short_jobs(tmp_path):
    path = write_jobs(tmp_path / "t_jobs.csv", [
        row("1", 0.0, start=15.0, run=5.0),     # short: (15+5)/max(5,tau)
        row("2", 0.0, start=50.0, run=100.0),   # long: 1.5 whatever tau
        row("3", 0.0, start=0.0, run=2.0),      # no wait: bsld clamps at 1
    ])
    m = compute_metrics(path, taus=(1.0, 10.0, 60.0))
    assert m["avebsld_tau1"] == pytest.approx((20 / 5 + 1.5 + 1) / 3)
    assert m["avebsld_tau10"] == pytest.approx((20 / 10 + 1.5 + 1) / 3)
    assert m["avebsld_tau60"] == pytest.approx((1 + 1.5 + 1) / 3)
    assert m["maxbsld_tau10"] == pytest.approx(2.0) and m["maxbsld_tau60"] == pytest.approx(1.5)
    r = merge_attempts(read_jobs_csv(path))
    assert np.all(per_job_bsld(r, 10.0) >= per_job_bsld(r, 60.0))
    assert np.all(per_job_bsld(r, 1.0) >= 1.0)


def test_wait_statistics(tmp_path):
    path = write_jobs(tmp_path / "w_jobs.csv", [
        row("1", 0.0, start=0.0, run=10.0),
        row("2", 0.0, start=99.0, run=10.0),
        row("3", 0.0, start=9.0, run=10.0),
    ])
    m = compute_metrics(path)
    assert m["geomean_wait"] == pytest.approx((1 * 100 * 10) ** (1 / 3) - 1)  # shifted by 1 s
    assert m["median_wait"] == 9.0 and m["max_wait"] == 99.0
    assert m["mean_wait"] == pytest.approx(36.0)
    assert m["mean_turnaround"] == pytest.approx(46.0)


def test_cumulative_bsld_in_finish_order(tmp_path):
    path = write_jobs(tmp_path / "c_jobs.csv", [
        row("1", 0.0, start=100.0, run=400.0),  # finishes last
        row("2", 0.0, start=30.0, run=10.0),    # finishes first: bsld 4
        row("3", 0.0),                          # rejected: not on the curve
        row("4", 5.0, start=40.0, run=60.0),
    ])
    records = merge_attempts(read_jobs_csv(path))
    times, cum = cumulative_bsld(records, 10.0)
    assert list(times) == [40.0, 100.0, 500.0]
    assert cum[0] == pytest.approx(4.0)
    assert np.all(np.diff(cum) >= 0)
    assert cum[-1] == pytest.approx(np.nansum(per_job_bsld(records, 10.0)))
    t2, c2 = cumulative_bsld(path, 10.0)  # a path works too
    assert np.array_equal(t2, times) and np.allclose(c2, cum)


def test_subsets_reuse_per_job_bsld(tmp_path):
    path = write_jobs(tmp_path / "s_jobs.csv", [
        row("1", 0.0, start=15.0, run=5.0),
        row("2", 0.0, start=50.0, run=100.0),
        row("3", 0.0, start=0.0, run=2.0),
    ])
    r = merge_attempts(read_jobs_csv(path))
    small = r.run < 60
    assert np.allclose(per_job_bsld(r.subset(small), 10.0), per_job_bsld(r, 10.0)[small])
    assert list(r.select_ids(["3", "1"]).job_id) == ["1", "3"]  # file order kept
    assert compute_metrics(r.subset(~small))["avebsld_tau10"] == pytest.approx(1.5)


def test_sibling_schedule_gives_nb_cores(tmp_path):
    jobs = write_jobs(tmp_path / "run_jobs.csv", [row("1", 0.0, res=2, start=0.0, run=50.0)])
    (tmp_path / "run_schedule.csv").write_text(
        "batsim_version,makespan,nb_computing_machines\n4.2.1,50.000000,4\n")
    m = compute_metrics(jobs)
    assert m["nb_cores"] == 4 and m["utilisation"] == pytest.approx(100.0 / (4 * 50.0))
    assert compute_metrics(jobs, nb_cores=10)["utilisation"] == pytest.approx(100.0 / 500.0)


# ------------------------------------------------------------------ reading
def test_gzip_reads_like_plain(tmp_path):
    rows = [row("1", 0.0, start=15.0, run=5.0), row("2", 3.0), row("1#1", 20.0, start=21.0, run=1.0)]
    plain = write_jobs(tmp_path / "p_jobs.csv", rows)
    gz = tmp_path / "p_jobs.csv.gz"
    with gzip.open(gz, "wt") as f:
        f.write(plain.read_text())
    a, b = read_jobs_csv(plain), read_jobs_csv(gz)
    assert len(a) == len(b) == 3
    for name in ("job_id", "final_state"):
        assert list(getattr(a, name)) == list(getattr(b, name))
    for name in ("submission_time", "starting_time", "waiting_time"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True)
    assert compute_metrics(plain) == compute_metrics(gz)


def test_missing_column_names_file_and_column(tmp_path):
    header = HEADER.replace(",execution_time", "")
    path = write_jobs(tmp_path / "broken_jobs.csv", [], header=header)
    with pytest.raises(ValueError, match=r"broken_jobs\.csv.*execution_time"):
        read_jobs_csv(path)


def test_bad_number_names_file_line_and_column(tmp_path):
    good = row("1", 0.0, start=1.0, run=2.0)
    bad = row("2", 0.0, start=1.0, run=2.0).replace("2.000000", "two", 1)
    assert "two" in bad
    path = write_jobs(tmp_path / "bad_jobs.csv", [good, bad])
    with pytest.raises(ValueError, match=r"bad_jobs\.csv.*line 3.*execution_time.*'two'"):
        read_jobs_csv(path)


def test_chunked_reading_equals_one_chunk_and_keeps_line_numbers(tmp_path, monkeypatch):
    """The reader parses a few rows at a time (memory): any chunk size gives the same table, and
    errors still name the file's own line and row, whichever chunk they fall in."""
    from batsched_ml.analysis import jobs_csv

    rows = [row(str(i), float(i), res=1 + i % 3, start=(None if i % 5 == 4 else i + 1.0), run=2.0 + i)
            for i in range(23)]
    path = write_jobs(tmp_path / "many_jobs.csv", rows)
    whole = read_jobs_csv(path)
    monkeypatch.setattr(jobs_csv, "_CHUNK_ROWS", 4)
    chunked = read_jobs_csv(path)
    for name in jobs_csv.JOBS_COLUMNS:
        a, b = getattr(whole, name), getattr(chunked, name)
        assert a.dtype == b.dtype and len(a) == 23
        assert np.array_equal(a, b, equal_nan=a.dtype != object), name
    bad = list(rows)
    bad[13] = bad[13].replace(",1,COMPLETED", ",yes,COMPLETED")
    with pytest.raises(ValueError, match=r"line 15, column 'success': cannot parse 'yes'"):
        read_jobs_csv(write_jobs(tmp_path / "bad_jobs.csv", bad))
    ragged = list(rows)
    ragged[9] += ",extra"
    with pytest.raises(ValueError, match=r"row 11 has 18 fields"):
        read_jobs_csv(write_jobs(tmp_path / "ragged_jobs.csv", ragged))


def test_format_metrics_is_aligned(tmp_path):
    path = write_jobs(tmp_path / "f_jobs.csv", [row("1", 0.0, start=15.0, run=5.0)])
    m = compute_metrics(path)
    text = format_metrics(m)
    lines = text.splitlines()
    assert len(lines) == len(m)
    assert len({len(line) for line in lines}) == 1  # values right-aligned in one column
    for line, (key, value) in zip(lines, m.items()):
        assert line.split()[0] == key
        if value is None:
            assert line.rstrip().endswith("-")
        elif isinstance(value, float) and not math.isnan(value):
            assert float(line.split()[-1].replace(",", "")) == pytest.approx(value, rel=1e-3,
                                                                             abs=1e-3)


# -------------------------------------------------------------------- plots
def test_plot_draws_one_cumulative_bsld_curve_per_run(tmp_path):
    pytest.importorskip("matplotlib")
    from batsched_ml.analysis import cumulative_bsld
    from batsched_ml.analysis.plots import plot_runs

    runs = [DATA / "tiny.easy_jobs.csv", DATA / "kill-requeue_jobs.csv"]
    out = tmp_path / "cum.png"
    fig = plot_runs(runs, out, kind="cumbsld", tau=60.0)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = fig.axes[0].lines
    assert [line.get_label() for line in lines] == ["tiny.easy", "kill-requeue"]
    for line, run in zip(lines, runs):
        times, cum = cumulative_bsld(run, 60.0)
        assert np.allclose(line.get_xdata(), times / 86400.0) and np.allclose(line.get_ydata(), cum)
    # a requeued job counts once: the curve has one point per original job
    assert len(lines[1].get_xdata()) == len({row["job_id"].split("#")[0]
                                             for row in csv.DictReader(open(runs[1]))})


def test_plot_command_and_its_errors(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from batsched_ml.cli import main

    out = tmp_path / "waits.svg"
    assert main(["plot", str(DATA / "tiny.easy_jobs.csv"), "-o", str(out), "--kind", "wait-ecdf",
                 "--label", "EASY"]) == 0
    assert out.read_text().lstrip().startswith("<?xml")
    assert main(["plot", str(DATA / "tiny.easy_jobs.csv"), "-o", str(out), "--label", "a", "--label", "b"]) == 2
    assert "2 labels for 1 runs" in capsys.readouterr().err
