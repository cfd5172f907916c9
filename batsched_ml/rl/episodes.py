"""Episodes: sequences of consecutive jobs cut from a trace, as RLScheduler samples them.

A :class:`Trace` is a whole workload held once in memory (an SWF trace converted with
``convert``'s rules, a Batsim JSON workload, or a generated Lublin workload); a
:class:`Sequences` draws ``length`` consecutive jobs starting anywhere in a range of the trace
(``start_range``, fractions of its jobs: training on the first 80 % and evaluating on
sequences of the last 20 % keeps the evaluation held back), shifts their submission times so
the first is at 0, and returns a Batsim workload dict that the embedded simulator runs like a
file (only the profiles its jobs use). The machine starts empty, as in RLScheduler.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..config.validate import machine_size

__all__ = ["Sequences", "Trace", "TrainingSettings", "load_trace"]


@dataclass(frozen=True)
class Trace:
    """A workload's jobs in submission order and its machine size."""

    name: str
    nb_cores: int
    jobs: tuple  # Batsim job dicts, sorted by subtime (stable)
    profiles: dict

    def __len__(self) -> int:
        return len(self.jobs)


def load_trace(source, nb_cores: int | None = None) -> Trace:
    """A :class:`Trace` from an SWF trace (``.swf``/``.swf.gz``, converted with ``convert``'s default
    rules), a Batsim JSON workload (path or dict), or ``lublin:CORES[:JOBS[:SEED]]`` (a generated
    Lublin-Feitelson workload, 10,000 jobs and seed 0 by default). ``nb_cores`` overrides the
    machine size (default: the trace's). Files are read once per process."""
    if isinstance(source, dict):
        from ..workloads import validate_workload

        validate_workload(source, "<workload>")  # as a file is: the rules Batsim applies
        return _trace_of(source, "<workload>", nb_cores)
    return _load_cached(str(source), nb_cores)


@lru_cache(maxsize=8)
def _load_cached(source: str, nb_cores: int | None) -> Trace:
    if source.startswith("lublin:"):
        from ..workloads.lublin import generate_lublin

        parts = source.split(":")[1:]
        try:
            cores, jobs, seed = (int(p) for p in (parts + ["10000", "0"])[:3])
        except ValueError:
            raise ValueError(f"{source!r}: expected lublin:CORES[:JOBS[:SEED]] with integers") from None
        if len(parts) > 3 or cores < 1 or jobs < 1:
            raise ValueError(f"{source!r}: expected lublin:CORES[:JOBS[:SEED]] (positive integers)")
        return _trace_of(generate_lublin(cores, jobs, seed=seed), source, nb_cores)
    path = Path(source)
    if not path.is_file():
        raise ValueError(f"{source}: no such workload file (an SWF trace, a Batsim JSON workload, or "
                         "lublin:CORES[:JOBS[:SEED]])")
    name = path.name.lower()
    if name.endswith((".swf", ".swf.gz")):
        from ..workloads.convert import swf_to_workload
        from ..workloads.swf import read_swf

        workload, _ = swf_to_workload(read_swf(path))
    else:
        from ..workloads import load_workload

        workload = load_workload(path)
    return _trace_of(workload, str(path), nb_cores)


def _trace_of(workload: dict, name: str, nb_cores: int | None) -> Trace:
    cores = nb_cores if nb_cores is not None else workload.get("nb_res")
    if cores is None:
        raise ValueError(f"{name}: the workload gives no machine size (nb_res): give the platform")
    jobs = sorted(workload["jobs"], key=lambda j: j.get("subtime", 0.0))
    return Trace(name, machine_size(int(cores), "the machine size"), tuple(jobs), workload.get("profiles", {}))


class Sequences:
    """Sequences of ``length`` consecutive jobs of ``trace`` starting within ``start_range``."""

    DEFAULT_LENGTH = 1024  # RLScheduler's

    def __init__(self, trace: Trace, length: int | None = None, start_range=(0.0, 1.0)):
        """``length=None``: 1,024 jobs, or every job of the start range when it holds fewer."""
        lo, hi = (float(x) for x in start_range)
        if not 0.0 <= lo < hi <= 1.0:
            raise ValueError(f"start_range must be two fractions 0 <= lo < hi <= 1, got {start_range!r}")
        n = len(trace)
        first = int(lo * n)
        available = int(hi * n) - first
        if length is None:
            length = max(1, min(self.DEFAULT_LENGTH, available))
        if length < 1:
            raise ValueError(f"the sequence length must be >= 1, got {length}")
        last = int(hi * n) - length  # starts within [first, last]
        if last < first:
            raise ValueError(f"{trace.name}: {available} jobs in start range {lo:g}-{hi:g}, fewer than a "
                             f"sequence of {length}: give a sequence length of at most {available}")
        self.trace, self.length, self.first, self.last = trace, length, first, last

    def sample_start(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.first, self.last + 1))

    def starts(self, count: int, seed: int) -> list[int]:
        """``count`` starts drawn with ``seed`` (fixed evaluation sets)."""
        rng = np.random.default_rng(seed)
        return [self.sample_start(rng) for _ in range(count)]

    def workload(self, start: int) -> dict:
        """The Batsim workload of the sequence starting at job ``start``."""
        if not self.first <= start <= self.last:
            raise ValueError(f"start {start} outside {self.first}..{self.last}")
        jobs = self.trace.jobs[start:start + self.length]
        origin = jobs[0].get("subtime", 0.0)
        seq_jobs = [dict(job, subtime=job.get("subtime", 0.0) - origin) for job in jobs]
        profiles = self.trace.profiles
        used = {job["profile"] for job in seq_jobs}
        return {"nb_res": self.trace.nb_cores, "jobs": seq_jobs,
                "profiles": {name: profiles[name] for name in sorted(used) if name in profiles},
                "sequence": {"trace": self.trace.name, "start": start, "length": self.length}}


@dataclass(frozen=True)
class TrainingSettings:
    """What every trainer shares: where the training sequences come from, the scheduler the policy
    orders and the network's shape (``es.ESConfig`` and ``ppo.PPOConfig`` add their own)."""

    workload: str
    nb_cores: int | None = None
    backfill: str = "none"
    sequence_length: int = 256
    start_range: tuple = (0.0, 0.8)
    hidden: tuple = (8,)
    seed: int = 0
    protocol: str = "batsched-ml"  # ``protocols``: whose trace reading, sequences and simulator
    fits_now: bool = False  # the network also reads whether the job fits now (an agent's feature)
