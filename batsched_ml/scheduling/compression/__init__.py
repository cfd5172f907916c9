"""Conservative backfilling's compression pass for the counting model, compiled with numba.

A burst of n queued jobs makes n compressions, each of which moves most of the
queue a little (about 0.4 n^2 moves in all, issue 13 section 2): hours in Python
at n = 10,000. Here the whole pass runs on arrays, step for step as
``ConservativeBackfilling.schedule`` with ``CountProfile``, so the schedules are
the same (tests/test_compression.py runs both):

* Each job is re-placed at its first fit in queue order, with the same float
  operations. Where a search *starts* does not change what it finds, only what it
  costs: the ``NoFitBefore`` bounds here are sharper (a bound learnt after a job's
  reservation still rules out the starts before ``reservation - d``; freeing cores
  moves a bound back only to the start of the stretch that reaches the freed time).
* The profile is a list of blocks of slices (``FILL`` per block when the pass
  begins, at most ``BLOCK``), so that a split moves a few dozen entries.
* A search passes over a block without reading its slices when no slice has
  enough free cores (``B[BMAX]``), or when no stretch of enough free cores from one
  of its slices lasts the job's duration (``search.block_runs``: per block and
  core-count level, cached until the block changes).
* Most of a search's blocks are passed over in ``search._clean_blocks``, a loop written for the
  machine (one data-dependent branch per block, unsigned indices).
* A move is one walk from the new start to the old end (``blocks.move_reservation``).
* Equal neighbouring slices are merged in a block when its run caches are recomputed
  (``search.compact_block``), and all of them when the profile goes back to Python: a boundary
  inside a run of equal slices never starts a first fit that the run's first slice
  would not.

Queued jobs' reservations live in arrays indexed by ``Job.seq`` (start, end; NaN
when none), not in the profile's ``placed`` dict: a pass changes thousands of
them, and Python objects would cost more than the pass itself.

Modules: ``layout`` (the arrays, constants; no numba), ``blocks`` (block operations), ``search``
(first windows), ``bounds`` (``NoFitBefore``), ``passes`` (the pass). Every function of the last
four is compiled by numba's ``@njit`` on first use and cached on disk; numba itself is imported
(0.3 s, and loading the cached kernels as much again) only when a pass first needs it: most runs
never queue enough jobs (see ``ConservativeBackfilling``).
"""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path

import numpy as np

from ..numba_loading import load_numba_without_blas
from .layout import EXACT_LEVELS

__all__ = ["EXACT_LEVELS", "ReservationTable", "compress", "levels"]

_KERNEL_MODULES = ("blocks", "search", "bounds", "passes")
_checked = False


def _drop_stale_kernels() -> None:
    """Once per process, before the kernels load: numba checks a cached kernel against its own
    source file only (a documented limit of its cache), while these kernels call each other across
    files. So the cache is taken as one whole: when any source of this package differs from the
    one the cache was written for, every cached kernel of the package is removed and compiled
    again (in numba's two documented places: ``NUMBA_CACHE_DIR``, else ``__pycache__`` here)."""
    global _checked
    if _checked:
        return
    _checked = True
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(here.glob("*.py")))).hexdigest()[:16]
    if os.environ.get("NUMBA_CACHE_DIR"):
        from numba.core.caching import UserProvidedCacheLocator

        cache = Path(os.environ["NUMBA_CACHE_DIR"]) / UserProvidedCacheLocator.get_suitable_cache_subpath(__file__)
    else:
        cache = here / "__pycache__"
    marker = cache / f"kernels-{digest}.sources"
    if marker.exists():
        return
    try:
        cache.mkdir(parents=True, exist_ok=True)
        for path in cache.iterdir():
            kernel = path.name.startswith(_KERNEL_MODULES) and path.suffix in (".nbi", ".nbc")
            if kernel or (path.name.startswith("kernels-") and path.suffix == ".sources"):
                path.unlink(missing_ok=True)
        marker.touch()
    except OSError:  # not writable: numba then uses its own user-wide cache, written by this very code
        pass


def levels(nb_cores: int) -> tuple[np.ndarray, np.ndarray]:
    """``(level, thresholds)``: each core count's level in the run caches and each level's
    smallest core count (exact up to ``EXACT_LEVELS`` cores, then 6% apart)."""
    thresholds = list(range(min(nb_cores, EXACT_LEVELS) + 1))
    while thresholds[-1] < nb_cores:
        thresholds.append(min(nb_cores, max(thresholds[-1] + 1, int(thresholds[-1] * 1.06))))
    level = np.searchsorted(np.array(thresholds), np.arange(nb_cores + 1), side="right") - 1
    return level.astype(np.int64), np.array(thresholds, dtype=np.int64)


class ReservationTable:
    """The queued jobs' reservations and requests, by ``Job.seq``, for ``compress``."""

    def __init__(self, size: int = 1024):
        self.start = np.full(size, np.nan)
        self.end = np.full(size, np.nan)
        self.cores = np.zeros(size, dtype=np.int64)
        self.span = np.zeros(size)

    def add(self, seq: int, cores: int, span: float) -> None:
        if seq >= len(self.start):
            size = max(2 * len(self.start), seq + 1)
            for name, fill in (("start", np.nan), ("end", np.nan), ("cores", 0), ("span", 0.0)):
                old = getattr(self, name)
                grown = np.full(size, fill, dtype=old.dtype)
                grown[:len(old)] = old
                setattr(self, name, grown)
        self.start[seq] = np.nan
        self.end[seq] = np.nan
        self.cores[seq] = cores
        self.span[seq] = span

    def reserved(self, seq: int):
        """``(start, end)`` of a queued job's reservation, or None."""
        start = self.start[seq]
        return None if math.isnan(start) else (float(start), float(self.end[seq]))

    def drop(self, seq: int) -> None:
        self.start[seq] = np.nan
        self.end[seq] = np.nan


def compress(times: np.ndarray, free: np.ndarray, seqs: np.ndarray, table: ReservationTable, levels: tuple):
    """Run one pass (``passes.run_pass``) on the profile's slices (float and int64 arrays, as
    ``ArrayCountProfile`` keeps them). Returns ``(times, free, started (indices in
    ``seqs``), their planned ends, earliest reservation start, earliest reservation end)``."""
    _drop_stale_kernels()
    load_numba_without_blas()  # before the first compiled call (a no-op after it)
    from .passes import run_pass
    started = np.empty(len(seqs), dtype=np.int64)
    started_end = np.empty(len(seqs))
    out_times, out_free, nstarted, first_start, first_end = run_pass(
        np.asarray(times, dtype=np.float64), np.asarray(free, dtype=np.int64), *levels, seqs,
        table.start, table.end, table.cores, table.span, started, started_end)
    return (out_times, out_free, started[:nstarted].tolist(),
            started_end[:nstarted].tolist(), float(first_start), float(first_end))
