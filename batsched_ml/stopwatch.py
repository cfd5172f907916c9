"""Wall and CPU seconds of the code run inside ``with`` blocks, summed over the blocks.

Learning components report both: the wall time is what a user waits and depends on what else
the machine runs; the CPU time (of this process) is the component's own cost, the figure the
cost targets are stated in. A bottom-layer module (standard library only).
"""

from __future__ import annotations

import time

__all__ = ["Stopwatch"]


class Stopwatch:
    """``with watch:`` adds the block's wall and CPU seconds to ``watch.wall`` / ``watch.cpu``;
    ``last_wall`` / ``last_cpu`` are the latest block's alone, and :meth:`elapsed` reads the
    open block's so far (a checkpoint written in the middle of a training)."""

    __slots__ = ("wall", "cpu", "last_wall", "last_cpu", "_started")

    def __init__(self, wall: float = 0.0, cpu: float = 0.0):
        self.wall, self.cpu = wall, cpu
        self.last_wall = self.last_cpu = 0.0
        self._started: tuple[float, float] | None = None

    def start(self) -> "Stopwatch":
        """Open a block without ``with`` (read with :meth:`elapsed`); returns the stopwatch."""
        if self._started is not None:
            raise RuntimeError("this stopwatch is already running (blocks do not nest)")
        self._started = (time.perf_counter(), time.process_time())
        return self

    def __enter__(self) -> "Stopwatch":
        return self.start()

    def __exit__(self, *exc) -> bool:
        self.last_wall, self.last_cpu = self.elapsed()
        self.wall += self.last_wall
        self.cpu += self.last_cpu
        self._started = None
        return False

    def elapsed(self) -> tuple[float, float]:
        """Wall and CPU seconds since the open block began."""
        if self._started is None:
            raise RuntimeError("this stopwatch is not running")
        wall0, cpu0 = self._started
        return time.perf_counter() - wall0, time.process_time() - cpu0

    def __repr__(self) -> str:
        return f"Stopwatch(wall={self.wall!r}, cpu={self.cpu!r})"
