"""Read and validate a campaign file (TOML, see the documentation's "Campaigns" page).

The file is first expanded (``expand``: ``extends`` and matrices), then checked here.
Configuration keys are not listed here: a ``[configs.NAME]`` table holds the fields of
:class:`batsched_ml.config.declare.RunConfig` by name (the ``simulate`` flags, dashes as underscores)
plus ``options`` (and ``axes``, its labels in the report's tables), and becomes that object
directly (no command line is re-parsed); it is validated and built by ``batsched_ml.config.compose``
like ``simulate``'s flags -- one vocabulary, one validation. Traces and where their files are:
``traces``. A config's ``kind`` (default ``simulate``) may name another task kind (``kinds``), whose
keys it then takes; ``[train.NAME]`` tables are trainings whose files configs name ``@NAME``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..config.declare import did_you_mean, table_keys
from .expand import CampaignError, as_table, check_keys, expand, read_campaign_file
from .forks import fork_specs
from .kinds import get_kind, references
from .traces import TRACES_ENV, TraceSpec, trace_spec, traces_directory

__all__ = ["Campaign", "CampaignError", "ConfigSpec", "PaperRef", "TRACES_ENV", "TableSpec", "TraceSpec", "TrainingSpec",
           "config_argv", "config_keys", "load_campaign", "paper_refs", "table_specs", "traces_directory"]

CAMPAIGN_KEYS = ("name", "baseline", "seeds", "metrics", "description", "task_timeout", "batsim", "checkpoint_every",
                 "checkpoint_every_wall")
BATSIM_LINES = (4, 5)  # ``batsim``: the Batsim line a config's runs follow (4.2.1, 5.0.0-rc2)
CHECKPOINT_EVERY_WALL = 300.0  # a task snapshots its run every 5 min of wall-clock time unless told otherwise
TABLE_KEYS = ("metric", "statistic", "rows", "columns", "title", "decimals", "traces", "configs")
# keys of every config table, whatever its kind: the kind, its own seeds and traces, its labels
COMMON_KEYS = ("kind", "seeds", "traces", "axes")
STATISTICS = ("mean", "median", "min", "max")
PAPER_KEYS = ("trace", "config", "metric", "value", "reduction", "source")


def config_keys() -> list[str]:
    """Every run-setting key a ``simulate`` ``[configs.NAME]`` table accepts (besides ``axes``,
    ``extends``, ``matrix`` and ``name``, which ``expand`` reads); ``seeds``: the config's own runs;
    ``batsim``: the Batsim line its runs follow (``simulate --batsim``; default the campaign's, else 4)."""
    return table_keys() + ["seeds", "batsim"]


def config_argv(table: dict, where: str) -> tuple[str, ...]:
    """The flags of its kind's command equivalent to a config table, as written (not resolved);
    its ``seeds``, ``traces``, ``kind`` and ``batsim`` pick runs and are no flag."""
    settings = {k: v for k, v in table.items() if k not in (*COMMON_KEYS, "batsim")}
    return get_kind(table.get("kind", "simulate"), where).argv(settings, where)


@dataclass(frozen=True)
class ConfigSpec:
    name: str
    values: dict             # the table as expanded
    argv: tuple[str, ...]    # the same as its kind's command's flags (reports; identity in run-time estimates)
    config: object           # its kind's settings, resolved, seed 0 (simulate: a RunConfig, the defaults filled in)
    axes: dict = field(default_factory=dict)  # {axis: label}: its place in the report's tables
    seeds: tuple[int, ...] | None = None  # the config's own seeds (None: the campaign's)
    kind: str = "simulate"
    traces: tuple[str, ...] | None = None  # the traces it runs on (None: every trace)
    needs: tuple[str, ...] = ()  # the trainings whose files it names (@NAME)
    batsim: int = 4  # the Batsim line its runs follow (``simulate --batsim``; simulate configs only)

    @property
    def command(self) -> str:
        """The equivalent flags, shell-quoted, for reports."""
        import shlex

        return " ".join(shlex.quote(a) for a in self.argv)

    def runs_on(self, trace: str) -> bool:
        return self.traces is None or trace in self.traces


@dataclass(frozen=True)
class TrainingSpec:
    """A ``[train.NAME]`` table: a task per seed, of a kind that writes a file (``kinds``), reading
    ``traces`` (their specs, whatever the campaign runs)."""

    name: str
    kind: str
    values: dict
    argv: tuple[str, ...]
    settings: object
    traces: dict  # name -> TraceSpec
    seeds: tuple[int, ...]

    @property
    def command(self) -> str:
        import shlex

        return " ".join(shlex.quote(a) for a in self.argv)


@dataclass(frozen=True)
class PaperRef:
    trace: str
    config: str
    metric: str
    value: float | None = None
    reduction: float | None = None
    source: str = ""


@dataclass(frozen=True)
class TableSpec:
    """A ``[[tables]]`` entry: one metric's statistic over each config's runs, laid out by configs
    and traces, or by two axes of the configs (``rows`` and ``columns``) for each trace."""

    metric: str
    statistic: str = "mean"
    rows: str | None = None
    columns: str | None = None
    title: str = ""
    decimals: int | None = None  # the cells' decimals (default: the report's number format)
    traces: tuple | None = None  # only these traces (default: all)
    configs: tuple | None = None  # only these configs (default: all)


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
    document: dict = field(default_factory=dict)  # the campaign expanded, written next to the results
    task_timeout: float | None = None  # seconds a task may run before it is stopped as ``timeout``
    tables: list[TableSpec] = field(default_factory=list)
    trainings: dict[str, TrainingSpec] = field(default_factory=dict)
    # a task's snapshots (under RESULTS/checkpoints/, resumed after a kill): simulated / wall-clock seconds
    checkpoint_every: float | None = None
    checkpoint_every_wall: float | None = CHECKPOINT_EVERY_WALL
    forks: list = field(default_factory=list)  # [[forks]]: forks.ForkSpec

    def require_inputs(self) -> None:
        """Raise :class:`CampaignError` naming the trace files that cannot be found (of this
        campaign's traces and trainings only: a subset needs only its own)."""
        specs = {id(t): t for t in self.traces.values()}
        specs.update((id(t), t) for training in self.trainings.values() for t in training.traces.values())
        missing = list(dict.fromkeys(t.missing for t in specs.values() if t.missing))
        if missing:
            raise CampaignError("; ".join(missing))

    def seeds_of(self, config: str) -> list[int]:
        """The seeds a config runs: its own ``seeds``, else those of the training it names, else
        the campaign's."""
        spec = self.configs.get(config)
        if spec is not None and spec.seeds:
            return list(spec.seeds)
        if spec is not None and spec.needs and spec.needs[0] in self.trainings:
            return list(self.trainings[spec.needs[0]].seeds)
        return list(self.seeds)

    def subset(self, traces=None, configs=None) -> "Campaign":
        """The same campaign on some traces / configs only (the baseline config is kept, and the
        trainings the kept configs need); ``configs`` may also name trainings (named alone: only
        those run)."""
        def pick(table: dict, names, kind: str) -> dict:
            if not names:
                return table
            unknown = [n for n in names if n not in table]
            if unknown:
                raise CampaignError(f"unknown {kind} {unknown[0]!r}; {kind}s: {', '.join(table)}")
            return {n: v for n, v in table.items() if n in names}

        import dataclasses

        named_trainings = [n for n in configs or () if n in self.trainings and n not in self.configs]
        config_names = configs and [n for n in configs if n not in named_trainings]
        kept_configs = pick(self.configs, config_names and [*config_names, self.baseline], "config")
        if configs and not config_names:  # trainings only
            kept_configs = {}
        kept_traces = pick(self.traces, traces, "trace")
        needed = {n for c in kept_configs.values() if any(c.runs_on(t) for t in kept_traces) for n in c.needs}
        kept_trainings = {n: t for n, t in self.trainings.items() if n in needed or n in named_trainings}
        paper = [p for p in self.paper if p.trace in kept_traces and p.config in kept_configs]
        forks = [f for f in self.forks if {f.base, *f.branches} <= set(kept_configs)]
        return dataclasses.replace(self, traces=kept_traces, configs=kept_configs, paper=paper,
                                   trainings=kept_trainings, forks=forks)


DEFAULT_METRICS = ["avebsld10", "avebsld60", "cum_bsld60", "mean_wait", "geomean_wait", "max_wait",
                   "utilisation", "kills"]


def paper_refs(entries, traces, configs, where: str = "[[paper]]") -> list[PaperRef]:
    if not isinstance(entries, list):
        raise CampaignError(f"{where} must be an array of tables")
    refs = []
    for i, e in enumerate(entries):
        at = f"{where} #{i + 1}"
        e = as_table(e, at)
        check_keys(e, PAPER_KEYS, at)
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


def load_campaign(path, traces_dir=None) -> Campaign:
    """Read, expand and validate ``path``; raises :class:`CampaignError` with the file and the
    culprit. ``traces_dir``: where bare trace names are (default ``$BATSCHED_ML_TRACES``)."""
    path = Path(path)
    data = read_campaign_file(path)
    traces_dir = traces_directory(traces_dir)
    try:
        return _campaign(expand(data), path, traces_dir)
    except CampaignError as exc:
        raise CampaignError(f"{path}: {exc}") from None


class _Problems:
    """Every problem of a campaign file, so that one run names them all (each in its own check;
    what a later check needs from a failed one is left out of it)."""

    def __init__(self):
        self.found: list[str] = []

    def check(self, fn, *args, default=None):
        """``fn(*args)``, or ``default`` when it raises a :class:`CampaignError` (kept)."""
        try:
            return fn(*args)
        except CampaignError as exc:
            self.found.append(str(exc))
            return default

    def raise_any(self) -> None:
        if len(self.found) == 1:
            raise CampaignError(self.found[0])
        if self.found:
            raise CampaignError(f"{len(self.found)} problems: " + "; ".join(self.found))


def _campaign(data: dict, path: Path, traces_dir: Path | None) -> Campaign:
    from .results import metric_names

    problems = _Problems()
    problems.check(check_keys, data, ("extends", "campaign", "traces", "configs", "train", "paper", "tables",
                                      "forks"), "top level")
    head = problems.check(as_table, data.get("campaign", {}), "[campaign]", default={})
    problems.check(check_keys, head, CAMPAIGN_KEYS, "[campaign]")
    traces_t = problems.check(as_table, data.get("traces", {}), "[traces]", default={})
    configs_t = problems.check(as_table, data.get("configs", {}), "[configs]", default={})
    if not traces_t and isinstance(data.get("traces", {}), dict):  # (not a table: said above)
        problems.found.append("no trace: add a [traces.NAME] table")
    if not configs_t and isinstance(data.get("configs", {}), dict):
        problems.found.append("no configuration: add a [configs.NAME] table")
    traces = {n: spec for n, t in traces_t.items()
              if (spec := problems.check(lambda n=n, t=t: trace_spec(n, as_table(t, f"[traces.{n}]"), traces_dir)))}
    batsim = problems.check(_batsim, head.get("batsim", 4), "[campaign] batsim", default=4)
    train_t = problems.check(as_table, data.get("train", {}), "[train]", default={})
    trainings = {n: spec for n, t in train_t.items()
                 if (spec := problems.check(lambda n=n, t=t: _training(n, as_table(t, f"[train.{n}]"), traces,
                                                                       head.get("seeds", [0]))))}
    configs = {n: spec for n, t in configs_t.items()
               if (spec := problems.check(lambda n=n, t=t: _config(n, as_table(t, f"[configs.{n}]"), traces_t,
                                                                  train_t, trainings, batsim)))}
    baseline = head.get("baseline", next(iter(configs_t), None))
    if baseline is not None and baseline not in configs_t:
        problems.found.append(f"[campaign] baseline {baseline!r} is not a config; configs: {', '.join(configs_t)}")
    seeds = problems.check(_seeds, head.get("seeds", [0]), "[campaign] seeds", default=(0,))
    metrics = head.get("metrics", DEFAULT_METRICS)
    valid = metric_names()
    if not isinstance(metrics, list) or not metrics:
        problems.found.append("[campaign] metrics must be a non-empty list of metric names")
        metrics = []
    problems.found += [f"[campaign] unknown metric {m!r}{did_you_mean(str(m), valid)}; valid: {', '.join(valid)}"
                       for m in metrics if m not in valid]
    paper = problems.check(paper_refs, data.get("paper", []), traces, configs, default=[])
    problems.found += [f"[[paper]]: unknown metric {ref.metric!r}; valid: {', '.join(valid)}"
                       for ref in paper if ref.metric not in valid]
    tables = problems.check(table_specs, data.get("tables", []), configs, default=[])
    timeout = head.get("task_timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not timeout > 0 or timeout == float("inf")):
        problems.found.append(f"[campaign] task_timeout must be a number of seconds > 0, not {timeout!r}")
    every = {key: problems.check(_duration, head, key) for key in ("checkpoint_every", "checkpoint_every_wall")}
    if "checkpoint_every_wall" not in head:
        every["checkpoint_every_wall"] = None if "checkpoint_every" in head else CHECKPOINT_EVERY_WALL
    forks = fork_specs(data.get("forks", []), configs, problems, configs_t) if configs_t else []
    problems.raise_any()
    return Campaign(name=str(head.get("name", path.stem)), path=path, baseline=baseline, seeds=list(seeds),
                    metrics=list(metrics), traces=traces, configs=configs, paper=paper,
                    description=str(head.get("description", "")), document=data,
                    task_timeout=None if timeout is None else float(timeout), tables=tables, trainings=trainings,
                    forks=forks, **every)


def _duration(head: dict, key: str) -> float | None:
    """``[campaign] checkpoint_every*``: a duration (``"7d"``, ``"10min"``, seconds), or false: none."""
    from ..config.validate import ValidationError, duration

    value = head.get(key)
    if value is None or value is False:
        return None
    try:
        return duration(value, f"[campaign] {key}")
    except ValidationError as exc:
        raise CampaignError(str(exc)) from None


def table_specs(entries, configs: dict) -> list[TableSpec]:
    """The ``[[tables]]`` entries, checked against the configs' axes (``configs``: name -> its
    ``axes``, or a :class:`ConfigSpec`)."""
    from .results import metric_names

    if not isinstance(entries, list):
        raise CampaignError("[[tables]] must be an array of tables")
    axes = set()
    for config in configs.values():
        axes.update(config.axes if isinstance(config, ConfigSpec) else config or {})
    out = []
    for i, entry in enumerate(entries):
        at = f"[[tables]] #{i + 1}"
        entry = as_table(entry, at)
        check_keys(entry, TABLE_KEYS, at)
        if entry.get("metric") not in metric_names():
            raise CampaignError(f"{at}: metric must be one of {', '.join(metric_names())}, not {entry.get('metric')!r}")
        decimals = entry.get("decimals")
        if decimals is not None and (isinstance(decimals, bool) or not isinstance(decimals, int)
                                     or not 0 <= decimals <= 6):
            raise CampaignError(f"{at}: decimals must be an integer from 0 to 6, not {decimals!r}")
        if entry.get("statistic", "mean") not in STATISTICS:
            raise CampaignError(f"{at}: statistic must be one of {', '.join(STATISTICS)}, "
                                f"not {entry['statistic']!r}")
        if ("rows" in entry) != ("columns" in entry):
            raise CampaignError(f"{at}: give both rows and columns (two axes of the configs), or neither")
        for key in ("rows", "columns"):
            if key in entry and entry[key] not in axes:
                raise CampaignError(f"{at}: {key} {entry[key]!r} is not an axis of a config; axes: "
                                    f"{', '.join(sorted(axes)) or 'none (a matrix makes them, or a config axes table)'}")
        for key in ("traces", "configs"):
            names = entry.get(key)
            if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
                raise CampaignError(f"{at}: {key} must be a list of names")
            unknown = [n for n in names or () if key == "configs" and n not in configs]
            if unknown:
                raise CampaignError(f"{at}: configs: unknown config {unknown[0]!r}")
        out.append(TableSpec(**{k: v if k == "decimals" else tuple(v) if k in ("traces", "configs") else str(v)
                                for k, v in entry.items()}))
    return out


def _seeds(seeds, where: str) -> tuple[int, ...] | None:
    """A list of distinct integer seeds (None stays None: a config without its own seeds)."""
    if seeds is None:
        return None
    if (not isinstance(seeds, list) or not seeds
            or any(isinstance(s, bool) or not isinstance(s, int) for s in seeds) or len(set(seeds)) != len(seeds)):
        raise CampaignError(f"{where} must be a list of distinct integers, not {seeds!r}")
    return tuple(seeds)


def _trace_names(value, where: str, known: dict) -> tuple[str, ...]:
    """A ``traces`` key: a trace name or a list of them, each a ``[traces.NAME]`` table."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise CampaignError(f"{where} traces must be a trace name or a list of them, not {value!r}")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CampaignError(f"{where} traces: unknown trace {unknown[0]!r}{did_you_mean(unknown[0], known)}; "
                            f"traces: {', '.join(known)}")
    return tuple(dict.fromkeys(names))


def _batsim(value, where: str) -> int:
    if isinstance(value, bool) or value not in BATSIM_LINES:
        raise CampaignError(f"{where} must be 4 (Batsim 4.2.1) or 5 (Batsim 5.0.0-rc2), not {value!r}")
    return int(value)


def _training(name: str, table: dict, traces: dict, campaign_seeds) -> TrainingSpec:
    """A ``[train.NAME]`` table: its kind (one that writes a file), the traces it reads, its seeds."""
    where = f"[train.{name}]"
    if "kind" not in table:
        raise CampaignError(f"{where}: kind is required (a task kind that writes a file, e.g. \"train-policy\")")
    kind = get_kind(table["kind"], where)
    if kind.output is None:
        raise CampaignError(f"{where}: kind {kind.name!r} writes no file: it is a config's kind ([configs.NAME])")
    if "traces" not in table:
        raise CampaignError(f"{where}: traces is required (the [traces.NAME] it learns from)")
    names = _trace_names(table["traces"], where, traces)
    seeds = _seeds(table.get("seeds", campaign_seeds), f"{where} seeds")
    settings_table = {k: v for k, v in table.items() if k not in ("kind", "traces", "seeds")}
    if references(settings_table):
        raise CampaignError(f"{where}: a training cannot name another one's file (@NAME)")
    settings = kind.settings(settings_table, where)
    return TrainingSpec(name, kind.name, dict(table), kind.argv(settings_table, where), settings,
                        {n: traces[n] for n in names}, seeds)


def _config(name: str, table: dict, traces: dict, train_tables: dict, trainings: dict, batsim: int = 4) -> ConfigSpec:
    """A ``[configs.NAME]`` table as its kind's resolved settings, built once so that an unknown
    plugin or option fails now, not in every task. ``@NAME`` values name a training's file;
    ``batsim``: the campaign's Batsim line, which a simulate table's own ``batsim`` overrides."""
    where = f"[configs.{name}]"
    kind = get_kind(table.get("kind", "simulate"), where)
    if kind.output is not None:
        raise CampaignError(f"{where}: kind {kind.name!r} writes a file: it is a training's kind ([train.NAME])")
    axes = table.get("axes", {})
    if not isinstance(axes, dict) or not all(isinstance(v, str) for v in axes.values()):
        raise CampaignError(f"{where}: axes must be a table of labels, e.g. axes = {{ policy = \"fcfs\" }}")
    seeds = _seeds(table.get("seeds"), f"{where} seeds")
    runs_on = _trace_names(table["traces"], where, traces) if "traces" in table else None
    if kind.name == "simulate":  # the Batsim line a simulation follows (no setting of other kinds)
        batsim = _batsim(table.get("batsim", batsim), f"{where} batsim")
        table = {k: v for k, v in table.items() if k != "batsim"}
    table = {k: v for k, v in table.items() if k not in ("seeds", "traces")}
    settings = {k: v for k, v in table.items() if k not in COMMON_KEYS}
    named = references(settings)
    unknown = sorted(n for n in named if n not in train_tables)
    if unknown:
        raise CampaignError(f"{where}: @{unknown[0]} names no training{did_you_mean(unknown[0], train_tables)}; "
                            f"trainings ([train.NAME]): {', '.join(train_tables) or 'none'}")
    if len(named) > 1:
        raise CampaignError(f"{where}: names the files of several trainings ({', '.join(sorted(named))}): one at most")
    for training in named & set(trainings):
        missing = [s for s in (seeds or ()) if s not in trainings[training].seeds]
        if missing:
            raise CampaignError(f"{where} seeds: [train.{training}] has no seed {missing[0]} (its seeds: "
                                f"{', '.join(map(str, trainings[training].seeds))})")
    argv = kind.argv(settings, where) + (("--batsim", "5") if kind.name == "simulate" and batsim == 5 else ())
    deferred = frozenset(k for k, v in settings.items() if references(v))
    config = kind.settings(settings, where, deferred)
    return ConfigSpec(name, dict(table), argv, config, dict(axes), seeds, kind.name, runs_on,
                      tuple(sorted(named)), batsim if kind.name == "simulate" else 4)
