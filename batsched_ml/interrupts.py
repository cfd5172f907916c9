"""Ctrl-C and SIGTERM for every command: stop at once, keep what finished, say so on one line.

* :func:`signals_raise_once` turns SIGTERM (a batch system's stop, ``timeout``) into
  :class:`Terminated`, a ``KeyboardInterrupt``: one code path ends a run either way; a repeated
  signal during the stop is ignored.
* :func:`note_kept` lets the code that was interrupted attach what it kept (a campaign's
  stored tasks, learn-policy's scored tuples), and :func:`report` prints the one line and
  returns the exit code (130 for Ctrl-C, 143 for SIGTERM, the shells' 128 + signal).
* ``deferred`` holds SIGINT / SIGTERM back inside a loop that must stop at a point of its
  choosing (a simulation writing its snapshot between two events): the signal is recorded and
  the loop alerted; a second signal later than ``REPEAT_GRACE`` raises at once.
* :func:`start_shielded` runs a start-up that spawns worker processes (a local Dask cluster)
  in a helper thread with SIGINT blocked, so the workers inherit it blocked and a terminal's
  Ctrl-C (sent to the whole process group) reaches this process only, which stays
  interruptible while they start. Interrupted, it kills what was spawned and marks the
  process to end without waiting for the helper (:func:`finish`).

A bottom-layer module (standard library only): the CLI, the campaign engine and the
learning procedure all use it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

__all__ = ["DeferredStop", "Terminated", "abandoned", "deferred", "exit_code", "finish", "interrupt_behind",
           "keeping", "note_kept", "report", "signals_raise_once", "start_shielded", "what_stopped"]

SIGINT_EXIT = 128 + signal.SIGINT    # 130
SIGTERM_EXIT = 128 + signal.SIGTERM  # 143
REPEAT_GRACE = 2.0  # seconds during which a repeated signal is the same stop (signals_raise_once)
_POLL = 0.05  # seconds between checks of a shielded start-up: what an interrupt waits at most

T = TypeVar("T")


class Terminated(KeyboardInterrupt):
    """SIGTERM (a timeout, a batch system): ended like Ctrl-C, outputs kept."""


def signals_raise_once() -> Callable[[], None]:
    """Make SIGINT raise ``KeyboardInterrupt`` and SIGTERM :class:`Terminated` from now on, once
    per stop: a signal within ``REPEAT_GRACE`` s of the previous one is the same stop again
    (``timeout`` signals its command, then the command's whole process group; a user presses
    Ctrl-C twice) and is ignored, so the run's way out -- storing what it kept, printing its
    line -- is not cut short by a second exception. Returns a function restoring the previous
    handlers (a no-op outside the main thread, where signals are not ours to set)."""
    last_stop: list[float] = []

    def on_signal(signum, frame):
        now = time.monotonic()
        if last_stop and now - last_stop[-1] < REPEAT_GRACE:
            return
        last_stop.append(now)
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    try:
        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread (tests, embedding)
        return lambda: None

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return restore


class DeferredStop:
    """The stop a ``deferred`` block received: ``exception`` (None until a signal came)."""

    def __init__(self):
        self.exception: KeyboardInterrupt | None = None
        self.at = 0.0


@contextmanager
def deferred(alert: Callable[[], None]) -> Iterator[DeferredStop]:
    """Within the block, SIGINT and SIGTERM raise nothing where the code happens to be: the stop is
    recorded in the yielded ``DeferredStop`` and ``alert()`` is called, for the code to stop at
    a point of its choosing and raise ``stop.exception`` itself. The same signal again within
    ``REPEAT_GRACE`` s is the same stop; a later one raises at once (the code did not come back).
    Outside the main thread, signals are not ours to handle: nothing is deferred."""
    stop = DeferredStop()

    def on_signal(signum, frame):
        now = time.monotonic()
        if stop.exception is None:
            stop.exception = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
            stop.at = now
            alert()
        elif now - stop.at >= REPEAT_GRACE:
            raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    try:
        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread
        previous = {}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if stop.exception is None else _after_stop(stop, handler))


def _after_stop(stop: DeferredStop, handler):
    """The handler back in place after a deferred stop, but for the repeats of that stop (a
    ``timeout`` signalling the process group too) while the stop is being reported."""
    if not callable(handler):
        return handler

    def on_signal(signum, frame):
        if time.monotonic() - stop.at >= REPEAT_GRACE:
            return handler(signum, frame)
    return on_signal


def interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM that ``exc`` stands for, if any: an extension module whose import
    is interrupted reports ``ImportError: initialization failed`` caused by the interrupt."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def exit_code(exc: BaseException) -> int:
    """130 for Ctrl-C (SIGINT), 143 for SIGTERM."""
    return SIGTERM_EXIT if isinstance(exc, Terminated) else SIGINT_EXIT


def what_stopped(exc: BaseException) -> str:
    return "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"


def note_kept(exc: BaseException, text: str) -> BaseException:
    """Attach what the interrupted work kept (``"3 of 10 tasks stored in ..."``); returns ``exc``."""
    exc.kept = text
    return exc


@contextmanager
def keeping(text: str) -> Iterator[None]:
    """Around a command: an interrupt (or an error it caused, see :func:`interrupt_behind`) that
    leaves without a note of what was kept gets ``text``, and is raised as the interrupt."""
    try:
        yield
    except BaseException as exc:  # noqa: BLE001 - re-raised unless an interrupt stands behind it
        stop = interrupt_behind(exc)
        if stop is None:
            raise
        if getattr(stop, "kept", None) is None:
            note_kept(stop, text)
        if stop is exc:
            raise
        raise stop from None


def report(exc: BaseException, command: str = "batsched-ml", stream=None) -> int:
    """Print ``COMMAND: interrupted[: what was kept]`` on one line; return the exit code."""
    kept = getattr(exc, "kept", None)
    partial = getattr(exc, "partial_outputs", None)
    if kept is None and partial is not None:
        kept = partial.describe()
    print(f"{command}: {what_stopped(exc)}" + (f": {kept}" if kept else ""),
          file=stream if stream is not None else sys.stderr, flush=True)
    return exit_code(exc)


# --------------------------------------------------------------- start-ups that spawn processes

_abandoned = threading.Event()


def start_shielded(build: Callable[[], T], *, name: str = "start-up") -> T:
    """``build()`` in a helper thread whose SIGINT is blocked (the processes it spawns inherit the
    mask: they never see Ctrl-C), while this thread waits and stays interruptible.

    On KeyboardInterrupt (or SIGTERM) during ``build``: the child processes started so far are
    killed, the process is marked to end promptly (:func:`finish`) and the interrupt
    propagates; the helper is left to die with the process.
    """
    _start_resource_tracker()
    box: dict = {}

    def run() -> None:
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            box["value"] = build()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc

    helper = threading.Thread(target=run, name=f"batsched-ml {name}", daemon=True)
    helper.start()
    try:
        while helper.is_alive():
            helper.join(_POLL)  # a timed join returns to the interpreter, which runs signal handlers
    except KeyboardInterrupt:
        _abandoned.set()
        _kill_children()
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker now, from this thread: the first process spawned
    starts it otherwise, and starting it unblocks SIGINT in the calling thread (CPython's
    ``resource_tracker.ensure_running`` blocks then unblocks it), which would let the workers
    spawned after it inherit an unblocked SIGINT."""
    quiet = "ignore:resource_tracker:UserWarning"
    if quiet not in sys.warnoptions:
        # the tracker (a process of its own, started with this interpreter's -W options) unlinks the
        # semaphores of a process that ended without freeing them -- what finish(at_once) does
        # to a half-started cluster -- and would print a warning about each batch
        sys.warnoptions.append(quiet)
    try:
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    except (ImportError, OSError, ValueError):  # pragma: no cover - platform without it
        pass


