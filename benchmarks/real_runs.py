"""What the benchmarks against a real Batsim share: the executables, ports, a scheduler process started and waited
for (``serve`` says "listening"; a C++ scheduler just accepts a connection), CPU of a finished
process, and the side-by-side report of alternating rounds."""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import time


def executable(given: str | None, env: str, name: str, *, owner: str = "the", search_path: bool = True) -> str:
    """``--NAME PATH``, else ``$ENV``, else (``search_path``) NAME on the PATH; MissingData when none
    runs. Batsim 5's benchmarks do not search the PATH: a ``batsim`` there may be 4.2.1."""
    from benchdata import MissingData

    path = given or os.environ.get(env) or (shutil.which(name) if search_path else None)
    if not path or not os.access(path, os.X_OK):
        what = f"the {name} executable" if owner == "the" else f"{owner} {name}"
        raise MissingData(f"needs {what}: --{name} PATH or {env} (not built by this repository)")
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_cpu(proc: subprocess.Popen) -> float:
    """Wait for ``proc``; its user + system CPU seconds, all threads."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def started_listening(proc: subprocess.Popen, port: int, name: str) -> subprocess.Popen:
    """``proc`` once its port accepts a connection (it prints no readiness line)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.002)
    proc.kill()
    raise RuntimeError(f"{name} never listened")


def start_serve(flags: list, port: int) -> subprocess.Popen:
    """``batsched-ml serve`` on ``port``, returned once it says it listens."""
    proc = subprocess.Popen([sys.executable, "-m", "batsched_ml.cli", "serve", "-s", f"tcp://127.0.0.1:{port}",
                             *flags], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    if "listening" not in line:
        proc.kill()
        raise RuntimeError(f"serve did not start: {line.strip()}")
    return proc


def timed_run(name: str, start_scheduler, batsim_command: list) -> dict:
    """One run: ``start_scheduler()`` (returns once it listens), then Batsim; both waited for.
    ``total``: the scheduler's launch to both exits (start-up included, as a user sees it)."""
    started = time.perf_counter()
    scheduler = start_scheduler()
    listening = time.perf_counter()
    batsim = subprocess.Popen(batsim_command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    batsim_cpu = wait_cpu(batsim)
    batsim_done = time.perf_counter()
    scheduler_cpu = wait_cpu(scheduler)
    done = time.perf_counter()
    if batsim.returncode or scheduler.returncode:
        raise RuntimeError(f"{name}: Batsim exited {batsim.returncode}, the scheduler {scheduler.returncode}")
    return {"total": done - started, "start-up": listening - started, "batsim wall": batsim_done - listening,
            "scheduler cpu": scheduler_cpu, "batsim cpu": batsim_cpu}


def report(rows: dict, ours: str, theirs: str) -> None:
    """Per measure: both medians and minima, and ``ours``/``theirs`` as the median of per-round
    ratios, the ratio of medians and of minima."""
    for key in rows[theirs][0]:
        mine = [r[key] for r in rows[ours]]
        other = [r[key] for r in rows[theirs]]
        per_round = statistics.median(a / b for a, b in zip(mine, other))
        print(f"{key:14s} {theirs} median {statistics.median(other):.3f} s (min {min(other):.3f})  "
              f"{ours} median {statistics.median(mine):.3f} s (min {min(mine):.3f})  "
              f"ratio: median per round {per_round:.3f}, of medians "
              f"{statistics.median(mine) / statistics.median(other):.3f}, of minima {min(mine) / min(other):.3f}")
