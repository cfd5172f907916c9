"""Progress that tells the truth: of a simulation, finished jobs (not submitted ones), simulated
time, queue length and an ETA; of many tasks (:class:`TaskProgress`), tasks done, running and
left and an ETA -- a tqdm bar on a terminal, a one-line status on stderr every ``interval``
seconds otherwise (logs, batch jobs), once the run has lasted ``first_after`` s."""

from __future__ import annotations

import sys
import time

__all__ = ["ProgressReporter", "TaskProgress", "format_duration", "status_line"]

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


class TaskProgress:
    """Progress of many independent tasks (a campaign's runs, learn-policy's tuples): a tqdm bar on
    a terminal, else a one-line status on stderr every ``interval`` s (``lines``), written by a
    background thread -- one task may run for an hour, and a batch job's log must still show
    that the run is alive and when it should end.

    ``weights`` (one per task, e.g. its expected cost) make the ETA account for long and short
    tasks; ``slots``, given to :meth:`start`, is how many tasks run at once (the workers). The ETA
    is work-based: tasks are taken in order as slots free up, so each finished task's duration is
    known; their seconds per unit of weight price the tasks still running (less the time they have
    run) and those not started, laid on the slots as they free up. (Elapsed time x weight left /
    weight done ignored the tasks running beside the finished ones: with two long tasks first on
    two workers, the first to end made the ETA the elapsed time, though the other was ending too.)
    """

    def __init__(self, total: int, desc: str = "tasks", mode: str = "lines", stream=None, interval: float = 30.0,
                 first_after: float = 5.0, weights=None, clock=time.monotonic, unit: str = "task", initial: int = 0):
        if mode not in ("bar", "lines", "off"):
            raise ValueError(f"progress mode must be bar, lines or off, not {mode!r}")
        self.total, self.desc, self.mode = total, desc, mode
        # other units than tasks (PPO's environment steps) are counted by advance(), ``initial`` of them done
        self.unit, self.initial = unit, initial
        self.stream = stream if stream is not None else sys.stderr
        self.interval, self.first_after, self.clock = interval, first_after, clock
        self.weights = list(weights) if weights is not None else [1.0] * total
        self.done = initial
        self.weight_done = 0.0
        self.slots = 1
        self.lines = 0
        self.started = clock()
        self._began: dict[int, float] = {}  # task -> when it started (taken in order as slots free up)
        self._took: dict[int, float] = {}  # finished task -> its seconds
        self._next = 0  # the next task to start
        self._bar = None
        self._stop = None
        self._thread = None

    @classmethod
    def for_cli(cls, total: int, desc: str, enabled: bool = True, stream=None, weights=None,
                **options) -> "TaskProgress":
        """Off unless ``enabled``; a bar on a terminal; status lines otherwise (a log gets no
        carriage-return bar). ``options``: ``unit``, ``initial``."""
        stream = stream if stream is not None else sys.stderr
        mode = "off" if not enabled else "bar" if stream.isatty() else "lines"
        return cls(total, desc, mode, stream, weights=weights, **options)

    def start(self, slots: int = 1) -> None:
        """The tasks start, ``slots`` at a time."""
        import threading

        self.slots = max(1, slots)
        self.started = self.clock()
        while len(self._began) < min(self.slots, self.total) and self._take_next(self.started):
            pass
        if self.mode == "bar":
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, initial=self.initial, unit=self.unit, desc=self.desc, leave=False,
                             file=self.stream)
        elif self.mode == "lines" and self._thread is None:
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._print_lines, name="batsched-ml task status", daemon=True)
            self._thread.start()

    def task_done(self, index: int) -> None:
        now = self.clock()
        self.done += 1
        self.weight_done += self._weight(index)
        # a task that ended before its turn (a worker took it early) ends the earliest started one's turn
        began = self._began.pop(index, None)
        if began is None and self._began:
            began = self._began.pop(min(self._began, key=self._began.get))
        self._took[index] = now - (self.started if began is None else began)
        self._take_next(now)  # its slot takes the next task
        if self._bar is not None:
            self._bar.update(1)

    def advance(self, count: int = 1) -> None:
        """``count`` more units done (a progress of units other than tasks)."""
        self.done += count
        if self._bar is not None:
            self._bar.update(count)

    def _weight(self, index: int) -> float:
        return self.weights[index] if index < len(self.weights) else 1.0

    def _take_next(self, now: float) -> bool:
        while self._next < self.total and self._next in self._took:
            self._next += 1
        if self._next >= self.total:
            return False
        self._began[self._next] = now
        self._next += 1
        return True

    def running(self) -> int:
        return min(self.slots, self.total - self.done)

    def eta(self, elapsed: float) -> float | None:
        """Seconds left (None before the first task ends): the running and waiting tasks at the
        seconds per unit of weight the finished ones took, laid on the slots as they free up."""
        import heapq

        spent = sum(self._took.values())
        weight = sum(self._weight(i) for i in self._took)
        if spent <= 0 or weight <= 0:
            return None
        rate = spent / weight  # seconds a unit of weight takes on one slot
        now = self.started + elapsed
        # a task running past its estimate is given a tenth of it more: nothing tells how much is left
        loads = [max(rate * self._weight(i) - (now - began), 0.1 * rate * self._weight(i))
                 for i, began in self._began.items()]
        loads += [0.0] * max(0, self.slots - len(loads))
        heapq.heapify(loads)
        for i in range(self._next, self.total):
            if i not in self._took:
                heapq.heappush(loads, heapq.heappop(loads) + rate * self._weight(i))
        return max(loads)

    def status_line(self) -> str:
        elapsed = self.clock() - self.started
        if self.unit != "task":
            done = self.done - self.initial
            eta = elapsed * (self.total - self.done) / done if done > 0 and elapsed > 0 else None
            return (f"{self.desc}: {self.done:,}/{self.total:,} {self.unit}s, {format_duration(elapsed)} elapsed, "
                    f"ETA {'?' if eta is None else format_duration(eta)}")
        eta = self.eta(elapsed)
        running = self.running()
        return (f"{self.desc}: {self.done}/{self.total} tasks done, {running} running, "
                f"{self.total - self.done - running} left, {format_duration(elapsed)} elapsed, "
                f"ETA {'?' if eta is None else format_duration(eta)}")

    def _print_lines(self) -> None:
        wait = self.first_after
        while not self._stop.wait(wait):
            if self.done >= self.total:
                return
            print(self.status_line(), file=self.stream, flush=True)
            self.lines += 1
            wait = self.interval

    def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._thread.join(1.0)
            self._stop = self._thread = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None
