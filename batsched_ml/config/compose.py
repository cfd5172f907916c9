"""Composition, the last step of ``batsched_ml.config``: a ``RunConfig`` resolved against the
plugins (``resolve``) turned into a scheduler with its collaborators built and injected.

A scheduler plugin declares what it accepts by its constructor's keyword parameters:

| parameter | given from |
|---|---|
| ``policy`` | ``--policy`` (a ``Policy`` instance; ``SmallFirst`` of it with ``--classifier``, which therefore needs a scheduler taking one) |
| ``estimator`` | ``--predictor`` / ``--correction`` / ``--correction-timing`` (a ``predictors.Estimator``) |
| ``distribution`` | ``--distribution`` (a runtime-distribution instance) |
| ``reservations``, ``backfill_order``, ``starvation_threshold`` | the flags of the same name, as given |
| any other parameter | an ``-o KEY=VALUE`` option |

A flag the chosen scheduler does not take was refused by ``resolve``, never ignored. Nothing is
looked up by name below this module: schedulers receive objects.
"""

from __future__ import annotations

import contextlib
import json

from ..policies.expression import SPEC_PREFIXES
from .declare import RunConfig
from .plugins import load
from .resolve import PREFIX, classification_options, constructor_parameters, resolve, scheduler_accepts
from .validate import ValidationError

__all__ = ["build_classifier", "build_component", "build_estimator", "build_policy", "build_scheduler"]


# ---------------------------------------------------------------- building
def build_scheduler(config: RunConfig):
    """The scheduler ``config`` describes, its collaborators built and injected."""
    config = resolve(config)
    scheduler_cls = load("schedulers", config.scheduler)
    takes = scheduler_accepts(scheduler_cls)
    options = split_options(config, scheduler_cls)
    kwargs = dict(options["scheduler"])
    if "policy" in takes:
        policy = build_policy(config.policy, options["policy"])
        if config.classifier:
            from ..classifiers.scheduler import SmallFirst  # (numpy: only when classifying)

            policy = SmallFirst.around(policy, options["classification"])
        kwargs["policy"] = policy
    for name in ("reservations", "backfill_order", "starvation_threshold"):
        if name in takes:
            kwargs[name] = getattr(config, name)
    if config.predictor is not None:
        kwargs["estimator"] = build_estimator(config.predictor, config.correction, config.correction_timing,
                                              seed=config.seed, predictor_options=options["predictor"],
                                              correction_options=options["correction"])
    if "distribution" in takes:
        kwargs["distribution"] = build_component("distributions", config.distribution, options["distribution"],
                                                 seed=config.seed)
    with _naming(options["scheduler"]):
        scheduler = scheduler_cls(**kwargs)
    if config.classifier is None:
        return scheduler
    from ..classifiers.scheduler import ClassifyingScheduler

    classifier = build_classifier(config.classifier, options["classifier"], seed=config.seed)
    with _naming(options["classification"]):
        return ClassifyingScheduler(scheduler, classifier, kill_false_small=config.kill_false_small,
                                    **options["classification"])


def split_options(config: RunConfig, scheduler_cls) -> dict[str, dict]:
    """A resolved config's flat ``-o`` options, per component and without their prefixes."""
    out: dict[str, dict] = {k: {} for k in ("scheduler", "policy", "predictor", "correction", "distribution",
                                             "classification", "classifier")}
    prefixes = {prefix: kind[:-1] if kind != "policies" else "policy" for kind, prefix in PREFIX.items()}
    own = set(constructor_parameters(scheduler_cls) or {})
    classification = set(classification_options()) if config.classifier else set()
    for key, value in config.options.items():
        prefix = next((p for p in prefixes if key.startswith(p) and key not in own), None)
        if prefix is not None:
            out[prefixes[prefix]][key.removeprefix(prefix)] = value
        elif key in own:
            out["scheduler"][key] = value
        elif key in classification:
            out["classification"][key] = value
        else:
            out["classifier"][key] = value
    return out


def build_policy(name: str, params: dict | None = None):
    """A queue order from its plugin name (with its ``-o policy_<param>`` options), or from
    ``expr:FORMULA`` / ``learned:FILE.json[#k]`` / ``rl:FILE.json``."""
    if name.startswith(SPEC_PREFIXES):
        from ..policies.expression import policy_from_spec

        return policy_from_spec(name)
    return build_component("policies", name, params or {})


def build_component(kind: str, name: str, params: dict, *, seed: int | None = None):
    """One plugin instance: its constructor stores ``params`` (and ``seed`` as its ``random_state``
    or ``seed`` when it takes one), then ``validate_params`` checks them; an error names the
    ``-o`` key the user typed."""
    cls = load(kind, name)
    params = dict(params)
    if seed is not None:
        takes = constructor_parameters(cls) or {}
        for seeded in ("random_state", "seed"):
            if seeded in takes:
                params.setdefault(seeded, seed)
    with _naming(params, PREFIX.get(kind, "")):
        obj = cls(**params)
        validate = getattr(obj, "validate_params", None)
        if callable(validate):
            validate()
    return obj


def build_classifier(name: str, params: dict, *, seed: int = 0):
    """A small/large classifier plugin instance (``--classifier``), seeded by ``--seed``."""
    return build_component("classifiers", name, params, seed=seed)


def build_estimator(predictor: str, correction: str | None = None, timing: str | None = None, *, seed: int = 0,
                    predictor_options: dict | None = None, correction_options: dict | None = None):
    """A ``predictors.Estimator`` of a predictor plugin and an optional correction plugin."""
    from ..predictors import Estimator

    model = build_component("predictors", predictor, predictor_options or {}, seed=seed)
    fix = None if correction is None else build_component("corrections", correction, correction_options or {})
    return Estimator(model, fix, timing or "immediate")


@contextlib.contextmanager
def _naming(params: dict, prefix: str = ""):
    """A constructor's or ``validate_params``' range error names its parameter (``window must be
    ...``); the user typed ``-o predictor_window=0``: say that."""
    try:
        yield
    except ValidationError as exc:
        raise _named(exc, params, prefix) from None
    except ValueError as exc:
        named = _named(exc, params, prefix)
        if named is exc:
            raise
        raise named from None


def _named(exc: Exception, params: dict, prefix: str) -> Exception:
    first = str(exc).split(" ", 1)[0]
    for key, value in params.items():
        if key == first:
            shown = value if isinstance(value, str) else json.dumps(value)
            return ValidationError(f"-o {prefix}{key}={shown}: {exc}")
    return exc
