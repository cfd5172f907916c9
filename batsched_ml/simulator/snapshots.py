"""A paused run as bytes and back: what ``Simulator.snapshot`` and ``Simulator.from_snapshot`` do.

Between two events the whole run is in its objects (the simulator's jobs, the server with its
network of sleeping actors and messages in transit, the jobs file, the scheduler it calls: the
decision core, the scheduler and every plugin, learned models and random states included), so a
snapshot is that object graph pickled. What the inputs already hold is not copied: a job of the
workloads is written as its id, with the fields the run changed (none until it is submitted, its
final state once it ended), and the workloads' profiles, job lists and submitters' positions
likewise; a decision-core job refers to its workload entry instead of copying it. Loading rebuilds
a ``Simulator`` from the same inputs and puts the run back into it.

What only grows is written once. A snapshot is the run's own frame (the live objects) and the
**shared frames** before it, each written by one snapshot and referred to by the later ones
(``snapshot_files.Frame``: stored once beside the snapshots, by their digest): the *ended* jobs (the
decision core's, the final states of the simulator's, the requeued attempts registered during the
run) and the pieces of the containers that only grow (``incremental``: training rows, per-job
records, the profiles and ids of the jobs submitted...). Each snapshot pickles what ended or grew
since the previous one and the live run; the simulator keeps the frames written so far
(``SnapshotCache``, not stored), and the jobs are read from the first one that had not ended at
the previous snapshot on, so that a snapshot costs what changed since the last one, whatever the
run's length; and each snapshot remembers which of the jobs it read had not ended, so that the next
reads those and the ones submitted since, not every job after the oldest one still running or
queued. (A component that changes a job after its end, or an item of an ``incremental``
container after adding it without saying so, is not supported.)
"""

from __future__ import annotations

import io
import pickle
import threading
import weakref
import zlib
from dataclasses import fields
from itertools import chain, islice
from operator import attrgetter

import zstandard

from ..core.decision_core import DecisionCore
from ..core.job import FINISHED, REJECTED, Job
from ..incremental import Incremental
from ..snapshot_files import Frame, SnapshotError
from .actors import Submitter
from .records import SimJob

PROTOCOL = 5
COMPRESSION = 1  # Zstandard level: a fifth of the size at ~500 MB/s (zlib's level 1: the same size, 3x the CPU)
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # a Zstandard frame's first bytes (format 2's frames are zlib streams)
NOT_SUBMITTED = "NOT_SUBMITTED"
ACTIVE = ("SUBMITTED", "RUNNING")
ENDED = (FINISHED, REJECTED)  # a decision-core job in these states never changes again
# SimJob fields fixed by the inputs (the others are the run's: state, dates, allocation...)
INPUT_FIELDS = frozenset({"id", "workload", "profile_name", "profile", "subtime", "walltime", "res", "data",
                          "subtime_ns"})
RUN_FIELDS = tuple(f.name for f in fields(SimJob) if f.name not in INPUT_FIELDS)
_run_values = attrgetter(*RUN_FIELDS)
JOB_FIELDS = tuple(f.name for f in fields(Job))
DATA = JOB_FIELDS.index("data")
_job_values = attrgetter(*JOB_FIELDS)  # a job's fields as a tuple, in one C call (every ended job's, once)
# Simulator attributes fixed by the inputs (rebuilt on loading) or of this process only
NOT_STORED = frozenset({"nb_hosts", "host_names", "workloads", "profiles", "jobs", "static", "nb_static", "progress",
                        "_static_ids", "_session_start", "_between_events", "_in_loop", "_snapshot_cache"})

_loading = threading.local()  # the state of one loads(): see _Loading


