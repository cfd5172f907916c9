"""Declaring a run (``batsched_ml.config``'s first step): one typed object that is the whole
vocabulary of a run.

:class:`RunConfig` holds everything that decides a schedule: the scheduler, its queue order
(policy), reservation model, backfill order and starvation threshold, the runtime predictor,
its correction and their timing, the small/large classifier and its kills, the runtime
distribution, the seed, and every component's ``-o`` options. It is built

* from the command line (:meth:`RunConfig.from_args`; the flags themselves are generated
  from the declarations below by :func:`add_arguments`),
* from a campaign's ``[configs.NAME]`` table (:meth:`RunConfig.from_table`: the same names),
* in Python (``RunConfig(scheduler="easy", predictor="eloss", options={...})``),

then validated once against the installed plugins by :func:`batsched_ml.config.resolve.resolve`
(which also fills in the defaults of what the chosen scheduler takes) and built by
:func:`batsched_ml.config.compose.build_scheduler`. The resolved object is what ``PREFIX_run.json``
holds (:meth:`to_dict`), what labels a run (:meth:`label`) and what keys the campaign cache.

Each field declares its flag, help, default and check once (:func:`setting`); nothing else
spells the list of settings.

Why a frozen standard-library dataclass rather than a pydantic or msgspec model: most of the
validation is not about static types but about plugins -- which ``-o`` keys exist, and the
type of each, depend on the scheduler, predictor, classifier... chosen and are read from
their constructors at run time -- and every error must be one line naming what the user
typed (``-o compiled=False``, ``--predictor``), with a suggested spelling. A schema library
would express neither, would still need that code, and would add a dependency (pydantic's
compiled core is several MB) to every install; the dataclass gives the immutable, typed,
picklable (Dask tasks carry it) object from the standard library.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from dataclasses import dataclass, field
from typing import Any

from . import presets
from . import validate as check

__all__ = ["ConfigError", "RunConfig", "Setting", "add_arguments", "flag_of", "parse_option", "settings"]


class ConfigError(check.ValidationError):
    """A configuration that cannot run as written (one line; the CLI exits 2)."""


@dataclass(frozen=True)
class Setting:
    """How one field of :class:`RunConfig` is typed, checked and shown."""

    flag: str
    help: str
    default: Any = None       # the value used when the scheduler takes it and none was given
    param: str | None = None  # the scheduler constructor parameter it feeds (None: not the scheduler's)
    plugin: str | None = None  # plugin kind of a name setting (``batsched_ml.config.plugins.GROUPS``)
    choices: tuple = ()
    number: Any = None        # a check of ``validate`` for numeric settings
    integer: bool = False
    switch: bool = False
    metavar: str | None = None
    needs: str | None = None  # another setting this one needs (``correction`` needs ``predictor``)


def setting(flag: str, help: str, *, value_default=None, **kwargs):
    """A dataclass field declared with its :class:`Setting` (``value_default``: the field's own
    default, None = not given)."""
    return field(default=value_default, metadata={"setting": Setting(flag, help, **kwargs)})


@dataclass(frozen=True)
class RunConfig:
    """One run's configuration (see the module docstring). ``None`` = not given: the scheduler's
    default when it takes the setting (filled in by ``resolve.resolve``), absent otherwise.
    ``preset``: the name of the preset (``batsched_ml.config.presets``) the builders below expanded into
    the other fields; kept to name the run."""

    scheduler: str = setting(
        "--scheduler", "scheduler plugin: fcfs (strict, no backfilling), easy, conservative, probabilistic "
        "(default easy)", value_default="easy", default="easy", plugin="schedulers")
    policy: str | None = setting(
        "--policy", "queue order: fcfs spf saf wfp3 unicef f1..f4, expr:FORMULA (e.g. "
        "expr:'log10(r)*n + 870*log10(s)'), learned:FILE.json#k (a learn-policy file) or rl:FILE.json (a "
        "train-policy scoring network; default fcfs)", default="fcfs", param="policy", plugin="policies")
    reservations: str | None = setting(
        "--reservations", "reservation model of backfilling schedulers: count = textbook (papers), cores = "
        "batsched's (default count)", default="count", param="reservations", choices=("count", "cores"))
    backfill_order: str | None = setting(
        "--backfill-order", "order in which EASY backfilling tries jobs: queue (default) or sjbf (shortest "
        "estimated job first)", default="queue", param="backfill_order", choices=("queue", "sjbf"))
    starvation_threshold: float | None = setting(
        "--starvation-threshold", "a job that waited longer than this moves to the head of the queue (>= 0; "
        "default: never)", param="starvation_threshold", number=check.starvation_threshold, metavar="SECONDS")
    predictor: str | None = setting(
        "--predictor", "runtime predictor plugin (requested, clairvoyant, ave2, eloss; default: none, the "
        "estimate is the walltime)", param="estimator", plugin="predictors")
    correction: str | None = setting(
        "--correction", "what to do when a job outlives its predicted runtime (requested, incremental, "
        "doubling; needs --predictor; default: none)", param="estimator", plugin="corrections",
        needs="predictor")
    correction_timing: str | None = setting(
        "--correction-timing", "when a correction takes effect: immediate (CALL_ME_LATER at the predicted end, "
        "queue re-planned then; default) or next-event (at the next submission or completion, as in Gaussier "
        "et al.'s simulator); needs --correction", default="immediate", param="estimator",
        choices=("immediate", "next-event"), needs="correction")
    classifier: str | None = setting(
        "--classifier", "small/large classifier plugin (random-forest, gradient-boosting, clairvoyant; "
        "default: none)", param="policy", plugin="classifiers")
    kill_false_small: bool = setting(
        "--kill-false-small", "kill a job classified small at the divider and requeue it as large (needs "
        "--classifier)", value_default=False, switch=True, needs="classifier")
    distribution: str | None = setting(
        "--distribution", "runtime-distribution plugin of --scheduler probabilistic (hmm, user, forest, "
        "walltime; default walltime: no history, plain EASY)", default="walltime", param="distribution",
        plugin="distributions")
    seed: int = setting(
        "--seed", "seed of every random component (0 <= N < 2**32)", value_default=0, default=0,
        number=check.seed, integer=True)
    preset: str | None = setting(
        "--preset", f"start from a named configuration ({', '.join(presets.names())}; batsched-ml presets says "
        "what each sets and where it comes from); the other flags override its settings, -o KEY its options key "
        "by key (default: none)", metavar="NAME")
    options: dict = field(default_factory=dict, metadata={"setting": Setting(
        "-o", "extra plugin option KEY=VALUE (repeatable); VALUE is parsed as JSON when possible",
        metavar="KEY=VALUE")})

    def __post_init__(self):
        if not isinstance(self.options, dict):
            raise ConfigError(f"options must be a table of KEY = VALUE, got {self.options!r}")
        object.__setattr__(self, "options", dict(self.options))  # our own copy: read it, do not change it

    # ------------------------------------------------------------- building
    @classmethod
    def from_args(cls, args) -> RunConfig:
        """From an argparse namespace holding the flags of ``add_arguments``."""
        values = {name: getattr(args, name) for name in _names() if hasattr(args, name)}
        values["options"] = dict(parse_option(item) for item in (getattr(args, "option", None) or []))
        for name, value in list(values.items()):
            if value is None and name in ("kill_false_small", "seed", "scheduler"):
                del values[name]  # not given: the field's default
        return cls._with_preset(values)

    @classmethod
    def from_table(cls, table: dict, where: str = "config") -> RunConfig:
        """From a campaign table: the field names (``backfill_order``...) and ``options``, typed
        as TOML gives them (a switch is true/false, a number a number, a name a string)."""
        for key in table:
            if key not in table_keys():
                hint = " (seeds are set in [campaign])" if key == "seed" else did_you_mean(key, table_keys())
                raise ConfigError(f"{where}: unknown key {key!r}{hint}; valid keys: {', '.join(table_keys())}")
        values = {}
        for key, value in table.items():
            if key == "options":
                if not isinstance(value, dict):
                    raise ConfigError(f"{where}: options must be a table of KEY = VALUE")
                values["options"] = {k: _typed_text(v) for k, v in value.items()}
            else:
                values[key] = _table_value(key, settings()[key], value, where)
        return cls._with_preset(values)

    @classmethod
    def from_kwargs(cls, **kwargs) -> RunConfig:
        """From keyword arguments: the fields by name, anything else an ``-o`` option."""
        names = set(_names())
        fields = {k: v for k, v in kwargs.items() if k in names}
        options = dict(fields.pop("options", None) or {})
        options.update({k: v for k, v in kwargs.items() if k not in names})
        return cls._with_preset({**fields, "options": options})

    @classmethod
    def _with_preset(cls, given: dict) -> RunConfig:
        """The fields ``given`` (None = not given), over their preset's when they name one."""
        given = {k: v for k, v in given.items() if v is not None or k == "preset"}
        if given.get("preset") is not None:
            given = presets.expand(given["preset"], given)
        return cls(**given)

    def _preset_values(self) -> dict:
        """The values of this config's preset (``{}`` without one), ``options`` among them."""
        return presets.get(self.preset).values() if self.preset is not None else {}

    def replace(self, **changes) -> RunConfig:
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------- showing
    def to_dict(self) -> dict:
        """Every field (None: not applicable or not given; ``preset`` only when there is one: a run
        without keeps the cache key it always had) and the options, JSON-ready."""
        out = {name: getattr(self, name) for name in _names() if name != "preset" or self.preset is not None}
        out["options"] = dict(self.options)
        return out

    def argv(self, names=None) -> tuple[str, ...]:
        """The ``simulate`` flags that give this configuration (seed aside), in field order, or
        only those of ``names``, in that order (a campaign table's keys, as written)."""
        out: list[str] = []
        every = settings()
        preset = self._preset_values()
        chosen = list(every) if names is None else [n for n in names if n in every]
        for name in sorted(chosen, key=lambda n: n != "preset"):  # --preset first: the others change it
            spec, value = every[name], getattr(self, name)
            if name == "seed" or value is None or value is False:
                continue
            if names is None and name in preset and _same_value(value, preset[name]):
                continue  # the preset gives it
            out += [spec.flag] if spec.switch else [spec.flag, _flag_text(value)]
        preset_options = preset.get("options", {})
        for key, value in self.options.items():
            if key not in preset_options or not _same_value(value, preset_options[key]):
                out += ["-o", f"{key}={value if isinstance(value, str) else json.dumps(value, separators=(',', ':'))}"]
        return tuple(out)

    def label(self, option_defaults: dict | None = None) -> str:
        """A short legend: ``easy fcfs``, ``easy fcfs, eloss/incremental, sjbf``,
        ``probabilistic fcfs, hmm distribution``, ``easy fcfs, random-forest kill``, then the ``-o``
        options in short form (``ljf-easy, max_backfill=5``), but those given at the value of
        ``option_defaults`` (``{key: default}``: ``resolve.run_label`` reads them from the plugins)."""
        parts = [f"{self.scheduler} {self.policy}" if self.policy else self.scheduler]
        if self.predictor:
            parts.append(self.predictor + (f"/{self.correction}" if self.correction else ""))
            if self.correction_timing not in (None, "immediate"):
                parts[-1] += f" ({self.correction_timing})"
        if self.classifier:
            parts.append(self.classifier + (" kill" if self.kill_false_small else ""))
        if self.distribution:
            parts.append(f"{self.distribution} distribution")
        if self.backfill_order not in (None, "queue"):
            parts.append(self.backfill_order)
        if self.reservations not in (None, "count"):
            parts.append(f"{self.reservations} reservations")
        if self.starvation_threshold is not None:
            parts.append(f"starvation {self.starvation_threshold:g} s")
        defaults = option_defaults or {}
        parts += [f"{key}={_option_text(value)}" for key, value in self.options.items()
                  if key not in defaults or not _same_value(value, defaults[key])]
        if self.preset is None:
            return ", ".join(parts)
        changed = self.changed_from_preset()
        return f"{self.preset}{' with ' + ', '.join(changed) if changed else ''}: {', '.join(parts)}"

    def changed_from_preset(self) -> list[str]:
        """What this config changes of its preset, in short form (``["n_estimators=80"]``): a field
        the preset sets given another value, a field it does not set given a value other than the
        default, an option given another value or added ([] without a preset)."""
        if self.preset is None:
            return []
        preset = self._preset_values()
        out = []
        for name, spec in settings().items():
            value = getattr(self, name)
            if name in ("preset", "seed") or value is None:
                continue
            differs = (not _same_value(value, preset[name]) if name in preset
                       else value is not False and not _same_value(value, spec.default))
            if differs:
                out.append(f"{spec.flag.lstrip('-')}={_option_text(value)}")
        out += [f"{key}={_option_text(value)}" for key, value in self.options.items()
                if key not in preset["options"] or not _same_value(value, preset["options"][key])]
        return out


