"""A paused run as bytes and back: what ``Simulator.snapshot`` and ``Simulator.from_snapshot`` do.

Between two events the whole run is in its objects (the simulator's jobs, the server with its
network of sleeping actors and messages in transit, the jobs file, the scheduler it calls: the
decision core, the scheduler and every plugin, learned models and random states included), so a
snapshot is that object graph pickled. What the inputs already hold is not copied: a job of the
workloads is written as its id, with the fields the run changed (none until it is submitted, its
final state once it ended), and the workloads' profiles, job lists and submitters' positions
likewise; a decision-core job refers to its workload entry instead of copying it. Loading rebuilds
a ``Simulator`` from the same inputs and puts the run back into it.

The payload is a sequence of frames, each an 8-byte length and a pickle: first the *ended* jobs
(the decision core's, and the final states of the simulator's), zlib-compressed, in the order they
were first written, then the run, uncompressed (compressing it would cost more than the rest of
the snapshot). An ended job never changes, so the frames of the jobs that ended before the
previous snapshot are the previous snapshot's own bytes, kept by the simulator (``SnapshotCache``):
each snapshot pickles only what ended since and the live run, and the jobs are read from the
first one that had not ended at the previous snapshot on. (A component that changes a job after
its end is not supported.)
"""

from __future__ import annotations

import io
import pickle
import struct
import threading
import zlib
from dataclasses import fields

from ..core.decision_core import DecisionCore
from ..core.job import FINISHED, REJECTED, Job
from ..snapshot_files import SnapshotError
from .actors import Submitter
from .records import SimJob

PROTOCOL = 5
COMPRESSION = 1  # zlib level: a third of the size for a few ms per MB
NOT_SUBMITTED = "NOT_SUBMITTED"
ACTIVE = ("SUBMITTED", "RUNNING")
ENDED = (FINISHED, REJECTED)  # a decision-core job in these states never changes again
# SimJob fields fixed by the inputs (the others are the run's: state, dates, allocation...)
INPUT_FIELDS = frozenset({"id", "workload", "profile_name", "profile", "subtime", "walltime", "res", "data",
                          "subtime_ns"})
RUN_FIELDS = tuple(f.name for f in fields(SimJob) if f.name not in INPUT_FIELDS)
JOB_FIELDS = tuple(f.name for f in fields(Job))
DATA = JOB_FIELDS.index("data")
# Simulator attributes fixed by the inputs (rebuilt on loading) or of this process only
NOT_STORED = frozenset({"nb_hosts", "host_names", "workloads", "profiles", "jobs", "static", "nb_static", "progress",
                        "_static_ids", "_session_start", "_between_events", "_in_loop", "_snapshot_cache"})
FRAME = struct.Struct("<Q")

_loading = threading.local()  # .simulator: rebuilt from the inputs; .ended / .registered: id -> ended Job / SimJob


class SnapshotCache:
    """The frames of ended jobs that earlier snapshots of this run wrote, and where to read on."""

    def __init__(self):
        self.frames: list[bytes] = []
        self.written: set = set()  # ids of the decision core's ended jobs in ``frames``
        self.sim_written: set = set()  # ids of the simulator's ended jobs in ``frames``
        self.registered_from = 0  # the registered jobs before this position ended and are in ``frames``
        self.core_from = 0  # the decision core's jobs before this position ended and are in ``frames``
        self.sim_from = 0  # the same for the simulator's jobs of the inputs

    def mark(self) -> tuple:
        return (len(self.frames), set(self.written), set(self.sim_written), self.core_from, self.sim_from,
                self.registered_from)

    def restore(self, mark: tuple) -> None:
        """Back to ``mark`` (a snapshot that failed half-way)."""
        n, self.written, self.sim_written, self.core_from, self.sim_from, self.registered_from = mark
        del self.frames[n:]


