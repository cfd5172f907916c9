"""A paused run as bytes and back: what ``Simulator.snapshot`` and ``Simulator.from_snapshot`` do.

Between two events the whole run is in its objects (the simulator's jobs, the server with its
network of sleeping actors and messages in transit, the jobs file, the scheduler it calls: the
decision core, the scheduler and every plugin, learned models and random states included), so a
snapshot is that object graph pickled. What the inputs already hold is not copied: a job of the
workloads is written as its id, with the fields the run changed (none until it is submitted), and
the workloads' profiles, job lists and submitters' positions likewise; loading rebuilds a
``Simulator`` from the same inputs and puts the run back into it. A snapshot therefore grows with
the jobs submitted so far (and what the scheduler keeps of them), not with the trace.
"""

from __future__ import annotations

import io
import pickle
import threading
from dataclasses import fields

from ..snapshot_files import SnapshotError
from .actors import Submitter
from .records import SimJob

PROTOCOL = 5
NOT_SUBMITTED = "NOT_SUBMITTED"
ACTIVE = ("SUBMITTED", "RUNNING")
# SimJob fields fixed by the inputs (the others are the run's: state, dates, allocation...)
INPUT_FIELDS = frozenset({"id", "workload", "profile_name", "profile", "subtime", "walltime", "res", "data",
                          "subtime_ns"})
RUN_FIELDS = tuple(f.name for f in fields(SimJob) if f.name not in INPUT_FIELDS)
# Simulator attributes fixed by the inputs, rebuilt on loading rather than stored
INPUT_ATTRIBUTES = frozenset({"nb_hosts", "host_names", "workloads", "profiles", "jobs", "static", "nb_static",
                              "progress", "_static_ids", "_session_start", "_between_events", "_in_loop"})

_loading = threading.local()  # .simulator: the one rebuilt from the inputs, while a payload loads


class _RunPickler(pickle.Pickler):
    """Pickles a simulator's run, writing what the inputs hold as references to them."""

    def __init__(self, file, simulator):
        super().__init__(file, protocol=PROTOCOL)
        self.simulator = simulator
        self.static_ids = simulator.static_ids()
        self.workload_of = {id(jobs): name for name, jobs in simulator.static.items()}

    def reducer_override(self, obj):
        kind = type(obj)
        if kind is SimJob:
            if obj.id not in self.static_ids:
                return NotImplemented  # registered during the run: written whole
            return _input_job, (obj.id,), _changes(obj), None, None, _set_run_fields
        if kind is Submitter:
            return _input_submitter, (self.workload_of[id(obj.jobs)],), (obj.net, obj.next), None, None, _set_submitter
        if obj is self.simulator:
            return _input_simulator, (_shape(obj),), _run_state(obj), None, None, _set_run_state
        return NotImplemented


def _changes(job: SimJob):
    """What the run changed in a job of the inputs: nothing before its submission; only its final
    state once its row is written (Batsim's checks read no more of an ended job); else every field."""
    state = job.state
    if state == NOT_SUBMITTED:
        return None
    if job.alloc == 0 and state not in ACTIVE:
        return state
    return tuple(getattr(job, f) for f in RUN_FIELDS)


def _shape(simulator) -> tuple:
    """What the inputs must give again: the machine size and each workload's number of jobs."""
    return simulator.nb_hosts, tuple((name, len(jobs)) for name, jobs in simulator.static.items())


def _run_state(simulator) -> dict:
    state = {k: v for k, v in simulator.__dict__.items() if k not in INPUT_ATTRIBUTES}
    state["_wall_before"] = simulator.wall_time() if simulator._in_loop else simulator._wall_before
    static_ids = simulator.static_ids()
    state["registered_jobs"] = [j for j in simulator.jobs.values() if j.id not in static_ids]
    state["input_jobs"] = [j for j in simulator.jobs.values() if j.state != NOT_SUBMITTED and j.id in static_ids]
    given = {name: w.get("profiles", {}) for name, w in simulator.workloads}
    state["registered_profiles"] = [(w, name, p) for w, profiles in simulator.profiles.items()
                                    for name, p in profiles.items() if given.get(w, {}).get(name) is not p]
    return state


def dumps(simulator) -> bytes:
    out = io.BytesIO()
    _RunPickler(out, simulator).dump(simulator)
    return out.getvalue()


def loads(payload: bytes, fresh):
    """The run of ``payload`` put back into ``fresh``, a Simulator built from the same inputs."""
    _loading.simulator = fresh
    try:
        return pickle.loads(payload)
    finally:
        _loading.simulator = None


# ------------------------------------------------------------------ rebuilding (called by pickle)
def _fresh():
    simulator = getattr(_loading, "simulator", None)
    if simulator is None:
        raise SnapshotError("a snapshot's run is loaded with Simulator.from_snapshot (it needs the inputs)")
    return simulator


def _input_job(job_id: str) -> SimJob:
    try:
        return _fresh().jobs[job_id]
    except KeyError:
        raise SnapshotError(f"job {job_id} of the snapshot is not in the workloads given") from None


def _set_run_fields(job: SimJob, changed) -> None:
    if isinstance(changed, str):
        job.state = job.final_state = changed
    elif changed is not None:
        for name, value in zip(RUN_FIELDS, changed):
            setattr(job, name, value)


def _input_submitter(workload: str) -> Submitter:
    submitter = Submitter.__new__(Submitter)
    submitter.jobs = _fresh().static[workload]
    return submitter


def _set_submitter(submitter: Submitter, state) -> None:
    submitter.net, submitter.next = state


def _input_simulator(shape: tuple):
    simulator = _fresh()
    if _shape(simulator) != shape:
        nb_hosts, jobs = shape
        raise SnapshotError(f"the snapshot's run has {nb_hosts} hosts and workloads "
                               f"{', '.join(f'{w} of {n} jobs' for w, n in jobs)}; the inputs given have "
                               f"{simulator.nb_hosts} hosts and "
                               f"{', '.join(f'{w} of {len(j)} jobs' for w, j in simulator.static.items())}")
    return simulator


def _set_run_state(simulator, state: dict) -> None:
    registered_jobs = state.pop("registered_jobs")
    registered_profiles = state.pop("registered_profiles")
    del state["input_jobs"]  # (rebuilt in place: their references were enough)
    simulator.__dict__.update(state)
    for workload, name, profile in registered_profiles:
        simulator.profiles.setdefault(workload, {})[name] = profile
    for job in registered_jobs:
        simulator.jobs[job.id] = job