# ------------------------------------------------------------------ the declarations
def settings() -> dict[str, Setting]:
    """field name -> :class:`Setting`, in declaration order (``options`` aside)."""
    return {f.name: f.metadata["setting"] for f in dataclasses.fields(RunConfig) if f.name != "options"}


def _names() -> list[str]:
    return list(settings())


def table_keys() -> list[str]:
    """The keys of a campaign ``[configs.NAME]`` table."""
    return [name for name in settings() if name != "seed"] + ["options"]


def flag_of() -> dict[str, str]:
    """Constructor parameter or field name -> the flag that sets it (such a key is never an ``-o``
    option): ``estimator`` -> ``--predictor / --correction / --correction-timing``..."""
    out: dict[str, str] = {"random_state": "--seed", "classifier_name": "--classifier"}
    by_param: dict[str, list[str]] = {}
    for name, spec in settings().items():
        out[name] = spec.flag
        if spec.param and spec.param != name and name != "classifier":
            by_param.setdefault(spec.param, []).append(spec.flag)
    out.update({param: " / ".join(flags) for param, flags in by_param.items() if param not in out})
    return out


def did_you_mean(word: str, candidates) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# ------------------------------------------------------------------ values
def parse_option(item: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> ``(key, value)``: VALUE parsed as JSON when possible, else the string."""
    key, sep, text = item.partition("=")
    if not sep or not key:
        raise ConfigError(f"-o expects KEY=VALUE, got {item!r}")
    return key, _typed_text(text)


def _typed_text(value):
    """A string as typed on a command line (JSON when it parses: ``0.5``, ``true``, ``null``,
    ``[60, 300]``); any other value as it is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _option_text(value) -> str:
    """An option's value as typed after ``-o KEY=``: ``both``, ``0``, ``0.35``, ``[60,300]``."""
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:g}"
    return json.dumps(value, separators=(",", ":"))


