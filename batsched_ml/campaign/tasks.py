"""One campaign task, executed on a Dask worker: of the built-in kind ``simulate`` (:class:`SimulateKind`),
one ``batsched-ml simulate`` run; of another kind (``kinds``), what that kind's ``run`` does.

A simulate task carries its :class:`~batsched_ml.config.declare.RunConfig` (the one ``simulate`` builds from
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
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .kinds import TaskKind, Unit

__all__ = ["SimulateKind", "Task", "TaskTimeout", "run_task", "task_key"]

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
    config: str            # the config's (or the training's) name in the campaign file
    seed: int
    argv: tuple[str, ...]  # its command's flags (reports, run-time estimates)
    key: str
    nb_jobs: int = 0
    timeout: float | None = None  # seconds; not in the key: a limit does not change a finished run
    settings: object = None  # what runs, with this task's seed and files (simulate: the resolved RunConfig)
    kind: str = "simulate"
    inputs: dict = field(default_factory=dict)  # the unit's (simulate: workload and platform files)
    needs: tuple[str, ...] = ()  # the keys of the trainings whose files it reads
    workdir: str | None = None  # a directory kept between runs (a training's checkpoint)
    batsim: int = 4  # the Batsim line a simulation follows (``simulate --batsim``)
    # where the run writes its outputs and snapshots as it goes (None: a temporary folder, no snapshot);
    # a task run again after a kill resumes from the latest snapshot there (not in the key either)
    checkpoint_dir: str | None = None
    checkpoint_every: float | None = None
    checkpoint_every_wall: float | None = None

    @property
    def label(self) -> str:
        return f"{self.trace}/w{self.window}/{self.config}/s{self.seed}"

    @property
    def training(self) -> bool:
        return self.window < 0

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


def task_key(input_digest: str, settings, version: str, batsim: int = 4, kind: str = "simulate",
             needs: dict | None = None) -> str:
    """Cache key: the files read, the resolved settings (seed included), the code version, the Batsim
    line (a Batsim 4.2.1 run's key is the one it had before there were two), and for another kind than
    ``simulate`` the kind and the keys of the trainings whose files it reads (``needs``: ``{NAME: key}``;
    the settings name them ``@NAME``)."""
    parts = {"inputs": input_digest, "config": settings.to_dict(), "version": version}
    if batsim != 4:
        parts["batsim"] = batsim
    if kind != "simulate":
        parts["kind"] = kind
    if needs:
        parts["needs"] = needs
    text = json.dumps(parts, sort_keys=True, default=str)
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


def deadline(timeout: float | None):
    """The progress hook that stops a task's simulation past ``timeout`` seconds (None: no hook)."""
    return _Deadline(timeout) if timeout else None


def run_task(task: Task) -> dict:
    """Run ``task`` by its kind; returns ``{"row": {...}, "files": {suffix: bytes}}``, or
    ``{"timeout": seconds, "finished": jobs, "total": jobs}`` when it ran past ``task.timeout``."""
    if task.kind == "simulate":
        return simulate_task(task)
    from .kinds import get_kind

    return get_kind(task.kind).run(task)


class SimulateKind(TaskKind):
    """The built-in kind: a ``[configs.NAME]`` table is a :class:`~batsched_ml.config.declare.RunConfig`
    (the ``simulate`` flags by name), simulated on each window of the converted trace."""

    name = "simulate"
    command = "batsched-ml simulate"

    def keys(self) -> list[str]:
        from ..config.declare import table_keys

        return table_keys()

    def argv(self, table: dict, where: str) -> tuple[str, ...]:
        from ..config.declare import ConfigError, RunConfig
        from .expand import CampaignError

        try:
            return RunConfig.from_table(table, where).argv(list(table))
        except ConfigError as exc:
            raise CampaignError(str(exc)) from None

    def settings(self, table: dict, where: str, deferred: frozenset = frozenset()):
        """Resolved and built once, so that an unknown plugin or option fails now, not in every
        task; a value naming a training's file is not built (the file is not there yet)."""
        import warnings

        from ..config.compose import build_scheduler
        from ..config.declare import RunConfig
        from ..config.resolve import resolve
        from .expand import CampaignError

        try:
            config = resolve(RunConfig.from_table(table, where))
            if not deferred:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    build_scheduler(config)
        except CampaignError:
            raise
        except Exception as exc:  # noqa: BLE001 - any construction error is the config's fault
            text = " ".join(str(exc).split())
            raise CampaignError(text if text.startswith(where) else f"{where}: {text}") from None
        return config

    def file_digests(self, settings) -> dict:
        """The policy file of ``rl:FILE`` or ``learned:FILE#k`` (not a training's ``@NAME``)."""
        from .inputs import file_digest
        from .kinds import REFERENCE

        policy = settings.policy or ""
        for prefix in ("rl:", "learned:"):
            if policy.startswith(prefix) and not REFERENCE.search(policy):
                path = Path(policy[len(prefix):].split("#", 1)[0])
                if path.is_file():
                    return {str(path): file_digest(path)}
        return {}

    def units(self, trace, settings, inputs_dir: Path) -> list[Unit]:
        from .inputs import prepare_trace

        return [Unit(i.window, i.window_start, i.digest, i.nb_jobs, {"workload": i.workload, "platform": i.platform})
                for i in prepare_trace(trace, inputs_dir)]

    def run(self, task: Task) -> dict:
        return simulate_task(task)


def simulate_task(task: Task) -> dict:
    """Simulate ``task`` (see :func:`run_task`)."""
    import numpy as np

    from ..analysis.metrics import compute_metrics, merge_attempts, per_job_bsld, read_jobs_csv
    from ..run_outputs import complete_report

    with _run_directory(task) as tmp:
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result, scheduler, resumed = _simulate(task, Path(tmp) / "run",
                                                       deadline(task.timeout))
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

        scheduler = build_scheduler(task.settings)
        return (simulate(task.inputs["platform"], task.inputs["workload"], scheduler, prefix=prefix, progress=progress,
                         batsim=task.batsim)[0], scheduler, None)
    directory = Path(task.checkpoint_dir) / "snapshots"
    identity = run_identity(task.settings, task.inputs["platform"], [task.inputs["workload"]])
    watch = Checkpointer(CheckpointPolicy(str(directory), task.checkpoint_every, task.checkpoint_every_wall, 2),
                         lambda: identity)
    for path in reversed(snapshots_in(directory)):
        try:
            snapshot = Snapshot.load(path)
            if differences(snapshot.header.get("run") or {}, identity):
                break  # another code: start again
            sim = load_run(snapshot, task.inputs["platform"], [task.inputs["workload"]], progress=progress)
        except (SnapshotError, OSError):
            continue  # an older snapshot may do
        watch = Checkpointer(watch.policy, lambda: identity, start=snapshot.sim_time)
        return sim.resume(watch=watch), sim.scheduler.core.scheduler, snapshot.sim_time
    shutil.rmtree(directory, ignore_errors=True)  # another run's snapshots and their frames
    scheduler = build_scheduler(task.settings)
    sim, core = prepare(task.inputs["platform"], [task.inputs["workload"]], scheduler, progress=progress)
    return sim.run(in_process(core), prefix=str(prefix), watch=watch), scheduler, None


MAX_ERROR_CHARS = 2000  # an error message is one line of results.csv: bounded


def error_row(task: Task, error: str, status: str = "error") -> dict:
    """The row of a task that did not finish: identifiers, ``status`` (``error`` when it raised,
    ``timeout`` past its limit) and the message (cut to MAX_ERROR_CHARS)."""
    row = {k: v for k, v in asdict(task).items() if k in ("trace", "window", "config", "seed", "window_start", "key")}
    if len(error) > MAX_ERROR_CHARS:
        error = error[:MAX_ERROR_CHARS - 25] + f" ... ({len(error):,} characters)"
    return dict(row, status=status, error=error)
