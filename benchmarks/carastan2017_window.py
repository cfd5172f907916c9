"""The sequence simulator of Carastan-Santos & de Camargo (2017), re-implemented to test why our
Table 4 differs from theirs (benchmarks/results/learned.md, section 5).

Their artifact (github.com/hpcsched/gen-sched-policies, ``sched-performance-tester``) does not
schedule a whole waiting queue as a batch scheduler (and our simulator) does. Written from its
behaviour, it is a *list* scheduler:

- the jobs of a sequence form a list in submission order; position i is dispatched when its job
  has arrived and enough cores are free (strict list scheduling: nothing passes the head);
- before each attempt, only a **window of the next ``window`` = 32 positions** (those already
  arrived) is re-ordered by the policy, so an arrived job further back cannot be picked;
- the **first ``head`` = 16 jobs** of a sequence are dispatched in order (the "state" of the
  trials) and left out of the AVEbsld;
- a sequence is 16 jobs plus every later job submitted within 15 days of the first, and the
  next sequence starts right after it (consecutive from the start of the trace);
- ``s`` in F1-F4 is the submission time from the sequence start, ``log10(0) = -inf``;
  UNICEF divides by ``log2(n + 1e-20)``, zero for one-core jobs (so they always go first);
- with backfilling, after ordering, the first job of the window that fits now without delaying
  the head (estimated shadow time, or within the extra cores; running jobs counted by estimated
  end, then dispatch order) is moved to the head -- one per pass, repeated as the loop comes back;
- each dispatch is a blocking SimGrid message (1000 B over two 100 us links; with SimGrid's default
  latency factor 13.01 about ``latency`` = 2.6 ms), so the clock drifts off whole seconds, while
  decisions (arrivals, ages, shadow times) see the clock truncated to whole seconds.

``--window 0`` orders every arrived job instead (a whole-queue scheduler, as ours); with
``--head 0`` nothing is exempt. Everything else is kept, so the difference between the two runs
is the window alone.

On the artifact's workloads (its first version's ``lublin_256.swf``, ``lublin_1024.swf`` and
``*_est.swf``) and the archive's CTC-SP2 / SDSC-BLUE traces, this reproduces Table 4 to the printed
digits (``f1a``-``f4a``: the artifact's unrounded coefficients); see benchmarks/results/learned.md.

On the artifact's workloads (its first version's ``lublin_256.swf``, ``lublin_1024.swf`` and
``*_est.swf``) and the archive's CTC-SP2 / SDSC-BLUE traces, this reproduces Table 4's rows with
actual runtimes and with estimates to the printed digits (``f1a``-``f4a``: the artifact's unrounded
coefficients), the backfilling rows approximately (benchmarks/results/learned.md, section 5).

    python benchmarks/carastan2017_window.py TRACE.swf[.gz] --cores 256 --sequences 10 \
        [--setting actual|estimate|easy] [--window 32] [--policies fcfs,wfp3,...]
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from batsched_ml.workloads.swf import read_swf

DAY = 86400
TAU = 10.0
EPS = 1e-20


def _log10(x: float) -> float:
    return math.log10(x) if x > 0 else -math.inf


def _unicef_denominator(n: float, plus_one: bool) -> float:
    return math.log2(n + 1.0) if plus_one else math.log2(n + EPS)


def _spt(r, n, s, age):
    return r


def _wfp3(r, n, s, age):
    return (age / r) ** 3 * n


def _unicef(r, n, s, age, plus_one=False):
    den = (math.log2(n + 1.0) if plus_one else math.log2(n + EPS)) * r
    return math.inf if den == 0 else (age + EPS) / den


# name -> (score(r, n, s, age), highest first); None keeps the list order. Table 3's forms for F1-F4.
POLICIES = {
    "fcfs": None,
    "spt": (_spt, False),
    "wfp3": (_wfp3, True),
    "unicef": (_unicef, True),
    "unicef+1": (lambda r, n, s, age: _unicef(r, n, s, age, plus_one=True), True),
    "f1": (lambda r, n, s, age: math.log10(r) * n + 8.70e2 * _log10(s), False),
    "f2": (lambda r, n, s, age: math.sqrt(r) * n + 2.56e4 * _log10(s), False),
    "f3": (lambda r, n, s, age: r * n + 6.86e6 * _log10(s), False),
    "f4": (lambda r, n, s, age: r * math.sqrt(n) + 5.30e5 * _log10(s), False),
    # the artifact's unrounded coefficients, merged as c3 / (c1 c2)
    "f1a": (lambda r, n, s, age: math.log10(r) * n + 870.96284 * _log10(s), False),
    "f2a": (lambda r, n, s, age: math.sqrt(r) * n + 25673.339 * _log10(s), False),
    "f3a": (lambda r, n, s, age: r * n + 6862777.5 * _log10(s), False),
    "f4a": (lambda r, n, s, age: r * math.sqrt(n) + 530987.55 * _log10(s), False),
}


def policy(name: str):
    """A named policy, or ``expr:FORMULA`` / ``learned:FILE#k`` through our expression policies."""
    if name in POLICIES:
        return POLICIES[name]
    from batsched_ml.policies.expression import policy_from_spec

    expr = policy_from_spec(name)
    if expr is None:
        raise SystemExit(f"unknown policy {name!r}; known: {', '.join(POLICIES)}, expr:..., learned:...")
    return (lambda r, n, s, age: expr.value(r, n, s, age), False)


