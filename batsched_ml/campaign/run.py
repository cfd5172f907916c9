"""Run a campaign: prepare the inputs, skip what the cache holds, run the rest on Dask, store
each result as it arrives (so Ctrl-C loses nothing finished), write ``results.csv`` (a subset
run keeps the other tasks' rows)."""

from __future__ import annotations

import datetime
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..progress import TaskProgress
from .cache import ResultCache, config_cost_key
from .expand import write_campaign
from ..executor import TaskFailure, iter_tasks
from .forks import FORK_KIND, fork_tasks, run_fork_task, write_forks
from .kinds import get_kind
from .results import complete_row, read_results, write_results
from .spec import Campaign
from .tasks import REPORT_SUFFIX, Task, code_version, error_row, run_name, run_task, task_key
from .trainings import TRAINING_WINDOW, WORK, link_file, write_trainings

__all__ = ["CampaignOutcome", "build_tasks", "estimated_cost", "run_campaign"]

IDENTITY = ("trace", "window", "config", "seed", "window_start")


@dataclass
class CampaignOutcome:
    results_dir: Path
    tasks: int = 0
    cached: int = 0
    computed: int = 0
    stored: int = 0  # tasks of this run whose result is stored (cached before or computed now)
    resumed: int = 0  # tasks computed from a snapshot an interrupted run left
    failed: list[str] = field(default_factory=list)   # task labels with their error (or timeout)
    interrupted: bool = False
    stopped_by: BaseException | None = None  # the KeyboardInterrupt (or interrupts.Terminated)
    rows: list[dict] = field(default_factory=list)


def build_tasks(campaign: Campaign, results_dir) -> list[Task]:
    """Every training's seed, then every (trace, window, config, seed) in campaign-file order, then
    every fork's (trace, window, seed, instant) (``forks``).

    A config naming a training's file (``@NAME``) runs seed s on the file of the training's seed s:
    its task ``needs`` that training's key, which its own key includes (a retrained policy is a new
    run), and reads the file where the cache keeps it."""
    results_dir = Path(results_dir)
    version = code_version()
    inputs_dir = results_dir / "inputs"
    tasks, trained = [], {}  # trained: (training, seed) -> key
    for training in campaign.trainings.values():
        kind = get_kind(training.kind)
        unit = kind.training_unit(list(training.traces.values()), training.settings, inputs_dir)
        for seed in training.seeds:
            settings = kind.with_seed(training.settings, seed)
            key = task_key(unit.digest, settings, version, kind=kind.name)
            trained[(training.name, seed)] = key
            tasks.append(Task(trace="+".join(training.traces), window=TRAINING_WINDOW, window_start=0.0,
                              config=training.name, seed=seed, argv=training.argv, key=key, nb_jobs=unit.nb_jobs,
                              settings=settings, kind=kind.name, inputs=unit.inputs,
                              workdir=str((results_dir / WORK).resolve())))
    units: dict = {}
    for spec in campaign.traces.values():
        for config in campaign.configs.values():
            if not config.runs_on(spec.name):
                continue
            kind = get_kind(config.kind)
            cut = (spec.name, kind.name, kind.unit_key(config.config))
            if cut not in units:
                units[cut] = kind.units(spec, config.config, inputs_dir)
            for seed in campaign.seeds_of(config.name):
                settings = kind.with_seed(config.config, seed)
                needs = {name: trained[(name, seed)] for name in config.needs}
                files = {name: str((results_dir / "cache").resolve() / f"{key}{_output(campaign, name)}")
                         for name, key in needs.items()}
                for unit in units[cut]:
                    key = task_key(unit.digest, settings, version, config.batsim, kind=kind.name,
                                   needs={**needs, **kind.file_digests(settings)})
                    snapshots = _checkpoints(campaign, results_dir, key) if kind.name == "simulate" else {}
                    tasks.append(Task(trace=spec.name, window=unit.window, window_start=unit.window_start,
                                      config=config.name, seed=seed, argv=config.argv, nb_jobs=unit.nb_jobs,
                                      key=key, timeout=campaign.task_timeout,
                                      settings=kind.with_files(settings, files), kind=kind.name, inputs=unit.inputs,
                                      needs=tuple(needs.values()), batsim=config.batsim, **snapshots))
    return tasks + fork_tasks(campaign, results_dir, version, units)


def _run_task(task: Task) -> dict:
    """Run a task on a worker: a fork's (``forks``), else by its kind (``tasks.run_task``)."""
    return run_fork_task(task) if task.kind == FORK_KIND else run_task(task)


def _output(campaign: Campaign, training: str) -> str:
    """The suffix of the file ``training`` writes (its kind's)."""
    return get_kind(campaign.trainings[training].kind).output


def _checkpoints(campaign: Campaign, results_dir, key: str) -> dict:
    """A task's checkpoint folder and settings (none when the campaign snapshots nothing)."""
    if campaign.checkpoint_every is None and campaign.checkpoint_every_wall is None:
        return {}
    return {"checkpoint_dir": str(Path(results_dir).resolve() / "checkpoints" / key),
            "checkpoint_every": campaign.checkpoint_every, "checkpoint_every_wall": campaign.checkpoint_every_wall}


