"""A campaign's traces: each ``[traces.NAME]`` table checked and its files located.

A bare file name (``swf = "KTH-SP2-1996-2.1-cln.swf.gz"``) is looked up in the traces directory
(``--traces-dir DIR``, else the environment variable ``BATSCHED_ML_TRACES``), then next to the
campaign file that names it; a path with a directory is relative to that file. A missing file is
recorded (``TraceSpec.missing``), an error only for the traces that run
(``Campaign.require_inputs``).
"""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..workloads.jitter import JitterSpec
from ..workloads.windows import WindowSpec
from ..workloads.samples import PREFIX as SAMPLE_PREFIX, sample_path
from .expand import CampaignError, DeclaredPath, as_table, check_keys

__all__ = ["GENERATORS", "TRACES_ENV", "TraceSpec", "parse_generate", "trace_spec", "traces_directory"]

TRACES_ENV = "BATSCHED_ML_TRACES"  # the traces directory when --traces-dir is not given
PWA = "https://www.cs.huji.ac.il/labs/parallel/workload/"
TRACE_KEYS = ("swf", "workload", "platform", "generate", "max_jobs", "nodes", "windows", "jitter")
TRACE_SOURCES = ("swf", "workload", "generate")
WINDOW_KEYS = ("days", "count", "select", "start_days")
JITTER_KEYS = ("copies", "seconds", "seed")
GENERATORS = {"lublin": ("batsched_ml.workloads.lublin", "generate_lublin")}


def traces_directory(given=None) -> Path | None:
    """The directory bare trace names are looked up in: ``given`` (``--traces-dir``), else
    ``$BATSCHED_ML_TRACES``, else none."""
    text = given if given is not None else os.environ.get(TRACES_ENV) or None
    if text is None:
        return None
    path = Path(os.path.expanduser(str(text)))
    if not path.is_dir():
        how = "--traces-dir" if given is not None else TRACES_ENV
        raise CampaignError(f"{how} {text}: not a directory")
    return path


@dataclass(frozen=True)
class TraceSpec:
    name: str
    source: str                  # "swf", "workload" or "generate"
    path: Path | None = None     # swf or workload file
    platform: Path | None = None
    generate: dict | None = None  # {"model": ..., params...}
    max_jobs: int | None = None
    nodes: int | None = None
    windows: WindowSpec | None = None
    jitter: JitterSpec | None = None  # jittered copies, simulated as the trace's windows
    missing: str | None = None   # why a file of the trace cannot be found (None: it is there)


def _locate(value, where: str, traces_dir: Path | None, swf: bool) -> tuple[Path, str | None]:
    """A trace file's path and, when it is not there, why (see the module docstring)."""
    if isinstance(value, DeclaredPath):
        text, base = value.text, value.base
    else:
        text, base = value, Path.cwd()
    if not isinstance(text, str) or not text:
        raise CampaignError(f"{where} must be a file path")
    if text.startswith(SAMPLE_PREFIX):  # a bundled sample, wherever the campaign file is
        try:
            return sample_path(text), None
        except ValueError as exc:
            raise CampaignError(f"{where}: {exc}") from None
    path = Path(os.path.expanduser(os.path.expandvars(text)))
    if path.is_absolute():
        candidates = [path]
    elif len(path.parts) == 1:  # a bare name: a file of the traces directory
        candidates = ([traces_dir / path] if traces_dir is not None else []) + [base / path]
    else:
        candidates = [base / path]
    found = next((c for c in candidates if c.is_file()), None)
    if found is not None:
        return found, None
    if len(path.parts) == 1 and not path.is_absolute():
        looked = (f"in the traces directory {traces_dir} nor " if traces_dir is not None else "") + \
            f"next to the campaign file ({base})"
        hint = "" if traces_dir is not None else f"; give the directory holding it: --traces-dir DIR or {TRACES_ENV}=DIR"
        if swf:
            hint += f" (the Parallel Workloads Archive's logs: {PWA})"
        return candidates[0], f"{where}: {text} not found {looked}{hint}"
    return candidates[0], f"{where}: file not found: {candidates[0]}"


