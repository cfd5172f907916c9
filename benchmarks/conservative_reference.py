"""An independent conservative backfilling, job for job against ours (issue 23 §5).

Conservative backfilling (Mu'alem & Feitelson 2001), FCFS, reservations counting cores,
every job planned for its walltime, exact instants: at every instant where something
happens, the jobs that ended release their cores and the new arrivals join the queue;
if a job ended (or a reservation's start has come) every queued job, in queue order,
drops its reservation and takes the earliest start where its cores stay free for its
walltime (it cannot be later than before: its old place is free again); otherwise only
the new arrivals are placed. Then every job whose reservation starts now starts. A job
runs min(runtime, walltime) (Batsim kills it at its walltime).

This is written to be read, not to be fast: the profile is rebuilt from the intervals
at every search. It shares no code with batsched_ml's schedulers (only the workload
reader and, for the comparison, ``runner.simulate`` with exact instants).

Usage: python benchmarks/conservative_reference.py WORKLOAD.json --cores N [--first K]
       [--skip S] [--explain] [--show-queue TIME]
Prints AVEbsld (tau 10 s) of the reference conservative and of a textbook EASY written
the same way (``easy``), of ours (conservative and EASY, count, exact instants), and how
many jobs start at a different instant under conservative; --explain lists the jobs whose
EASY start is much earlier than their conservative one, --show-queue both schedules' state.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
from collections import deque


def load_jobs(path: str, first: int | None, skip: int = 0) -> tuple[list[dict], dict]:
    """The window of a workload file, as ``window_jobs``, and the workload."""
    with open(path) as f:
        workload = json.load(f)
    return window_jobs(workload, first, skip), workload


def window_jobs(workload: dict, first: int | None = None, skip: int = 0) -> list[dict]:
    """The workload's jobs as dicts (name, subtime, res, runtime, walltime), in file order,
    ``skip`` jobs left out and at most ``first`` kept, submission times shifted to start at 0."""
    profiles = workload["profiles"]
    raw = workload["jobs"][skip:]
    if first is not None:
        raw = raw[:first]
    origin = min(float(j["subtime"]) for j in raw)
    return [{"name": str(j["id"]), "subtime": float(j["subtime"]) - origin, "res": int(j["res"]),
             "runtime": float(profiles[j["profile"]]["delay"]), "walltime": float(j["walltime"])}
            for j in raw]


def fcfs_key(job: dict) -> tuple:
    """FCFS: submission time, then the job id as text (batsched's rule for ties, ours too)."""
    return job["subtime"], job["name"]


def free_steps(now: float, intervals, cores: int):
    """(times, free): free cores from each time on, for the intervals (start, end, cores)
    that end after ``now``; the first time is ``now``."""
    delta = {now: 0}
    for start, end, res in intervals:
        if end <= now:
            continue
        start = max(start, now)
        delta[start] = delta.get(start, 0) - res
        delta[end] = delta.get(end, 0) + res
    times = sorted(delta)
    free, level = [], cores
    for t in times:
        level += delta[t]
        free.append(level)
    return times, free


def earliest_start(now: float, res: int, duration: float, intervals, cores: int) -> float:
    """The first time from ``now`` at which ``res`` cores stay free for ``duration``."""
    times, free = free_steps(now, intervals, cores)
    for k, t in enumerate(times):
        if free[k] < res:
            continue
        end = t + duration
        j = k + 1
        while j < len(times) and times[j] < end and free[j] >= res:
            j += 1
        if j == len(times) or times[j] >= end:
            return t
    raise AssertionError("the machine never frees enough cores")  # the last step frees everything


def conservative(jobs: list[dict], cores: int, watch: float | None = None) -> dict:
    """Start time of every job (by name). With ``watch``, print the queue and its
    reservations as they stand after the instant ``watch``."""
    order = sorted(range(len(jobs)), key=lambda i: fcfs_key(jobs[i]))
    arrivals = deque(order)
    running: dict = {}  # job -> (start, planned end, real end)
    queue: list = []  # FCFS order
    reserved: dict = {}  # queued job -> start of its reservation
    started: dict = {}
    while arrivals or running or queue:
        now = _next_instant(arrivals, running, reserved, jobs)
        ended = [i for i, (_, _, end) in running.items() if end <= now]
        for i in ended:
            del running[i]
        new = []
        while arrivals and jobs[arrivals[0]]["subtime"] <= now:
            new.append(arrivals.popleft())
        queue.extend(new)
        due = any(start <= now for start in reserved.values())
        for i in (queue if ended or due else new):
            reserved.pop(i, None)
            intervals = [(s, planned, jobs[j]["res"]) for j, (s, planned, _) in running.items()]
            intervals += [(s, s + jobs[j]["walltime"], jobs[j]["res"]) for j, s in reserved.items()]
            reserved[i] = earliest_start(now, jobs[i]["res"], jobs[i]["walltime"], intervals, cores)
        for i in [i for i in queue if reserved[i] <= now]:
            job = jobs[i]
            running[i] = (now, now + job["walltime"], now + min(job["runtime"], job["walltime"]))
            started[job["name"]] = now
            queue.remove(i)
            del reserved[i]
        if watch is not None and now <= watch < _next_instant(arrivals, running, reserved, jobs):
            show_state(now, jobs, running, queue, reserved, cores)
    return started


def easy(jobs: list[dict], cores: int, watch: float | None = None) -> dict:
    """Textbook EASY (FCFS, counting cores, exact instants), for the comparison: at every instant,
    start the head while it fits; then its reservation is the first planned end at which enough
    cores are free (the shadow time; the cores left over then are the extra cores), and every
    other waiting job, in queue order, starts if it fits now and either ends by the shadow
    time or uses only extra cores."""
    order = sorted(range(len(jobs)), key=lambda i: fcfs_key(jobs[i]))
    arrivals = deque(order)
    running: dict = {}
    queue: list = []
    started: dict = {}

    def start(i, now):
        job = jobs[i]
        running[i] = (now, now + job["walltime"], now + min(job["runtime"], job["walltime"]))
        started[job["name"]] = now
        queue.remove(i)

    while arrivals or running or queue:
        now = _next_instant(arrivals, running, {}, jobs)
        for i in [i for i, (_, _, end) in running.items() if end <= now]:
            del running[i]
        while arrivals and jobs[arrivals[0]]["subtime"] <= now:
            queue.append(arrivals.popleft())
        free = cores - sum(jobs[i]["res"] for i in running)
        while queue and jobs[queue[0]]["res"] <= free:
            free -= jobs[queue[0]]["res"]
            start(queue[0], now)
        if not queue:
            continue
        head = jobs[queue[0]]
        shadow, available = now, free
        for planned, _, res in sorted((planned, i, jobs[i]["res"]) for i, (_, planned, _) in running.items()):
            if available >= head["res"]:
                break
            shadow, available = planned, available + res
        extra = available - head["res"]
        for i in list(queue[1:]):
            job = jobs[i]
            if job["res"] <= free and (now + job["walltime"] <= shadow or job["res"] <= extra):
                if now + job["walltime"] > shadow:
                    extra -= job["res"]
                free -= job["res"]
                start(i, now)
        if watch is not None and now <= watch < _next_instant(arrivals, running, {}, jobs):
            print(f"EASY at t={now:.0f}: {free} cores idle, head {head['name']} ({head['res']} cores) reserved in "
                  f"{shadow - now:.0f} s with {extra} extra cores; queue of {len(queue)}")
    return started


def _next_instant(arrivals, running, reserved, jobs) -> float:
    """The next arrival, real end of a running job or reservation start."""
    times = [jobs[arrivals[0]]["subtime"]] if arrivals else []
    times += [end for _, _, end in running.values()] + list(reserved.values())
    return min(times, default=float("inf"))


def show_state(now, jobs, running, queue, reserved, cores) -> None:
    """The queue and its reservations, and the free cores over the next steps of the profile
    (running jobs planned for their walltime, queued jobs at their reservations)."""
    busy = sum(jobs[i]["res"] for i in running)
    intervals = [(s, planned, jobs[j]["res"]) for j, (s, planned, _) in running.items()]
    running_free = free_steps(now, intervals, cores)
    intervals += [(s, s + jobs[j]["walltime"], jobs[j]["res"]) for j, s in reserved.items()]
    times, free = free_steps(now, intervals, cores)
    print(f"t={now:.0f}: {len(running)} running on {busy}/{cores} cores, {cores - busy} idle; queue of {len(queue)}")
    print("  free cores from now on (+seconds: free with the reservations / free with running jobs only):")
    steps = [f"+{t - now:.0f}: {f}/{running_free[1][running_free[0].index(t)] if t in running_free[0] else '-'}"
             for t, f in zip(times[:12], free[:12])]
    print("   " + ", ".join(steps))
    print("  queue (name, cores, walltime, waited so far, reservation in):")
    for i in queue[:20]:
        j = jobs[i]
        print(f"   {j['name']:>8} {j['res']:>5} {j['walltime']:>9.0f} {now - j['subtime']:>9.0f} "
              f"{reserved[i] - now:>10.0f}")
    if len(queue) > 20:
        print(f"   ... {len(queue) - 20} more")


def avebsld(jobs, starts, tau: float = 10.0) -> float:
    total = 0.0
    for j in jobs:
        run = min(j["runtime"], j["walltime"])
        wait = starts[j["name"]] - j["subtime"]
        total += max(1.0, (wait + run) / max(run, tau))
    return total / len(jobs)


def ours(jobs: list[dict], workload: dict, cores: int, scheduler: str) -> dict:
    """Start times from batsched_ml's scheduler on the same jobs, exact instants."""
    from batsched_ml.runner import build_scheduler, simulate
    from batsched_ml.simulator.engine import NO_LATENCY

    names = {j["name"] for j in jobs}
    origin = min(float(j["subtime"]) for j in workload["jobs"] if str(j["id"]) in names)
    window = {"nb_res": cores, "profiles": workload["profiles"],
              "jobs": [dict(j, subtime=float(j["subtime"]) - origin) for j in workload["jobs"]
                       if str(j["id"]) in names]}
    _, core = simulate(cores, window, build_scheduler(scheduler), latency=NO_LATENCY)
    return {j.name: j.start_time for j in core.jobs.values()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("--cores", type=int, required=True)
    parser.add_argument("--first", type=int, default=2000, help="jobs of the window (default 2000)")
    parser.add_argument("--skip", type=int, default=0, help="jobs of the workload before the window")
    parser.add_argument("--show-queue", type=float, help="print the reference's queue at this instant (window time)")
    parser.add_argument("--explain", action="store_true",
                        help="the jobs that wait longest under conservative compared with EASY")
    args = parser.parse_args(argv)
    jobs, workload = load_jobs(args.workload, args.first, args.skip)
    reference = conservative(jobs, args.cores, args.show_queue)
    textbook_easy = easy(jobs, args.cores, args.show_queue)
    mine = ours(jobs, workload, args.cores, "conservative")
    easy_ours = ours(jobs, workload, args.cores, "easy")
    differ = [j["name"] for j in jobs if abs(reference[j["name"]] - mine[j["name"]]) > 1e-6]
    print(f"{len(jobs)} jobs on {args.cores} cores, AVEbsld(10): conservative {avebsld(jobs, reference):.2f} "
          f"(reference) / {avebsld(jobs, mine):.2f} (ours), EASY {avebsld(jobs, textbook_easy):.2f} (reference) / "
          f"{avebsld(jobs, easy_ours):.2f} (ours); conservative jobs starting at another instant: {len(differ)}")
    for name in differ[:10]:
        print(f"  job {name}: reference {reference[name]:.3f}, ours {mine[name]:.3f}")
    if args.explain:
        by_name = {j["name"]: j for j in jobs}
        def bsld_gap(j):
            return (reference[j["name"]] - textbook_easy[j["name"]]) / max(min(j["runtime"], j["walltime"]), 10.0)

        gap = sorted(jobs, key=bsld_gap, reverse=True)[:15]
        total = sum(max(bsld_gap(j), 0.0) for j in jobs)
        print(f"these 15 jobs hold {100 * sum(bsld_gap(j) for j in gap) / total:.0f}% of the bsld the "
              "jobs lose to conservative (name, cores, walltime, runtime, wait EASY, wait conservative, "
              "submitted at):")
        for j in gap:
            n = j["name"]
            print(f"  {n:>8} {by_name[n]['res']:>5} {j['walltime']:>9.0f} {j['runtime']:>9.0f} "
                  f"{textbook_easy[n] - j['subtime']:>9.0f} {reference[n] - j['subtime']:>9.0f} {j['subtime']:>9.0f}")
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
