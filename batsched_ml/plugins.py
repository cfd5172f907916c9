"""Plugins by name: Python entry points, one group per kind of component.

Third-party packages add a scheduler, policy, predictor or classifier by
declaring an entry point in the matching group; the built-ins below are also
used when the package runs from a source tree without being installed.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from importlib.metadata import entry_points

GROUPS = {
    "schedulers": "batsched_ml.schedulers",
    "policies": "batsched_ml.policies",
    "predictors": "batsched_ml.predictors",
    "corrections": "batsched_ml.corrections",
    "classifiers": "batsched_ml.classifiers",
    "distributions": "batsched_ml.distributions",
}

BUILTINS = {
    "schedulers": {
        "fcfs": "batsched_ml.scheduling.fcfs:StrictFCFS",
        "easy": "batsched_ml.scheduling.easy:EasyBackfilling",
        "conservative": "batsched_ml.scheduling.conservative:ConservativeBackfilling",
        "probabilistic": "batsched_ml.scheduling.probabilistic:ProbabilisticBackfilling",
    },
    "policies": {name: f"batsched_ml.policies.orders:{cls}" for name, cls in [
        ("fcfs", "FCFS"), ("spf", "SPF"), ("saf", "SAF"), ("wfp3", "WFP3"), ("unicef", "UNICEF"),
        ("f1", "F1"), ("f2", "F2"), ("f3", "F3"), ("f4", "F4")]},
    "predictors": {
        "requested": "batsched_ml.predictors.basic:RequestedTime",
        "clairvoyant": "batsched_ml.predictors.basic:Clairvoyant",
        "ave2": "batsched_ml.predictors.basic:UserAverage",
        "eloss": "batsched_ml.predictors.eloss:ELossRegressor",
    },
    "corrections": {
        "requested": "batsched_ml.predictors.corrections:RequestedCorrection",
        "incremental": "batsched_ml.predictors.corrections:IncrementalCorrection",
        "doubling": "batsched_ml.predictors.corrections:DoublingCorrection",
    },
    "classifiers": {
        "random-forest": "batsched_ml.classifiers.models:RandomForestJobClassifier",
        "gradient-boosting": "batsched_ml.classifiers.models:GradientBoostingJobClassifier",
        "clairvoyant": "batsched_ml.classifiers.models:ClairvoyantClassifier",
    },
    "distributions": {
        "walltime": "batsched_ml.distributions.base:WalltimeOnly",
        "user": "batsched_ml.distributions.user:UserDistribution",
        "hmm": "batsched_ml.distributions.hmm:HMMDistribution",
        "forest": "batsched_ml.distributions.forest:ForestDistribution",
    },
}


SINGULAR = {"schedulers": "scheduler", "policies": "policy", "predictors": "predictor",
            "corrections": "correction", "classifiers": "classifier", "distributions": "distribution"}


class PluginError(LookupError):
    pass


def available(kind: str) -> dict[str, str]:
    """name -> "module:attr" for every plugin of ``kind`` (entry points override built-ins)."""
    found = dict(BUILTINS.get(kind, {}))
    found.update(_installed(GROUPS[kind]))
    return dict(sorted(found.items()))


@cache
def _installed(group: str) -> tuple:
    """(name, target) of the installed entry points of ``group``, scanned once per process:
    a scan reads every installed distribution's metadata (~50 ms, per scheduler built)."""
    return tuple((ep.name, ep.value) for ep in entry_points(group=group))


def load(kind: str, name: str):
    """The class (or factory) registered as ``name`` for ``kind``."""
    plugins = available(kind)
    if name not in plugins:
        raise PluginError(f"unknown {SINGULAR.get(kind, kind)} {name!r}; "
                          f"available: {', '.join(plugins) or 'none'}")
    module, _, attr = plugins[name].partition(":")
    obj = import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def resolve_policy(name: str):
    """A policy instance from its name, or from ``expr:FORMULA`` / ``learned:FILE.json[#k]``."""
    if name.startswith(("expr:", "learned:")):
        from .policies.expression import policy_from_spec

        return policy_from_spec(name)
    return load("policies", name)()
