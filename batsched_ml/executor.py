"""Run a picklable function over many items on Dask distributed: a local cluster of worker
processes (one per core, nothing to start) or an existing Dask scheduler (scale-out).

Generic on purpose, and at the bottom of the package's layers (it knows nothing of simulations):
campaigns run their simulations through it, ``learn-policy`` its trials, and any other "many
independent simulations" loop (hyper-parameter trials, sensitivity probes) can too::

    from batsched_ml.executor import map_tasks
    results = map_tasks(run_trial, trials)                       # all local cores
    results = map_tasks(run_trial, trials, workers=2)            # two worker processes
    results = map_tasks(run_trial, trials, scheduler_address="tcp://head:8786")

``fn`` and the items must be picklable with cloudpickle: functions of modules the workers can
import travel by reference, others (``__main__``, lambdas, closures) by value; for a module the
workers cannot import (a test file), call ``cloudpickle.register_pickle_by_value(module)``.
Results come back to the caller's process; Dask re-runs a task whose worker died. ``workers=0``
runs in this process, one item after the other (debugging).

Throughput: tasks start in item order, one per worker at a time (put the longest first);
the embedded cluster is configured to steal little CPU from them (``LOCAL_CLUSTER_CONFIG``)
and each worker keeps its own long-lived objects out of the garbage collector's full passes
(``_settle_worker``). Measurements: ``benchmarks/bench_campaign.py``, ``benchmarks/results/campaigns.md``.
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import tempfile
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

__all__ = ["TaskError", "TaskFailure", "dask_client", "iter_tasks", "map_tasks", "task_directory"]

CONNECT_TIMEOUT = "20s"  # how long to keep trying an unreachable scheduler

# The embedded cluster runs long CPU-bound tasks, one worker per core, beside its own scheduler and
# nannies: every periodic wake-up of their event loops takes a core from a simulation and the GIL
# from the task thread. Dask's defaults wake each process 50+ times a second (72 ms of CPU per second
# for 2 workers, idle); these settings, 13 ms. Read when the cluster is built.
LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,           # stack sampling of the task thread, 10 ms
    "distributed.admin.tick.interval": "1s",                # blocked-event-loop monitor, 20 ms
    "distributed.worker.memory.monitor-interval": "1s",     # memory limit checks, 100 ms
    "distributed.admin.system-monitor.interval": "2s",      # dashboard's CPU/memory feed, 500 ms
    # one task per worker at a time: the next item goes to the first worker that is free, in item
    # order (Dask's default 1.1 queues a second task on a busy worker, which work stealing must then
    # undo at the end); with nothing queued on workers, there is nothing to steal
    "distributed.scheduler.worker-saturation": 1.0,
    "distributed.scheduler.work-stealing": False,
}


@dataclass(frozen=True)
class TaskFailure:
    """What is left of a task that raised: its position, item and the error text."""

    index: int
    item: Any
    error: str          # "ExceptionType: message", one line
    traceback: str = ""


class TaskError(RuntimeError):
    """Raised by :func:`map_tasks` (``errors="raise"``) for the first failed task."""

    def __init__(self, failure: TaskFailure):
        super().__init__(f"task {failure.index} ({failure.item!r}) failed: {failure.error}")
        self.failure = failure


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def default_workers() -> int:
    """One worker process per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@contextmanager
