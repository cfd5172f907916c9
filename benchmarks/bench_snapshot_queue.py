"""Snapshot size and CPU per queued job (issue 42): bursts of 1 to 5,000 jobs submitted at 0 on 16
cores (KTH-SP2-1k's jobs repeated), paused at 1 s, one snapshot pickled, framed and signed (the
minimum of 3 CPU times); printed per configuration with the slope per 1,000 queued jobs.

Usage: python benchmarks/bench_snapshot_queue.py (results: benchmarks/results/checkpoints.md)
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from pathlib import Path

from batsched_ml.core.decision_core import DecisionCore
from batsched_ml.runner import build_scheduler, in_process, load_inputs
from batsched_ml.simulator.engine import Simulator

SAMPLE = Path(__file__).resolve().parents[1] / "workloads" / "KTH-SP2-1k.json"
CONFIGS = ({"scheduler": "easy"}, {"scheduler": "conservative"}, {"scheduler": "probabilistic", "distribution": "hmm"},
           {"scheduler": "easy", "predictor": "ave2", "correction": "incremental"})
SIZES = (10, 100, 1000, 5000)


def burst(base: dict, n: int) -> dict:
    """``n`` jobs of ``base`` (repeated), all submitted at 0, at most 16 cores each."""
    workload = copy.deepcopy(base)
    workload["jobs"] = [dict(base["jobs"][k % len(base["jobs"])], id=k, subtime=0.0,
                             res=min(base["jobs"][k % len(base["jobs"])]["res"], 16)) for k in range(n)]
    return workload


def measure(config: dict, workload: dict) -> tuple[int, int, float]:
    """(queued jobs, snapshot bytes with its shared frames, CPU seconds) of a snapshot at 1 s."""
    nb_hosts, _, loaded = load_inputs(16, [workload])
    sim = Simulator(nb_hosts, loaded)
    sim.run(in_process(DecisionCore(build_scheduler(**config))), until=1.0)
    times = []
    for _ in range(3):
        sim._snapshot_cache = type(sim._snapshot_cache)()  # noqa: SLF001 - every snapshot from scratch
        started = time.process_time()
        snapshot = sim.snapshot()
        data = snapshot.encode()
        times.append(time.process_time() - started)
    return snapshot.header["jobs"]["queued"], len(data) + sum(len(f.data) for f in snapshot.frames), min(times)


def main() -> int:
    os.environ.setdefault("BATSCHED_ML_SNAPSHOT_KEY", "bench_snapshot_queue")
    base = json.loads(SAMPLE.read_text())
    for config in CONFIGS:
        rows = [measure(config, burst(base, n)) for n in SIZES]
        (q0, b0, t0), (q1, b1, t1) = rows[0], rows[-1]
        print(f"{config}: " + ", ".join(f"{q} queued {b / 1e3:.0f} kB {t * 1e3:.1f} ms" for q, b, t in rows)
              + f"; per 1,000 queued: {(b1 - b0) / (q1 - q0):.0f} kB, {(t1 - t0) / (q1 - q0) * 1e6:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