def estimated_cost(task: Task, costs: dict[str, float]) -> float:
    """Expected run time of ``task`` for ordering: its jobs x the seconds per job its
    configuration took before (any trace; the mean over known configurations if new)."""
    rate = costs.get(config_cost_key(task.argv))
    if rate is None:
        rate = sum(costs.values()) / len(costs) if costs else 1.0
    return max(task.nb_jobs, 1) * rate


def _identity(task: Task) -> dict:
    return {k: getattr(task, k) for k in IDENTITY}


def _link_runs(results_dir: Path, cache: ResultCache, tasks: list[Task], done: dict) -> None:
    """``runs/<trace>.w<window>.<config>.s<seed><suffix>``: hard links to the cached files."""
    runs = results_dir / "runs"
    runs.mkdir(exist_ok=True)
    for task in tasks:
        if task.key not in done:
            continue
        for suffix in cache.files(task.key):
            link_file(cache.file(task.key, suffix), runs / f"{task.run_name}{suffix}")


def _report_file(cache: ResultCache, task: Task) -> str | None:
    """Where results.csv says the run's scheduler report is (relative to the results directory)."""
    return f"runs/{task.run_name}{REPORT_SUFFIX}" if REPORT_SUFFIX in cache.files(task.key) else None


def _kept_rows(results_dir: Path, campaign: Campaign, ran: Campaign, tasks: list[Task],
               finished: set) -> list[dict]:
    """The rows of an earlier results.csv that this run did not redo: every row of a (trace,
    config) outside a subset run (``ran``), and the rows of this run's own tasks that it did
    not finish (stopped by Ctrl-C), as long as the campaign still has that trace, config and
    seed. A run updates the results; it never shrinks them."""
    if not (results_dir / "results.csv").is_file():
        return []
    try:
        rows = read_results(results_dir)
    except (OSError, ValueError):
        return []
    ours = {_row_identity(_identity(task)) for task in tasks}
    kept = [r for r in rows
            if r["trace"] in campaign.traces and r["config"] in campaign.configs and r["seed"] in campaign.seeds_of(r["config"])
            and _row_identity(r) not in finished
            and (_row_identity(r) in ours or not (r["trace"] in ran.traces and r["config"] in ran.configs))]
    for row in kept:
        if isinstance(row.get("report"), dict):  # a results.csv of older code held the report inline
            row["report"] = _write_report_file(results_dir, row)
    return kept


def _row_identity(row: dict) -> tuple:
    """A run's identity comparable between a task and a row read back (numbers as floats)."""
    def same(value):
        if value is None or value == "":
            return None
        return float(value) if isinstance(value, (int, float)) else value
    return tuple(same(row.get(key)) for key in IDENTITY)