def dask_client(scheduler_address: str | None = None, workers: int | None = None):
    """A ``distributed.Client`` on ``scheduler_address``, or on a fresh local cluster of
    ``workers`` single-threaded worker processes (default: one per core), closed on exit."""
    from distributed import Client, LocalCluster

    _quiet_interrupted_sync()
    if scheduler_address:
        try:
            client = Client(scheduler_address, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise OSError(f"cannot reach the Dask scheduler at {scheduler_address}: {_one_line(exc)}") from None
        try:
            yield client
        finally:
            client.close()
        return
    import dask

    from .interrupts import start_shielded

    def start_cluster():
        return LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1, processes=True,
                            dashboard_address=None, silence_logs=logging.ERROR,
                            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})  # no dashboard

    # started in a helper thread with SIGINT blocked (inherited by the workers: a terminal's Ctrl-C,
    # sent to the whole process group, reaches the client only), while this thread stays
    # interruptible: a Ctrl-C during the seconds the workers take to start stops the run at once
    with dask.config.set(LOCAL_CLUSTER_CONFIG):
        cluster = start_shielded(start_cluster, name="Dask cluster start")
    pids = set()
    dask_logger = logging.getLogger("distributed")
    level = dask_logger.level
    try:
        client = Client(cluster)
        with client:
            pids.update(_worker_pids(cluster))
            yield client
    except BaseException:  # Ctrl-C, SIGTERM, a consumer that stopped early: tasks were cancelled
        # the nannies see their killed workers exit and start new ones, which the close then
        # cancels: errors they log with tracebacks, about a teardown that is wanted
        dask_logger.setLevel(logging.CRITICAL)
        pids.update(_stop_workers_now(cluster))
        raise
    finally:
        pids.update(_worker_pids(cluster))
        cluster.close()
        dask_logger.setLevel(level)
        for pid in pids:  # the workers are gone: what a killed task left in its scratch goes too
            shutil.rmtree(scratch_path(pid), ignore_errors=True)


