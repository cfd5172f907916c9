"""Turn each trace of a campaign into the files its tasks simulate: a Batsim workload (one
per window or jitter copy) and a SimGrid platform, under ``RESULTS_DIR/inputs/``.

Conversion is cached by a digest of the source (file content or generator parameters) and
of how it is cut (max_jobs, nodes, windows, jitter), so a re-run reuses the files; the tasks' cache
keys then hash the files themselves.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .expand import CampaignError
from .traces import GENERATORS, TraceSpec

__all__ = ["TraceInput", "file_digest", "prepare_trace"]

FORMAT = 1  # bump when the way inputs are written changes


@dataclass(frozen=True)
class TraceInput:
    """One simulated workload: trace, window index and start, files and their digest."""

    trace: str
    window: int
    window_start: float
    workload: str
    platform: str
    digest: str      # sha256 of workload + platform bytes
    nb_jobs: int


def file_digest(path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _source_digest(spec: TraceSpec) -> str:
    from .. import __version__

    parts = {"format": FORMAT, "version": __version__, "source": spec.source, "max_jobs": spec.max_jobs,
             "nodes": spec.nodes, "windows": None if spec.windows is None else vars(spec.windows),
             "jitter": None if spec.jitter is None else vars(spec.jitter)}
    if spec.source == "generate":
        parts["generate"] = spec.generate
    else:
        parts["file"] = file_digest(spec.path)
        if spec.platform is not None:
            parts["platform"] = file_digest(spec.platform)
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _load_source(spec: TraceSpec) -> tuple[dict, Path | None]:
    """The whole workload dict, and the platform file to use (None: write one for nb_res)."""
    from ..workloads import load_workload, read_swf, swf_to_workload

    if spec.source == "swf":
        workload, _ = swf_to_workload(read_swf(spec.path), max_jobs=spec.max_jobs, nodes=spec.nodes)
        return workload, None
    if spec.source == "workload":
        return load_workload(spec.path), spec.platform
    params = dict(spec.generate)
    module_name, func_name = GENERATORS[params.pop("model")]
    generate = getattr(importlib.import_module(module_name), func_name)
    cores, jobs = params.pop("cores", None), params.pop("jobs", spec.max_jobs)
    if cores is None or jobs is None:
        raise CampaignError(f"[traces.{spec.name}] generate: cores and jobs are required")
    workload = generate(cores, jobs, **params)
    if spec.max_jobs is not None:
        workload = dict(workload, jobs=workload["jobs"][: spec.max_jobs])
    return workload, None


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def prepare_trace(spec: TraceSpec, inputs_dir) -> list[TraceInput]:
    """Write (or reuse) the workload file(s) and platform of ``spec``; one :class:`TraceInput`
    per window (a single one, window 0, without windows)."""
    from ..workloads import write_platform, write_workload
    from ..workloads.jitter import jitter_copies
    from ..workloads.windows import split_windows

    folder = Path(inputs_dir) / f"{spec.name}-{_source_digest(spec)[:16]}"
    manifest = folder / "manifest.json"
    if manifest.is_file():
        entries = json.loads(manifest.read_text())
    else:
        folder.mkdir(parents=True, exist_ok=True)
        workload, platform = _load_source(spec)
        platform = None if platform is None else Path(platform)
        if platform is None:
            platform = folder / "platform.xml"
            write_platform(int(workload["nb_res"]), platform)
        if spec.jitter is not None:
            parts, name = jitter_copies(workload, spec.jitter), "jitter{:03d}.json"
        elif spec.windows is not None:
            parts, name = split_windows(workload, spec.windows), "window{:03d}.json"
        else:
            parts, name = [(0.0, workload)], "workload.json"
        entries = []
        for k, (start, part) in enumerate(parts):
            path = folder / name.format(k)
            write_workload(part, path)
            entries.append({"window": k, "window_start": start, "workload": path.name,
                            "platform": platform.name if platform.parent == folder else str(platform.resolve()),
                            "nb_jobs": len(part["jobs"])})
        _write(manifest, json.dumps(entries, indent=1).encode())
    platform_digests: dict = {}
    out = []
    for e in entries:
        workload_path = folder / e["workload"]
        p = str((folder / e["platform"]).resolve())  # relative: inside folder; else absolute
        if p not in platform_digests:
            platform_digests[p] = file_digest(p)
        digest = hashlib.sha256((file_digest(workload_path) + platform_digests[p]).encode()).hexdigest()
        out.append(TraceInput(spec.name, e["window"], float(e["window_start"]), str(workload_path.resolve()),
                              p, digest, int(e["nb_jobs"])))
    return out
