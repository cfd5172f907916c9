"""Resolving a run configuration against the installed plugins (``batsched_ml.config``'s fourth
step, after ``declare``, ``validate`` and ``plugins``; ``compose`` builds what it returns).

``resolve`` checks a ``RunConfig`` (``declare``) once: its values
(``declare.check_values``), that the chosen scheduler takes each setting given (``scheduler 'fcfs'
takes no --backfill-order``: refused, never ignored; so are a correction without a predictor, a
correction timing without a correction and kills without a classifier), that every plugin named
loads, and which ``-o KEY=VALUE`` options the configuration takes, and of what type, read from the
plugins' constructors (below). It fills in the defaults of what the scheduler takes and leaves
the rest None; every error is one line.

A component's constructor parameters are its options, except those a flag sets
(``declare.flag_of``: ``policy``, ``estimator``, ``random_state``...). Keys are spelt by kind:
the scheduler's, the classification's and the classifier's unprefixed, the others with the
component's prefix (``predictor_window``, ``correction_steps``, ``distribution_n_states``,
``policy_<param>``). A parameter whose annotation is ``bool`` (or whose default is a bool)
takes only ``true`` / ``false``: ``-o compiled=False`` or ``-o store_classes=no`` is an
error, never a truthy string. ``batsched-ml plugins`` lists every option with its default.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass

from ..policies.expression import SPEC_PREFIXES
from .declare import ConfigError, RunConfig, check_values, did_you_mean, flag_of, settings
from .plugins import GROUPS, PluginError, entries, load, load_entry

# How -o keys of each plugin kind are spelt.
PREFIX = {"policies": "policy_", "predictors": "predictor_", "corrections": "correction_",
          "distributions": "distribution_"}
# parameters of the classification decorator that are not options
CLASSIFICATION_OWN = ("scheduler", "classifier", "kill_false_small")


@dataclass(frozen=True)
class OptionSpec:
    """One ``-o`` key: whose parameter it is, its default, whether it is a true/false switch."""

    key: str
    owner: str          # "scheduler 'easy'", "predictor 'ave2'", "classification"...
    param: str
    default: object
    switch: bool
    nullable: bool


def scheduler_accepts(scheduler_cls) -> set[str]:
    """The constructor parameters of a scheduler plugin (what it accepts)."""
    return set(constructor_parameters(scheduler_cls) or {})


def resolve(config: RunConfig) -> RunConfig:
    """``config`` validated (once, here) against the installed plugins, with the defaults of what
    the scheduler takes filled in and the settings it does not take left None. Raises a
    ``ConfigError`` (or a ``PluginError``) with one line."""
    check_values(config)
    scheduler_cls = load("schedulers", config.scheduler)
    takes = scheduler_accepts(scheduler_cls)
    values = {}
    for name, spec in settings().items():
        value = getattr(config, name)
        given = value is not None and value is not False
        if spec.needs and given and getattr(config, spec.needs) is None:
            raise ConfigError(_needs_message(name, spec))
        if spec.param is not None and spec.param not in takes:
            if given:
                raise ConfigError(f"scheduler {config.scheduler!r} takes no {spec.flag}"
                                  + _why_not(name, config.scheduler))
            continue
        if value is None and spec.default is not None and (spec.needs is None or getattr(config, spec.needs)):
            value = spec.default
        values[name] = value
    resolved = config.replace(**values)
    return resolved.replace(options=check_options(resolved, scheduler_cls, components(resolved)))


def components(config: RunConfig) -> dict:
    """The plugins a configuration names besides its scheduler, loaded once: setting name (``policy``,
    ``predictor``, ``correction``, ``classifier``, ``distribution``) -> class or factory; a queue
    order given as ``expr:`` / ``learned:`` / ``rl:`` is no plugin. An unknown or broken plugin fails
    here, by name."""
    loaded = {}
    for name, kind in (("policy", "policies"), ("predictor", "predictors"), ("correction", "corrections"),
                       ("classifier", "classifiers"), ("distribution", "distributions")):
        value = getattr(config, name)
        if value is not None and not (kind == "policies" and value.startswith(SPEC_PREFIXES)):
            loaded[name] = load(kind, value)
    return loaded


def run_label(config: RunConfig) -> str:
    """The label that names a resolved run (``PREFIX_run.json``, ``plot``'s legend, ``serve``'s
    listening line): ``RunConfig.label`` with the options given at their plugin's default left out."""
    schema = option_schema(config, load("schedulers", config.scheduler)) or {}
    return config.label({key: spec.default for key, spec in schema.items()})


