"""benchmarks/validation_summary.py: the eleven-trace table's goals (beats with an interval clear of
zero, longest wait, seed spread), the headroom, tuning and validation traces apart, variants apart."""

import csv
import subprocess
import sys
from pathlib import Path

import campaign_results

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "validation_summary.py"
FIELDS = ["cum_bsld60", "avebsld10", "max_wait", "kills"]


def write_results(folder: Path, runs: dict) -> None:
    """``runs``: {(trace, config): [(cum_bsld60, avebsld10, max_wait) of seed 0, seed 1, ...]}."""
    campaign_results.write_results(folder, [
        dict(trace=trace, config=config, seed=seed, cum_bsld60=cum, avebsld10=ave, max_wait=wait, kills=seed)
        for (trace, config), values in runs.items() for seed, (cum, ave, wait) in enumerate(values)], FIELDS)


def summary(tmp_path, runs: dict) -> tuple[dict, str]:
    write_results(tmp_path, runs)
    out = subprocess.run([sys.executable, str(SCRIPT), tmp_path, "--recommended", "ci", "--csv", tmp_path / "s.csv"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return {r["trace"]: r for r in csv.DictReader(open(tmp_path / "s.csv"))}, out.stdout


def test_goals_per_trace(tmp_path):
    hour = 3600.0
    rows, text = summary(tmp_path, {
        # a tuning trace: ci 40/41/42% better on both metrics; F1 at 41% (inside ci's interval), EASY++ at 10%
        ("KTH-SP2", "easy-fcfs"): [(1000, 100, 10 * hour)],
        ("KTH-SP2", "easy-f1"): [(590, 59, 50 * hour)],
        ("KTH-SP2", "easy++"): [(900, 90, 10 * hour)],
        ("KTH-SP2", "ci"): [(600, 60, 15 * hour), (590, 59, 21 * hour), (580, 58, 15 * hour)],
        # a validation trace: ci clear of all three, but its seeds spread 6 points; a variant beside it
        ("V", "easy-fcfs"): [(1000, 100, 10 * hour)],
        ("V", "easy-f1"): [(800, 80, 10 * hour)],
        ("V", "easy++"): [(900, 90, 10 * hour)],
        ("V", "ci"): [(500, 50, 12 * hour), (440, 44, 12 * hour), (470, 47, 12 * hour)],
        ("V", "ci-variant"): [(450, 45, 12 * hour), (450, 45, 12 * hour), (450, 45, 12 * hour)],
        # an idle machine: every bsld 1 under EASY-FCFS, no headroom; ci ties it exactly
        ("Idle", "easy-fcfs"): [(100, 1, 0.0)],
        ("Idle", "ci"): [(100, 1, 0.0), (100, 1, 0.0), (100, 1, 0.0)],
    })
    kth, v, idle = rows["KTH-SP2"], rows["V"], rows["Idle"]
    assert (kth["set"], v["set"]) == ("tuning", "validation")
    assert kth["beats_fcfs"] == "True" and kth["easy++_beaten"] == "True"
    assert kth["easy-f1_beaten"] == "False"  # 41% lies inside ci's 40-42
    assert kth["wait_ok"] == "False" and float(kth["max_wait_h"]) == 21.0  # over 2 x 10 h
    assert kth["spread_ok"] == "True" and float(kth["spread"]) == 2.0
    assert v["easy-f1_beaten"] == "True" and v["wait_ok"] == "True"
    assert v["spread_ok"] == "False" and float(v["spread"]) == 6.0
    assert "ci-variant_reduction" not in v  # a learned variant is not a deterministic rival
    assert idle["beats_fcfs"] == "False" and float(idle["headroom"]) == 0.0  # a tie is not a win
    assert float(rows["V"]["headroom"]) == 90.0
    # the tables: tuning traces first, then the validation ones; the variant in a table of its own
    assert text.index("| KTH-SP2 |") < text.index("**Validation only**") < text.index("| V |")
    variants = text[text.index("**Variants**"):]
    assert "| V | `ci-variant` | 55.0% [55.0, 55.0] | 55.0 / 55.0 / 55.0 | 0.0 |" in variants
