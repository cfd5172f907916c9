"""A campaign's trainings (``[train.NAME]`` tables): their rows in ``trainings.csv`` and their
files under ``trained/``.

A training's task is cached like a config's (``cache/<key>.json`` + its file ``cache/<key><suffix>``);
``trained/<NAME>.s<seed><suffix>`` links to that file, and ``trainings.csv`` has one row per
(training, seed): its status, what it cost and what its kind reports (``metrics``, JSON). A run of
some configs keeps the other trainings' rows, as ``results.csv`` keeps the other runs'.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

from .tasks import MAX_ERROR_CHARS, safe_name

__all__ = ["COLUMNS", "TRAINED", "TRAINING_WINDOW", "WORK", "link_file", "read_trainings", "trained_file",
           "write_trainings"]

TRAINING_WINDOW = -1  # a training task's window: it reads whole traces, of no window
WORK = "work"  # RESULTS_DIR/work: what a training keeps between runs (its checkpoint)
TRAINED = "trained"
FILE = "trainings.csv"
COLUMNS = ("training", "seed", "kind", "status", "error", "traces", "wall_s", "key", "file", "metrics")


def trained_file(training: str, seed: int, suffix: str) -> str:
    """Where a training's file is linked, relative to the results directory."""
    return f"{TRAINED}/{safe_name(training)}.s{seed}{suffix}"


def link_file(src: Path, dst: Path) -> None:
    """``dst`` as a hard link to the cached ``src`` (a copy where links fail), replaced atomically."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists() and os.path.samefile(src, dst):
        return  # (already: a rename of a link onto the same file does nothing and would leave the link)
    tmp = dst.with_name(f".{dst.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def write_trainings(results_dir, campaign, tasks, done: dict, failures: dict, cache) -> list[dict]:
    """``trainings.csv`` and the ``trained/`` links of this run's training ``tasks``, with the
    earlier rows of the campaign's other trainings kept; returns the rows (none written when the
    campaign has no training and there was no file)."""
    from .kinds import get_kind

    results_dir = Path(results_dir)
    rows = {(r["training"], r["seed"]): r for r in read_trainings(results_dir)
            if r["training"] in campaign.trainings and r["seed"] in campaign.trainings[r["training"]].seeds}
    for task in tasks:
        suffix = get_kind(task.kind).output
        row = {"training": task.config, "seed": task.seed, "kind": task.kind, "traces": task.trace,
               "key": task.key}
        if task.key in done:
            got = done[task.key]
            link_file(cache.file(task.key, suffix), results_dir / trained_file(task.config, task.seed, suffix))
            row.update(status="ok", wall_s=got.get("wall_s"), file=trained_file(task.config, task.seed, suffix),
                       metrics=got.get("metrics"))
        elif task.key in failures:
            status, message = failures[task.key]
            row.update(status=status, error=message[:MAX_ERROR_CHARS])
        else:
            continue
        rows[(task.config, task.seed)] = row
    order = {name: i for i, name in enumerate(campaign.trainings)}
    out = sorted(rows.values(), key=lambda r: (order.get(r["training"], len(order)), r["seed"]))
    if out or (results_dir / FILE).is_file():
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(COLUMNS)
        for r in out:
            writer.writerow([_text(r.get(c)) for c in COLUMNS])
        tmp = results_dir / f".{FILE}.tmp{os.getpid()}"
        tmp.write_text(buf.getvalue(), encoding="utf-8")
        os.replace(tmp, results_dir / FILE)
    return out


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=float)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def read_trainings(results_dir) -> list[dict]:
    """The rows of ``trainings.csv`` (``[]`` without one), typed back."""
    path = Path(results_dir) / FILE
    if not path.is_file():
        return []
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            out.append({"training": r["training"], "seed": int(r["seed"]), "kind": r["kind"], "status": r["status"],
                        "error": r["error"] or None, "traces": r["traces"],
                        "wall_s": float(r["wall_s"]) if r["wall_s"] else None, "key": r["key"],
                        "file": r["file"] or None, "metrics": json.loads(r["metrics"]) if r["metrics"] else None})
    return out
