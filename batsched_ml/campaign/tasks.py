"""One campaign task = one ``batsched-ml simulate`` run, executed on a Dask worker.

The task carries its :class:`~batsched_ml.config.declare.RunConfig` (the one ``simulate`` builds from
its flags), builds its scheduler with the same ``compose.build_scheduler`` and scores the run
with the same ``compute_metrics`` call, so its numbers are those of ``simulate`` for the same
inputs, bit for bit. It writes nothing outside a temporary directory (in the worker's scratch
folder, removed by the client if the worker is killed): the jobs CSV (gzipped) and the
scheduler's report (JSON) travel back to the client, which alone writes the results directory.
A task past its time limit stops and says so (``{"timeout": ...}``) instead of failing.

A task with a ``checkpoint_dir`` (a campaign's ``RESULTS/checkpoints/<key>/``, on a file system its
workers share) runs there instead, snapshotting its run as it goes (``[campaign]
checkpoint_every`` / ``checkpoint_every_wall``); run again after its worker, or the whole campaign,
was killed, it resumes from its latest snapshot, to the same outputs byte for byte.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import time
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from ..config.declare import RunConfig

__all__ = ["Task", "TaskTimeout", "run_task", "task_key"]

# longer lists/dicts of a scheduler report (per-job data) stay out of its file; weekly lists fit (1000 weeks: 19
# years of a trace)
MAX_REPORT_ITEMS = 1000
# gzip's own default (6), not Python's (9): a 12k-job jobs CSV (1.9 MB) takes 55 ms instead of 260 ms
# (a fifth of the whole task) for a file 2.6% larger
GZIP_LEVEL = 6
REPORT_SUFFIX = "_report.json"  # the scheduler's report of a run, beside its jobs CSV under runs/


@dataclass(frozen=True)
class Task:
    trace: str
    window: int
    window_start: float
    config: str            # the config's name in the campaign file
    seed: int
    argv: tuple[str, ...]  # its simulate flags (reports, run-time estimates)
    workload: str
    platform: str
    key: str
    nb_jobs: int = 0
    timeout: float | None = None  # seconds; not in the key: a limit does not change a finished run
    run_config: RunConfig | None = None  # what is simulated (resolved, with this task's seed)
    batsim: int = 4  # the Batsim line followed (``simulate --batsim``)
    # where the run writes its outputs and snapshots as it goes (None: a temporary folder, no snapshot);
    # a task run again after a kill resumes from the latest snapshot there (not in the key either)
    checkpoint_dir: str | None = None
    checkpoint_every: float | None = None
    checkpoint_every_wall: float | None = None

    @property
    def label(self) -> str:
        return f"{self.trace}/w{self.window}/{self.config}/s{self.seed}"

    @property
    def run_name(self) -> str:
        return run_name(self.trace, self.window, self.config, self.seed)


def run_name(trace: str, window: int, config: str, seed: int) -> str:
    """File stem under ``runs/``: ``<trace>.w<window>.<config>.s<seed>``."""
    return f"{safe_name(trace)}.w{window}.{safe_name(config)}.s{seed}"


def safe_name(name: str) -> str:
    """``name`` usable in a file name (letters, digits, ``+-_``; the rest as ``_``)."""
    return "".join(ch if ch.isalnum() or ch in "+-_" else "_" for ch in name)


# modules that only present results (reports, figures, the command line, the task engine, progress
# displays, interrupt handling): editing them keeps the cached runs
PRESENTATION = ("campaign/cli.py", "executor.py", "campaign/run.py", "campaign/cache.py", "campaign/report.py",
                "analysis/plots.py", "cli/__init__.py", "cli/__main__.py", "cli/commands.py", "cli/parser.py",
                "cli/process.py", "progress.py", "interrupts.py", "analysis/uncertainty.py")


def code_version() -> str:
    """Package version + a digest of the Python sources that make the numbers: a change to the
    simulator, a scheduler or the metrics invalidates cached runs, a change to a report does not."""
    from .. import __version__

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() in PRESENTATION:
            continue
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return f"{__version__}+{h.hexdigest()[:12]}"


def task_key(input_digest: str, config: RunConfig, version: str, batsim: int = 4) -> str:
    """Cache key: the simulated files, the resolved configuration (seed included), the Batsim line
    (a Batsim 4.2.1 run's key is the one it had before there were two) and the code version."""
    identity = {"inputs": input_digest, "config": config.to_dict(), "version": version}
    if batsim != 4:
        identity["batsim"] = batsim
    text = json.dumps(identity, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def compact(value):
    """A scheduler report without its per-job bulk (lists/dicts over MAX_REPORT_ITEMS items)."""
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items()
                if not (isinstance(v, (list, dict)) and len(v) > MAX_REPORT_ITEMS)}
    if isinstance(value, (list, tuple)):
        return [compact(v) for v in value]
    return value


class TaskTimeout(Exception):
    """Raised inside a task's simulation once its time limit has passed."""

    def __init__(self, finished: int, total: int):
        super().__init__(f"{finished} of {total} jobs finished")
        self.finished, self.total = finished, total


class _Deadline:
    """A simulation progress hook (called every 500 messages) that stops the run at ``deadline``."""

    def __init__(self, seconds: float):
        self.deadline = time.perf_counter() + seconds

    def simulation_status(self, status) -> None:
        if not status.done and time.perf_counter() > self.deadline:
            raise TaskTimeout(status.finished, status.total)


def run_task(task: Task) -> dict:
    """Simulate ``task``; returns ``{"row": {...}, "files": {suffix: bytes}}``, or
    ``{"timeout": seconds, "finished": jobs, "total": jobs}`` when it ran past ``task.timeout``."""
    import numpy as np

    from ..analysis.metrics import compute_metrics, merge_attempts, per_job_bsld, read_jobs_csv
    from ..run_outputs import complete_report

    with _run_directory(task) as tmp:
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result, scheduler, resumed = _simulate(task, Path(tmp) / "run",
                                                       _Deadline(task.timeout) if task.timeout else None)
        except TaskTimeout as stop:
            return {"timeout": task.timeout, "finished": stop.finished, "total": stop.total}
        wall = time.perf_counter() - t0
        records = merge_attempts(read_jobs_csv(result.jobs_csv))
        metrics = compute_metrics(records, nb_cores=result.schedule.get("nb_computing_machines"))
        schedule = "_schedule.json.gz" if task.batsim == 5 else "_schedule.csv.gz"  # Batsim's format, our name
        files = {name: gzip.compress(Path(path).read_bytes(), compresslevel=GZIP_LEVEL, mtime=0)
                 for name, path in (("_jobs.csv.gz", result.jobs_csv), (schedule, result.schedule_file))}
    from .results import FLAT_FROM_METRICS

    row = {"trace": task.trace, "window": task.window, "config": task.config, "seed": task.seed,
           "status": "unfinished" if result.unfinished else "ok", "error": None,
           **{col: metrics.get(key) for col, key in FLAT_FROM_METRICS.items()},
           "cum_bsld60": float(np.nansum(per_job_bsld(records, 60.0))),
           "wall_s": wall, "window_start": task.window_start, "unfinished": len(result.unfinished),
           "key": task.key, "metrics": metrics}
    report = compact(complete_report(scheduler.report(), metrics))
    if report:  # a file next to the run's jobs CSV (results.csv only names it): it may be large
        files[REPORT_SUFFIX] = (json.dumps(report, indent=1, sort_keys=True, default=float) + "\n").encode("utf-8")
    return {"row": row, "files": files, "resumed_from": resumed}


@contextmanager
def _run_directory(task: Task):
    """Where the run writes: its checkpoint folder (kept: a later run resumes there), else a
    temporary folder."""
    if task.checkpoint_dir is None:
        from ..executor import task_directory

        with task_directory("batsched-task-") as tmp:
            yield tmp
        return
    Path(task.checkpoint_dir).mkdir(parents=True, exist_ok=True)
    yield task.checkpoint_dir


def _simulate(task: Task, prefix: Path, progress):
    """The task's run, from its latest snapshot when it has one: (result, scheduler, simulated date
    resumed from or None)."""
    from ..checkpointing import CheckpointPolicy, Checkpointer, differences, load_run, run_identity
    from ..config.compose import build_scheduler
    from ..runner import in_process, prepare
    from ..snapshot_files import Snapshot, SnapshotError, snapshots_in

    if task.checkpoint_dir is None or task.batsim != 4:  # (Batsim 5's kernel cannot pause: no snapshot)
        from ..runner import simulate

        scheduler = build_scheduler(task.run_config)
        return (simulate(task.platform, task.workload, scheduler, prefix=prefix, progress=progress,
                         batsim=task.batsim)[0], scheduler, None)
    directory = Path(task.checkpoint_dir) / "snapshots"
    identity = run_identity(task.run_config, task.platform, [task.workload])
    watch = Checkpointer(CheckpointPolicy(str(directory), task.checkpoint_every, task.checkpoint_every_wall, 2),
                         lambda: identity)
    for path in reversed(snapshots_in(directory)):
        try:
            snapshot = Snapshot.load(path)
            if differences(snapshot.header.get("run") or {}, identity):
                break  # another code: start again
            sim = load_run(snapshot, task.platform, [task.workload], progress=progress)
        except (SnapshotError, OSError):
            continue  # an older snapshot may do
        watch = Checkpointer(watch.policy, lambda: identity, start=snapshot.sim_time)
        return sim.resume(watch=watch), sim.scheduler.core.scheduler, snapshot.sim_time
    shutil.rmtree(directory, ignore_errors=True)  # another run's snapshots and their frames
    scheduler = build_scheduler(task.run_config)
    sim, core = prepare(task.platform, [task.workload], scheduler, progress=progress)
    return sim.run(in_process(core), prefix=str(prefix), watch=watch), scheduler, None


MAX_ERROR_CHARS = 2000  # an error message is one line of results.csv: bounded


def error_row(task: Task, error: str, status: str = "error") -> dict:
    """The row of a task that did not finish: identifiers, ``status`` (``error`` when it raised,
    ``timeout`` past its limit) and the message (cut to MAX_ERROR_CHARS)."""
    row = {k: v for k, v in asdict(task).items() if k in ("trace", "window", "config", "seed", "window_start", "key")}
    if len(error) > MAX_ERROR_CHARS:
        error = error[:MAX_ERROR_CHARS - 25] + f" ... ({len(error):,} characters)"
    return dict(row, status=status, error=error)