class _Stream:
    """What earlier snapshots wrote of one object that grows (an ``incremental`` container, a decision
    core's job ids, the simulator's registered jobs): its key in the shared frames, how much of it
    (``version``) and, for jobs, the position of the first one not ended then and, when this
    process's last snapshot read them, those not ended (``live``: (position, job) pairs) up to
    ``frontier``, where it stopped reading (a loaded run's first snapshot reads from ``position``)."""

    __slots__ = ("ref", "key", "version", "position", "live", "frontier")

    def __init__(self, ref, key: int, version: int = 0, position: int = 0):
        self.ref, self.key, self.version, self.position = ref, key, version, position
        self.live, self.frontier = None, position

    def moved(self, version: int, position: int, live: list | None = None, frontier: int = 0) -> None:
        self.version, self.position, self.live, self.frontier = version, position, live, frontier

    def known(self) -> tuple:
        """What the last snapshot read: the jobs not ended then, and where to read on."""
        return (self.live, self.frontier) if self.live is not None else ((), self.position)


class SnapshotCache:
    """What the earlier snapshots of a run wrote in their shared frames, and where to read on."""

    def __init__(self):
        self.frames: list[Frame] = []
        self.core_written: set = set()  # ids of the decision core's ended jobs in ``frames``
        self.sim_written: set = set()  # ids of the simulator's ended jobs in ``frames``
        self.sim_from: dict = {}  # workload -> position (in its submission order) of its first job not ended
        self.sim_live: dict = {}  # workload -> (the (position, job) not ended at the last snapshot, where it stopped)
        self._streams: dict[int, _Stream] = {}  # id(object) -> its stream
        self._keys = 0

    def stream(self, obj) -> _Stream:
        """``obj``'s stream, a new one (nothing written yet) the first time."""
        found = self._streams.get(id(obj))
        if found is not None and found.ref() is obj:
            return found
        self._keys += 1
        return self.resume_stream(obj, self._keys - 1, 0, 0)

    def resume_stream(self, obj, key: int, version: int, position: int) -> _Stream:
        """``obj``'s stream as a loaded snapshot's frames left it."""
        ident = id(obj)
        ref = weakref.ref(obj, lambda dead: self._streams.get(ident) is not None
                          and self._streams[ident].ref is dead and self._streams.pop(ident))
        stream = self._streams[ident] = _Stream(ref, key, version, position)
        self._keys = max(self._keys, key + 1)
        return stream


class _NewFrame:
    """What one snapshot adds: the jobs ended and the pieces grown since the previous one, and
    where the cache reads on once it is written (nothing changes in the cache if the snapshot fails)."""

    def __init__(self):
        self.core_ended: list[tuple] = []  # decision-core jobs ended since, encoded
        self.sim_ended: list[tuple] = []  # (id, final state) of the simulator's jobs of the inputs
        self.registered: list[SimJob] = []  # the simulator's jobs registered during the run, ended
        self.pieces: list[tuple] = []  # (stream key, piece) of what grew
        self.core_written: set = set()
        self.sim_written: set = set()
        self.moves: list[tuple] = []  # (stream, version, position[, live, frontier])
        self.sim_from: dict = {}
        self.sim_live: dict = {}

    def __bool__(self) -> bool:
        return bool(self.core_ended or self.sim_ended or self.registered or self.pieces)

    def commit(self, cache: SnapshotCache) -> None:
        if self:
            data = pickle.dumps((self.core_ended, self.sim_ended, self.registered, self.pieces), protocol=PROTOCOL)
            cache.frames.append(Frame(zstandard.ZstdCompressor(level=COMPRESSION).compress(data)))
        cache.core_written |= self.core_written
        cache.sim_written |= self.sim_written
        cache.sim_from.update(self.sim_from)
        cache.sim_live.update(self.sim_live)
        for stream, *moved in self.moves:
            stream.moved(*moved)


