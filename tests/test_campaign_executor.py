"""The generic task executor: a real local Dask cluster and a real dask scheduler + workers."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from batsched_ml import executor  # noqa: E402
from batsched_ml.executor import TaskError, TaskFailure, iter_tasks, map_tasks  # noqa: E402

# functions of this test module travel by value: the workers cannot import it
import cloudpickle  # noqa: E402
import sys  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def test_local_cluster_results_in_item_order():
    items = [12, 3, 7, 0, 25, 1]
    assert map_tasks(math.factorial, items, workers=2, progress=False) == [math.factorial(i) for i in items]


def test_tasks_run_in_worker_processes(dask_scheduler_address):
    assert map_tasks(_pid_of, [], scheduler_address=dask_scheduler_address) == []
    results = map_tasks(_pid_of, range(8), scheduler_address=dask_scheduler_address, progress=False)
    assert os.getpid() not in {pid for _, pid in results}
    assert [i for i, _ in results] == list(range(8))


def _pid_of(i):
    return i, os.getpid()


def test_a_failure_is_reported_and_the_rest_completes(dask_scheduler_address):
    results = map_tasks(math.sqrt, [4.0, -1.0, 9.0], scheduler_address=dask_scheduler_address, errors="return",
                        progress=False)
    assert results[0] == 2.0 and results[2] == 3.0
    failure = results[1]
    assert isinstance(failure, TaskFailure) and failure.index == 1 and failure.item == -1.0
    assert failure.error.startswith("ValueError")
    with pytest.raises(TaskError, match="task 1"):
        map_tasks(math.sqrt, [4.0, -1.0], scheduler_address=dask_scheduler_address, progress=False)


def test_iter_tasks_streams_every_index_once_and_serial_mode_agrees(dask_scheduler_address):
    items = [5, 1, 4, 2]
    seen = dict(iter_tasks(math.factorial, items, scheduler_address=dask_scheduler_address, progress=False))
    assert seen == {i: math.factorial(x) for i, x in enumerate(items)}
    assert map_tasks(math.factorial, items, workers=0) == [seen[i] for i in range(len(items))]


def test_unreachable_scheduler_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(executor, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(OSError, match="cannot reach the Dask scheduler"):
        map_tasks(abs, [1], scheduler_address=f"tcp://127.0.0.1:{_closed_port()}", progress=False)


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_local_cluster_settings_and_worker_gc_freeze():
    """The embedded cluster hands out one task per worker at a time, in item order, without
    stealing, wakes rarely; a worker freezes its own objects after its first task."""
    import gc

    with executor.dask_client(workers=1) as client:
        saturation, stealing = client.run_on_scheduler(
            lambda dask_scheduler: (dask_scheduler.WORKER_SATURATION, "stealing" in dask_scheduler.extensions))
        assert (saturation, stealing) == (1.0, False)
        tick = client.run(lambda: __import__("dask").config.get("distributed.admin.tick.interval"))
        assert list(tick.values()) == ["1s"]
        frozen = map_tasks(_frozen_count, range(3), scheduler_address=client.scheduler.address, progress=False)
    assert frozen[0] == 0 and min(frozen[1:]) > 1000
    assert gc.get_freeze_count() == 0   # never in the client's process


def _frozen_count(_):
    import gc

    return gc.get_freeze_count()


def _sleep_for(seconds):
    import time

    time.sleep(seconds)
    return seconds


def test_interrupted_local_cluster_stops_at_once_and_workers_ignore_ctrl_c():
    """Ctrl-C while workers are busy: the embedded cluster is gone within a second or two (Dask
    alone waits for busy workers, then kills them), and the workers were started with SIGINT
    blocked, so a terminal's Ctrl-C (sent to the whole process group) reaches the client only."""
    import signal
    import time

    before = signal.getsignal(signal.SIGINT)  # Python's own, or SIG_IGN when started in the background
    with executor.dask_client(workers=2) as client:
        blocked = client.run(lambda: int(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])))
        assert set(blocked.values()) == {1}, blocked
    assert signal.getsignal(signal.SIGINT) is before  # the client's own is untouched
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])

    started = None
    with pytest.raises(KeyboardInterrupt):
        for _, result in iter_tasks(_sleep_for, [0, 60, 60], workers=2, progress=False):
            started = time.monotonic()
            raise KeyboardInterrupt
    assert started is not None and time.monotonic() - started < 3.0


