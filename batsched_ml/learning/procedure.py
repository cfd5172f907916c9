"""``batsched-ml learn-policy``: the whole procedure of Carastan-Santos & de Camargo (2017).

1. tuples (S, Q) of consecutive jobs of a workload (the Lublin model by default);
2. each tuple's trial scores (``trials.trial_scores``), one task per tuple through the
   task executor (local cores or a Dask cluster), appended to a scores CSV as they
   finish, so an interrupted run resumes with the tuples already scored;
3. the 576-shape regression (``regression.fit_all``), shapes fitted in parallel too;
4. the top functions written as a JSON policy file for ``--policy learned:FILE#k``.

Tuple ``i``'s permutations are seeded by ``(seed, i)``: the scores do not depend on which
worker ran which tuple, nor on the order they finished.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from .regression import BASES, OPERATORS, all_shapes, fit_shape, policy_document, readable
from .trials import draw_tuples, trial_scores

SCORE_FIELDS = ("tuple", "runtime", "cores", "submit", "score")


def workload_jobs(cores: int, jobs: int, seed: int, swf: str | None = None) -> np.ndarray:
    """(runtime, cores, submit) rows in arrival order: a trace's usable jobs, or the Lublin model's."""
    if swf is not None:
        from ..workloads import read_swf, swf_to_workload

        workload, _ = swf_to_workload(read_swf(swf), nodes=cores)
        profiles = workload["profiles"]
        return np.array([(profiles[j["profile"]]["delay"], j["res"], j["subtime"]) for j in workload["jobs"]],
                        dtype=np.float64)
    from ..workloads.lublin import lublin_jobs

    table = lublin_jobs(cores, jobs, seed)
    return np.column_stack([table["run_time"], table["allocated_procs"], table["submit_time"]])


def score_tuple(task: tuple) -> tuple[int, list[list[float]]]:
    """Worker side: ``(index, S, Q, trials, cores, seed)`` -> ``(index, rows of (r, n, s, score))``."""
    index, s_tasks, q_tasks, trials, cores, seed = task
    seed_seq = int(np.random.SeedSequence([seed, index]).generate_state(1)[0])
    scores = trial_scores(s_tasks, q_tasks, trials, cores, seed=seed_seq)
    return index, [[*map(float, q), float(sc)] for q, sc in zip(q_tasks, scores)]


def read_scores(path: Path) -> dict[int, list[list[float]]]:
    """Tuples already scored in ``path`` (a tuple counts only when all its rows are there)."""
    done: dict[int, list[list[float]]] = {}
    if not path.exists():
        return done
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            try:
                values = [float(row[k]) for k in SCORE_FIELDS[1:]]
                done.setdefault(int(row["tuple"]), []).append(values)
            except (TypeError, ValueError):  # a line cut by a crash: its tuple is scored again
                continue
    return done


def _csv_text(rows) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue()


def _fit_chunk(task):
    shapes, r, n, s, score, starts, seed = task
    return [fit_shape(sh, r, n, s, score, starts, seed) for sh in shapes]


def learn_policy(cores: int, tuples: int, trials: int, seed: int, output: str | Path, *,
                 scores: str | Path | None = None, swf: str | None = None, jobs: int = 10000,
                 top: int = 10, starts: int = 3, bases=None, operators=None, workers: int | None = None,
                 scheduler_address: str | None = None, progress: bool = True, log=print) -> dict:
    """Run the procedure; returns the policy document written to ``output``. Interrupted (Ctrl-C,
    SIGTERM), the KeyboardInterrupt carries what was kept (``interrupts.note_kept``)."""
    from ..executor import iter_tasks, map_tasks
    from ..interrupts import note_kept

    shapes = all_shapes(bases or tuple(BASES), operators or tuple(OPERATORS))  # checked before any work
    output = Path(output)
    scores_path = Path(scores) if scores else output.with_suffix(".scores.csv")
    rows_by_tuple: dict = {}  # tuple -> its scores, filled as they are read or computed
    try:
        rows_by_tuple.update(read_scores(scores_path))
        q_size = 32
        for i in [i for i, rows in rows_by_tuple.items() if len(rows) != q_size or i >= tuples]:
            del rows_by_tuple[i]
        all_tuples = draw_tuples(workload_jobs(cores, jobs, seed, swf), tuples, seed=seed)
        todo = [(i, s_t, q_t, trials, cores, seed) for i, (s_t, q_t) in enumerate(all_tuples)
                if i not in rows_by_tuple]
        log(f"tuples: {tuples} ({len(rows_by_tuple)} already scored in {scores_path}), {trials} trials each")
        if todo:
            fresh = not scores_path.exists() or scores_path.stat().st_size == 0
            scores_path.parent.mkdir(parents=True, exist_ok=True)
            with open(scores_path, "a", newline="") as fh:
                writer = csv.writer(fh)
                if fresh:
                    writer.writerow(SCORE_FIELDS)
                for _, result in iter_tasks(score_tuple, todo, scheduler_address=scheduler_address,
                                            workers=workers, progress=progress, desc="tuples"):
                    if not isinstance(result, tuple):
                        raise RuntimeError(f"a tuple failed: {result.error}")
                    index, rows = result
                    fh.write(_csv_text([index, *row] for row in rows))  # one call: a tuple is whole or absent
                    fh.flush()
                    rows_by_tuple[index] = rows
        data = np.array([row for i in sorted(rows_by_tuple) for row in rows_by_tuple[i]])
        r, n, s, score = data.T
        chunks = [(shapes[k:k + 24], r, n, s, score, starts, seed) for k in range(0, len(shapes), 24)]
        fits = [f for chunk in map_tasks(_fit_chunk, chunks, scheduler_address=scheduler_address, workers=workers,
                                         progress=progress) for f in chunk]
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the scores file holds every tuple scored
        raise note_kept(exc, _kept_text(len(rows_by_tuple), tuples, scores_path)) from None
    order = sorted(range(len(fits)), key=lambda i: (fits[i].rank_error, i))
    fits = [fits[i] for i in order]
    doc = policy_document(fits, top, {"procedure": {
        "cores": cores, "tuples": tuples, "trials": trials, "seed": seed, "source": swf or f"lublin:jobs={jobs}",
        "observations": len(score), "scores_file": str(scores_path)}})
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(doc, indent=1) + "\n")
    for entry in doc["functions"]:
        log(f"#{entry['rank']:<3} rank error {entry['rank_error']:.6g}  {readable(entry)}")
    log(f"wrote {output}")
    return doc


def _kept_text(scored: int, tuples: int, scores_path: Path) -> str:
    """What an interrupted run leaves for the next one."""
    if scored >= tuples:
        return (f"all {tuples} tuples scored, kept in {scores_path}; run the same command again to resume "
                "(the regression starts over)")
    return f"{scored} of {tuples} tuples scored, kept in {scores_path}; run the same command again to resume"
