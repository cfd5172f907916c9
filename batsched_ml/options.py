"""Which ``-o KEY=VALUE`` options a configuration takes, read from the plugins' constructors.

Used to reject a misspelt key with the list of valid ones (instead of a
``TypeError`` traceback or a silently ignored setting) and by ``batsched-ml
plugins`` to show every plugin's options with their defaults.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import json

from .validation import ValidationError

# Constructor parameters set by a flag of their own, never by -o.
FLAG_OF = {
    "policy": "--policy", "reservations": "--reservations", "backfill_order": "--backfill-order",
    "starvation_threshold": "--starvation-threshold", "estimator": "--predictor / --correction",
    "classifier": "--classifier", "classifier_name": "--classifier", "kill_false_small": "--kill-false-small",
    "seed": "--seed", "random_state": "--seed", "predictor": "--predictor", "correction": "--correction",
    "correction_timing": "--correction-timing", "timing": "--correction-timing",
    "distribution": "--distribution",
}
# How -o keys of each plugin kind are spelt (predictor and correction options are prefixed).
PREFIX = {"predictors": "predictor_", "corrections": "correction_", "distributions": "distribution_"}


def constructor_options(target) -> dict | None:
    """``{name: default}`` of the keyword parameters ``target`` (a class or factory) accepts,
    following ``**kwargs`` up the class hierarchy; None when it takes arbitrary keywords."""
    out: dict = {}
    chain = [c for c in target.__mro__ if c is not object] if isinstance(target, type) else [target]
    open_ended = False
    for owner in chain:
        init = owner.__dict__.get("__init__") if isinstance(target, type) else owner
        if init is None:
            continue
        try:
            params = list(inspect.signature(init).parameters.values())
        except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
            return None
        if isinstance(target, type):
            params = params[1:]  # self
        open_ended = False
        for p in params:
            if p.kind is p.VAR_KEYWORD:
                open_ended = True
            elif p.kind is not p.VAR_POSITIONAL:
                out.setdefault(p.name, None if p.default is p.empty else p.default)
        if not open_ended:
            break
    if open_ended and not isinstance(target, type):
        return None
    return out


def plugin_options(kind: str, target) -> dict | None:
    """The -o keys of one plugin (prefixed for predictors/corrections), flag-backed ones left out."""
    found = constructor_options(target)
    if found is None:
        return None
    prefix = PREFIX.get(kind, "")
    return {prefix + k: v for k, v in found.items() if k not in FLAG_OF}


def show_default(value) -> str:
    """A default as it would be typed after ``-o KEY=`` (strings bare, the rest as JSON)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(list(value) if isinstance(value, tuple) else value)
    except TypeError:
        return repr(value)


def valid_option_keys(scheduler: str, *, predictor=None, correction=None, classifier=None,
                      distribution=None) -> dict | None:
    """``{key: default}`` of every -o key this configuration accepts (None: cannot tell)."""
    from .plugins import load

    keys = plugin_options("schedulers", load("schedulers", scheduler))
    if keys is None:
        return None
    if classifier is not None:
        from .classifiers import ClassificationMixin

        keys.update(plugin_options("schedulers", ClassificationMixin) or {})
        model = load("classifiers", classifier) if isinstance(classifier, str) else classifier
        if isinstance(model, type):
            keys.update(plugin_options("classifiers", model) or {})
        keys["classifier_options"] = {}
    if predictor is not None or correction is not None:
        for kind, name in (("predictors", predictor or "requested"), ("corrections", correction)):
            if name is not None:
                found = plugin_options(kind, load(kind, name))
                if found is None:
                    return None
                keys.update(found)
        keys["predictor_options"] = {}
    if distribution is not None:  # --scheduler probabilistic: -o distribution_<param>
        found = plugin_options("distributions", load("distributions", distribution)
                               if isinstance(distribution, str) else type(distribution))
        if found is None:
            return None
        keys.update(found)
    return keys


def check_option_keys(options: dict, scheduler: str, *, predictor=None, correction=None,
                      classifier=None, distribution=None) -> None:
    """Reject an -o key the configuration does not take, naming the valid ones."""
    for key in options:
        if key in FLAG_OF:
            raise ValidationError(f"option {key!r} is set by {FLAG_OF[key]}, not by -o")
    if predictor is None and correction is None:
        stray = sorted(k for k in options if k.startswith(("predictor_", "correction_")))
        if stray:
            raise ValidationError(f"predictor/correction options {stray} given without --predictor or "
                                  "--correction")
    if not isinstance(scheduler, str):
        return
    valid = valid_option_keys(scheduler, predictor=predictor, correction=correction, classifier=classifier,
                              distribution=distribution)
    if valid is None:
        return
    classifier_params = ()
    if classifier is not None:  # (imported only then: the classifiers need numpy)
        from .classifiers import _CLASSIFIER_PARAMS as classifier_params
    for key in options:
        if key in valid or key in classifier_params:
            continue  # (a classifier parameter the chosen classifier lacks: build_classifier says so)
        close = difflib.get_close_matches(key, valid, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        listing = ", ".join(sorted(valid)) or "none"
        raise ValidationError(f"scheduler {scheduler!r} has no option {key!r} with these flags; {hint}"
                              f"valid -o keys: {listing} (batsched-ml plugins shows their defaults)")


def describe_plugins() -> list[str]:
    """The lines of ``batsched-ml plugins``: each plugin, where it lives, its -o options and defaults."""
    from .plugins import GROUPS, PluginError, available, load

    lines = []
    for kind in GROUPS:
        lines.append(f"{kind}:")
        for name, target in available(kind).items():
            lines.append(f"  {name:<22} {target}")
            try:
                found = plugin_options(kind, load(kind, name))
            except (PluginError, ImportError, AttributeError) as exc:
                lines.append(f"  {'':<22} (cannot be loaded: {exc})")
                continue
            if found is None:
                lines.append(f"  {'':<22} -o: any keyword (takes **kwargs)")
            elif found:
                lines.append(f"  {'':<22} -o " + " ".join(f"{k}={show_default(v)}" for k, v in found.items()))
        if kind == "classifiers":
            from .classifiers import ClassificationMixin

            shared = plugin_options("schedulers", ClassificationMixin) or {}
            lines.append("  with any classifier:   -o " + " ".join(f"{k}={show_default(v)}"
                                                                     for k, v in shared.items()))
    return lines


@contextlib.contextmanager
def name_the_option(options: dict):
    """A constructor's range error names its parameter (``window must be ...``); on the command
    line the user typed ``-o predictor_window=0``: say that."""
    try:
        yield
    except ValidationError as exc:
        param = str(exc).split(" ", 1)[0]
        for key, value in options.items():
            if key == param or key.removeprefix("predictor_").removeprefix("correction_") == param:
                raise ValidationError(f"-o {key}={json.dumps(value)}: {exc}") from None
        raise