def _hold_a_task_directory(seconds):
    import time

    with executor.task_directory() as path:
        (Path(path) / "partial_jobs.csv").write_text("job_id\n")
        time.sleep(seconds)
    return seconds


def test_killed_workers_leave_no_temporary_folder(tmp_path, monkeypatch):
    """Ctrl-C while two tasks hold files in their temporary directories: the embedded cluster kills
    the busy workers, and the client removes what their tasks had written."""
    import tempfile
    import time

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the workers' (spawned after this)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this process's
    with pytest.raises(KeyboardInterrupt):
        for _, _ in iter_tasks(_hold_a_task_directory, [0, 60, 60], workers=2, progress=False):
            deadline = time.monotonic() + 60
            while len(list(tmp_path.glob("batsched-ml-worker-*/*/partial_jobs.csv"))) < 2:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            raise KeyboardInterrupt
    assert not list(tmp_path.glob("batsched-ml-worker-*"))
    # a task that ends normally removes its directory, and its worker's folder once idle
    assert map_tasks(_hold_a_task_directory, [0, 0], workers=0) == [0, 0]
    assert not list(tmp_path.glob("batsched-ml-worker-*"))


def test_status_lines_when_stderr_is_not_a_terminal():
    """Without a terminal: a status line every interval, tasks done / running / left and an ETA,
    even while no task finishes (a 45-minute task must not leave a batch log silent)."""
    import io
    import re

    from batsched_ml.progress import TaskProgress

    stream = io.StringIO()
    progress = TaskProgress(4, "sample", "lines", stream, interval=0.3, first_after=0.2)
    assert sorted(dict(iter_tasks(_sleep_for, [1.5] * 4, workers=2, progress=progress)).values()) == [1.5] * 4
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("sample: 0/4 tasks done, 2 running, 2 left, ") and lines[0].endswith("ETA ?")
    assert all(re.fullmatch(r"sample: \d/4 tasks done, [0-2] running, [0-2] left, \d+ s elapsed, ETA (\?|\d+ s)",
                            line) for line in lines), lines
    assert any(re.match(r"sample: [23]/4 tasks done, 2 running, 0 left, .*, ETA \d+ s", line) for line in lines)


def test_task_progress_eta_weighs_long_tasks():
    from batsched_ml.progress import TaskProgress

    now = [0.0]
    progress = TaskProgress(3, "t", "off", weights=[6.0, 3.0, 1.0], clock=lambda: now[0])
    progress.start(slots=2)
    assert progress.status_line() == "t: 0/3 tasks done, 2 running, 1 left, 0 s elapsed, ETA ?"
    now[0] = 60.0
    progress.task_done(0)  # 6 units in 60 s: 10 s a unit; task 2 (1 unit) starts on the freed slot: 10 s
    # task 1 (3 units, 30 s) has run 60 s, past its estimate: a tenth of it more (3 s)
    assert progress.status_line() == "t: 1/3 tasks done, 2 running, 0 left, 1 min 0 s elapsed, ETA 10 s"


def _simulated_run(durations, weights, slots):
    """Tasks of ``durations`` taken in order by ``slots`` workers: (finish time, index) in order."""
    import heapq

    free, ends = [0.0] * slots, []
    for i, d in enumerate(durations):
        start = heapq.heappop(free)
        heapq.heappush(free, start + d)
        ends.append((start + d, i))
    return sorted(ends)


def test_task_progress_eta_counts_the_tasks_running_beside_the_finished_ones():
    """Issue 40 §6: two long tasks first on two workers; when the first ends the other ends too. The
    ETA was elapsed x weight left / weight done = 140 s (then crept), 2 s of the long task and
    20 s of short ones were left. Now it stays within a short task of the truth throughout."""
    from batsched_ml.progress import TaskProgress

    weights = [10.0, 10.0, 1.0, 1.0, 1.0, 1.0]
    durations = [100.0, 102.0, 10.0, 10.0, 10.0, 10.0]
    ends = _simulated_run(durations, weights, slots=2)
    now = [0.0]
    progress = TaskProgress(len(weights), "t", "off", weights=weights, clock=lambda: now[0])
    progress.start(slots=2)
    last, etas = ends[-1][0], []
    for when, index in ends[:-1]:
        now[0] = when
        progress.task_done(index)
        etas.append(progress.eta(when))
        assert abs(etas[-1] - (last - when)) <= 10.0, (index, when, etas[-1], last - when)
    assert etas[0] < 40.0  # at 100 s, when the first long task ended (the old formula: 140 s)