def _kill_children() -> None:
    """SIGKILL every child process of this process (half-started workers). On Linux they are read
    from ``/proc``: a process multiprocessing is spawning appears in its ``active_children()``
    only once its start-up data is written, and a child left without that data prints an
    ``EOFError`` traceback when this process ends; elsewhere, multiprocessing's list."""
    pids = _os_children()
    if pids is None:
        import multiprocessing

        pids = [child.pid for child in multiprocessing.active_children()]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _os_children() -> list[int] | None:
    """The pids of this process's children from ``/proc`` (None without it), except
    multiprocessing's resource tracker: it must outlive this process to free what the killed
    children left (named semaphores)."""
    try:
        tasks = os.listdir(f"/proc/{os.getpid()}/task")
    except OSError:
        return None
    pids: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{os.getpid()}/task/{task}/children") as listing:
                pids.extend(int(pid) for pid in listing.read().split())
        except (OSError, ValueError):
            continue
    return [pid for pid in pids if b"resource_tracker" not in _command_line(pid)]


def _command_line(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read()
    except OSError:
        return b""


def abandoned() -> bool:
    """Whether an interrupted start-up left a helper thread behind (see :func:`start_shielded`)."""
    return _abandoned.is_set()


def finish(code: int, at_once: bool = False) -> int:
    """Return ``code``, or end the process with it right now (stdout and stderr flushed) when
    ``at_once`` or when a start-up was abandoned: a half-built Dask cluster's exit hooks wait
    for it (10 s), and the interpreter's own teardown of numpy, numba, scipy and Dask takes
    seconds on a loaded machine -- too long after a Ctrl-C. Call it last, every file written."""
    if at_once or _abandoned.is_set():
        if _abandoned.is_set():  # the abandoned start-up may have spawned more since the interrupt
            _kill_children()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    return code