def _positive_int(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CampaignError(f"{where} must be an integer >= 1, not {value!r}")
    return value


def parse_generate(value, where: str) -> dict:
    """``"lublin:cores=256,jobs=10000"`` or ``{model = "lublin", cores = 256, ...}`` -> dict."""
    if isinstance(value, str):
        model, _, rest = value.partition(":")
        params: dict = {"model": model.strip()}
        for item in filter(None, (s.strip() for s in rest.split(","))):
            key, sep, text = item.partition("=")
            if not sep:
                raise CampaignError(f"{where}: expected KEY=VALUE, got {item!r}")
            try:
                params[key.strip()] = json.loads(text)
            except json.JSONDecodeError:
                params[key.strip()] = text.strip()
    elif isinstance(value, dict):
        params = dict(value)
    else:
        raise CampaignError(f"{where} must be \"MODEL:KEY=VALUE,...\" or a table")
    model = params.get("model")
    if model not in GENERATORS:
        raise CampaignError(f"{where}: unknown model {model!r}; known: {', '.join(GENERATORS)}")
    module, _ = GENERATORS[model]
    if importlib.util.find_spec(module) is None:
        raise CampaignError(f"{where}: the {model} generator ({module}) is not installed")
    return params


def _sub_table(table: dict, key: str, where: str, keys: tuple, required: str, make):
    """The trace table's ``key`` (``windows`` / ``jitter``), checked and turned into its spec (``make``)."""
    sub = as_table(table[key], f"{where} {key}")
    check_keys(sub, keys, f"{where} {key}")
    if required not in sub:
        raise CampaignError(f"{where} {key}: {required} is required")
    try:
        return make(**sub)
    except (TypeError, ValueError) as exc:
        raise CampaignError(f"{where} {exc}") from None


def trace_spec(name: str, table: dict, traces_dir: Path | None) -> TraceSpec:
    """A ``[traces.NAME]`` table, checked, with its files located (see the module docstring)."""
    where = f"[traces.{name}]"
    check_keys(table, TRACE_KEYS, where)
    sources = [k for k in TRACE_SOURCES if k in table]
    if len(sources) != 1:
        raise CampaignError(f"{where}: give exactly one of {', '.join(TRACE_SOURCES)}")
    source = sources[0]
    kwargs: dict = {"name": name, "source": source}
    missing = []
    if source == "generate":
        kwargs["generate"] = parse_generate(table["generate"], f"{where} generate")
    else:
        kwargs["path"], why = _locate(table[source], f"{where} {source}", traces_dir, source == "swf")
        missing.append(why)
    if "platform" in table:
        if source != "workload":
            raise CampaignError(f"{where}: platform goes with workload (swf and generate make their own)")
        kwargs["platform"], why = _locate(table["platform"], f"{where} platform", traces_dir, False)
        missing.append(why)
    kwargs["missing"] = "; ".join(filter(None, missing)) or None
    if "max_jobs" in table:
        if source == "workload":
            raise CampaignError(f"{where}: max_jobs applies to swf and generate traces")
        kwargs["max_jobs"] = _positive_int(table["max_jobs"], f"{where} max_jobs")
    if "nodes" in table:
        if source != "swf":
            raise CampaignError(f"{where}: nodes applies to swf traces")
        kwargs["nodes"] = _positive_int(table["nodes"], f"{where} nodes")
    if "windows" in table and "jitter" in table:
        raise CampaignError(f"{where}: give windows or jitter, not both (jitter copies are the trace's windows)")
    if "windows" in table:
        kwargs["windows"] = _sub_table(table, "windows", where, WINDOW_KEYS, "days", WindowSpec)
    if "jitter" in table:
        kwargs["jitter"] = _sub_table(table, "jitter", where, JITTER_KEYS, "copies", JitterSpec)
    return TraceSpec(**kwargs)
