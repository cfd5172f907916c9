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
Prints AVEbsld (tau 10 s) of the reference, of ours (conservative and EASY, count, exact
instants), and how many jobs start at a different instant; --explain follows the jobs
whose EASY start is much earlier than their conservative one.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
from collections import deque


def load_jobs(path: str, first: int | None, skip: int = 0) -> list[dict]:
    """The workload's jobs as dicts (name, subtime, res, runtime, walltime), in file order,
    ``skip`` jobs left out and at most ``first`` kept, submission times shifted to start at 0."""
    with open(path) as f:
        workload = json.load(f)
    profiles = workload["profiles"]
    raw = workload["jobs"][skip:]
    if first is not None:
        raw = raw[:first]
    origin = min(float(j["subtime"]) for j in raw)
    return [{"name": str(j["id"]), "subtime": float(j["subtime"]) - origin, "res": int(j["res"]),
             "runtime": float(profiles[j["profile"]]["delay"]), "walltime": float(j["walltime"])}
            for j in raw], workload


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
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i]["subtime"], i))  # FCFS: submission, then file order
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


def _next_instant(arrivals, running, reserved, jobs) -> float:
    """The next arrival, real end of a running job or reservation start."""
    times = [jobs[arrivals[0]]["subtime"]] if arrivals else []
    times += [end for _, _, end in running.values()] + list(reserved.values())
    return min(times, default=float("inf"))


def show_state(now, jobs, running, queue, reserved, cores) -> None:
    busy = sum(jobs[i]["res"] for i in running)
    print(f"t={now:.0f}: {len(running)} running on {busy}/{cores} cores; queue of {len(queue)} "
          "(name, cores, walltime, wait so far, reserved start - now):")
    for i in queue[:25]:
        j = jobs[i]
        print(f"   {j['name']:>8} {j['res']:>5} {j['walltime']:>9.0f} {now - j['subtime']:>9.0f} "
              f"{reserved[i] - now:>10.0f}")
    if len(queue) > 25:
        print(f"   ... {len(queue) - 25} more")


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
    mine = ours(jobs, workload, args.cores, "conservative")
    easy = ours(jobs, workload, args.cores, "easy")
    differ = [j["name"] for j in jobs if abs(reference[j["name"]] - mine[j["name"]]) > 1e-6]
    print(f"{len(jobs)} jobs on {args.cores} cores: AVEbsld(10) reference conservative "
          f"{avebsld(jobs, reference):.2f}, ours conservative {avebsld(jobs, mine):.2f}, ours EASY "
          f"{avebsld(jobs, easy):.2f}; jobs starting at another instant: {len(differ)}")
    for name in differ[:10]:
        print(f"  job {name}: reference {reference[name]:.3f}, ours {mine[name]:.3f}")
    if args.explain:
        by_name = {j["name"]: j for j in jobs}
        gap = sorted(jobs, key=lambda j: easy[j["name"]] - reference[j["name"]])[:15]
        print("jobs EASY starts much earlier (name, cores, walltime, runtime, wait EASY, wait conservative):")
        for j in gap:
            n = j["name"]
            print(f"  {n:>8} {by_name[n]['res']:>5} {j['walltime']:>9.0f} {j['runtime']:>9.0f} "
                  f"{easy[n] - j['subtime']:>9.0f} {reference[n] - j['subtime']:>9.0f}")
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