def _needs_message(name: str, spec) -> str:
    needed = settings()[spec.needs].flag
    why = {"correction": "with the requested time as the estimate a job never outlives it, so no correction "
                         "would ever apply",
           "correction_timing": "it says when a correction takes effect",
           "kill_false_small": "only classified jobs can be false small"}.get(name, "")
    return f"{spec.flag} needs {needed}" + (f": {why}" if why else "")


def _why_not(name: str, scheduler: str) -> str:
    return {"classifier": " (classification orders the queue small-first: it needs a scheduler that takes "
                          "a --policy)",
            "distribution": " (runtime distributions are for --scheduler probabilistic)"}.get(name, "")


# ---------------------------------------------------------------- what a component takes
def constructor_parameters(target) -> dict[str, inspect.Parameter] | None:
    """The keyword parameters ``target`` (a class or factory) accepts, following ``**kwargs`` up
    the class hierarchy; None when it takes arbitrary keywords (a factory with ``**kwargs``)."""
    out: dict[str, inspect.Parameter] = {}
    is_class = isinstance(target, type)
    chain = [c for c in target.__mro__ if c is not object] if is_class else [target]
    open_ended = False
    for owner in chain:
        init = owner.__dict__.get("__init__") if is_class else owner
        if init is None:
            continue
        try:
            params = list(inspect.signature(init).parameters.values())
        except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
            return None
        if is_class:
            params = params[1:]  # self
        open_ended = False
        for p in params:
            if p.kind is p.VAR_KEYWORD:
                open_ended = True
            elif p.kind is not p.VAR_POSITIONAL:
                out.setdefault(p.name, p)
        if not open_ended:
            break
    if open_ended and not is_class:
        return None
    return out


def constructor_options(target) -> dict | None:
    """``{name: default}`` of ``target``'s keyword parameters (None: takes arbitrary keywords)."""
    found = constructor_parameters(target)
    if found is None:
        return None
    return {name: None if p.default is p.empty else p.default for name, p in found.items()}


def _annotation_names(annotation) -> set[str]:
    if annotation is inspect.Parameter.empty:
        return set()
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    return {part.strip().removeprefix("typing.") for part in text.replace("Optional[", "").rstrip("]").split("|")}


def _spec(key: str, owner: str, param: inspect.Parameter) -> OptionSpec:
    default = None if param.default is param.empty else param.default
    names = _annotation_names(param.annotation)
    switch = isinstance(default, bool) or ("bool" in names and names <= {"bool", "None", "NoneType"})
    nullable = default is None or "None" in names
    return OptionSpec(key, owner, param.name, default, switch, nullable)


def component_options(kind: str, target, owner: str, prefix: str | None = None) -> dict[str, OptionSpec] | None:
    """The -o keys of one component (prefixed by kind), flag-backed parameters left out."""
    found = constructor_parameters(target)
    if found is None:
        return None
    prefix = PREFIX.get(kind, "") if prefix is None else prefix
    flags = flag_of()
    return {prefix + name: _spec(prefix + name, owner, p) for name, p in found.items() if name not in flags}


def classification_options() -> dict[str, OptionSpec]:
    """The options of the classification itself (``ClassifyingScheduler``), with any classifier."""
    from ..classifiers.scheduler import ClassifyingScheduler

    found = constructor_parameters(ClassifyingScheduler) or {}
    return {name: _spec(name, "classification", p) for name, p in found.items() if name not in CLASSIFICATION_OWN}


def option_schema(config: RunConfig, scheduler_cls, loaded: dict | None = None) -> dict[str, OptionSpec] | None:
    """Every -o key ``config`` (resolved) accepts; None when a component takes arbitrary keywords.
    ``loaded``: its :func:`components`, when the caller has them."""
    loaded = components(config) if loaded is None else loaded
    parts = [component_options("schedulers", scheduler_cls, f"scheduler {config.scheduler!r}")]
    if "policy" in loaded:
        parts.append(component_options("policies", loaded["policy"], f"policy {config.policy!r}"))
    for kind, name in (("predictors", "predictor"), ("corrections", "correction"), ("distributions", "distribution")):
        if name in loaded:
            parts.append(component_options(kind, loaded[name], f"{name} {getattr(config, name)!r}"))
    if config.classifier is not None:
        parts.append(classification_options())
        parts.append(component_options("classifiers", loaded["classifier"], f"classifier {config.classifier!r}"))
    if any(part is None for part in parts):
        return None
    schema: dict[str, OptionSpec] = {}
    for part in parts:
        for key, spec in part.items():
            schema.setdefault(key, spec)
    return schema


