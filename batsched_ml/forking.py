"""Forks (issue 42): a new run from a snapshot's system state under another configuration.

The snapshot's run is loaded paused (``checkpointing.load_run``) and its scheduler replaced: a new
decision core takes over the old one's system state (``DecisionCore.take_over``: the date, the
machine, the ended jobs as they ended, the running jobs on their cores with their start times,
the queued jobs in their order, the kills and calls awaited) and its scheduler is handed the jobs
(``Scheduler.on_job_adopted``). What each component of the new configuration takes over from the
snapshot's is its own decision (``Scheduler.fork_from``, ``Params.fork_from``) and is always said:
``fork`` returns a sentence per component. The simulator's side of the run -- jobs still to
be submitted, messages in transit, the jobs file so far -- goes on unchanged.

A fork's *window* (``run_window``) makes branches comparable: each runs until every job
submitted before the window's end has ended; the jobs compared are those that had not started at
the fork (``starting_time`` at or after it in the jobs file).
"""

from __future__ import annotations

from .core.decision_core import DecisionCore
from .runner import InProcess, in_process
from .snapshot_files import SnapshotError

__all__ = ["WindowEnd", "fork", "run_window"]

ACTIVE = ("NOT_SUBMITTED", "SUBMITTED", "RUNNING")
CHECK_EVERY = 3600.0  # simulated seconds between two looks at a window's jobs once the window is over


def fork(sim, scheduler) -> tuple[DecisionCore, dict]:
    """Make the paused run ``sim`` go on with ``scheduler`` (a new Scheduler instance) instead of its
    own; returns the new decision core and ``{component: what it took over, or that it starts
    fresh and why}``, the scheduler first."""
    previous = sim.scheduler
    if not isinstance(previous, InProcess):
        raise SnapshotError("only a run of the in-process scheduler can be forked")
    old = previous.core
    dynamic = sim.dynamic_jobs or scheduler.may_requeue
    core = DecisionCore(scheduler, call_margin=old.call_margin)
    inherited = core.take_over(old, dynamic_jobs=dynamic)
    if scheduler.may_requeue and not sim.dynamic_jobs:
        sim.enable_dynamic_jobs()
    elif scheduler.may_requeue:
        sim.reopen_registration()
    sim.replace_scheduler(in_process(core))
    return core, account(core, old, inherited)


def account(core: DecisionCore, old: DecisionCore, inherited: dict) -> dict:
    """One sentence per component of the fork's scheduler: what it took over, or why it starts fresh."""
    scheduler = core.scheduler
    running = len(core.running)
    queued = sum(1 for j in core.jobs.values() if j.state == "QUEUED")
    out = {"scheduler": f"{scheduler.name} takes over {running} running and {queued} queued jobs (its own plan "
                        "made anew at its first pass)"}
    theirs = old.scheduler.components() if old.scheduler is not None else {}
    for kind, component in scheduler.components().items():
        name = _name(component)
        if kind in inherited:
            out[kind] = f"{name} takes over {inherited[kind]}"
        elif getattr(component, "fork_from", None) is None:
            out[kind] = f"{name} has no learned state to take over"
        elif theirs.get(kind) is None:
            out[kind] = f"{name} starts fresh (the snapshot's run had no {kind})"
        elif getattr(theirs[kind], "learned_state", dict)() == {} and type(theirs[kind]) is type(component):
            out[kind] = f"{name} has no learned state to take over"
        else:
            out[kind] = (f"{name} starts fresh (the snapshot's {kind} {_name(theirs[kind])} is another plugin, has "
                         "other parameters, or declares nothing to hand over)")
    return out


def _name(component) -> str:
    return str(getattr(component, "name", None) or type(component).__name__)


class WindowEnd:
    """Whether every job submitted before ``end`` (and every requeued attempt of one) has ended: a
    fork's window is over then. Jobs are read in submission order, from the first that had not
    ended at the previous look (an ended job never runs again: a requeue is a new job)."""

    def __init__(self, sim, end: float):
        self.sim, self.end = sim, end
        self.first = {name: 0 for name in sim.static}

    def reached(self) -> bool:
        jobs = self.sim.jobs
        for name, static in self.sim.static.items():
            i = self.first[name]
            while i < len(static) and static[i].subtime < self.end:
                job, attempt = static[i], 0
                while job is not None:
                    if job.state in ACTIVE:
                        self.first[name] = i
                        return False
                    attempt += 1
                    job = jobs.get(f"{static[i].id}#{attempt}")
                i += 1
            self.first[name] = i
        return True


def run_window(sim, end: float, watch=None):
    """Run the forked ``sim`` until every job submitted before ``end`` (simulated seconds: the fork's
    date plus its window) has ended, or the run ends: the result at the run's end, else None (the
    run paused there; ``sim.close()`` finishes its files)."""
    window = WindowEnd(sim, end)
    until = end
    while True:
        result = sim.resume(until=until, watch=watch)
        if result is not None or window.reached():
            return result
        until = max(sim.now, until) + CHECK_EVERY
