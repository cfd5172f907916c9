"""Logarithmic runtime bins and Algorithm 1 of Nissimov & Feitelson (re-conditioning).

Bin ``j`` is ``[edges[j], edges[j+1])``; ``edges[0] = 1 s`` and each bin is
``factor`` (1.8, the paper's value) times wider than the previous, up to the
first edge at or above ``max_runtime``. Runtimes below 1 s fall in bin 0, above
the last edge in the last bin.
"""

from __future__ import annotations

import math
from bisect import bisect_right

import numpy as np

DEFAULT_FACTOR = 1.8
DEFAULT_MAX_RUNTIME = 30 * 86400.0  # above every walltime of the traces we use (set it to the largest one)


class RuntimeBins:
    def __init__(self, factor: float = DEFAULT_FACTOR, max_runtime: float = DEFAULT_MAX_RUNTIME):
        if not factor > 1.0:
            raise ValueError(f"bin factor must be > 1, got {factor!r}")
        if not max_runtime > 1.0:
            raise ValueError(f"max_runtime must be > 1 s, got {max_runtime!r}")
        self.factor = float(factor)
        self.max_runtime = float(max_runtime)
        n = max(1, math.ceil(math.log(max_runtime) / math.log(factor) - 1e-12))
        self.edges = self.factor ** np.arange(n + 1, dtype=np.float64)
        self._edge_list = self.edges.tolist()
        self.lo = self.edges[:-1]
        self.hi = self.edges[1:]
        self._log_lo = np.log(self.lo)
        self._log_width = np.log(self.hi) - self._log_lo

    def __len__(self) -> int:
        return len(self.lo)

    def index(self, runtime) -> np.ndarray | int:
        """The bin of each runtime (clamped to the first and last bins)."""
        if isinstance(runtime, (float, int)) or np.ndim(runtime) == 0:  # one runtime: plain Python is 10x faster
            return min(max(bisect_right(self._edge_list, float(runtime)) - 1, 0), len(self._edge_list) - 2)
        idx = np.searchsorted(self.edges, runtime, side="right") - 1
        return np.clip(idx, 0, len(self.lo) - 1)

    def condition_on_walltime(self, proba: np.ndarray, upper: float) -> np.ndarray | None:
        """``condition`` of one row with ``lower = 0`` (a job not started yet), fast; None
        when no mass is left below ``upper``."""
        if upper <= self.lo[0]:
            return None
        k = self.index(upper)
        new = np.zeros(len(self.lo))
        new[:k + 1] = proba[:k + 1]
        if upper < self.hi[k]:
            new[k] *= (math.log(upper) - self._log_lo[k]) / self._log_width[k]
        total = new.sum()
        if not total > 0:
            return None
        new /= total
        return new

    def condition(self, proba: np.ndarray, lower, upper) -> tuple[np.ndarray, np.ndarray]:
        """Algorithm 1, vectorised over jobs: ``proba`` (n, N) re-conditioned on
        ``lower < runtime <= upper`` (elapsed time, walltime), log-uniform inside each bin.

        Returns ``(new, ok)``: rows renormalised to 1, and whether any mass was left
        (rows without any are zero: the caller falls back to a point mass at ``upper``).
        """
        lower = np.asarray(lower, dtype=np.float64)[:, None]
        upper = np.asarray(upper, dtype=np.float64)[:, None]
        lo, hi = self.lo, self.hi
        start = np.maximum(lo, np.minimum(lower, hi))
        end = np.minimum(hi, np.maximum(upper, lo))
        frac = (np.log(end) - np.log(start)) / self._log_width
        np.maximum(frac, 0.0, out=frac)  # lower > upper inside one bin
        new = proba * frac
        total = new.sum(axis=1)
        ok = total > 0
        new[ok] /= total[ok, None]
        return new, ok
