"""SWF trace -> Batsim JSON workload, with the cleaning rules of the golden files.

The rules (see ``/work/shared/golden/README.md``) are fixed so that the same
trace always gives the same workload as the reference Batsim runs:

- skip a job whose run time (field 4) <= 0 or whose processor count <= 0;
- processors = requested (field 8) if > 0 else allocated (field 5), capped at
  the machine size (``nodes`` if given, else header MaxProcs, else MaxNodes);
- walltime = requested time (field 9) if > 0, else (``missing_walltime``) the run
  time (default, as the golden files), the machine's largest requested time, or
  the job is dropped; run time = min(run time, walltime);
- subtime = submit time - submit time of the first kept job;
- one delay profile ``d<run time>`` per distinct run time;
- the calendar's time zone: the header's ``TimeZoneString`` (with DST), else its
  numeric ``TimeZone``, else UTC with a warning (see ``timezone``).

How many jobs each rule touched is in the report and in the workload's ``swf``
object (``cleaning``), so that a result can be traced back to the rules.

Everything is vectorised with numpy; only building the JSON dicts is a loop.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..config.validate import machine_size, non_negative_int
from .swf import SwfTrace, read_swf
from .timezone import resolve_time_zone

__all__ = ["ConversionReport", "swf_to_workload", "convert_swf", "profile_name", "MISSING_WALLTIME"]

SKIP_RUN_TIME = "run_time<=0"
SKIP_PROCS = "procs<=0"
SKIP_NO_WALLTIME = "no_requested_time"
# What to do with a job without a requested time (SWF field 9 <= 0).
MISSING_WALLTIME = ("runtime", "max", "drop")


@dataclass
class ConversionReport:
    """What the cleaning did; ``read == kept + sum(skipped) + beyond_max_jobs``."""

    source: str
    read: int                 # job lines in the trace
    kept: int                 # jobs in the workload
    skipped: dict[str, int]   # reason -> count (first failing rule wins)
    beyond_max_jobs: int      # trace jobs after the max_jobs-th kept job
    capped: int               # kept jobs whose processor count was capped
    run_time_clipped: int     # kept jobs whose run time exceeded the walltime
    nb_res: int
    nb_res_source: str        # "nodes", "MaxProcs", "MaxNodes" or "largest job"
    nb_profiles: int
    bad_lines: int            # lines the reader skipped (strict=False)
    warnings: list[str] = field(default_factory=list)  # what may make the workload wrong (stderr)
    walltime_filled: int = 0  # kept jobs without a requested time, given one by missing_walltime
    missing_walltime: str = "runtime"
    time_zone: str = "UTC"    # what calendar features use: a tz name, "UTC+01:00" or "UTC"
    time_zone_note: str = ""

    def _missing_words(self) -> str:
        how = f"(--missing-walltime {self.missing_walltime})"
        if self.missing_walltime == "drop":
            return f"{self.skipped.get(SKIP_NO_WALLTIME, 0)} dropped {how}"
        value = "their run time" if self.missing_walltime == "runtime" else "the largest requested time"
        return f"{self.walltime_filled} given walltime = {value} {how}"

    def cleaning(self) -> dict:
        """Jobs each cleaning rule touched (the workload's ``swf.cleaning``)."""
        return {"dropped_run_time<=0": self.skipped.get(SKIP_RUN_TIME, 0),
                "dropped_no_processors": self.skipped.get(SKIP_PROCS, 0),
                "dropped_no_requested_time": self.skipped.get(SKIP_NO_WALLTIME, 0),
                "processors_capped": self.capped,
                "walltime_filled": self.walltime_filled,
                "run_time_capped_at_walltime": self.run_time_clipped,
                "beyond_max_jobs": self.beyond_max_jobs,
                "missing_walltime": self.missing_walltime}

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        skipped = ", ".join(f"{k}: {v}" for k, v in self.skipped.items()) or "none"
        lines = [
            f"{self.source}: read {self.read} jobs, kept {self.kept} "
            f"(skipped {sum(self.skipped.values())} [{skipped}], "
            f"{self.beyond_max_jobs} beyond max_jobs)",
            f"  nb_res {self.nb_res} (from {self.nb_res_source}), {self.capped} jobs capped, "
            f"{self.run_time_clipped} run times clipped to walltime, {self.nb_profiles} profiles",
            f"  jobs without a requested time: {self._missing_words()}",
            f"  {self.time_zone_note}" if self.time_zone_note and not self._zone_warning() else
            f"  time zone {self.time_zone}",
        ]
        if self.bad_lines:
            lines.append(f"  {self.bad_lines} malformed lines skipped by the reader")
        return "\n".join(lines)

    def _zone_warning(self) -> bool:
        return self.time_zone_note.startswith("warning: ")

    def all_warnings(self) -> list[str]:
        """The sentences ``convert`` prints on stderr (``str(report)`` is the report itself)."""
        zone = [self.time_zone_note.removeprefix("warning: ")] if self._zone_warning() else []
        return zone + self.warnings


def profile_name(run_time: float) -> str:
    """``d1234`` for an integral run time, ``d12.5`` otherwise."""
    return f"d{int(run_time)}" if float(run_time).is_integer() else f"d{run_time!r}"


def _machine_size(trace: SwfTrace, nodes: int | None, procs: np.ndarray) -> tuple[int, str]:
    """The machine's cores and where the number comes from; one larger than batsched-ml
    handles is refused here, before a platform is written."""
    if nodes is not None:
        return machine_size(nodes, "nodes"), "nodes"
    for key in ("MaxProcs", "MaxNodes"):
        value = trace.header_int(key)
        if value is not None and value > 0:
            return machine_size(value, f"{trace.name}: the header's {key} (give --nodes to override it)"), key
    # No usable header (e.g. METACENTRUM-2009-2 as shipped): the machine must at
    # least hold the largest job, so nothing is capped.
    largest = machine_size(int(procs.max()) if len(procs) else 1,
                           f"{trace.name}: the largest job's processors (give --nodes to cap them)")
    return largest, "largest job"


def swf_to_workload(
    trace: SwfTrace, max_jobs: int | None = None, nodes: int | None = None,
    missing_walltime: str = "runtime",
) -> tuple[dict, ConversionReport]:
    """Clean ``trace`` into a Batsim workload dict; returns ``(workload, report)``.

    ``missing_walltime`` says what a job without a requested time gets: ``runtime`` (its
    run time: backfilling then has perfect estimates for it), ``max`` (the largest
    requested time of the trace's usable jobs) or ``drop`` (the job is skipped).
    """
    if missing_walltime not in MISSING_WALLTIME:
        raise ValueError(f"missing_walltime must be one of {', '.join(MISSING_WALLTIME)}, "
                         f"got {missing_walltime!r}")
    j = trace.jobs
    run = j["run_time"]
    procs = np.where(j["requested_procs"] > 0, j["requested_procs"], j["allocated_procs"])
    bad_run = ~(run > 0)
    bad_procs = ~bad_run & ~(procs > 0)
    no_req = ~(j["requested_time"] > 0)
    bad_req = ~bad_run & ~bad_procs & no_req if missing_walltime == "drop" else np.zeros(len(j), bool)
    keep = ~(bad_run | bad_procs | bad_req)
    fill = None
    if missing_walltime == "max":
        usable = keep & ~no_req
        if not usable.any():
            raise ValueError(f"{trace.name}: no usable job has a requested time, so "
                             "--missing-walltime max has nothing to use (try runtime or drop)")
        fill = float(j["requested_time"][usable].max())

    beyond = 0
    if max_jobs is not None:
        non_negative_int(max_jobs, "max_jobs")
        kept_idx = np.flatnonzero(keep)
        if len(kept_idx) > max_jobs:
            cut = kept_idx[max_jobs - 1] + 1 if max_jobs else 0
            beyond = len(j) - cut
            keep[cut:] = bad_run[cut:] = bad_procs[cut:] = bad_req[cut:] = False

    k = j[keep]
    run_k = run[keep]
    procs_k = procs[keep]
    nb_res, nb_res_source = _machine_size(trace, nodes, procs_k)
    capped = procs_k > nb_res
    res = np.minimum(procs_k, nb_res).astype(np.int64)
    req = k["requested_time"]
    filled = ~(req > 0)
    walltime = np.where(filled, run_k if fill is None else fill, req)
    clipped = run_k > walltime
    run_k = np.minimum(run_k, walltime)
    submit = k["submit_time"]
    subtime = submit - submit[0] if len(submit) else submit

    warnings = []
    announced = trace.announced_jobs()
    if announced is not None and announced != len(j) + len(trace.bad_lines):
        warnings.append(f"the header announces {announced:,} jobs (MaxJobs less the jobs its cleaning removed) "
                        f"but the file holds {len(j) + len(trace.bad_lines):,} job lines: is it cut (an "
                        "incomplete download)?")
    if not len(k):
        warnings.append("no job kept, the workload is empty")
    if len(subtime) and subtime.min() < 0:
        warnings.append(f"{int((subtime < 0).sum())} jobs submitted before the first kept job "
                     "(trace not sorted by submit time): negative subtimes")
    ids = k["job_id"].astype(np.int64)
    if len(np.unique(ids)) != len(ids):
        warnings.append(f"{len(ids) - len(np.unique(ids))} duplicate SWF job numbers")
    if np.any(ids != k["job_id"]):
        warnings.append("non-integral SWF job numbers were truncated")

    names: list[str] = []
    profiles: dict[str, dict] = {}
    by_value: dict[float, str] = {}
    for r in run_k.tolist():
        name = by_value.get(r)
        if name is None:
            name = by_value[r] = profile_name(r)
            profiles[name] = {"type": "delay", "delay": r}
        names.append(name)

    jobs = [
        {"id": i, "subtime": s, "walltime": w, "res": n, "profile": p, "user": u,
         "group": g, "executable": e, "queue": q, "partition": pa}
        for i, s, w, n, p, u, g, e, q, pa in zip(
            ids.tolist(), subtime.tolist(), walltime.tolist(), res.tolist(), names,
            *(k[f].astype(np.int64).tolist() for f in
              ("user_id", "group_id", "executable_id", "queue_id", "partition_id")),
        )
    ]
    tz = trace.header_int("TimeZone")
    start = trace.header_int("UnixStartTime")
    zone = resolve_time_zone(trace.header.get("TimeZoneString"), tz,
                             at=None if start is None else start + (float(submit[0]) if len(submit) else 0))
    workload = {
        "nb_res": nb_res,
        "jobs": jobs,
        "profiles": profiles,
        "swf": {
            "source": trace.name,
            "UnixStartTime": trace.header_int("UnixStartTime"),
            "TimeZone": tz,
            "TimeZoneString": trace.header.get("TimeZoneString"),
            # calendar time of a job = UnixStartTime + subtime_offset + subtime
            "subtime_offset": float(submit[0]) if len(submit) else 0.0,
        },
    }
    report = ConversionReport(
        source=trace.name,
        read=len(j),
        kept=len(jobs),
        skipped={SKIP_RUN_TIME: int(bad_run.sum()), SKIP_PROCS: int(bad_procs.sum())},
        beyond_max_jobs=int(beyond),
        capped=int(capped.sum()),
        run_time_clipped=int(clipped.sum()),
        nb_res=nb_res,
        nb_res_source=nb_res_source,
        nb_profiles=len(profiles),
        bad_lines=len(trace.bad_lines),
        warnings=warnings,
        walltime_filled=int(filled.sum()),
        missing_walltime=missing_walltime,
        time_zone=zone.label,
        time_zone_note=zone.note,
    )
    if missing_walltime == "drop":
        report.skipped[SKIP_NO_WALLTIME] = int(bad_req.sum())
    # what the calendar uses and what each rule did, kept with the workload
    workload["swf"]["time_zone"] = zone.label
    workload["swf"]["cleaning"] = report.cleaning()
    return workload, report


def convert_swf(
    swf_path: str | Path,
    workload_out: str | Path,
    platform_out: str | Path | None = None,
    max_jobs: int | None = None,
    nodes: int | None = None,
    missing_walltime: str = "runtime",
    allow_empty: bool = False,
    batsim: int = 4,
) -> ConversionReport:
    """Read, clean and write a trace (and a matching platform): the CLI's ``convert``. A trace
    without any usable job is an error (nothing is written) unless ``allow_empty``. ``batsim=5``
    writes a Batsim 5 workload (``DelayProfile``, each job's ``user`` in its ``extra_data``, which
    Batsim 5 forwards to the scheduler: ``batsim5.to_v5``)."""
    from .batsim5 import to_v5
    from .loader import WorkloadError, write_workload
    from .platform import write_platform

    workload, report = swf_to_workload(read_swf(swf_path), max_jobs=max_jobs, nodes=nodes,
                                       missing_walltime=missing_walltime)
    if not report.kept and not allow_empty:
        skipped = ", ".join(f"{count} {reason}" for reason, count in report.skipped.items() if count)
        why = f": {skipped}" if skipped else ""
        raise WorkloadError(f"{swf_path}: no usable job ({report.read} job lines read{why}): nothing "
                            "written (--allow-empty writes the empty workload anyway)")
    write_workload(to_v5(workload, str(swf_path)) if batsim == 5 else workload, workload_out)
    if platform_out is not None:
        write_platform(report.nb_res, platform_out)
    return report