class _RunPickler(pickle.Pickler):
    """Pickles a simulator's run, writing what the inputs hold as references to them, and what
    ended or grew as references to the shared frames (what is new there goes to ``new``)."""

    def __init__(self, file, simulator, cache: SnapshotCache):
        super().__init__(file, protocol=PROTOCOL)
        self.simulator = simulator
        self.static_ids = simulator.static_ids()
        self.workload_of = {id(jobs): name for name, jobs in simulator.static.items()}
        self.cache = cache
        self.new = _NewFrame()

    def reducer_override(self, obj):
        kind = type(obj)
        if kind is Job:
            if obj.state in ENDED:
                self._core_ended(obj)
                return _ended_job, (obj.id,)
            return _core_job, (self._fields(obj),)
        if kind is SimJob:
            if obj.id not in self.static_ids:
                if obj.id in self.cache.sim_written:
                    return _ended_registered, (obj.id,)  # a registered job that ended, in a frame
                return NotImplemented  # registered during the run: written whole
            return _input_job, (obj.id,), _changes(obj), None, None, _set_run_fields
        if isinstance(obj, Incremental):
            stream = self.cache.stream(obj)
            version = obj.version()
            if version != stream.version:
                self.new.pieces.append((stream.key, obj.changes_since(stream.version)))
                self.new.moves.append((stream, version, 0))
            return _incremental, (kind, stream.key, obj.incremental_state())
        if kind is DecisionCore:
            state = dict(obj.__dict__)
            state["jobs"] = self._core_jobs(obj)
            return DecisionCore.__new__, (DecisionCore,), state, None, None, _set_core
        if kind is Submitter:
            return _input_submitter, (self.workload_of[id(obj.jobs)],), (obj.net, obj.next), None, None, _set_submitter
        if obj is self.simulator:
            return _input_simulator, (_shape(obj),), _run_state(obj, self), None, None, _set_run_state
        return NotImplemented

    def _core_ended(self, job: Job) -> None:
        if job.id not in self.cache.core_written and job.id not in self.new.core_written:
            self.new.core_written.add(job.id)
            self.new.core_ended.append(self._fields(job))

    def _core_jobs(self, core: DecisionCore) -> tuple:
        """A decision core's jobs: the ids of those submitted since the last snapshot (to the
        frame), how many there are, where the first not ended is, and the jobs not ended (the
        ended ones are in the frames, those that ended since the last snapshot added now)."""
        jobs, stream = core.jobs, self.cache.stream(core)
        if len(jobs) > stream.version:
            self.new.pieces.append((stream.key, _last(jobs, len(jobs) - stream.version)))
        known, frontier = stream.known()
        live = []
        for pair in chain(known, enumerate(_last(jobs.values(), len(jobs) - frontier), frontier)):
            if pair[1].state in ENDED:
                self._core_ended(pair[1])
            else:
                live.append(pair)
        position = live[0][0] if live else len(jobs)
        self.new.moves.append((stream, len(jobs), position, live, len(jobs)))
        return stream.key, len(jobs), position, {job.id: job for _, job in live}

    def _fields(self, job: Job) -> tuple:
        """A decision-core job's fields, its workload entry as a reference when it is one."""
        values = _job_values(job)
        sim_job = self.simulator.jobs.get(job.id)
        if sim_job is not None and sim_job.data is job.data and job.id in self.static_ids:
            return values[:DATA] + (None,) + values[DATA + 1:]
        return values


def _last(items, n: int) -> list:
    """The last ``n`` of a dict's keys or values, in order, read from the end: skipping the
    dict's first entries would cost one step each (25 ns; 0.2 CPU s a run on CTC-SP2)."""
    return list(islice(reversed(items), n))[::-1] if n > 0 else []


def _changes(job: SimJob):
    """What the run changed in a job of the inputs: nothing before its submission; only its final
    state once its row is written (Batsim's checks read no more of an ended job); else every field."""
    state = job.state
    if state == NOT_SUBMITTED:
        return None
    if job.alloc == 0 and state not in ACTIVE:
        return state
    return _run_values(job)


def _shape(simulator) -> tuple:
    """What the inputs must give again: the machine size and each workload's number of jobs."""
    return simulator.nb_hosts, tuple((name, len(jobs)) for name, jobs in simulator.static.items())


def _ended(job: SimJob) -> bool:
    return job.alloc == 0 and job.state not in ACTIVE and job.state != NOT_SUBMITTED


