"""One job sequence scheduled under RLScheduler's rules (their ``HPCSimPickJobs.py``), decision for
decision: the simulator of the ``rlscheduler`` protocol.

**The rules.** The machine is a counter of free nodes; the sequence starts empty at its first
job's submission, that job queued. At a decision the scheduler picks one queued job (a heuristic:
the head of the queue sorted by its key; an agent: a job of the visible window). Then:

* the job fits: it starts now;
* it does not, without backfilling: time advances one event at a time -- the next submission if it
  comes no later than the next end (arrivals first on ties), else that end -- until it fits; the
  choice is not revisited, arrivals only join the queue;
* it does not, with backfilling: its reservation ``R`` is computed *once*, from the running jobs'
  start + requested time (sorted, until enough processors would be free); then, before each event,
  the queue is scanned in submission order (whatever the order being evaluated) and a job starts
  if it fits now and ``now + requested time < R``. No recomputation when jobs run past their
  requested time, no second rule for jobs that would not delay the reservation anyway: this is
  not EASY.

After a start, the next decision comes at once if the queue holds a job, else at the next
submission (ends before it are released). Jobs that arrive while the queue is not empty join it
only when time advances. A job's score, fixed when it starts, is its bounded slowdown
``max(1, (wait + run) / max(run, 10))``; the sequence's is the sum of the scores divided by the
sequence length, summed in start order as theirs.

**Ties.** Their queue and running list are Python lists sorted in place by each key in turn
(stable sorts): which job wins a tie depends on the sorts before. This module keeps the same lists
and sorts them by the same keys in the same order -- including the observation's sorts on the
agent's path (:meth:`visible`) and the backfilling's sort of the running jobs by requested end --
so that every heuristic gives their schedule job for job.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ...policies.network import TIME_SCALE
from .. import observation
from .orders import ORDERS, STATIC_ORDERS, order_keys

__all__ = ["RLSchedulerEpisode", "TAU"]

TAU = 10  # seconds: their bounded slowdown's threshold


class RLSchedulerEpisode:
    """The sequence of ``length`` jobs of ``trace`` (an ``RLSchedulerTrace``) from job ``start``, with
    (``backfill`` true) or without their backfilling; ``window`` jobs visible to an agent.

    Heuristics: :meth:`run_order`. Agents (the environment's interface, as ``lean.LeanEpisode``):
    :meth:`begin`, then :meth:`advance` with a slot of the visible window, until either returns
    False; :meth:`observation` / :meth:`features` / :meth:`window_jobs` describe the pending decision."""

    core = "rlscheduler"

    def __init__(self, trace, start: int, length: int, backfill: bool, window: int = 128):
        if not (0 <= start and start + length <= len(trace)) or length < 1:
            raise ValueError(f"{trace.name}: a sequence of {length} jobs from job {start} is outside its "
                             f"{len(trace)} jobs")
        part = slice(start, start + length)
        self.trace, self.start_index, self.n = trace, start, length
        self.backfill, self.window = bool(backfill), int(window)
        self.submit = trace.submit[part].tolist()
        self.run = trace.run[part].tolist()
        self.request = trace.request_time[part].tolist()
        self.procs = trace.procs[part].tolist()
        self.nodes = trace.nodes(trace.procs[part]).tolist()
        self.total_nodes, self.per_node = trace.max_nodes, trace.procs_per_node
        self.nb_cores = trace.max_procs
        too_big = [j for j in range(length) if self.nodes[j] > self.total_nodes]
        if too_big:
            j = too_big[0]
            raise ValueError(f"{trace.name}: job {trace.job_id[start + j]} needs {self.procs[j]} processors, more "
                             f"than the machine's {trace.max_procs}: their simulator would never start it")
        self.sched = [-1] * length  # start times (their scheduled_time)
        self.free = self.total_nodes
        self.queue = [0]
        self.running: list = []
        self.now = self.submit[0]
        self.next = 1
        self.started: list = []  # jobs started since the owner last emptied it (the environment's rewards)
        self.order_started: list = []  # every started job, in start order
        self.decisions = self.invalid_actions = 0
        self.slots: list = []  # the pending decision's visible jobs
        self.over = False
        self._extra_keys: dict = {}

    # ------------------------------------------------------------ heuristics
    def run_order(self, name: str) -> float:
        """Schedule the whole sequence by the heuristic ``name`` (``orders.ORDERS``); the sequence's score."""
        if name not in ORDERS:
            raise ValueError(f"unknown order {name!r}; RLScheduler's are {', '.join(ORDERS)}")
        queue = self.queue
        if name in STATIC_ORDERS:
            keys = order_keys(name, self.submit, self.request, self.procs)
            sort = lambda: queue.sort(key=keys.__getitem__)  # noqa: E731
        else:
            key, submit, request, procs = ORDERS[name], self.submit, self.request, self.procs

            def sort():
                now = self.now
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    queue.sort(key=lambda j: key(submit[j], request[j], procs[j], now))
        while not self.over:
            sort()
            self._schedule(queue[0])
        return self.score()

    # ---------------------------------------------------------------- agents
    def begin(self) -> bool:
        """Run to the first decision with a choice (True) or to the end (False)."""
        return self._continue()

    def advance(self, slot) -> bool:
        """The agent's answer: a slot of the visible window (anything else is never executed: slot 0
        instead). Runs to the next decision (True) or the end (False)."""
        self.decisions += 1
        slots = self.slots
        if not (isinstance(slot, (int, np.integer)) and 0 <= slot < len(slots)):
            self.invalid_actions += 1
            slot = 0
        self._schedule(slots[int(slot)])
        return self._continue()

    def _continue(self) -> bool:
        while not self.over:
            if len(self.queue) >= 2:
                self.slots = self.visible()
                return True
            self._schedule(self.queue[0])  # a queue of one job: no choice
        self.slots = []
        return False

    def visible(self) -> list:
        """The jobs an agent sees, as their observation builds it: the queue sorted by submission; when
        it holds more than ``window`` jobs, the queue is also sorted by F1, F2, SJF and size, and the
        window is filled by taking in turn the next SJF job and the next smallest job."""
        queue, window = self.queue, self.window
        queue.sort(key=self.submit.__getitem__)
        if len(queue) <= window:
            return list(queue)
        for name in ("f1", "f2"):
            queue.sort(key=self._keys(name).__getitem__)
        queue.sort(key=self._keys("sjf").__getitem__)
        by_sjf = queue[:window]
        queue.sort(key=self._keys("smallest").__getitem__)
        by_size = queue[:window]
        visible, seen = [], set()
        for shortest, smallest in zip(by_sjf, by_size):
            for job in (shortest, smallest):
                if job not in seen and len(visible) < window:
                    visible.append(job)
                    seen.add(job)
            if len(visible) == window:
                break
        return visible

    def _keys(self, name: str) -> list:
        keys = self._extra_keys.get(name)
        if keys is None:
            s, r, n = self.submit, self.request, self.procs
            if name == "f2":  # sqrt(r) * n + 25600 * log10(s): only the observation's selection uses it
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    keys = [np.sqrt(r[j]) * n[j] + 25600 * np.log10(s[j]) for j in range(self.n)]
            elif name == "smallest":
                keys = list(zip(n, s))
            else:
                keys = order_keys(name, s, r, n)
            self._extra_keys[name] = keys
        return keys

    # ----------------------------------------------------------- observation
    @property
    def queued(self) -> int:
        return len(self.queue)

    def observation(self) -> dict:
        """The environment's observation (``observation.JOB_COLUMNS``) of the visible jobs."""
        slots = self.slots
        jobs = np.zeros((self.window, len(observation.JOB_COLUMNS)), np.float32)
        k = len(slots)
        if k:
            jobs[:k, :5] = self.features(fits_now=True)
            jobs[:k, 5] = 1.0
        machine = np.array([self.free / self.total_nodes,
                            min(math.log2(1.0 + len(self.queue)) / observation.QUEUE_BITS, 1.0)], np.float32)
        return {"jobs": jobs, "machine": machine}

    def features(self, fits_now: bool = False) -> np.ndarray:
        """The scoring features (``policies.network.FEATURES``, and ``fits_now``) of the visible jobs, float64."""
        from ...policies.network import job_features

        slots = self.slots
        wait = [self.now - self.submit[j] for j in slots]
        x = job_features(wait, [self.request[j] for j in slots], [self.procs[j] for j in slots], self.nb_cores)
        if fits_now:
            fits = np.array([1.0 if self.nodes[j] <= self.free else 0.0 for j in slots])
            x = np.column_stack((x, fits))
        return x

    def window_jobs(self) -> list[dict]:
        return [{"submission_time": float(self.submit[j]), "estimate": float(self.request[j]), "res": self.procs[j]}
                for j in self.slots]

    # ------------------------------------------------------------- the rules
    def _schedule(self, job: int) -> None:
        """Start ``job`` (waiting, or backfilling, until it fits), then move to the next decision."""
        if self.nodes[job] > self.free:
            if self.backfill:
                self._backfill_until_fits(job)
            else:
                while self.nodes[job] > self.free:
                    self._next_event()
        self._start(job)
        self.queue.remove(job)
        self._refill()

    def _start(self, job: int) -> None:
        self.sched[job] = self.now
        self.free -= self.nodes[job]
        self.running.append(job)
        self.started.append(job)
        self.order_started.append(job)

    def _end(self, job: int) -> int:
        return self.sched[job] + self.run[job]

    def _next_event(self) -> None:
        """One event: the next submission if no later than the next end, else that end."""
        running = self.running
        running.sort(key=self._end)
        release = self._end(running[0])
        if self.next < self.n and self.submit[self.next] <= release:
            self._arrive()
        else:
            self.now = max(self.now, release)
            self.free += self.nodes[running.pop(0)]

    def _arrive(self) -> None:
        self.now = max(self.now, self.submit[self.next])
        self.queue.append(self.next)
        self.next += 1

    def _backfill_until_fits(self, job: int) -> None:
        sched, request, nodes, running, queue = self.sched, self.request, self.nodes, self.running, self.queue
        running.sort(key=lambda r: sched[r] + request[r])
        free = self.free * self.per_node
        reservation = self.now
        for r in running:
            free += nodes[r] * self.per_node
            reservation = sched[r] + request[r]
            if free >= self.procs[job]:
                break
        while nodes[job] > self.free:
            queue.sort(key=self.submit.__getitem__)
            for other in list(queue):
                if nodes[other] <= self.free and self.now + request[other] < reservation:
                    self._start(other)
                    queue.remove(other)
            self._next_event()

    def _refill(self) -> None:
        """After a start: a non-empty queue decides now; else wait for the next submission (releasing
        the ends before it); none left: the sequence is over."""
        if self.queue:
            return
        if self.next >= self.n:
            self.over = True
            return
        running = self.running
        while True:
            if running:
                running.sort(key=self._end)
                release = self._end(running[0])
                if self.submit[self.next] > release:
                    self.now = max(self.now, release)
                    self.free += self.nodes[running.pop(0)]
                    continue
            self._arrive()
            return

    # --------------------------------------------------------------- results
    def bounded_slowdowns(self) -> list[float]:
        """Each started job's score, in start order."""
        sched, submit, run = self.sched, self.submit, self.run
        return [max(1.0, float(sched[j] - submit[j] + run[j]) / max(run[j], TAU)) for j in self.order_started]

    def score(self) -> float:
        """Their sequence score: each job's bounded slowdown divided by the sequence length, summed in
        start order (the jobs not started count 0)."""
        return sum(b / self.n for b in self.bounded_slowdowns())

    def avebsld(self, tau: float = TAU) -> float:
        """The environment's summary: their score (``tau`` is theirs, 10 s)."""
        return self.score()

    # the environment's reward reads these per job (wait = start - submit, run time, cores)
    @property
    def start_list(self) -> list:
        return self.sched

    @property
    def submit_list(self) -> list:
        return self.submit

    @property
    def runtime_list(self) -> list:
        return self.run

    @property
    def res(self) -> list:
        return self.procs

    @property
    def nb_started(self) -> int:
        return len(self.order_started)

    @property
    def end_time(self) -> float:
        """Seconds from the sequence's first submission to the last start (their makespan)."""
        return float(self.now - self.submit[0])
