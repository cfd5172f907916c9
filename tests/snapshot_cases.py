"""Interrupted runs against the run never interrupted (issue 42), over the whole configuration space.

Shared by ``tests/test_snapshots.py`` (a few examples in CI) and ``test_slow_property_campaign.py``
(``-m slow``: thousands). A drawn configuration (``configuration_space.cli_configurations``: every
plugin and scheduler flag) runs through ``batsched-ml simulate`` three ways on a drawn workload:

* uninterrupted;
* paused at a drawn simulated instant (``--stop-at``) then ``--resume``d from the snapshot written
  there (:func:`paused_and_resumed`);
* with ``--checkpoint-every``, killed (SIGKILL: nothing runs at the kill) at a drawn wall-clock
  moment, then resumed from the latest snapshot it left, again and again until it ends
  (:func:`killed_and_resumed`); the run is slowed down by a sleep per message so that the kill
  lands anywhere in it, in a worker process forked from a server that imported everything once.

Every output must be byte-identical: the jobs CSV, the per-job tables (``PREFIX_classes.csv``,
``PREFIX_predictions.csv``), ``PREFIX_schedule.csv`` but its two wall-clock fields, and
``PREFIX_run.json`` but the ``resumed`` entries that record the interruptions.
"""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import signal
import tempfile
import time
import warnings
from pathlib import Path

from random_cases import workload_list
from threadpoolctl import threadpool_limits

from batsched_ml.cli import main
from batsched_ml.snapshot_files import snapshots_in
from batsched_ml.workloads.loader import write_workload
from batsched_ml.workloads.platform import write_platform

# fields of PREFIX_schedule.csv that measure wall-clock time (docs/snapshots.md: summed over sessions)
WALL_CLOCK_FIELDS = ("scheduling_time", "simulation_time")
SLOW_MESSAGE = 0.002  # wall seconds added to each scheduler call of a run that is killed


def _cli(argv: list) -> tuple[int, str]:
    """``batsched-ml ARGV`` in this process: (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


def inputs(workload: dict, tmp: Path) -> list:
    """Write a drawn workload and its platform; the ``simulate`` flags naming them."""
    write_platform(workload["nb_res"], tmp / "p.xml")
    argv = ["simulate", "-p", str(tmp / "p.xml"), "--quiet"]
    for i, w in enumerate(workload_list(workload)):
        write_workload(w, tmp / f"w{i}.json")
        argv += ["-w", str(tmp / f"w{i}.json")]
    return argv


def outputs(prefix: Path) -> dict:
    """The files of a run by suffix, as compared (wall-clock fields and resumptions left out)."""
    out = {}
    for path in sorted(prefix.parent.glob(f"{prefix.name}_*")):
        if path.is_dir():
            continue
        data = path.read_bytes()
        suffix = path.name[len(prefix.name):]
        if suffix == "_schedule.csv":
            header, values = data.decode().splitlines()
            row = dict(zip(header.split(","), values.split(",")))
            data = json.dumps({k: v for k, v in row.items() if k not in WALL_CLOCK_FIELDS}).encode()
        elif suffix == "_run.json":
            description = json.loads(data)
            description.pop("resumed", None)
            data = json.dumps(description, sort_keys=True).encode()
        out[suffix] = data
    return out


def differences(expected: dict, got: dict) -> list[str]:
    problems = [f"{name} missing" for name in expected if name not in got]
    problems += [f"{name} not written uninterrupted" for name in got if name not in expected]
    for name in expected:
        if name in got and expected[name] != got[name]:
            a, b = expected[name].splitlines(), got[name].splitlines()
            line = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            problems.append(f"{name} differs from line {line + 1}: {a[line:line + 1]} vs {b[line:line + 1]}")
    return problems


def uninterrupted(base: list, flags: list, tmp: Path) -> tuple[int, dict]:
    code, err = _cli(base + ["-e", str(tmp / "a" / "run")] + flags)
    return code, (outputs(tmp / "a" / "run") if code in (0, 3) else {"stderr": err.encode()})


def paused_and_resumed(base: list, flags: list, tmp: Path, at: float) -> tuple[list, str]:
    """Pause at simulated date ``at`` and resume from the snapshot; (problems, what happened)."""
    prefix = tmp / "b" / "run"
    code, err = _cli(base + ["-e", str(prefix), "--stop-at", repr(at)] + flags)
    snapshots = snapshots_in(Path(f"{prefix}_checkpoints"))
    if code == 0 and snapshots and "paused" in err:
        code, err = _cli(["simulate", "--resume", str(snapshots[-1]), "--quiet"])
        happened = "paused and resumed"
    else:
        happened = "ended before the pause"
    return ([] if code in (0, 3) else [f"exit {code}: {err.strip()[-500:]}"]), happened


# ------------------------------------------------------------ killed at a wall-clock moment
def _killable_run(argv: list) -> None:
    """A worker process: the run, each scheduler call slowed down, exit code as the process's."""
    from batsched_ml import runner

    call = runner.InProcess.__call__

    def slow(self, now, events):
        time.sleep(SLOW_MESSAGE)
        return call(self, now, events)

    runner.InProcess.__call__ = slow
    with threadpool_limits(1):
        os._exit(_cli(argv)[0])