def _same_value(value, default) -> bool:
    """``value == default`` as a user means it: ``0`` is ``0.0``, but ``true`` is not ``1``."""
    if isinstance(value, bool) or isinstance(default, bool):
        return value is default
    if isinstance(default, tuple):
        default = list(default)
    try:
        return bool(value == default)
    except (TypeError, ValueError):  # pragma: no cover - an array-like default
        return False


def _flag_text(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _table_value(key: str, spec: Setting, value, where: str):
    if spec.switch:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {key} is a switch: true or false, not {value!r}")
        return value
    if spec.number is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: {key} expects a number, not {value!r}")
        return value
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {key} expects a name (a string), not {value!r}")
    return value


def check_values(config: RunConfig) -> None:
    """The checks that need no plugin: numbers in range, choices, switches and names typed right."""
    for name, spec in settings().items():
        value = getattr(config, name)
        if value is None:
            continue
        if spec.switch:
            if not isinstance(value, bool):
                raise ConfigError(f"{name} is a switch: true or false, got {value!r}")
        elif spec.number is not None:
            spec.number(value, name)
        elif not isinstance(value, str) or not value:
            raise ConfigError(f"{name} expects a name, got {value!r}")
        elif name == "preset":
            presets.get(value)
        elif spec.choices and value not in spec.choices:
            raise ConfigError(f"{name} must be one of {', '.join(spec.choices)}, got {value!r}"
                              f"{did_you_mean(value, spec.choices)}")


# ------------------------------------------------------------------ the command line
def add_arguments(group, exclude=()) -> None:
    """Add every setting's flag (but those named in ``exclude``) to an argparse parser or group;
    defaults are None: "not given"."""
    for name, spec in settings().items():
        if name in exclude:
            continue
        kwargs: dict = {"dest": name, "help": spec.help, "default": None}
        if spec.switch:
            kwargs["action"] = "store_true"
        elif spec.number is not None:
            kwargs["type"] = check.arg(spec.number, spec.flag, integer=spec.integer)
        elif spec.choices:
            kwargs["choices"] = spec.choices
        if spec.metavar:
            kwargs["metavar"] = spec.metavar
        group.add_argument(spec.flag, **kwargs)
    options = dataclasses.fields(RunConfig)[-1].metadata["setting"]
    group.add_argument("-o", "--option", action="append", default=[], metavar=options.metavar, help=options.help)