def _write_report_file(results_dir: Path, row: dict) -> str:
    name = f"runs/{run_name(row['trace'], row['window'], row['config'], row['seed'])}{REPORT_SUFFIX}"
    (results_dir / "runs").mkdir(exist_ok=True)
    (results_dir / name).write_text(json.dumps(row["report"], indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return name


def _file_order(campaign: Campaign):
    traces, configs = list(campaign.traces), list(campaign.configs)

    def key(row: dict):
        seeds = campaign.seeds_of(row["config"])
        return (traces.index(row["trace"]), row["window"] or 0, configs.index(row["config"]),
                seeds.index(row["seed"]) if row["seed"] in seeds else len(seeds))
    return key


def run_campaign(campaign: Campaign, results_dir, *, workers: int | None = None,
                 scheduler_address: str | None = None, progress=True, log=print,
                 traces=None, configs=None) -> CampaignOutcome:
    """Run what is missing from ``results_dir``; returns what happened (never raises for a task).

    ``traces`` / ``configs``: run only these (the baseline config always); the other tasks' rows
    of results.csv stay. ``progress``: True (a bar on a terminal, a status line every 30 s
    otherwise), False, or a :class:`batsched_ml.progress.TaskProgress`. Ctrl-C or SIGTERM
    stop the run: what finished is stored and written (``outcome.interrupted``, and
    ``outcome.stopped_by`` is the interrupt).
    """
    results_dir = Path(results_dir)
    ran = campaign.subset(traces=traces, configs=configs) if traces or configs else campaign
    ran.require_inputs()  # a trace file that is not there: an error before any work
    results_dir.mkdir(parents=True, exist_ok=True)
    outcome = CampaignOutcome(results_dir)
    failures: dict[str, tuple[str, str]] = {}  # key -> (status, message)
    tasks: list[Task] | None = None
    done: dict = {}
    cache = ResultCache(results_dir)
    where = "cache only"
    t0 = time.perf_counter()
    try:
        write_campaign(campaign.document, results_dir / "campaign.toml")
        tasks = build_tasks(ran, results_dir)
        outcome.tasks = len(tasks)
        done.update((t.key, row) for t in tasks if (row := cache.get(t.key)) is not None)
        todo = list({t.key: t for t in tasks if t.key not in done}.values())  # identical runs once
        costs = cache.costs()
        todo.sort(key=lambda t: -estimated_cost(t, costs))  # longest first: the last tasks to finish are short
        outcome.cached = sum(t.key in done for t in tasks)
        from ..executor import default_workers

        if todo:
            where = scheduler_address or ("this process" if workers == 0 else
                                          f"a local Dask cluster of {workers or default_workers()} worker(s)")
        log(f"campaign {campaign.name}: {len(tasks)} tasks, {outcome.cached} cached, {len(todo)} to run"
            + (f" on {where}" if todo else ""))
        labels = {t.key: t.label for t in tasks if t.training}
        while todo:  # in waves: a task runs once the trainings it needs are done
            ready = [t for t in todo if all(n in done for n in t.needs)]
            for task in todo:
                failed = [labels.get(n, n) for n in task.needs if n in failures]
                if failed:
                    failures[task.key] = ("error", f"needs the training {failed[0]}, which did not finish")
            if not ready:
                break
            wave = progress if isinstance(progress, TaskProgress) else TaskProgress.for_cli(
                len(ready), campaign.name, enabled=bool(progress), weights=[estimated_cost(t, costs) for t in ready])
            for i, result in iter_tasks(_run_task, ready, scheduler_address=scheduler_address, workers=workers,
                                        progress=wave, desc=campaign.name):
                task = ready[i]
                if isinstance(result, TaskFailure):
                    failures[task.key] = ("error", result.error)
                    log(f"failed: {task.label}: {result.error}")
                elif "timeout" in result:
                    failures[task.key] = ("timeout", f"stopped after {result['timeout']:g} s (task_timeout): "
                                                     f"{result['finished']:,} of {result['total']:,} jobs finished")
                    log(f"timeout: {task.label}: {failures[task.key][1]}")
                else:
                    cache.put(task.key, result["row"], result["files"])
                    cache.note_cost(task.argv, result["row"].get("wall_s"), task.nb_jobs)
                    done[task.key] = result["row"]
                    outcome.computed += 1
                    if result.get("resumed_from") is not None:
                        outcome.resumed += 1
                        log(f"resumed: {task.label} from its snapshot at simulated time "
                            f"{result['resumed_from']:.0f} s")
                if task.checkpoint_dir is not None and task.key in done | failures:
                    shutil.rmtree(task.checkpoint_dir, ignore_errors=True)  # stored: no resumption needed
            submitted = {t.key for t in ready}  # each task once a run, whatever its wave gave back
            todo = [t for t in todo if t.key not in submitted and t.key not in failures]
    except KeyboardInterrupt as exc:
        outcome.interrupted = True
        outcome.stopped_by = exc
    finally:
        if tasks is not None:  # (nothing to write when stopped before the tasks were known)
            runs = [t for t in tasks if not t.training and t.kind != FORK_KIND]
            outcome.rows = _write_rows(results_dir, campaign, ran, runs, done, failures, cache)
            write_forks(results_dir, campaign, [t for t in tasks if t.kind == FORK_KIND], done)
            write_trainings(results_dir, campaign, [t for t in tasks if t.training], done, failures, cache)
            outcome.stored = sum(t.key in done for t in tasks)
            outcome.failed = [f"{t.label}: {failures[t.key][1]}" for t in tasks if t.key in failures]
            _log_run(results_dir, outcome, time.perf_counter() - t0, where)
    return outcome


def _write_rows(results_dir: Path, campaign: Campaign, ran: Campaign, tasks: list[Task], done: dict,
                failures: dict, cache: ResultCache) -> list[dict]:
    """results.csv: this run's tasks that are done or failed, and the rows it keeps (``_kept_rows``),
    in campaign-file order; ``runs/`` links to the cached files. Returns the rows."""
    finished = {_row_identity(_identity(task)) for task in tasks if task.key in done or task.key in failures}
    rows = _kept_rows(results_dir, campaign, ran, tasks, finished)
    for task in tasks:
        if task.key in done:
            rows.append({**done[task.key], **_identity(task), "report": _report_file(cache, task)})
        elif task.key in failures:
            status, message = failures[task.key]
            rows.append(error_row(task, message, status=status))
    rows = sorted((complete_row(row) for row in rows), key=_file_order(campaign))
    _link_runs(results_dir, cache, tasks, done)
    cache.save_costs()
    write_results(results_dir, rows)
    return rows


def _log_run(results_dir: Path, outcome: CampaignOutcome, wall: float, engine: str) -> None:
    """Append one JSON line per `campaign run` to ``runs.log`` (the report quotes the last)."""
    entry = {"finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
             "wall_s": round(wall, 2), "engine": engine, "tasks": outcome.tasks, "computed": outcome.computed,
             "cached": outcome.cached, "failed": len(outcome.failed), "interrupted": outcome.interrupted,
             "resumed": outcome.resumed,
             "code": code_version()}
    with open(results_dir / "runs.log", "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
