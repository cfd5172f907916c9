"""Run a campaign: prepare the inputs, skip what the cache holds, run the rest on Dask, store
each result as it arrives (so Ctrl-C loses nothing finished), write ``results.csv``."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .cache import ResultCache, config_cost_key
from .executor import TaskFailure, iter_tasks
from .inputs import prepare_trace
from .results import write_results
from .spec import Campaign
from .tasks import Task, code_version, error_row, run_task, task_key

__all__ = ["CampaignOutcome", "build_tasks", "estimated_cost", "run_campaign"]

IDENTITY = ("trace", "window", "config", "seed", "window_start")


@dataclass
class CampaignOutcome:
    results_dir: Path
    tasks: int = 0
    cached: int = 0
    computed: int = 0
    failed: list[str] = field(default_factory=list)   # task labels with their error
    interrupted: bool = False
    rows: list[dict] = field(default_factory=list)


def build_tasks(campaign: Campaign, results_dir) -> list[Task]:
    """Every (trace, window, config, seed), in campaign-file order."""
    version = code_version()
    tasks = []
    for spec in campaign.traces.values():
        for inp in prepare_trace(spec, Path(results_dir) / "inputs"):
            for config in campaign.configs.values():
                for seed in campaign.seeds:
                    run_config = config.config.replace(seed=seed)
                    tasks.append(Task(trace=inp.trace, window=inp.window, window_start=inp.window_start,
                                      config=config.name, seed=seed, argv=config.argv, workload=inp.workload,
                                      platform=inp.platform, key=task_key(inp.digest, run_config, version),
                                      nb_jobs=inp.nb_jobs, run_config=run_config))
    return tasks


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


def run_campaign(campaign: Campaign, results_dir, *, workers: int | None = None,
                 scheduler_address: str | None = None, progress: bool = True, log=print) -> CampaignOutcome:
    """Run what is missing from ``results_dir``; returns what happened (never raises for a task)."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "campaign.toml").write_text(campaign.text, encoding="utf-8")
    tasks = build_tasks(campaign, results_dir)
    cache = ResultCache(results_dir)
    done = {t.key: row for t in tasks if (row := cache.get(t.key)) is not None}
    todo = list({t.key: t for t in tasks if t.key not in done}.values())  # identical runs once
    costs = cache.costs()
    todo.sort(key=lambda t: -estimated_cost(t, costs))  # longest first: the last tasks to finish are short
    outcome = CampaignOutcome(results_dir, tasks=len(tasks), cached=sum(t.key in done for t in tasks))
    from .executor import default_workers

    where = scheduler_address or ("this process" if workers == 0 else
                                  f"a local Dask cluster of {workers or default_workers()} worker(s)")
    log(f"campaign {campaign.name}: {len(tasks)} tasks, {outcome.cached} cached, {len(todo)} to run"
        + (f" on {where}" if todo else ""))
    failures: dict[str, str] = {}
    t0 = time.perf_counter()
    try:
        if todo:
            for i, result in iter_tasks(run_task, todo, scheduler_address=scheduler_address, workers=workers,
                                        progress=progress, desc=campaign.name):
                task = todo[i]
                if isinstance(result, TaskFailure):
                    failures[task.key] = result.error
                    log(f"failed: {task.label}: {result.error}")
                    continue
                cache.put(task.key, result["row"], result["files"])
                cache.note_cost(task.argv, result["row"].get("wall_s"), task.nb_jobs)
                done[task.key] = result["row"]
                outcome.computed += 1
    except KeyboardInterrupt:
        outcome.interrupted = True
    finally:
        rows = []
        for task in tasks:
            if task.key in done:
                rows.append({**done[task.key], **_identity(task)})
            elif task.key in failures:
                rows.append(error_row(task, failures[task.key]))
        _link_runs(results_dir, cache, tasks, done)
        cache.save_costs()
        write_results(results_dir, rows)
        outcome.rows = rows
        outcome.failed = [f"{t.label}: {failures[t.key]}" for t in tasks if t.key in failures]
        _log_run(results_dir, outcome, time.perf_counter() - t0, where if todo else "cache only")
    return outcome


def _log_run(results_dir: Path, outcome: CampaignOutcome, wall: float, engine: str) -> None:
    """Append one JSON line per `campaign run` to ``runs.log`` (the report quotes the last)."""
    entry = {"finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
             "wall_s": round(wall, 2), "engine": engine, "tasks": outcome.tasks, "computed": outcome.computed,
             "cached": outcome.cached, "failed": len(outcome.failed), "interrupted": outcome.interrupted,
             "code": code_version()}
    with open(results_dir / "runs.log", "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