class _RunPickler(pickle.Pickler):
    """Pickles a simulator's run, writing what the inputs hold as references to them and the
    decision core's ended jobs as references to the frames that hold them."""

    def __init__(self, file, simulator, cache: SnapshotCache):
        super().__init__(file, protocol=PROTOCOL)
        self.simulator = simulator
        self.static_ids = simulator.static_ids()
        self.workload_of = {id(jobs): name for name, jobs in simulator.static.items()}
        self.cache = cache
        self.ended: list[tuple] = []  # decision-core jobs ended since the cache's frames, encoded
        self.ended_inputs: list[tuple] = []  # (id, final state) of the simulator's, likewise
        self.ended_registered: list[SimJob] = []  # the simulator's jobs registered during the run, ended

    def reducer_override(self, obj):
        kind = type(obj)
        if kind is DecisionCore:
            state = dict(obj.__dict__)
            state["jobs"] = self._core_jobs(obj.jobs)
            return DecisionCore.__new__, (DecisionCore,), state, None, None, _set_core
        if kind is Job:
            if obj.state in ENDED:
                if obj.id not in self.cache.written:
                    self.cache.written.add(obj.id)
                    self.ended.append(self._fields(obj))
                return _ended_job, (obj.id,)
            return _core_job, (self._fields(obj),)
        if kind is SimJob:
            if obj.id not in self.static_ids:
                if obj.id in self.cache.sim_written:
                    return _ended_registered, (obj.id,)  # a registered job that ended, in a frame
                return NotImplemented  # registered during the run: written whole
            return _input_job, (obj.id,), _changes(obj), None, None, _set_run_fields
        if kind is Submitter:
            return _input_submitter, (self.workload_of[id(obj.jobs)],), (obj.net, obj.next), None, None, _set_submitter
        if obj is self.simulator:
            return _input_simulator, (_shape(obj),), _run_state(obj, self), None, None, _set_run_state
        return NotImplemented

    def _core_jobs(self, jobs: dict) -> tuple:
        """A decision core's jobs: all their ids in order, and the jobs not ended (the ended ones are
        in the frames, those that ended since the last snapshot added now)."""
        cache, written, ended = self.cache, self.cache.written, self.ended
        values = list(jobs.values())
        active, first = {}, None
        for i in range(cache.core_from, len(values)):
            job = values[i]
            if job.state in ENDED:
                if job.id not in written:
                    written.add(job.id)
                    ended.append(self._fields(job))
            else:
                active[job.id] = job
                if first is None:
                    first = i
        cache.core_from = len(values) if first is None else first
        return list(jobs), active

    def _fields(self, job: Job) -> tuple:
        """A decision-core job's fields, its workload entry as a reference when it is one."""
        values = [getattr(job, f) for f in JOB_FIELDS]
        sim_job = self.simulator.jobs.get(job.id)
        if sim_job is not None and sim_job.data is job.data and job.id in self.static_ids:
            values[DATA] = None
        return tuple(values)


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


def _run_state(simulator, pickler: _RunPickler) -> dict:
    state = {k: v for k, v in simulator.__dict__.items() if k not in NOT_STORED}
    state["_wall_before"] = simulator.wall_time() if simulator._in_loop else simulator._wall_before
    cache, values = pickler.cache, list(simulator.jobs.values())
    written, ended = cache.sim_written, pickler.ended_inputs
    live, first = [], None
    for i in range(cache.sim_from, simulator.nb_static):  # the jobs of the inputs come first
        job = values[i]
        if job.state == NOT_SUBMITTED:
            pass
        elif job.alloc == 0 and job.state not in ACTIVE:
            if job.id not in written:
                written.add(job.id)
                ended.append((job.id, job.state))
            continue
        else:
            live.append(job)
        if first is None:
            first = i
    cache.sim_from = simulator.nb_static if first is None else first
    state["input_jobs"] = live  # (their references carry their fields)
    registered = values[simulator.nb_static:]
    live, first = {}, None
    for i in range(cache.registered_from, len(registered)):
        job = registered[i]
        if job.alloc == 0 and job.state not in ACTIVE and job.state != NOT_SUBMITTED:
            if job.id not in written:
                written.add(job.id)
                pickler.ended_registered.append(job)
        else:
            live[job.id] = job
            if first is None:
                first = i
    cache.registered_from = len(registered) if first is None else first
    state["registered_jobs"] = ([job.id for job in registered], live)
    return state


