"""One campaign task = one ``batsched-ml simulate`` run, executed on a Dask worker.

The task carries its :class:`~batsched_ml.config.RunConfig` (the one ``simulate`` builds from
its flags), builds its scheduler with the same ``compose.build_scheduler`` and scores the run
with the same ``compute_metrics`` call, so its numbers are those of ``simulate`` for the same
inputs, bit for bit. It writes nothing outside a temporary directory: the jobs CSV travels
back (gzipped) to the client, which alone writes the results directory.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from ..config import RunConfig

__all__ = ["Task", "run_task", "task_key"]

MAX_REPORT_ITEMS = 200  # longer lists/dicts of a scheduler report (per-job data) stay out of results
# gzip's own default (6), not Python's (9): a 12k-job jobs CSV (1.9 MB) takes 55 ms instead of 260 ms
# (a fifth of the whole task) for a file 2.6% larger
GZIP_LEVEL = 6


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
    run_config: RunConfig | None = None  # what is simulated (resolved, with this task's seed)

    @property
    def label(self) -> str:
        return f"{self.trace}/w{self.window}/{self.config}/s{self.seed}"

    @property
    def run_name(self) -> str:
        """File stem under ``runs/``: ``<trace>.w<window>.<config>.s<seed>``."""
        return f"{_safe(self.trace)}.w{self.window}.{_safe(self.config)}.s{self.seed}"


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "+-_" else "_" for ch in name)


# modules that only present results (reports, figures, the command line, the task engine): editing
# them keeps the cached runs
PRESENTATION = ("campaign/cli.py", "campaign/executor.py", "campaign/run.py", "campaign/cache.py", "campaign/report.py",
                "analysis/plots.py", "cli.py")


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


def task_key(input_digest: str, config: RunConfig, version: str) -> str:
    """Cache key: the simulated files, the resolved configuration (seed included) and the code version."""
    text = json.dumps({"inputs": input_digest, "config": config.to_dict(), "version": version}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def compact(value):
    """A scheduler report without its per-job bulk (lists/dicts over MAX_REPORT_ITEMS items)."""
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items()
                if not (isinstance(v, (list, dict)) and len(v) > MAX_REPORT_ITEMS)}
    if isinstance(value, (list, tuple)):
        return [compact(v) for v in value]
    return value


def run_task(task: Task) -> dict:
    """Simulate ``task``; returns ``{"row": {...}, "files": {suffix: gzipped bytes}}``."""
    import numpy as np

    from ..analysis.metrics import compute_metrics, merge_attempts, per_job_bsld, read_jobs_csv
    from ..compose import build_scheduler
    from ..run_outputs import complete_report
    from ..runner import simulate

    scheduler = build_scheduler(task.run_config)
    with tempfile.TemporaryDirectory(prefix="batsched-task-") as tmp:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result, _ = simulate(task.platform, task.workload, scheduler, prefix=Path(tmp) / "run")
        wall = time.perf_counter() - t0
        records = merge_attempts(read_jobs_csv(result.jobs_csv))
        metrics = compute_metrics(records, nb_cores=result.schedule.get("nb_computing_machines"))
        files = {name: gzip.compress(Path(path).read_bytes(), compresslevel=GZIP_LEVEL, mtime=0)
                 for name, path in (("_jobs.csv.gz", result.jobs_csv), ("_schedule.csv.gz", result.schedule_csv))}
    from .results import FLAT_FROM_METRICS

    row = {"trace": task.trace, "window": task.window, "config": task.config, "seed": task.seed,
           "status": "unfinished" if result.unfinished else "ok", "error": None,
           **{col: metrics.get(key) for col, key in FLAT_FROM_METRICS.items()},
           "cum_bsld60": float(np.nansum(per_job_bsld(records, 60.0))),
           "wall_s": wall, "window_start": task.window_start, "unfinished": len(result.unfinished),
           "key": task.key, "metrics": metrics,
           "report": json.loads(json.dumps(compact(complete_report(scheduler.report(), metrics)), default=float))}
    return {"row": row, "files": files}


def error_row(task: Task, error: str) -> dict:
    """The row of a task that raised: identifiers, status ``error`` and the message."""
    row = {k: v for k, v in asdict(task).items() if k in ("trace", "window", "config", "seed", "window_start", "key")}
    return dict(row, status="error", error=error)
