"""The embedded simulator's Batsim 5 mode: its speed beside the 4.2.1 mode and beside the real
Batsim 5.0.0-rc2, and whether its jobs files are rc2's, on KTH-5k (issue 41).

Usage: python benchmarks/bench_batsim5.py [--rounds 5] [--golden DIR] [--batsim5 BIN --edc-libs DIR]

Each round runs, one after the other, whole processes: ``batsched-ml simulate --batsim 4`` and
``--batsim 5`` with ``fcfs`` (the same scheduler: 4.2.1's KTH-5k workload, then rc2's), and, when
a real rc2 is given (``--batsim5`` / ``--edc-libs``, else ``BATSIM5_BIN`` /
``BATSIM5_EDC_LIB_DIR``: ``source /work/batsim5/env.sh``), rc2 with its own library ``fcfs``.
Reported: the median and range of each one's wall and CPU seconds (start-up included), the
ratios of the medians, and whether ``--batsim 5``'s jobs.csv is byte for byte the one rc2 wrote
(``golden-v5/outputs/kth5k-fcfs-lib``, and this round's real rc2 run). The machine's noise is
large: quote medians over rounds.
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import SHARED, MissingData, reports_missing_data  # noqa: E402


def _timed(argv) -> tuple[float, float]:
    """(wall, CPU) seconds of one process run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _inputs(golden: Path) -> tuple[Path, Path, Path, Path]:
    platform = golden / "golden" / "platform-100.xml"
    v4 = golden / "golden" / "KTH-5k.json.gz"
    v5 = golden / "golden-v5" / "workloads" / "KTH-5k.v5.json.gz"
    reference = golden / "golden-v5" / "outputs" / "kth5k-fcfs-lib" / "jobs.csv"
    for path in (platform, v4, v5, reference):
        if not path.is_file():
            raise MissingData(f"needs {path} (../shared/golden and ../shared/golden-v5, or --golden DIR)")
    return platform, v4, v5, reference


@reports_missing_data
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--golden", type=Path, default=SHARED, help="the folder holding golden/ and golden-v5/")
    parser.add_argument("--batsim5", default=os.environ.get("BATSIM5_BIN"), help="a real Batsim 5.0.0-rc2")
    parser.add_argument("--edc-libs", default=os.environ.get("BATSIM5_EDC_LIB_DIR"),
                        help="the folder of rc2's test EDC libraries (libfcfs.so)")
    args = parser.parse_args(argv)
    platform, v4, v5, reference = _inputs(args.golden)
    cli = [shutil.which("batsched-ml") or "batsched-ml"]
    real = args.batsim5 and args.edc_libs and Path(args.edc_libs, "libfcfs.so").is_file()
    times: dict[str, list] = {"--batsim 4": [], "--batsim 5": [], "real rc2": []}
    same_golden = same_real = True
    with tempfile.TemporaryDirectory() as tmp:
        v5_plain = Path(tmp) / "KTH-5k.v5.json"  # rc2 reads plain JSON only
        v5_plain.write_bytes(gzip.decompress(v5.read_bytes()))
        for _ in range(args.rounds):
            times["--batsim 4"].append(_timed([*cli, "simulate", "--batsim", "4", "-p", str(platform), "-w", str(v4),
                                               "-e", f"{tmp}/four", "--scheduler", "fcfs", "--quiet"]))
            times["--batsim 5"].append(_timed([*cli, "simulate", "--batsim", "5", "-p", str(platform), "-w", str(v5),
                                               "-e", f"{tmp}/five/", "--scheduler", "fcfs", "--quiet"]))
            ours = Path(tmp, "five", "jobs.csv").read_bytes()
            same_golden &= ours == reference.read_bytes()
            if real:
                times["real rc2"].append(_timed([args.batsim5, "-p", str(platform), "-w", str(v5_plain),
                                                 "-e", f"{tmp}/rc2/", "-l", str(Path(args.edc_libs, "libfcfs.so")),
                                                 "{}"]))
                same_real &= ours == Path(tmp, "rc2", "jobs.csv").read_bytes()
    print(f"KTH-5k, fcfs, {args.rounds} rounds: median [min-max] seconds")
    medians = {}
    for name, runs in times.items():
        if not runs:
            continue
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        medians[name] = (statistics.median(walls), statistics.median(cpus))
        print(f"  {name:11} wall {medians[name][0]:6.2f} [{min(walls):.2f}-{max(walls):.2f}]  "
              f"cpu {medians[name][1]:6.2f} [{min(cpus):.2f}-{max(cpus):.2f}]")
    four, five = medians["--batsim 4"], medians["--batsim 5"]
    print(f"  --batsim 5 / --batsim 4: wall {five[0] / four[0]:.2f}, cpu {five[1] / four[1]:.2f}")
    if "real rc2" in medians:
        rc2 = medians["real rc2"]
        print(f"  --batsim 5 / real rc2 (its C++ fcfs library): wall {five[0] / rc2[0]:.2f}, cpu {five[1] / rc2[1]:.2f}")
        print(f"  jobs.csv byte for byte the real rc2's of each round: {same_real}")
    else:
        print("  (no real rc2: --batsim5 BIN --edc-libs DIR, or source /work/batsim5/env.sh)")
    print(f"  jobs.csv byte for byte golden-v5's kth5k-fcfs-lib: {same_golden}")
    return 0 if same_golden and same_real else 1


if __name__ == "__main__":
    sys.exit(main())