def _frame(data: bytes, compress: bool = True) -> bytes:
    packed = zlib.compress(data, COMPRESSION) if compress else data
    return FRAME.pack(len(packed) << 1 | compress) + packed


def dumps(simulator, cache: SnapshotCache) -> bytes:
    """The payload of a snapshot of ``simulator``'s run; ``cache``: what earlier ones wrote (updated)."""
    out = io.BytesIO()
    pickler = _RunPickler(out, simulator, cache)
    mark = cache.mark()
    try:
        pickler.dump(simulator)
        if pickler.ended or pickler.ended_inputs or pickler.ended_registered:
            ended = (pickler.ended, pickler.ended_inputs, pickler.ended_registered)
            cache.frames.append(_frame(pickle.dumps(ended, protocol=PROTOCOL)))
    except BaseException:
        cache.restore(mark)  # nothing of this attempt is in the frames
        raise
    return b"".join(cache.frames) + _frame(out.getvalue(), compress=False)


def loads(payload: bytes, fresh):
    """The run of ``payload`` put back into ``fresh``, a Simulator built from the same inputs."""
    frames, at = [], 0
    try:
        while at < len(payload):
            (word,) = FRAME.unpack_from(payload, at)
            size, start = word >> 1, at + FRAME.size
            frames.append(zlib.decompress(payload[start:start + size]) if word & 1 else payload[start:start + size])
            at = start + size
    except (struct.error, zlib.error) as exc:
        raise SnapshotError(f"the snapshot's payload is damaged: {exc}") from None
    _loading.simulator, _loading.ended, _loading.registered = fresh, {}, {}
    try:
        for frame in frames[:-1]:
            ended, ended_inputs, ended_registered = pickle.loads(frame)
            for values in ended:
                job = _job_of(values)
                _loading.ended[job.id] = job
            for job_id, final in ended_inputs:
                _set_run_fields(_input_job(job_id), final)
            for job in ended_registered:
                _loading.registered[job.id] = job
        return pickle.loads(frames[-1])
    finally:
        _loading.simulator = _loading.ended = _loading.registered = None


# ------------------------------------------------------------------ rebuilding (called by pickle)
def _fresh():
    simulator = getattr(_loading, "simulator", None)
    if simulator is None:
        raise SnapshotError("a snapshot's run is loaded with Simulator.from_snapshot (it needs the inputs)")
    return simulator


def _job_of(values: tuple) -> Job:
    values = list(values)
    if values[DATA] is None:
        values[DATA] = _input_job(values[JOB_FIELDS.index("id")]).data
    return Job(**dict(zip(JOB_FIELDS, values)))


def _core_job(values: tuple) -> Job:
    return _job_of(values)


def _ended_job(job_id: str) -> Job:
    return _loading.ended[job_id]


def _ended_registered(job_id: str) -> SimJob:
    return _loading.registered[job_id]


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


def _set_core(core, state: dict) -> None:
    ids, active = state["jobs"]
    ended = _loading.ended
    state["jobs"] = {i: active[i] if i in active else ended[i] for i in ids}
    core.__dict__.update(state)


def _set_run_state(simulator, state: dict) -> None:
    ids, live = state.pop("registered_jobs")
    del state["input_jobs"]  # (rebuilt in place: their references were enough)
    simulator.__dict__.update(state)
    for workload, name, profile in simulator.registered_profiles:
        simulator.profiles.setdefault(workload, {})[name] = profile
    ended = _loading.registered
    for job_id in ids:
        simulator.jobs[job_id] = live[job_id] if job_id in live else ended[job_id]
