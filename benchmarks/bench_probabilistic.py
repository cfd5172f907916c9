"""Cost of one probabilistic-backfilling condition pass on a big machine.

Usage::

    python benchmarks/bench_probabilistic.py [--cores 1152] [--running 100 300 600] [--candidates 100]
        [--unit 1] [--repeat 20]

A synthetic state: ``--running`` jobs on ``--cores`` cores (sizes drawn so they fill the machine,
multiples of ``--unit``), each with a random runtime distribution over the 26 default bins
(Dirichlet), started in the past with walltimes above their elapsed time; a head job lacking a
quarter of the machine; ``--candidates`` queued jobs with their own distributions. Times, per
pass (CPU): the earliest-release screen, the termination events (Algorithm 1), the DP and every
candidate's risk (Algorithm 2) -- i.e. what one ``_backfill`` pass costs before any job starts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from batsched_ml.distributions.bins import RuntimeBins  # noqa: E402
from batsched_ml.scheduling.release_dp import ReleaseOutlook, RunningTerminations  # noqa: E402


class _Job:
    def __init__(self, res):
        self.res = res


def positive_bins(bins: RuntimeBins, rng, walltime: float):
    row = rng.dirichlet(np.full(len(bins), 0.3))
    cond = bins.condition_on_walltime(row, walltime)
    keep = cond > 0
    return cond[keep], np.minimum(bins.hi[keep], walltime), bins.lo[keep]


def one_state(cores: int, running: int, candidates: int, unit: int, seed: int):
    rng = np.random.default_rng(seed)
    bins = RuntimeBins()
    now = 1e6
    sizes = np.maximum(1, rng.multinomial(cores // unit - running, np.full(running, 1 / running)) + 1) * unit
    term = RunningTerminations(1e-6)
    for res in sizes.tolist():
        walltime = float(rng.choice([3600, 4 * 3600, 12 * 3600, 36 * 3600]))
        elapsed = float(rng.uniform(0, walltime))
        term.add(_Job(int(res)), now - elapsed, walltime, *positive_bins(bins, rng, walltime))
    free = cores - int(sizes.sum())
    head = cores // 4 + free
    cands = []
    for _ in range(candidates):
        walltime = float(rng.choice([600, 3600, 4 * 3600, 12 * 3600]))
        q, ends, _ = positive_bins(bins, rng, walltime)
        res = int(rng.integers(1, max(2, free + 1)))
        cands.append((res, q, ends))
    return term, now, head - free, cands


def one_pass(term, now, missing, cands):
    t0 = time.process_time()
    safe = term.earliest_release(now, missing)
    times, owners, cum, cores = term.snapshot(now)
    outlook = ReleaseOutlook(times, owners, cum, cores, missing, [c[0] for c in cands])
    width = max(len(c[1]) for c in cands)
    q = np.zeros((len(cands), width))
    ends = np.full((len(cands), width), now)
    for k, (_, qk, ek) in enumerate(cands):
        q[k, :len(qk)] = qk
        ends[k, :len(qk)] = now + ek
    risks = outlook.risks([c[0] for c in cands], q, ends)
    return time.process_time() - t0, len(times), len(outlook.times), safe, risks


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cores", type=int, default=1152)
    p.add_argument("--running", type=int, nargs="+", default=[100, 300, 600])
    p.add_argument("--candidates", type=int, default=100)
    p.add_argument("--unit", type=int, default=1, help="job sizes are multiples of this (8 on SDSC-BLUE)")
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args(argv)
    print("| cores | running jobs | unit | candidates | events | event times | CPU per pass (ms) |")
    print("|---|---|---|---|---|---|---|")
    for running in args.running:
        spent, events, groups = [], [], []
        for seed in range(args.repeat):
            state = one_state(args.cores, running, args.candidates, args.unit, seed)
            t, e, g, _, _ = one_pass(*state)
            spent.append(t)
            events.append(e)
            groups.append(g)
        print(f"| {args.cores} | {running} | {args.unit} | {args.candidates} | {np.mean(events):.0f} | "
              f"{np.mean(groups):.0f} | {1000 * np.median(spent):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