def check_options(config: RunConfig, scheduler_cls, loaded: dict | None = None) -> dict:
    """``config.options`` checked against what the configuration takes (its scheduler and the
    ``loaded`` :func:`components`): a key set by a flag, a key no component takes (with the flag it
    needs, or a suggested spelling) and a switch given anything but true/false are one-line errors.
    Returns the options."""
    flags = flag_of()
    for key in config.options:
        if key in flags:
            raise ConfigError(f"option {key!r} is set by {flags[key]}, not by -o")
    schema = option_schema(config, scheduler_cls, loaded)
    if schema is None:
        return dict(config.options)
    for key, value in config.options.items():
        spec = schema.get(key)
        if spec is None:
            raise ConfigError(_unknown_option(key, config, schema))
        if spec.switch and not isinstance(value, bool) and not (value is None and spec.nullable):
            shown = value if isinstance(value, str) else json.dumps(value)
            raise ConfigError(f"-o {key}={shown}: {key} is a switch of the {spec.owner}: true or false"
                              + (" (or null)" if spec.nullable else ""))
    return dict(config.options)


def _unknown_option(key: str, config: RunConfig, schema: dict) -> str:
    needs = _needed_flag(key, config)
    if needs:
        return f"-o {key}: {needs}"
    hint = did_you_mean(key, schema).replace(" (", "", 1).rstrip(")")
    listing = ", ".join(sorted(schema)) or "none"
    return (f"scheduler {config.scheduler!r} has no option {key!r} with these flags; {hint + ' ' if hint else ''}"
            f"valid -o keys: {listing} (batsched-ml plugins shows their defaults)")


def _needed_flag(key: str, config: RunConfig) -> str | None:
    """Why an option is not taken when it belongs to a component the configuration lacks."""
    if key.startswith("predictor_") and config.predictor is None:
        return "a predictor option, given without --predictor"
    if key.startswith("correction_") and config.correction is None:
        return "a correction option, given without --correction"
    if key.startswith("distribution_") and config.distribution is None:
        return "a runtime-distribution option: it needs a scheduler that takes --distribution (probabilistic)"
    if config.classifier is None and key in _any_classifier_options():
        return "a classification option, given without --classifier"
    return None


def _any_classifier_options() -> set[str]:
    keys = set(classification_options())
    for entry in entries("classifiers").values():
        try:
            keys.update(component_options("classifiers", load_entry(entry), "classifier") or {})
        except PluginError:
            continue
    return keys


def show_default(value) -> str:
    """A default as it would be typed after ``-o KEY=`` (strings bare, the rest as JSON)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(list(value) if isinstance(value, tuple) else value)
    except TypeError:
        return repr(value)


def _listing(found: dict[str, OptionSpec]) -> str:
    return "-o " + " ".join(f"{key}={show_default(spec.default)}" for key, spec in found.items())


def describe_plugins() -> list[str]:
    """The lines of ``batsched-ml plugins``: each plugin, where it lives (entry point and
    distribution), its -o options and defaults; a plugin that cannot be loaded is marked BROKEN."""
    lines = []
    for kind in GROUPS:
        lines.append(f"{kind}:")
        for name, entry in entries(kind).items():
            lines.append(f"  {name:<22} {entry.target} ({entry.distribution})")
            try:
                found = component_options(kind, load_entry(entry), name)
            except PluginError as exc:
                lines.append(f"  {'':<22} BROKEN: {str(exc).split(' cannot be loaded: ', 1)[-1]}")
                continue
            if found is None:
                lines.append(f"  {'':<22} -o: any keyword (takes **kwargs)")
            elif found:
                lines.append(f"  {'':<22} {_listing(found)}")
        if kind == "classifiers":
            lines.append(f"  with any classifier:   {_listing(classification_options())}")
    return lines