def sequences(trace, count: int, days: float = 15, head: int = 16, estimates: bool = False) -> list:
    """The artifact's cut: from the first job on, ``head`` jobs then every job submitted within
    ``days`` of the first; the next sequence starts after the last one taken. Jobs without a
    runtime or cores (or estimate, when used) are dropped first. Times relative to the start."""
    jobs = trace.jobs
    keep = (jobs["run_time"] > 0) & (jobs["allocated_procs"] > 0)
    if estimates:
        keep &= jobs["requested_time"] > 0
    jobs = jobs[keep]
    submit = jobs["submit_time"].astype(np.int64)
    out, first = [], 0
    for _ in range(count):
        if first + head >= len(jobs):
            break
        start = submit[first]
        last = first + head
        while last < len(jobs) and submit[last] - start <= days * DAY:
            last += 1
        if last == len(jobs):  # the trace ended inside this sequence
            break
        part = jobs[first:last]
        out.append({"s": (submit[first:last] - start).tolist(), "r": part["run_time"].astype(np.int64).tolist(),
                    "n": part["allocated_procs"].astype(np.int64).tolist(),
                    "e": part["requested_time"].astype(np.int64).tolist()})
        first = last
    return out


def simulate(seq: dict, cores: int, pol, window: int = 32, head: int = 16, estimates: bool = False,
             backfill: bool = False, exact_spt: bool = True, latency: float = 0.0026) -> float:
    """AVEbsld (tau 10 s) of one sequence, over the jobs after the first ``head``."""
    s, r, n = seq["s"], seq["r"], seq["n"]
    d = seq["e"] if estimates else r           # what the policy (and backfilling) sees
    total = len(s)
    order = list(range(total))                 # list position -> job
    start = [0] * total
    dispatched = [0] * total                   # job -> its list position when dispatched
    running: list = []                         # heap of (end, cores, job)
    free, now = cores, 0

    def release(t):
        nonlocal free
        while running and running[0][0] <= t:
            free += heapq.heappop(running)[1]

    def reorder(i):
        hi = total if window <= 0 else min(i + window, total)
        k = i
        while k < hi and s[order[k]] <= int(now):
            k += 1
        if k - i <= 1:
            return
        seg = order[i:k]
        if pol is not None:
            score, highest = pol
            if score is _spt and exact_spt and len(seg) <= 64:
                _swap_sort(seg, d)
            else:   # Python's sort is stable, also reversed: equal scores keep the list order
                keys = {j: score(d[j], n[j], s[j], int(now) - s[j]) for j in seg}
                seg.sort(key=keys.__getitem__, reverse=highest)
        if backfill:
            _backfill(seg)
        order[i:k] = seg

    def _backfill(seg):
        head_job = seg[0]
        if free >= n[head_job]:
            return
        # shadow time: when the running jobs, by estimated end (whole seconds), free enough cores
        ends = sorted((int(start[j] + d[j] - int(now)), dispatched[j], j) for (_, _, j) in running)
        avail, shadow, extra = free, 0, 0
        for remaining, _, j in ends:
            avail += n[j]
            if avail >= n[head_job]:
                shadow, extra = int(now) + remaining, avail - n[head_job]
                break
        for pos in range(1, len(seg)):
            j = seg[pos]
            if (n[j] <= free and int(now) + d[j] <= shadow) or n[j] <= min(free, extra):
                seg.insert(0, seg.pop(pos))
                return

    arrivals = sorted(s)
    for i in range(total):
        while True:
            if i >= head:
                reorder(i)
            j = order[i]
            if now < s[j]:
                now = s[j]
                release(now)
            if free >= n[j]:
                break
            nxt = bisect.bisect_right(arrivals, now)
            t_arr = arrivals[nxt] if nxt < total else math.inf
            t_end = running[0][0] if running else math.inf
            now = min(t_arr, t_end)
            release(now)
        now += latency
        start[j] = now
        dispatched[j] = i
        free -= n[j]
        heapq.heappush(running, (now + r[j], n[j], j))
    measured = order[head:]
    bsld = [max((start[j] - s[j] + r[j]) / max(r[j], TAU), 1.0) for j in measured]
    return sum(bsld) / len(bsld)


