"""A trace as RLScheduler reads it (its ``job.py``'s ``Workloads``), from an SWF file.

The rules, each of which moves the numbers (``docs/rl.md`` lists what each does):

* processors = max(allocated, requested) (either may be -1);
* a requested time of -1 becomes the job's run time (so Lublin's traces, which have no requested
  times, get exact estimates);
* a negative run time becomes 10 s; jobs whose run time is then 0 are dropped;
* the jobs are sorted by job id (stable), and sequences index that list;
* the machine is the header's ``MaxNodes`` nodes of ``MaxProcs / MaxNodes`` processors (``MaxProcs``
  absent: one per node), a counter of free nodes: a job takes ``ceil(processors / per node)`` nodes;
* the maxima the observation of their network normalises by (run time, requested memory, user,
  group and executable ids) are taken over every line, the dropped ones included, before the run
  time is fixed.

All times are integer seconds at the trace's own origin (F1 reads the absolute submission time).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["RLSchedulerTrace", "load_rlscheduler_trace"]

# RLScheduler's make_table_script.py evaluates SDSC-SP2 and HPC2N on their first 10,000 jobs only
# (``--batch_job_slice 10000``), the Lublin traces whole.
JOB_SLICES = {"sdsc-sp2": 10_000, "hpc2n": 10_000}


@dataclass(frozen=True)
class RLSchedulerTrace:
    """The parsed jobs (numpy integer arrays, job-id order) and the machine."""

    name: str
    job_id: np.ndarray
    submit: np.ndarray
    run: np.ndarray
    request_time: np.ndarray
    procs: np.ndarray
    memory: np.ndarray  # requested memory (the network's observation)
    user: np.ndarray
    group: np.ndarray
    executable: np.ndarray
    max_nodes: int
    max_procs: int
    maxima: dict  # run_time, memory, user, group, executable over every line

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def nb_cores(self) -> int:
        """The machine's processors (the environment's size features are relative to it)."""
        return self.max_procs

    @property
    def procs_per_node(self) -> float:
        return self.max_procs / self.max_nodes

    def nodes(self, procs) -> np.ndarray:
        """Nodes jobs of ``procs`` processors take (their ``Cluster.can_allocated``: the ceiling of a float
        division)."""
        return np.ceil(np.asarray(procs, dtype=np.float64) / float(self.procs_per_node)).astype(np.int64)

    def job_slice(self) -> int:
        """How many of the first jobs their table draws sequences from (0: all), by trace name."""
        name = Path(self.name).name.lower()
        return next((n for key, n in JOB_SLICES.items() if name.startswith(key)), 0)


def load_rlscheduler_trace(path, nb_nodes: int | None = None) -> RLSchedulerTrace:
    """RLScheduler's reading of the SWF trace ``path`` (plain or gzip); ``nb_nodes`` overrides a missing
    or wrong header (one processor per node)."""
    return _load(str(path), nb_nodes)


@lru_cache(maxsize=8)
def _load(path: str, nb_nodes: int | None) -> RLSchedulerTrace:
    from ...workloads.swf import read_swf

    if not Path(path).is_file():
        raise ValueError(f"{path}: no such SWF trace")
    swf = read_swf(path)
    t = swf.jobs
    as_int = lambda name: t[name].astype(np.int64)  # noqa: E731 -- their int() of each field
    run = as_int("run_time")
    request = as_int("requested_time")
    request = np.where(request == -1, run, request)
    procs = np.maximum(as_int("allocated_procs"), as_int("requested_procs"))
    memory, user, group, exe = (as_int(f) for f in ("requested_memory", "user_id", "group_id", "executable_id"))
    maxima = {"run_time": int(max(run.max(initial=0), 0)), "memory": int(max(memory.max(initial=0), 0)),
              "user": int(max(user.max(initial=0), 0)), "group": int(max(group.max(initial=0), 0)),
              "executable": int(max(exe.max(initial=0), 0))}
    run = np.where(run < 0, 10, run)
    keep = run > 0
    order = np.argsort(as_int("job_id")[keep], kind="stable")
    pick = lambda a: a[keep][order]  # noqa: E731
    if nb_nodes is not None:
        max_nodes = max_procs = int(nb_nodes)
    else:
        max_nodes = swf.header_int("MaxNodes") or 0
        max_procs = swf.header_int("MaxProcs") or max_nodes
    if max_nodes < 1 or max_procs < 1:
        raise ValueError(f"{path}: the header gives no machine size (MaxNodes/MaxProcs): give the machine's "
                         "size (--cores)")
    return RLSchedulerTrace(Path(path).name, pick(as_int("job_id")), pick(as_int("submit_time")), pick(run),
                             pick(request), pick(procs), pick(memory), pick(user), pick(group), pick(exe),
                             max_nodes, max_procs, maxima)