def _run_state(simulator, pickler: _RunPickler) -> dict:
    state = {k: v for k, v in simulator.__dict__.items() if k not in NOT_STORED}
    state["_wall_before"] = simulator.wall_time() if simulator._in_loop else simulator._wall_before
    cache, new = pickler.cache, pickler.new
    written = cache.sim_written
    live = []
    for name, jobs in simulator.static.items():  # each workload's jobs, in their submission order
        known, start = cache.sim_live.get(name) or ((), cache.sim_from.get(name, 0))
        frontier = next((i for i in range(start, len(jobs)) if jobs[i].state == NOT_SUBMITTED), len(jobs))
        live_here = []
        for pair in chain(known, enumerate(jobs[start:frontier], start)):  # later ones: not submitted
            job = pair[1]
            if _ended(job):
                if job.id not in written and job.id not in new.sim_written:
                    new.sim_written.add(job.id)
                    new.sim_ended.append((job.id, job.state))
            else:
                live_here.append(pair)
        new.sim_live[name] = (live_here, frontier)
        new.sim_from[name] = live_here[0][0] if live_here else frontier
        live += [job for _, job in live_here]
    state["input_jobs"] = live  # (their references carry their fields)
    state["sim_from"] = dict(cache.sim_from, **new.sim_from)
    # the jobs registered during the run (requeued attempts) follow the inputs' in ``jobs``
    stream, nb_static = cache.stream(simulator), simulator.nb_static
    registered = len(simulator.jobs) - nb_static
    if registered > stream.version:
        new.pieces.append((stream.key, _last(simulator.jobs, registered - stream.version)))
    known, frontier = stream.known()
    alive = []
    for pair in chain(known, enumerate(_last(simulator.jobs.values(), registered - frontier), frontier)):
        job = pair[1]
        if _ended(job):
            if job.id not in written and job.id not in new.sim_written:
                new.sim_written.add(job.id)
                new.registered.append(job)
        else:
            alive.append(pair)
    position = alive[0][0] if alive else registered
    new.moves.append((stream, registered, position, alive, registered))
    state["registered_jobs"] = (stream.key, registered, position, {job.id: job for _, job in alive})
    return state


def dumps(simulator, cache: SnapshotCache) -> tuple[bytes, list[Frame]]:
    """A snapshot of ``simulator``'s run: its own payload, and the shared frames it refers to;
    ``cache``: what earlier ones wrote (updated with this one's new frame)."""
    out = io.BytesIO()
    pickler = _RunPickler(out, simulator, cache)
    pickler.dump(simulator)
    pickler.new.commit(cache)
    return out.getvalue(), list(cache.frames)


class _Loading:
    """One loads(): the inputs' simulator, what the shared frames hold, and the streams met (to
    seed the loaded run's SnapshotCache: its next snapshots go on from these frames)."""

    def __init__(self, simulator):
        self.simulator = simulator
        self.ended: dict = {}  # id -> ended decision-core Job
        self.registered: dict = {}  # id -> ended SimJob registered during the run
        self.sim_ended: list = []  # ids of the simulator's ended jobs of the inputs
        self.pieces: dict = {}  # stream key -> its pieces, in order
        self.streams: list = []  # (object, key, version, position)
        self.sim_from: dict = {}

    def joined(self, key: int, n: int) -> list:
        out = []
        for piece in self.pieces.get(key, ()):
            out += piece
        if len(out) != n:
            raise SnapshotError(f"the snapshot's frames hold {len(out)} ids of a list of {n}: a frame is missing")
        return out


def _decompressed(data: bytes) -> bytes:
    """A shared frame's pickle: Zstandard since format 3, zlib in format 2's frames."""
    if data.startswith(ZSTD_MAGIC):
        return zstandard.ZstdDecompressor().decompress(data)
    return zlib.decompress(data)