def _swap_sort(seg: list, d: list) -> None:
    """The artifact's SPT sort (for i, for j: swap when d[i] < d[j]): ascending, its own tie order."""
    m = len(seg)
    for a in range(m):
        for b in range(m):
            if d[seg[a]] < d[seg[b]]:
                seg[a], seg[b] = seg[b], seg[a]


def load(trace: str, cores: int):
    """An SWF file, or ``lublin:SEED[:JOBS]``: our generator's workload for ``cores``."""
    if not trace.startswith("lublin:"):
        return read_swf(trace, strict=False)
    from types import SimpleNamespace

    from batsched_ml.workloads.lublin import lublin_jobs

    seed, _, jobs = trace[len("lublin:"):].partition(":")
    return SimpleNamespace(jobs=lublin_jobs(cores, int(jobs or 20000), seed=int(seed)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", help="SWF file, or lublin:SEED[:JOBS] (our generator, 20,000 jobs)")
    ap.add_argument("--cores", type=int, required=True)
    ap.add_argument("--sequences", type=int, default=10)
    ap.add_argument("--days", type=float, default=15)
    ap.add_argument("--setting", choices=["actual", "estimate", "easy"], default="actual")
    ap.add_argument("--window", type=int, default=32, help="re-ordered positions (0: the whole queue)")
    ap.add_argument("--head", type=int, default=16, help="jobs dispatched in order and not measured")
    ap.add_argument("--policies", default="fcfs,wfp3,unicef,spt,f4,f3,f2,f1")
    ap.add_argument("--latency", type=float, default=0.0026, help="seconds per dispatch (SimGrid message)")
    ap.add_argument("--our-estimates", type=int, metavar="SEED",
                    help="replace the trace's estimates by our generator's (user_estimates, this seed)")
    ap.add_argument("--csv", help="append one row per policy (trace, setting, window, head, policy, n, median, mean)")
    ap.add_argument("--name", help="trace name in the CSV (default: the file name)")
    args = ap.parse_args(argv)

    estimates = args.setting != "actual"
    trace = load(args.trace, args.cores)
    if args.our_estimates is not None:
        from batsched_ml.workloads.lublin import user_estimates

        rng = np.random.default_rng(args.our_estimates)
        trace.jobs["requested_time"] = user_estimates(np.maximum(trace.jobs["run_time"], 1), rng)
    seqs = sequences(trace, args.sequences, args.days, args.head, estimates)
    print(f"{args.trace}: {len(seqs)} sequences of {[len(q['s']) for q in seqs]} jobs, {args.cores} cores, "
          f"setting {args.setting}, window {args.window or 'all'}, head {args.head}", flush=True)
    for name in args.policies.split(","):
        t0 = time.process_time()
        pol = policy(name)
        values = [simulate(q, args.cores, pol, args.window, args.head, estimates, args.setting == "easy",
                           latency=args.latency)
                  for q in seqs]
        if args.csv:
            with open(args.csv, "a") as fh:
                fh.write(f"{args.name or Path(args.trace).name},{args.setting},{args.window},{args.head},{name},"
                         f"{len(values)},{statistics.median(values):.2f},{statistics.fmean(values):.2f}\n")
        print(f"  {name:10s} median {statistics.median(values):10.2f}  mean {statistics.fmean(values):10.2f}  "
              f"({time.process_time() - t0:.1f} s CPU)  " + " ".join(f"{v:.1f}" for v in values), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