class _InterruptedSyncFilter(logging.Filter):
    """Drops the one error that distributed (2026.8) logs when a Ctrl-C lands in ``utils.sync``
    before its future exists: the cancel callback then reads the unassigned ``future`` and
    raises ``NameError`` in the event loop, which tornado prints as a traceback under our
    one-line interrupt message. Nothing was lost: the interrupted call is abandoned anyway."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, NameError) and "'future'" in str(error):
            frames = traceback.extract_tb(error.__traceback__)
            return not (frames and frames[-1].name == "cancel" and frames[-1].filename.endswith("utils.py"))
        return True


_INTERRUPTED_SYNC_FILTER = _InterruptedSyncFilter()


def _quiet_interrupted_sync() -> None:
    logger = logging.getLogger("tornado.application")
    if _INTERRUPTED_SYNC_FILTER not in logger.filters:
        logger.addFilter(_INTERRUPTED_SYNC_FILTER)


def _worker_pids(cluster) -> list[int]:
    pids = (getattr(getattr(nanny, "process", None), "pid", None) for nanny in list(cluster.workers.values()))
    return [pid for pid in pids if pid]


def _stop_workers_now(cluster) -> list[int]:
    """Kill the embedded workers' processes (returns their pids): a worker busy in a task would
    otherwise hold the cluster's close for seconds (Dask waits for it, then kills it anyway), and
    its results are no longer wanted."""
    import signal

    pids = _worker_pids(cluster)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return pids


def scratch_path(pid: int) -> Path:
    """The folder holding the temporary directories of the tasks running in process ``pid``."""
    return Path(tempfile.gettempdir()) / f"batsched-ml-worker-{pid}"


_scratch_lock = threading.Lock()
_scratch_users = 0


@contextmanager
def task_directory(prefix: str = "task-"):
    """A temporary directory for one task, removed when the task ends, inside a folder per worker
    process (``scratch_path``) that exists only while tasks run there: when the embedded cluster
    kills a busy worker (Ctrl-C, SIGTERM), the client removes that worker's folder, so a killed
    task leaves nothing behind either."""
    global _scratch_users
    with _scratch_lock:
        scratch = scratch_path(os.getpid())
        scratch.mkdir(exist_ok=True)
        path = tempfile.mkdtemp(prefix=prefix, dir=scratch)
        _scratch_users += 1
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        with _scratch_lock:
            _scratch_users -= 1
            if _scratch_users == 0:
                shutil.rmtree(scratch, ignore_errors=True)


def _serial(fn: Callable, items: Sequence, progress) -> Iterator[tuple[int, Any]]:
    progress.start(1)
    for i, item in enumerate(items):
        try:
            yield i, fn(item)
        except Exception as exc:  # noqa: BLE001 - any task error is the task's result
            yield i, TaskFailure(i, item, _one_line(exc), traceback.format_exc())


_settled = False


def _settle_worker() -> None:
    """Once per worker process, after its first task (imports done): move every object alive
    now (Dask's worker, the imported modules) out of the garbage collector's reach. A full
    collection during a task then walks the task's objects only, as in a plain process: a
    worker holds ~100k objects of its own, and one 12k-job simulation's full collection took
    0.27 s there vs 0.16 s in a plain process (campaigns.md). Garbage is collected first; only
    reference cycles among these objects would outlive their use."""
    global _settled
    if not _settled:
        _settled = True
        gc.collect()
        gc.freeze()


def _call(payload: bytes, item):
    """Worker side: ``fn(item)`` with ``fn`` shipped by cloudpickle (the scheduler never unpickles it)."""
    import cloudpickle

    try:
        return cloudpickle.loads(payload)(item)
    finally:
        _settle_worker()


def _distributed(fn: Callable, items: Sequence, scheduler_address, workers, progress) -> Iterator[tuple[int, Any]]:
    import cloudpickle
    from distributed import as_completed

    payload = cloudpickle.dumps(fn)
    with dask_client(scheduler_address, workers) as client:
        progress.start(sum(client.nthreads().values()))
        futures = client.map(_call, [payload] * len(items), items, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        try:
            for future in as_completed(futures):
                i = index[future.key]
                if future.status == "error":
                    exc = future.exception()
                    tb = "".join(traceback.format_tb(future.traceback())) if future.traceback() else ""
                    yield i, TaskFailure(i, items[i], _one_line(exc), tb)
                else:
                    yield i, future.result()
                future.release()
        finally:
            client.cancel([f for f in futures if not f.done()])


def iter_tasks(fn: Callable, items: Iterable, *, scheduler_address: str | None = None,
               workers: int | None = None, progress=True, desc: str = "tasks") -> Iterator[tuple[int, Any]]:
    """Yield ``(index, result)`` for every item as tasks finish (completion order).

    A task that raised yields a :class:`TaskFailure` as its result; the others go on. Stop
    iterating (or press Ctrl-C) and the remaining tasks are cancelled and the cluster closed,
    so a caller that stores each result as it arrives can resume later. ``progress``: True for
    a bar on a terminal and a periodic status line on stderr otherwise, False for nothing, or
    a :class:`batsched_ml.progress.TaskProgress` of ``len(items)`` tasks.
    """
    from .progress import TaskProgress

    items = list(items)
    if not isinstance(progress, TaskProgress):
        progress = TaskProgress.for_cli(len(items), desc, enabled=bool(progress))
    if workers == 0:
        source = _serial(fn, items, progress)
    else:
        source = _distributed(fn, items, scheduler_address, workers, progress)
    try:
        for i, result in source:
            progress.task_done(i)
            yield i, result
    finally:
        source.close()
        progress.close()


def map_tasks(fn: Callable, items: Iterable, *, scheduler_address: str | None = None,
              workers: int | None = None, progress=True, errors: str = "raise") -> list:
    """``[fn(item) for item in items]``, computed on Dask workers, in item order.

    ``errors="raise"`` raises :class:`TaskError` for the first failure once every task has
    ended; ``errors="return"`` puts a :class:`TaskFailure` in the failed items' places.
    """
    if errors not in ("raise", "return"):
        raise ValueError(f"errors must be 'raise' or 'return', not {errors!r}")
    items = list(items)
    results: list = [None] * len(items)
    for i, result in iter_tasks(fn, items, scheduler_address=scheduler_address, workers=workers,
                                progress=progress):
        results[i] = result
    if errors == "raise":
        failed = [r for r in results if isinstance(r, TaskFailure)]
        if failed:
            raise TaskError(min(failed, key=lambda f: f.index))
    return results
