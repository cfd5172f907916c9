"""Read and validate a campaign file (TOML, see the documentation's "Campaigns" page).

Configuration keys are not listed here: a ``[configs.NAME]`` table holds the fields of
:class:`batsched_ml.config.RunConfig` by name (the ``simulate`` flags, dashes as underscores)
plus ``options``, and becomes that object directly (no command line is re-parsed); it is
validated and built by ``batsched_ml.compose`` like ``simulate``'s flags -- one vocabulary,
one validation.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..config import RunConfig, table_keys
from ..workloads.windows import WindowSpec

__all__ = ["Campaign", "CampaignError", "ConfigSpec", "PaperRef", "TraceSpec", "config_argv", "config_keys",
           "load_campaign"]

CAMPAIGN_KEYS = ("name", "baseline", "seeds", "metrics", "description", "task_timeout")
TRACE_KEYS = ("swf", "workload", "platform", "generate", "max_jobs", "nodes", "windows")
TRACE_SOURCES = ("swf", "workload", "generate")
WINDOW_KEYS = ("days", "count", "select", "start_days")
PAPER_KEYS = ("trace", "config", "metric", "value", "reduction", "source")
GENERATORS = {"lublin": ("batsched_ml.workloads.lublin", "generate_lublin")}


class CampaignError(ValueError):
    """A campaign file that cannot be run as written (the CLI prints it on one line, exit 2)."""


def config_keys() -> list[str]:
    """Every key a ``[configs.NAME]`` table accepts."""
    return table_keys()


def config_argv(table: dict, where: str) -> tuple[str, ...]:
    """The ``simulate`` flags equivalent to a config table, as written (not resolved)."""
    from ..config import ConfigError

    try:
        return RunConfig.from_table(table, where).argv(list(table))
    except ConfigError as exc:
        raise CampaignError(str(exc)) from None


@dataclass(frozen=True)
class ConfigSpec:
    name: str
    values: dict             # the table as written
    argv: tuple[str, ...]    # the same as ``simulate`` flags (reports; identity in run-time estimates)
    config: RunConfig        # resolved (validated, the scheduler's defaults filled in), seed 0

    @property
    def command(self) -> str:
        """The equivalent flags, shell-quoted, for reports."""
        import shlex

        return " ".join(shlex.quote(a) for a in self.argv)


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


@dataclass(frozen=True)
class PaperRef:
    trace: str
    config: str
    metric: str
    value: float | None = None
    reduction: float | None = None
    source: str = ""


@dataclass
class Campaign:
    name: str
    path: Path
    baseline: str
    seeds: list[int]
    metrics: list[str]
    traces: dict[str, TraceSpec]
    configs: dict[str, ConfigSpec]
    paper: list[PaperRef] = field(default_factory=list)
    description: str = ""
    text: str = ""               # the file as read, copied next to the results
    task_timeout: float | None = None  # seconds a task may run before it is stopped as ``timeout``

    def subset(self, traces=None, configs=None) -> "Campaign":
        """The same campaign on some traces / configs only (the baseline config is kept)."""
        def pick(table: dict, names, kind: str) -> dict:
            if not names:
                return table
            unknown = [n for n in names if n not in table]
            if unknown:
                raise CampaignError(f"unknown {kind} {unknown[0]!r}; {kind}s: {', '.join(table)}")
            return {n: v for n, v in table.items() if n in names}

        import dataclasses

        kept_configs = pick(self.configs, configs and [*configs, self.baseline], "config")
        kept_traces = pick(self.traces, traces, "trace")
        paper = [p for p in self.paper if p.trace in kept_traces and p.config in kept_configs]
        return dataclasses.replace(self, traces=kept_traces, configs=kept_configs, paper=paper)


DEFAULT_METRICS = ["avebsld10", "avebsld60", "cum_bsld60", "mean_wait", "geomean_wait", "max_wait",
                   "utilisation", "kills"]


def _check_keys(table: dict, valid, where: str) -> None:
    unknown = [k for k in table if k not in valid]
    if unknown:
        raise CampaignError(f"{where}: unknown key {unknown[0]!r}; valid keys: {', '.join(valid)}")


def _table(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise CampaignError(f"{where} must be a table")
    return value


def _resolve(base: Path, text, where: str, must_exist: bool = True) -> Path:
    if not isinstance(text, str) or not text:
        raise CampaignError(f"{where} must be a file path")
    path = Path(os.path.expanduser(os.path.expandvars(text)))
    path = path if path.is_absolute() else base / path
    if must_exist and not path.is_file():
        raise CampaignError(f"{where}: file not found: {path}")
    return path


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


def _trace(name: str, table: dict, base: Path) -> TraceSpec:
    where = f"[traces.{name}]"
    _check_keys(table, TRACE_KEYS, where)
    sources = [k for k in TRACE_SOURCES if k in table]
    if len(sources) != 1:
        raise CampaignError(f"{where}: give exactly one of {', '.join(TRACE_SOURCES)}")
    source = sources[0]
    kwargs: dict = {"name": name, "source": source}
    if source == "generate":
        kwargs["generate"] = parse_generate(table["generate"], f"{where} generate")
    else:
        kwargs["path"] = _resolve(base, table[source], f"{where} {source}")
    if "platform" in table:
        if source != "workload":
            raise CampaignError(f"{where}: platform goes with workload (swf and generate make their own)")
        kwargs["platform"] = _resolve(base, table["platform"], f"{where} platform")
    if "max_jobs" in table:
        if source == "workload":
            raise CampaignError(f"{where}: max_jobs applies to swf and generate traces")
        kwargs["max_jobs"] = _positive_int(table["max_jobs"], f"{where} max_jobs")
    if "nodes" in table:
        if source != "swf":
            raise CampaignError(f"{where}: nodes applies to swf traces")
        kwargs["nodes"] = _positive_int(table["nodes"], f"{where} nodes")
    if "windows" in table:
        w = _table(table["windows"], f"{where} windows")
        _check_keys(w, WINDOW_KEYS, f"{where} windows")
        if "days" not in w:
            raise CampaignError(f"{where} windows: days is required")
        try:
            kwargs["windows"] = WindowSpec(**w)
        except (TypeError, ValueError) as exc:
            raise CampaignError(f"{where} {exc}") from None
    return TraceSpec(**kwargs)


def _paper(entries, traces, configs, where: str = "[[paper]]") -> list[PaperRef]:
    if not isinstance(entries, list):
        raise CampaignError(f"{where} must be an array of tables")
    refs = []
    for i, e in enumerate(entries):
        at = f"{where} #{i + 1}"
        e = _table(e, at)
        _check_keys(e, PAPER_KEYS, at)
        for key in ("trace", "config", "metric"):
            if key not in e:
                raise CampaignError(f"{at}: {key} is required")
        if e["trace"] not in traces:
            raise CampaignError(f"{at}: unknown trace {e['trace']!r}; traces: {', '.join(traces)}")
        if e["config"] not in configs:
            raise CampaignError(f"{at}: unknown config {e['config']!r}; configs: {', '.join(configs)}")
        if ("value" in e) == ("reduction" in e):
            raise CampaignError(f"{at}: give one of value, reduction")
        number = e.get("value", e.get("reduction"))
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise CampaignError(f"{at}: value / reduction must be a number")
        refs.append(PaperRef(e["trace"], e["config"], e["metric"], value=e.get("value"),
                             reduction=e.get("reduction"), source=str(e.get("source", ""))))
    return refs


def load_campaign(path) -> Campaign:
    """Read and validate ``path``; raises :class:`CampaignError` with the file and the culprit."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CampaignError(f"cannot read campaign file {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CampaignError(f"{path}: invalid TOML: {exc}") from None
    try:
        return _campaign(data, path, text)
    except CampaignError as exc:
        raise CampaignError(f"{path}: {exc}") from None


def _campaign(data: dict, path: Path, text: str) -> Campaign:
    from .results import metric_names

    _check_keys(data, ("campaign", "traces", "configs", "paper"), "top level")
    head = _table(data.get("campaign", {}), "[campaign]")
    _check_keys(head, CAMPAIGN_KEYS, "[campaign]")
    base = path.resolve().parent
    traces_t = _table(data.get("traces", {}), "[traces]")
    configs_t = _table(data.get("configs", {}), "[configs]")
    if not traces_t:
        raise CampaignError("no trace: add a [traces.NAME] table")
    if not configs_t:
        raise CampaignError("no configuration: add a [configs.NAME] table")
    traces = {n: _trace(n, _table(t, f"[traces.{n}]"), base) for n, t in traces_t.items()}
    configs = {n: _config(n, _table(t, f"[configs.{n}]")) for n, t in configs_t.items()}
    baseline = head.get("baseline", next(iter(configs)))
    if baseline not in configs:
        raise CampaignError(f"[campaign] baseline {baseline!r} is not a config; configs: {', '.join(configs)}")
    seeds = head.get("seeds", [0])
    if (not isinstance(seeds, list) or not seeds
            or any(isinstance(s, bool) or not isinstance(s, int) for s in seeds) or len(set(seeds)) != len(seeds)):
        raise CampaignError(f"[campaign] seeds must be a list of distinct integers, not {seeds!r}")
    metrics = head.get("metrics", DEFAULT_METRICS)
    valid = metric_names()
    if not isinstance(metrics, list) or not metrics:
        raise CampaignError("[campaign] metrics must be a non-empty list of metric names")
    for m in metrics:
        if m not in valid:
            raise CampaignError(f"[campaign] unknown metric {m!r}; valid: {', '.join(valid)}")
    paper = _paper(data.get("paper", []), traces, configs)
    for ref in paper:
        if ref.metric not in valid:
            raise CampaignError(f"[[paper]]: unknown metric {ref.metric!r}; valid: {', '.join(valid)}")
    timeout = head.get("task_timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not timeout > 0 or timeout == float("inf")):
        raise CampaignError(f"[campaign] task_timeout must be a number of seconds > 0, not {timeout!r}")
    return Campaign(name=str(head.get("name", path.stem)), path=path, baseline=baseline, seeds=list(seeds),
                    metrics=list(metrics), traces=traces, configs=configs, paper=paper,
                    description=str(head.get("description", "")), text=text,
                    task_timeout=None if timeout is None else float(timeout))


def _config(name: str, table: dict) -> ConfigSpec:
    """A ``[configs.NAME]`` table as a resolved :class:`RunConfig`, built once so that an unknown
    plugin or option fails now, not in every task."""
    import warnings

    from ..compose import build_scheduler, resolve

    where = f"[configs.{name}]"
    argv = config_argv(table, where)
    try:
        config = resolve(RunConfig.from_table(table, where))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            build_scheduler(config)
    except CampaignError:
        raise
    except Exception as exc:  # noqa: BLE001 - any construction error is the config's fault
        text = " ".join(str(exc).split())
        raise CampaignError(text if text.startswith(where) else f"{where}: {text}") from None
    return ConfigSpec(name, dict(table), argv, config)
