"""The generic task executor: a real local Dask cluster and a real dask scheduler + workers."""

from __future__ import annotations

import math
import os

import pytest

pytest.importorskip("distributed")

from batsched_ml.campaign import executor  # noqa: E402
from batsched_ml.campaign.executor import TaskError, TaskFailure, iter_tasks, map_tasks  # noqa: E402

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

    with executor.dask_client(workers=2) as client:
        blocked = client.run(lambda: int(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])))
        assert set(blocked.values()) == {1}, blocked
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the client's own is untouched
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])

    started = None
    with pytest.raises(KeyboardInterrupt):
        for _, result in iter_tasks(_sleep_for, [0, 60, 60], workers=2, progress=False):
            started = time.monotonic()
            raise KeyboardInterrupt
    assert started is not None and time.monotonic() - started < 3.0