_CONTEXT = None


def _context():
    """Worker processes forked from a server that imported the package once (fast, and no OpenMP
    state inherited from this process)."""
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = multiprocessing.get_context("forkserver")
        _CONTEXT.set_forkserver_preload(["snapshot_cases", "batsched_ml.cli", "batsched_ml.runner",
                                         "sklearn.ensemble", "batsched_ml.classifiers.scheduler"])
    return _CONTEXT


def killed_and_resumed(base: list, flags: list, tmp: Path, every: float, delays: list) -> tuple[list, int]:
    """Run with ``--checkpoint-every EVERY``, SIGKILL it after each of ``delays`` (wall seconds), resume
    from the latest snapshot each time (from the start when none was written yet), then let it end;
    (problems, number of kills that landed while it ran)."""
    prefix = tmp / "c" / "run"
    argv = base + ["-e", str(prefix), "--checkpoint-every", repr(every)] + flags
    kills = 0
    for delay in [*delays, None]:
        snapshots = snapshots_in(Path(f"{prefix}_checkpoints"))
        run = ["simulate", "--resume", str(snapshots[-1]), "--quiet"] if snapshots else argv
        worker = _context().Process(target=_killable_run, args=(run,))
        worker.start()
        worker.join(delay)
        if worker.is_alive():
            os.kill(worker.pid, signal.SIGKILL)
            worker.join()
            kills += 1
            continue
        if worker.exitcode not in (0, 3):
            return [f"exit {worker.exitcode} after {kills} kills"], kills
        return [], kills
    return ["never ended"], kills


def check_case(workload: dict, case: dict, at: float, every: float | None = None, delays=()) -> tuple[list, str]:
    """One drawn configuration, interrupted as asked, against its uninterrupted run; (problems,
    what happened: refused, ended before the pause, paused and resumed, killed N times)."""
    with tempfile.TemporaryDirectory() as tmp, threadpool_limits(1):
        tmp = Path(tmp)
        base = inputs(workload, tmp)
        code, expected = uninterrupted(base, case["argv"], tmp)
        if code == 2:
            return [], "refused"
        if code not in (0, 3):
            return [f"the uninterrupted run failed: exit {code}"], "failed"
        problems, happened = paused_and_resumed(base, case["argv"], tmp, at)
        if not problems:
            problems = differences(expected, outputs(tmp / "b" / "run"))
        if every is not None and not problems:
            problems, kills = killed_and_resumed(base, case["argv"], tmp, every, list(delays))
            happened += f", killed {kills} times"
            if not problems:
                problems = differences(expected, outputs(tmp / "c" / "run"))
        return problems, happened


def describe(workload: dict, case: dict, at: float, problems: list) -> str:
    return (f"{len(problems)} problem(s):\n  " + "\n  ".join(problems[:10])
            + f"\nflags: {' '.join(case['argv'])}\nstopped at {at!r}\nworkload: {json.dumps(workload)}")
