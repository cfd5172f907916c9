"""Progress of a simulation that tells the truth: finished jobs (not submitted ones), simulated
time, queue length and an ETA -- a tqdm bar on a terminal, a one-line status on stderr every
``interval`` seconds otherwise (logs, batch jobs), once the run has lasted ``first_after`` s."""

from __future__ import annotations

import sys
import time

__all__ = ["ProgressReporter", "format_duration", "status_line"]

DAY = 86400.0


def format_duration(seconds: float) -> str:
    """``75`` -> ``1 min 15 s``; ``5400`` -> ``1 h 30 min``; short and human."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


def _eta(status, elapsed: float, since=None) -> float | None:
    """Remaining wall time at the rate of jobs finished since ``since`` = (elapsed, finished) of an
    earlier status (loading the workload is not simulating), else since the start."""
    done, spent = status.finished, elapsed
    if since is not None:
        done, spent = status.finished - since[1], elapsed - since[0]
    if done <= 0 or status.total <= 0 or spent <= 0:
        return None
    return spent * (status.total - status.finished) / done


def status_line(status, elapsed: float, since=None) -> str:
    """One line: finished/total jobs, simulated time, queue, running, elapsed, ETA."""
    share = 100.0 * status.finished / status.total if status.total else 100.0
    eta = _eta(status, elapsed, since)
    return (f"simulating: {status.finished}/{status.total} jobs finished ({share:.1f}%), "
            f"simulated time {status.sim_time / DAY:.1f} d, {status.queued} queued, {status.running} running, "
            f"{format_duration(elapsed)} elapsed, ETA {'?' if eta is None else format_duration(eta)}")


class ProgressReporter:
    """Pass as ``Simulator(progress=...)`` / ``runner.simulate(progress=...)``.

    ``mode``: ``bar`` (tqdm, for a terminal), ``lines`` (periodic status lines) or ``off``.
    """

    def __init__(self, mode: str = "lines", stream=None, interval: float = 30.0, first_after: float = 5.0,
                 clock=time.monotonic):
        if mode not in ("bar", "lines", "off"):
            raise ValueError(f"progress mode must be bar, lines or off, not {mode!r}")
        self.mode = mode
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.next_line = self.started + first_after
        self.lines = 0
        self._bar = None
        self._first = None  # (elapsed, finished) at the first status: the ETA's reference

    @classmethod
    def for_cli(cls, quiet: bool, stream=None) -> "ProgressReporter":
        """Off with ``--quiet``; a bar on a terminal; status lines otherwise."""
        stream = stream if stream is not None else sys.stderr
        if quiet:
            return cls("off", stream)
        return cls("bar" if stream.isatty() else "lines", stream)

    def simulation_status(self, status) -> None:
        if self.mode == "off":
            return
        now = self.clock()
        if self._first is None:
            self._first = (now - self.started, status.finished)
        if self.mode == "bar":
            self._update_bar(status)
        elif now >= self.next_line and not status.done:
            print(status_line(status, now - self.started, self._first), file=self.stream, flush=True)
            self.lines += 1
            self.next_line = now + self.interval

    def _update_bar(self, status) -> None:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=status.total, unit="job", desc="simulating", leave=False, file=self.stream)
        bar = self._bar
        bar.total = status.total
        bar.n = status.finished
        bar.set_postfix_str(f"sim {status.sim_time / DAY:.1f} d, queue {status.queued}, "
                            f"running {status.running}", refresh=False)
        bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