def loads(payload: bytes, frames: list[Frame], fresh):
    """The run of ``payload`` (with its shared ``frames``) put back into ``fresh``, a Simulator
    built from the same inputs; its SnapshotCache goes on from these frames."""
    try:
        shared = [pickle.loads(_decompressed(frame.data)) for frame in frames]
    except (zlib.error, zstandard.ZstdError) as exc:
        raise SnapshotError(f"the snapshot's payload is damaged: {exc}") from None
    loading = _loading.current = _Loading(fresh)
    try:
        for core_ended, sim_ended, registered, pieces in shared:
            for values in core_ended:
                job = _job_of(values)
                loading.ended[job.id] = job
            for job_id, final in sim_ended:
                _set_run_fields(_input_job(job_id), final)
                loading.sim_ended.append(job_id)
            for job in registered:
                loading.registered[job.id] = job
            for key, piece in pieces:
                loading.pieces.setdefault(key, []).append(piece)
        simulator = pickle.loads(payload)
    finally:
        _loading.current = None
    cache = simulator._snapshot_cache = SnapshotCache()
    cache.frames = list(frames)
    cache.core_written = set(loading.ended)
    cache.sim_written = set(loading.sim_ended) | set(loading.registered)
    cache.sim_from = loading.sim_from
    for obj, key, version, position in loading.streams:
        cache.resume_stream(obj, key, version, position)
    return simulator


# ------------------------------------------------------------------ rebuilding (called by pickle)
def _fresh():
    loading = getattr(_loading, "current", None)
    if loading is None:
        raise SnapshotError("a snapshot's run is loaded with Simulator.from_snapshot (it needs the inputs)")
    return loading


def _job_of(values: tuple) -> Job:
    values = list(values)
    if values[DATA] is None:
        values[DATA] = _input_job(values[JOB_FIELDS.index("id")]).data
    return Job(**dict(zip(JOB_FIELDS, values)))


def _core_job(values: tuple) -> Job:
    return _job_of(values)


def _ended_job(job_id: str) -> Job:
    return _fresh().ended[job_id]


def _ended_registered(job_id: str) -> SimJob:
    return _fresh().registered[job_id]


def _incremental(kind, key: int, state):
    loading = _fresh()
    obj = kind.rebuilt(loading.pieces.get(key, []), state)
    loading.streams.append((obj, key, obj.version(), 0))
    return obj


def _input_job(job_id: str) -> SimJob:
    try:
        return _fresh().simulator.jobs[job_id]
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
    submitter.jobs = _fresh().simulator.static[workload]
    return submitter


def _set_submitter(submitter: Submitter, state) -> None:
    submitter.net, submitter.next = state


def _input_simulator(shape: tuple):
    simulator = _fresh().simulator
    if _shape(simulator) != shape:
        nb_hosts, jobs = shape
        raise SnapshotError(f"the snapshot's run has {nb_hosts} hosts and workloads "
                            f"{', '.join(f'{w} of {n} jobs' for w, n in jobs)}; the inputs given have "
                            f"{simulator.nb_hosts} hosts and "
                            f"{', '.join(f'{w} of {len(j)} jobs' for w, j in simulator.static.items())}")
    return simulator


def _set_core(core, state: dict) -> None:
    loading = _fresh()
    key, n, position, active = state["jobs"]
    ended = loading.ended
    state["jobs"] = {i: active[i] if i in active else ended[i] for i in loading.joined(key, n)}
    core.__dict__.update(state)
    loading.streams.append((core, key, n, position))


def _set_run_state(simulator, state: dict) -> None:
    loading = _fresh()
    key, n, position, alive = state.pop("registered_jobs")
    del state["input_jobs"]  # (rebuilt in place: their references were enough)
    loading.sim_from = state.pop("sim_from")
    simulator.__dict__.update(state)
    for workload, name, profile in simulator.registered_profiles:
        simulator.profiles.setdefault(workload, {})[name] = profile
    ended = loading.registered
    for job_id in loading.joined(key, n):
        simulator.jobs[job_id] = alive[job_id] if job_id in alive else ended[job_id]
    loading.streams.append((simulator, key, n, position))
