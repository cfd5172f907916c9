"""Check that a refactoring left every schedule unchanged: byte-identical jobs CSVs before/after.

Usage::

    python benchmarks/schedules_unchanged.py [--before REF] [--keep DIR] [--only NAME ...]
        [--workload 1k|5k ...] [--golden DIR]

Runs each configuration of ``CONFIGS`` through the real command line (``batsched-ml simulate``,
one fresh process per run) on the bundled sample (``workloads/KTH-SP2-1k.json``) and on the golden
KTH-5k workload (``../shared/golden/KTH-5k.json.gz``, or ``--golden DIR``), with the code at git
``REF`` (default: the merge base with main, extracted with ``git archive``) and with this
checkout, then compares the two jobs CSVs of every run byte for byte. Exit 0 when all are
identical, 1 otherwise (the differing runs are named).

``--keep DIR`` keeps the outputs there; the ``REF`` side is stored under ``DIR/<commit>`` and
reused by later invocations (the old code does not change), so only this checkout is re-run.
"""

from __future__ import annotations

import argparse
import filecmp
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from benchdata import SHARED, golden_path, reports_missing_data  # noqa: E402

# name -> scheduler flags; every flag is valid before and after the configuration refactoring
CONFIGS = {
    "easy": ["--scheduler", "easy"],
    "conservative": ["--scheduler", "conservative"],
    "fcfs": ["--scheduler", "fcfs"],
    "easy-spf": ["--scheduler", "easy", "--policy", "spf"],
    "easy-starvation": ["--scheduler", "easy", "--policy", "spf", "--starvation-threshold", "3600"],
    "easy++": ["--scheduler", "easy", "--predictor", "ave2", "--correction", "incremental",
               "--backfill-order", "sjbf"],
    "eloss": ["--scheduler", "easy", "--predictor", "eloss", "--correction", "incremental",
              "--backfill-order", "sjbf"],
    "classification-rf-kill": ["--scheduler", "easy", "--classifier", "random-forest", "--kill-false-small"],
    "prob-walltime": ["--scheduler", "probabilistic", "--distribution", "walltime"],
    "prob-user": ["--scheduler", "probabilistic", "--distribution", "user"],
    "prob-hmm": ["--scheduler", "probabilistic", "--distribution", "hmm"],
    "prob-forest": ["--scheduler", "probabilistic", "--distribution", "forest"],
    "easy-cores": ["--scheduler", "easy", "--reservations", "cores"],
    "conservative-cores": ["--scheduler", "conservative", "--reservations", "cores"],
}

# runs in a fresh interpreter with ``root`` first on the path: the CLI of that tree
CHILD = """
import sys
root = sys.argv[1]
sys.path.insert(0, root)
import batsched_ml
assert batsched_ml.__file__.startswith(root), batsched_ml.__file__
from batsched_ml.cli import main
sys.exit(main(sys.argv[2:]))
"""


def workloads(golden: Path) -> dict[str, tuple[Path, Path]]:
    return {"1k": (ROOT / "platforms" / "cluster-100.xml", ROOT / "workloads" / "KTH-SP2-1k.json"),
            "5k": (golden_path("platform-100.xml", golden), golden_path("KTH-5k.json.gz", golden))}


def run(root: Path, flags: list[str], platform: Path, workload: Path, prefix: Path) -> float:
    """One ``simulate`` of the tree at ``root``; returns its wall time."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, str(root), "simulate", "-p", str(platform), "-w",
                           str(workload), "-e", str(prefix), "--quiet", "--json", *flags],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"simulate {' '.join(flags)} failed with the code of {root} "
                         f"(exit {done.returncode}):\n{done.stderr}")
    return time.perf_counter() - t0


def checkout(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


@reports_missing_data
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default=None, help="git ref of the code to compare with (default: merge base "
                                                   "with main)")
    ap.add_argument("--keep", type=Path, default=None, metavar="DIR",
                    help="keep the outputs in DIR (the REF side is reused from DIR/<commit> when there)")
    ap.add_argument("--only", nargs="+", choices=sorted(CONFIGS), default=None, help="these configurations only")
    ap.add_argument("--workload", nargs="+", choices=("1k", "5k"), default=["1k", "5k"])
    ap.add_argument("--golden", type=Path, default=SHARED / "golden", metavar="DIR")
    args = ap.parse_args(argv)
    ref = args.before or subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], check=True,
                                        capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", ref], check=True, capture_output=True,
                            text=True).stdout.strip()
    inputs = workloads(args.golden)
    names = args.only or list(CONFIGS)
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        before_dir, after_dir = base / commit[:12], base / "after"
        old_root = checkout(commit, Path(tmp) / "before-src")
        different = []
        for size in args.workload:
            platform, workload = inputs[size]
            for name in names:
                stem = f"{name}.{size}"
                old = before_dir / f"{stem}_jobs.csv"
                old_s = "kept"
                if not old.is_file():
                    old_s = f"{run(old_root, CONFIGS[name], platform, workload, before_dir / stem):.1f} s"
                new_s = run(ROOT, CONFIGS[name], platform, workload, after_dir / stem)
                same = filecmp.cmp(old, after_dir / f"{stem}_jobs.csv", shallow=False)
                print(f"{stem:<28} before {old_s:>7}  after {new_s:5.1f} s  "
                      f"{'identical' if same else 'DIFFERENT'}", flush=True)
                if not same:
                    different.append(stem)
    total = len(names) * len(args.workload)
    print(f"{total - len(different)} of {total} jobs CSVs byte-identical"
          + (f"; different: {', '.join(different)}" if different else ""))
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
