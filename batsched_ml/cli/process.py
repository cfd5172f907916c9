"""The ``batsched-ml`` process: parse, run one command, and end it the documented way -- a user
error is one ``batsched-ml: error:`` line and exit 2, Ctrl-C / SIGTERM one line and exit 130 / 143,
``| head`` closing the pipe a normal exit 0."""

from __future__ import annotations

import sys

from .. import interrupts
from .parser import build_parser


def _stdout_closed() -> bool:
    """Whether whoever read our standard output has gone (``| head``): poll reports an error on
    a pipe without a reader. A broken pipe elsewhere (a worker, a socket) stays an error."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll (Windows), stdout replaced (tests)
        return True


def _quiet_end_of_pipe() -> int:
    """``batsched-ml ... | head`` is a normal end: exit 0, nothing more on the closed pipe (its
    last flush at exit would fail again)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        pass
    return 0


def main(argv=None) -> int:
    """Run one command; ``argv`` None: the program's own (then an interrupted run ends the process
    as soon as its line is printed, instead of seconds of interpreter teardown)."""
    # SIGTERM (a batch system's stop, `timeout`) ends every command like Ctrl-C: one line, what was
    # kept, exit 143 (130 for Ctrl-C), at any moment of the run; the same signal again is ignored
    restore = interrupts.signals_raise_once()
    interrupted = False
    try:
        code = _run_command(argv)
    except KeyboardInterrupt as exc:
        code, interrupted = interrupts.report(exc), True
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        code = _quiet_end_of_pipe()
    except Exception as exc:  # an error that an interrupt caused (an interrupted import) is that interrupt
        stop = interrupts.interrupt_behind(exc)
        if stop is None:
            raise
        code, interrupted = interrupts.report(stop), True
    finally:
        restore()
    return interrupts.finish(code, at_once=interrupted and argv is None)


NOTHING_STARTED = "stopped before the command started; run the same command again"


def _run_command(argv) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except SystemExit:
        sys.stdout.flush()  # --help into a closed pipe: told here, not at exit
        raise
    except KeyboardInterrupt as exc:
        raise interrupts.note_kept(exc, NOTHING_STARTED) from None
    if getattr(args, "tau", "unset") is None:
        args.tau = [10.0, 60.0]
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe is found here, within the handlers below
        return code
    except BrokenPipeError:
        raise
    except Exception as exc:
        from ..errors import USER_ERRORS  # here, not at start-up: it imports every module with errors

        if not isinstance(exc, USER_ERRORS):
            raise
        partial = getattr(exc, "partial_outputs", None)
        kept = f" ({partial.describe()})" if partial is not None else ""
        print(f"batsched-ml: error: {exc}{kept}", file=sys.stderr)
        return 2
