"""Checkpoints of embedded-simulator runs (issue 42): when a run writes its snapshots, what
identifies the run a snapshot continues, and loading one to resume that run unchanged.

* ``Checkpointer`` is the run loop's watch (``Simulator.run(watch=...)``): a snapshot every
  ``every`` seconds of simulated time and/or ``every_wall`` seconds of wall-clock time, and one
  when SIGINT / SIGTERM stops the run (the signal is held back until the loop is between two
  events, where the whole run is in its objects). Snapshots go to a folder (by default
  ``PREFIX_checkpoints`` beside the outputs), atomically, the ``keep`` latest kept.
* ``run_identity`` is what a snapshot's header records of its run: the configuration, the
  inputs' digests, the version of batsched-ml and a digest of its code, the plugins'
  distributions. ``differences`` says, one item each, what a resumption would change: a
  resumed run is byte-identical to the run never interrupted only if nothing did.
* ``load_run`` rebuilds the paused run of a snapshot from its inputs, checked.

Forking a snapshot into another configuration is ``forking``'s.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from . import __version__, interrupts
from .simulator.actors import ns
from .simulator.engine import KEEP, Simulator, Watch
from .snapshot_files import Snapshot, SnapshotError, keep_last, snapshot_name
from .workloads.samples import sample_path

__all__ = ["CheckpointPolicy", "Checkpointer", "DEFAULT_KEEP", "checkpoint_dir", "code_fingerprint",
           "differences", "load_run", "run_identity"]

DEFAULT_KEEP = 3


def checkpoint_dir(prefix) -> Path:
    """Where a run's snapshots go by default: ``PREFIX_checkpoints/`` beside its outputs."""
    return Path(f"{prefix}_checkpoints")


@dataclass(frozen=True)
class CheckpointPolicy:
    """When a run writes snapshots, where, and how many it keeps (recorded in each snapshot: a
    resumed run goes on the same way unless told otherwise)."""

    directory: str
    every: float | None = None       # simulated seconds between two snapshots
    every_wall: float | None = None  # wall-clock seconds between two snapshots
    keep: int = DEFAULT_KEEP

    def to_dict(self) -> dict:
        return asdict(self)


