"""benchmarks/side_by_side.py: old and new campaign results per (trace, config)."""

import csv
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "side_by_side.py"
FIELDS = ["trace", "window", "config", "seed", "status", "jobs", "avebsld10", "avebsld60", "mean_wait",
          "max_wait", "utilisation", "makespan"]


def write_results(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, FIELDS)
        writer.writeheader()
        for trace, window, config, bsld, wait in rows:
            writer.writerow(dict(trace=trace, window=window, config=config, seed=0, status="ok", jobs=10,
                                 avebsld10=bsld, avebsld60=bsld, mean_wait=wait, max_wait=wait,
                                 utilisation=0.5, makespan=100))


def run(*argv):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, argv)], capture_output=True, text=True,
                          timeout=60)


def test_counts_the_changed_runs_and_compares_means_and_medians(tmp_path):
    old = [("T", 0, "easy", 10.0, 5), ("T", 1, "easy", 20.0, 5), ("T", 2, "easy", 90.0, 5),
           ("T", 0, "spf", 8.0, 4), ("T", 1, "spf", 8.0, 4), ("T", 2, "spf", 8.0, 4)]
    new = old[:3] + [("T", 0, "spf", 8.0, 4), ("T", 1, "spf", 4.0, 4), ("T", 2, "spf", 8.0, 6)]
    write_results(tmp_path / "old" / "results.csv", old)
    write_results(tmp_path / "new" / "results.csv", new)
    (tmp_path / "new" / "campaign.toml").write_text(
        '[[paper]]\ntrace = "T"\nconfig = "spf"\nmetric = "avebsld10"\nvalue = 7.5\n')
    done = run(tmp_path / "old" / "results.csv", tmp_path / "new")
    assert done.returncode == 0, done.stderr
    rows = {line.split(" | ")[1]: line for line in done.stdout.splitlines()[2:]}
    assert rows["easy"] == "| T | easy | 3 | 0 | 40.00 | 40.00 | = |  |"
    # one run changed in AVEbsld, another only in its waits: both count as changed
    assert rows["spf"] == "| T | spf | 3 | 2 | 8.00 | 6.67 | -16.7% | 7.5 |"
    median = run(tmp_path / "old" / "results.csv", tmp_path / "new", "--median", "--changed-only")
    assert median.stdout.splitlines()[2:] == ["| T | spf | 3 | 2 | 8.00 | 8.00 | +0.0% | 7.5 |"]


def test_a_missing_file_is_one_line(tmp_path):
    done = run(tmp_path / "nothing.csv", tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == f"side_by_side.py: error: no such file: {tmp_path / 'nothing.csv'}"


def test_a_compact_old_file_rounded_to_six_digits_is_unchanged(tmp_path):
    write_results(tmp_path / "new" / "results.csv", [("T", 0, "easy", 83.47100360472865, 17593.888967910283)])
    (tmp_path / "old.csv").write_text("trace,window,config,seed,status,jobs,avebsld10,mean_wait\n"
                                      "T,0,easy,0,ok,10,83.471,17593.9\n")
    done = run(tmp_path / "old.csv", tmp_path / "new")
    assert done.stdout.splitlines()[2] == "| T | easy | 1 | 0 | 83.47 | 83.47 | = |  |"
