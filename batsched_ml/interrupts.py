"""Ctrl-C and SIGTERM during a long run: both end it as a ``KeyboardInterrupt``, so that what
is finished gets written (``simulate``'s outputs, a campaign's results) before exiting 130.

A bottom-layer module: the CLI and the campaign runner both use it, neither imports the other.
"""

from __future__ import annotations

import signal

__all__ = ["Terminated", "interruptible"]


class Terminated(KeyboardInterrupt):
    """SIGTERM (a timeout, a batch system): ended like Ctrl-C, outputs kept."""


def interruptible():
    """Turn SIGTERM into :class:`Terminated` until the returned function is called (it restores
    the previous handler). Outside the main thread (tests, embedding) signals are left alone."""

    def on_term(signum, frame):
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread
        return lambda: None
    return lambda: signal.signal(signal.SIGTERM, previous)