# ------------------------------------------------------------------ the watch
class Checkpointer(Watch):
    """The watch of a checkpointed run (``Simulator.run(watch=...)``): snapshots by simulated
    time, wall-clock time and on SIGINT / SIGTERM, each with ``describe()`` (the run's identity)
    in its header. Also pauses the run at ``until`` (simulated seconds), with a snapshot. Use within
    ``watching``, which holds the signals back and runs the wall-clock timer."""

    def __init__(self, policy: CheckpointPolicy, describe, *, start: float = 0.0, until: float | None = None):
        super().__init__(until)
        self.policy = policy
        self.describe = describe
        self.every_ns = None if policy.every is None else ns(policy.every)
        self.next_ns = self.NEVER if self.every_ns is None else (ns(start) // self.every_ns + 1) * self.every_ns
        self.at = min(self.next_ns, self.until_ns)
        self.wall_due = False
        self.pause_snapshots = True  # a pause at ``until`` leaves a snapshot
        self.stop: interrupts.DeferredStop | None = None
        self.written: list[Path] = []
        # per snapshot: its date, job counts, size and CPU seconds (pickling, signing, writing)
        self.records: list[dict] = []

    def reached(self, sim, t: int) -> bool:
        self.at = min(self.next_ns, self.until_ns)  # first: an alert from now on is seen next time
        stop = self.stop.exception if self.stop is not None else None
        if stop is not None:
            stop.snapshot = self.write(sim)
            raise stop
        pause = t >= self.until_ns
        due = t >= self.next_ns
        if (pause and self.pause_snapshots) or due or self.wall_due:
            self.wall_due = False
            # the date it stands for: the pause or the checkpoint date reached (every event before
            # it happened, none at or after it), else the last event's
            date = self.until_ns if pause else (t // self.every_ns) * self.every_ns if due else None
            self.write(sim, date)
            if due:
                self.next_ns = (t // self.every_ns + 1) * self.every_ns
            self.at = min(self.next_ns, self.until_ns)
        return pause

    def write(self, sim, date: int | None = None) -> Path:
        """Snapshot ``sim`` into the folder (atomically), keep the latest ones; returns the file.
        ``date`` (ns): what the snapshot stands for, between the last event and the next one."""
        started = time.process_time()
        snapshot = sim.snapshot(date)
        snapshot.header["run"] = self.describe()
        snapshot.header["checkpoints"] = self.policy.to_dict()
        path = Path(self.policy.directory) / snapshot_name(snapshot.sim_time)
        written = snapshot.save(path)
        keep_last(self.policy.directory, self.policy.keep, newest=path)
        self.records.append(dict(snapshot.header["jobs"], sim_time=snapshot.sim_time, bytes=snapshot.size,
                                 bytes_written=written, cpu=time.process_time() - started))
        self.written.append(path)
        return path

    @contextmanager
    def watching(self):
        """SIGINT / SIGTERM held back until the loop is between two events (a snapshot is then
        written and the stop raised, ``exc.snapshot`` naming the file); the wall-clock timer on."""
        finished = threading.Event()
        timer = None
        if self.policy.every_wall is not None:
            def tick():
                while not finished.wait(self.policy.every_wall):
                    self.wall_due = True
                    self.alert()
            timer = threading.Thread(target=tick, name="batsched-ml checkpoints", daemon=True)
            timer.start()
        try:
            with interrupts.deferred(self.alert) as stop:
                self.stop = stop
                yield self
        finally:
            self.stop = None
            finished.set()


# ------------------------------------------------------------------ what identifies a run
@cache
def code_fingerprint() -> str:
    """SHA-256 of batsched-ml's own source files: a snapshot resumes only under the same code (the
    version number alone does not change with every edit of a development tree)."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def file_digest(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as src:
        for block in iter(lambda: src.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _input(item) -> dict:
    """An input as a snapshot records it: a file by its absolute path and digest, a workload given
    as a dict (campaign windows, jittered copies) or a host count by its own digest."""
    if isinstance(item, int):
        return {"hosts": item}
    if isinstance(item, dict):
        text = json.dumps(item, sort_keys=True, separators=(",", ":"), default=str)
        return {"data": True, "sha256": hashlib.sha256(text.encode()).hexdigest()}
    item = sample_path(item)  # ``sample:NAME``: the bundled file, recorded by where it is
    return {"path": str(Path(item).resolve()), "sha256": file_digest(item)}


def _plugins(config) -> dict:
    """The distribution (and version) of each plugin the configuration names."""
    from .config.plugins import GROUPS, SINGULAR, entries

    out = {}
    for kind in GROUPS:
        name = getattr(config, SINGULAR[kind], None)
        entry = entries(kind).get(name) if isinstance(name, str) else None
        if entry is not None:
            out[f"{SINGULAR[kind]} {name}"] = entry.distribution
    return out


def run_identity(config, platform, workloads, *, dynamic_jobs=None) -> dict:
    """What a snapshot records of its run (``header["run"]``), JSON-ready."""
    if not isinstance(workloads, (list, tuple)):
        workloads = [workloads]
    return {"batsched_ml": __version__, "code": code_fingerprint(), "plugins": _plugins(config),
            "config": config.to_dict(), "options_order": list(config.options),  # (the header's JSON sorts keys)
            "label": config.label(), "platform": _input(platform),
            "workloads": [_input(w) for w in workloads], "dynamic_jobs": dynamic_jobs}


def differences(recorded: dict, current: dict) -> list[str]:
    """What differs between a snapshot's run and the run about to continue it, one short item each."""
    out = []
    if recorded.get("batsched_ml") != current.get("batsched_ml"):
        out.append(f"batsched-ml {recorded.get('batsched_ml')} wrote it, this is {current.get('batsched_ml')}")
    elif recorded.get("code") != current.get("code"):
        out.append("batsched-ml's code changed since it was written")
    for name in sorted(set(recorded.get("plugins", {})) | set(current.get("plugins", {}))):
        was, now = recorded.get("plugins", {}).get(name), current.get("plugins", {}).get(name)
        if was != now and was is not None and now is not None:
            out.append(f"{name} comes from {now}, the snapshot's from {was}")
    out += _config_differences(recorded.get("config", {}), current.get("config", {}))
    out += _input_differences("platform", [recorded.get("platform")], [current.get("platform")])
    out += _input_differences("workload", recorded.get("workloads", []), current.get("workloads", []))
    return out


def _config_differences(was: dict, now: dict) -> list[str]:
    from .config.declare import settings

    out = []
    for name, spec in settings().items():
        if was.get(name) != now.get(name):
            out.append(f"{spec.flag} {_shown(was.get(name))} -> {_shown(now.get(name))}")
    before, after = was.get("options", {}), now.get("options", {})
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            out.append(f"-o {key} {_shown(before.get(key))} -> {_shown(after.get(key))}")
    return out


def _shown(value) -> str:
    return "(none)" if value is None else json.dumps(value) if not isinstance(value, str) else value


def _input_differences(what: str, was: list, now: list) -> list[str]:
    if len(was) != len(now):
        return [f"{len(now)} {what}s given, the snapshot's run had {len(was)}"]
    out = []
    for i, (a, b) in enumerate(zip(was, now)):
        if (a or {}).get("sha256", (a or {}).get("hosts")) != (b or {}).get("sha256", (b or {}).get("hosts")):
            name = (b or {}).get("path") or (a or {}).get("path") or f"#{i}"
            out.append(f"{what} {name} is not the snapshot's (its content differs)")
    return out


# ------------------------------------------------------------------ loading a run
def recorded_inputs(header: dict) -> tuple:
    """``(platform, [workloads])`` a snapshot's run read, as given to ``runner.load_inputs``."""
    run = header.get("run") or {}
    platform = run.get("platform", {})
    workloads = run.get("workloads", [])
    if any(w.get("data") for w in workloads):
        raise SnapshotError("the snapshot's run read workloads given as data (a campaign's windows or jittered "
                            "copies), not files: resume it from its campaign")
    return platform.get("hosts", platform.get("path")), [w["path"] for w in workloads]


def load_run(snapshot: Snapshot, platform, workloads, *, prefix=None, progress=None):
    """The paused run of ``snapshot``, from its inputs (``platform`` / ``workloads`` as for
    ``runner.simulate``; the caller checked them with ``differences``); ``prefix`` None: the
    outputs go on in the run's own files."""
    from .runner import load_inputs

    nb_hosts, names, loaded = load_inputs(platform, workloads)
    return Simulator.from_snapshot(snapshot, nb_hosts, loaded, host_names=names, progress=progress,
                                   prefix=KEEP if prefix is None else str(prefix))
