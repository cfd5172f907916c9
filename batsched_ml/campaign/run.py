"""Run a campaign: prepare the inputs, skip what the cache holds, run the rest on Dask, store
each result as it arrives (so Ctrl-C loses nothing finished), write ``results.csv`` (a subset
run keeps the other tasks' rows)."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..progress import TaskProgress
from .cache import ResultCache, config_cost_key
from .expand import write_campaign
from ..executor import TaskFailure, iter_tasks
from .inputs import prepare_trace
from .results import complete_row, read_results, write_results
from .spec import Campaign
from .tasks import REPORT_SUFFIX, Task, code_version, error_row, run_name, run_task, task_key

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
    """Every (trace, window, config, seed), in campaign-file order."""
    version = code_version()
    tasks = []
    for spec in campaign.traces.values():
        for inp in prepare_trace(spec, Path(results_dir) / "inputs"):
            for config in campaign.configs.values():
                for seed in campaign.seeds_of(config.name):
                    run_config = config.config.replace(seed=seed)
                    key = task_key(inp.digest, run_config, version, config.batsim)
                    tasks.append(Task(trace=inp.trace, window=inp.window, window_start=inp.window_start,
                                      config=config.name, seed=seed, argv=config.argv, workload=inp.workload,
                                      platform=inp.platform, key=key, nb_jobs=inp.nb_jobs,
                                      timeout=campaign.task_timeout, run_config=run_config, batsim=config.batsim,
                                      **_checkpoints(campaign, results_dir, key)))
    return tasks


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
            src, dst = cache.file(task.key, suffix), runs / f"{task.run_name}{suffix}"
            tmp = dst.with_name(f".{dst.name}.tmp{os.getpid()}")
            try:
                os.link(src, tmp)
            except OSError:
                shutil.copyfile(src, tmp)
            os.replace(tmp, dst)


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
        if todo:
            if not isinstance(progress, TaskProgress):
                progress = TaskProgress.for_cli(len(todo), campaign.name, enabled=bool(progress),
                                                weights=[estimated_cost(t, costs) for t in todo])
            for i, result in iter_tasks(run_task, todo, scheduler_address=scheduler_address, workers=workers,
                                        progress=progress, desc=campaign.name):
                task = todo[i]
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
    except KeyboardInterrupt as exc:
        outcome.interrupted = True
        outcome.stopped_by = exc
    finally:
        if tasks is not None:  # (nothing to write when stopped before the tasks were known)
            outcome.rows = _write_rows(results_dir, campaign, ran, tasks, done, failures, cache)
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
