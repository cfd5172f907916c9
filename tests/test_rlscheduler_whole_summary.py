"""benchmarks/rlscheduler_whole_summary.py: issue 43 section 3's goal per bounded seed (a tie with EASY-F1
is not a win; the longest wait against twice EASY-FCFS's), and the classification column taken from
validation.md only where the two campaigns' EASY-FCFS agree."""

import subprocess
import sys
from pathlib import Path

import campaign_results

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "rlscheduler_whole_summary.py"
FIELDS = ["avebsld10", "cum_bsld60", "max_wait"]
HOUR = 3600.0


def run(folder: Path, runs: dict) -> dict:
    """``runs``: {(trace, config): [(avebsld10, cum_bsld60, max_wait) per seed]} -> {trace: its goal cell}."""
    campaign_results.write_results(folder, [
        dict(trace=t, config=c, seed=s, avebsld10=a, cum_bsld60=cum, max_wait=w)
        for (t, c), values in runs.items() for s, (a, cum, w) in enumerate(values)], FIELDS)
    out = subprocess.run([sys.executable, str(SCRIPT), folder], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    goals = out.stdout[:out.stdout.index("Cumulative")]
    rows = {}
    for line in goals.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and cells[0] not in ("trace",):
            rows[cells[0]] = cells[-1]
    return rows, out.stdout


def test_goal_per_seed(tmp_path):
    rows, text = run(tmp_path, {
        ("KTH-SP2", "easy"): [(100.0, 1000.0, 10 * HOUR)],
        ("KTH-SP2", "easy-f1"): [(50.0, 600.0, 100 * HOUR)],
        # s0 beats F1 within the bound; s1 beats it but waits 21 h > 2 x 10 h; s2 within 0.1 % of F1: a tie
        ("KTH-SP2", "easy-rl-s0-starve24h"): [(40.0, 500.0, 20 * HOUR)],
        ("KTH-SP2", "easy-rl-s1-starve24h"): [(40.0, 500.0, 21 * HOUR)],
        ("KTH-SP2", "easy-rl-s2-starve24h"): [(49.99, 590.0, 10 * HOUR)],
    })
    assert rows["KTH-SP2"] == "yes / wait / tie"
    assert "RL s0 1 of 1" in text


def test_classification_from_validation_only_on_the_same_fcfs(tmp_path):
    rows, text = run(tmp_path, {
        # KTH-SP2's EASY-FCFS as validation.md's (917,342): its reductions apply (64.7 % of AVEbsld10)
        ("KTH-SP2", "easy"): [(100.0, 917_342.0, 10 * HOUR)],
        ("KTH-SP2", "easy-f1"): [(50.0, 600_000.0, 10 * HOUR)],
        # another EASY-FCFS on CTC-SP2: no classification column there
        ("CTC-SP2", "easy"): [(100.0, 1000.0, 10 * HOUR)],
        ("CTC-SP2", "easy-f1"): [(50.0, 600.0, 10 * HOUR)],
    })
    kth = next(line for line in text.splitlines() if line.startswith("| KTH-SP2 |"))
    assert "35.30 (169 h)" in kth
    assert "missing on CTC-SP2" in text
    # seeds run here win over validation.md: their mean AVEbsld, their largest wait
    rows, text = run(tmp_path, {
        ("KTH-SP2", "easy"): [(100.0, 917_342.0, 10 * HOUR)],
        ("KTH-SP2", "easy-f1"): [(50.0, 600_000.0, 10 * HOUR)],
        ("KTH-SP2", "classification"): [(30.0, 1.0, 5 * HOUR), (40.0, 1.0, 12 * HOUR)],
    })
    kth = next(line for line in text.splitlines() if line.startswith("| KTH-SP2 |"))
    assert "35.00 (12 h)" in kth and "run on 1" in text
