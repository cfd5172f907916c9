"""Time the embedded simulator on full traces, side by side with real Batsim + batsched.

Needs: KTH-SP2-1996-2.1-cln.swf.gz and CTC-SP2-1996-3.1-cln.swf.gz from the Parallel Workloads
Archive (https://www.cs.huji.ac.il/labs/parallel/workload/), in --traces-dir DIR or given as paths.

Usage: python benchmarks/bench_easy.py [TRACE ...] [--traces-dir DIR] [--reservations count|cores]
(TRACE: KTH, CTC or a path to an .swf/.swf.gz file; default KTH CTC)

Real Batsim 4.2.1 + batsched 1.4 took 32 s on full KTH-SP2 and 503 s on
CTC-SP2 on this kind of machine (2 cores); the goal is 30x faster. Reported:
wall time of the whole simulation, the share spent in the decision core, and
the speed-up over the Batsim figures (reproduce them with the README's commands,
"Benchmarks and their data").
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import add_data_arguments, reports_missing_data, trace_label, trace_path  # noqa: E402

from batsched_ml.runner import build_scheduler, simulate  # noqa: E402
from batsched_ml.workloads import read_swf, swf_to_workload  # noqa: E402

BATSIM_SECONDS = {"KTH-SP2": 32.0, "CTC-SP2": 503.0}


@reports_missing_data
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", nargs="*", default=["KTH", "CTC"], help="KTH, CTC or an SWF file path")
    add_data_arguments(parser)
    parser.add_argument("--reservations", default="cores", choices=("count", "cores"))
    args = parser.parse_args(argv)
    paths = [(trace_label(t), trace_path(t, args.traces_dir)) for t in args.trace]  # all found before any run
    print(f"{'trace':<10} {'jobs':>7} {'wall s':>8} {'core s':>8} {'msgs':>7} {'batsim s':>9} {'speed-up':>9}")
    for name, path in paths:
        workload, _ = swf_to_workload(read_swf(path))
        sched = build_scheduler("easy", "fcfs", reservations=args.reservations)
        t0 = time.perf_counter()
        result, _ = simulate(int(workload["nb_res"]), workload, sched, prefix=f"/tmp/bench-{name}")
        wall = time.perf_counter() - t0
        batsim = BATSIM_SECONDS.get(f"{name}-SP2")
        versus = f"{batsim:>9.0f} {batsim / wall:>8.1f}x" if batsim else f"{'-':>9} {'-':>9}"
        print(f"{name:<10} {len(workload['jobs']):>7} {wall:>8.2f} {result.scheduling_time:>8.2f} "
              f"{result.messages:>7} {versus}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
