"""The queued jobs' runtime bins as rows of one table, for probabilistic backfilling.

A pass weighs every queued job that fits; reading their bins (masses and ends, padded to
the number of bins) and their last ends with one index into a table costs a few numpy
operations per pass, instead of stacking a small array per candidate. A row is taken when
a job is first seen and given back when it leaves the queue, so the table is as large as the
longest queue, not the workload. A static queue order is also kept as rows from pass to pass
(arrivals inserted where the queue puts them, starts deleted), so that reading the whole queue
costs no Python work per queued job.
"""

from __future__ import annotations

import numpy as np

from .kept_order import KeptOrder


class CandidateBins:
    def __init__(self, n_bins: int = 1):
        self._row: dict = {}  # job -> its row
        self._free: list = []  # rows given back
        self._used = 0  # rows ever taken (the table's high-water mark)
        self.masses = np.zeros((16, max(n_bins, 1)))
        self.ends = np.zeros_like(self.masses)  # relative to the start, zeros after the last bin
        self.last_ends = np.zeros(16)  # the last bin's end: the longest the job can run
        self.res = np.zeros(16, dtype=np.int64)  # cores requested
        self.jobs: list = [None] * 16  # row -> its job
        self._order = KeptOrder(self._row.__getitem__)  # the queued jobs' rows in queue order

    def __contains__(self, job) -> bool:
        return job in self._row

    def add(self, job, masses, ends) -> None:
        """``masses``/``ends``: the job's positive bins (the table widens to the longest)."""
        if job in self._row:
            return
        if self._free:
            row = self._free.pop()
        else:
            row = self._used
            self._used += 1
            if row == len(self.last_ends):
                self.masses = np.concatenate((self.masses, np.zeros_like(self.masses)))
                self.ends = np.concatenate((self.ends, np.zeros_like(self.ends)))
                self.last_ends = np.concatenate((self.last_ends, np.zeros_like(self.last_ends)))
                self.res = np.concatenate((self.res, np.zeros_like(self.res)))
                self.jobs.extend([None] * len(self.jobs))
        n = len(masses)
        if n > self.masses.shape[1]:  # wider than any row so far: pad the table with empty bins
            pad = np.zeros((len(self.masses), n - self.masses.shape[1]))
            self.masses, self.ends = np.hstack((self.masses, pad)), np.hstack((self.ends, pad))
        self.masses[row, :n] = masses
        self.masses[row, n:] = 0.0
        self.ends[row, :n] = ends
        self.ends[row, n:] = 0.0
        self.last_ends[row] = ends[-1]
        self.res[row] = job.res
        self.jobs[row] = job
        self._row[job] = row
        self._order.arrived(job)

    def discard(self, job) -> None:
        row = self._row.pop(job, None)
        if row is not None:
            self._free.append(row)
            self.jobs[row] = None
            self._order.drop_key(row)  # (a row can be taken again: it leaves the order now)

    def row(self, job) -> int:
        """The job's row, -1 if it has none."""
        return self._row.get(job, -1)

    def rows(self, jobs: list) -> np.ndarray:
        """The rows of ``jobs`` (each added before), in their order."""
        return np.fromiter(map(self._row.__getitem__, jobs), dtype=np.int64, count=len(jobs))

    def queue_rows(self, queue, now: float, add) -> np.ndarray:
        """The rows of every queued job, highest priority first (``queue.ordered(now)``); ``add``
        adds a job not seen yet (``KeptOrder`` keeps a static order between reads)."""
        def add_unseen(jobs):
            for job in jobs:
                if job not in self._row:
                    add(job)
        return self._order.current(queue, now, add_unseen)
