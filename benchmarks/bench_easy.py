"""Time the embedded simulator on full traces, side by side with real Batsim + batsched.

Usage: python benchmarks/bench_easy.py [--shared ../shared]

Real Batsim 4.2.1 + batsched 1.4 took 32 s on full KTH-SP2 and 503 s on
CTC-SP2 on this kind of machine (2 cores); the goal is 30x faster. Reported:
wall time of the whole simulation, the share spent in the decision core, and
the speed-up over the Batsim figures.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.workloads import load_workload, read_swf, swf_to_workload

BATSIM_SECONDS = {"KTH-SP2": 32.0, "CTC-SP2": 503.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    parser.add_argument("--reservations", default="cores", choices=("count", "cores"))
    args = parser.parse_args()
    shared = Path(args.shared)
    cases = {
        "KTH-SP2": (100, load_workload(shared / "golden" / "KTH-SP2-1996-2.1-cln.json.gz")),
    }
    ctc, _ = swf_to_workload(read_swf(shared / "traces" / "CTC-SP2-1996-3.1-cln.swf.gz"))
    cases["CTC-SP2"] = (ctc["nb_res"], ctc)
    print(f"{'trace':<10} {'jobs':>7} {'wall s':>8} {'core s':>8} {'msgs':>7} {'batsim s':>9} {'speed-up':>9}")
    for name, (nb_hosts, workload) in cases.items():
        sched = build_scheduler("easy", "fcfs", reservations=args.reservations)
        t0 = time.perf_counter()
        result, _ = simulate(nb_hosts, workload, sched, prefix=f"/tmp/bench-{name}")
        wall = time.perf_counter() - t0
        print(f"{name:<10} {len(workload['jobs']):>7} {wall:>8.2f} {result.scheduling_time:>8.2f} "
              f"{result.messages:>7} {BATSIM_SECONDS[name]:>9.0f} {BATSIM_SECONDS[name] / wall:>8.1f}x")


if __name__ == "__main__":
    main()
