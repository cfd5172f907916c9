"""Plugins by name: Python entry points, one group per kind of component.

Third-party packages add a scheduler, policy, predictor, correction, classifier or runtime
distribution by declaring an entry point in the matching group (see the documentation's
"Your own scheduler"); the built-ins below are also used when the package runs from a source
tree without being installed. A name is one plugin: two distributions declaring the same name
(a package naming its scheduler ``easy``) make that name unusable until one goes, with an error
naming both -- which one ran would otherwise depend on the order of installation. Loading only
imports (``batsched_ml.config``'s third step): checking a configuration against the plugins is
``resolve``'s job, building a run from them ``compose``'s.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
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
# groups of what is not a run's component (no --flag of simulate)
OTHER_GROUPS = {"campaign_tasks": "batsched_ml.campaign_tasks"}

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
    # what a campaign table's tasks do (campaign.kinds); the reinforcement-learning package registers
    # train-policy and evaluate-policy as entry points of the group
    "campaign_tasks": {"simulate": "batsched_ml.campaign.tasks:SimulateKind"},
}


SINGULAR = {"schedulers": "scheduler", "policies": "policy", "predictors": "predictor",
            "corrections": "correction", "classifiers": "classifier", "distributions": "distribution",
            "campaign_tasks": "campaign task kind"}

# The plugin API (``batsched_ml.api``) this package provides: a plugin class may require a version
# with ``api_version = "1.0"`` (same major, minor at most ours); see docs/api.md for what each covers.
API_VERSION = "1.2"  # 1.1: Policy.order and Policy.on_simulation_begins (optional hooks); 1.2: forks
# (Scheduler.on_job_adopted, components, fork_from; Params.fork_from, learned_state)


class PluginError(LookupError):
    """An unknown plugin name, or a plugin that cannot be loaded (one line, exit 2 on the CLI)."""


@dataclass(frozen=True)
class Entry:
    """One registered plugin: its name, ``module:attr`` and the distribution that declares it."""

    kind: str
    name: str
    target: str
    distribution: str  # "batsched-ml 0.1.0", "myplugin 0.1"
    clashes: tuple = ()  # other distributions' entries of the same name: then it cannot be loaded

    def describe(self) -> str:
        return f"{self.singular} {self.name!r} (entry point {self.target} of {self.distribution})"

    def clash_message(self) -> str:
        both = " and by ".join(f"{e.distribution} ({e.target})" for e in (self, *self.clashes))
        return (f"{self.singular} {self.name!r} is declared by {both}: a name is one plugin; uninstall one of "
                "them or rename its entry point")

    @property
    def singular(self) -> str:
        return SINGULAR.get(self.kind, self.kind)


def entries(kind: str) -> dict[str, Entry]:
    """name -> :class:`Entry` of every plugin of ``kind``: the built-ins, and the installed entry
    points (ours, which are the built-ins, and other distributions'). A name declared by two
    distributions is an entry with ``clashes``, which :func:`load_entry` refuses."""
    own = _own_distribution()
    found = {name: Entry(kind, name, target, own) for name, target in BUILTINS.get(kind, {}).items()}
    for name, target, dist in _installed({**GROUPS, **OTHER_GROUPS}[kind]):
        entry = Entry(kind, name, target, dist or own)
        first = found.get(name)
        if first is None or _project(first.distribution) == _project(entry.distribution):
            found[name] = entry if first is None else first
        elif not any(_project(c.distribution) == _project(entry.distribution) for c in first.clashes):
            found[name] = Entry(kind, name, first.target, first.distribution, (*first.clashes, entry))
    return dict(sorted(found.items()))


def _project(distribution: str) -> str:
    """``"batsched-ml 0.1.0"`` -> ``"batsched-ml"`` (a stale copy of our own metadata is still us)."""
    return distribution.split(" ", 1)[0].lower().replace("_", "-")


def available(kind: str) -> dict[str, str]:
    """name -> "module:attr" for every plugin of ``kind``."""
    return {name: entry.target for name, entry in entries(kind).items()}


@cache
def _own_distribution() -> str:
    from .. import __version__

    return f"batsched-ml {__version__}"


@cache
def _installed(group: str) -> tuple:
    """(name, target, "distribution version") of the installed entry points of ``group``, scanned
    once per process: a scan reads every installed distribution's metadata (~50 ms)."""
    out = []
    for ep in entry_points(group=group):
        dist = getattr(ep, "dist", None)
        label = f"{dist.metadata['Name']} {dist.version}" if dist is not None else None
        out.append((ep.name, ep.value, label))
    return tuple(out)


# the queue orders that are not plugins of their own (``resolve_policy``)
POLICY_FORMS = (", expr:FORMULA (e.g. expr:'log10(r)*n + 870*log10(s)'), learned:FILE.json#k (a learn-policy file) "
                "or rl:FILE.json (a train-policy scoring network)")


def load(kind: str, name: str):
    """The class (or factory) registered as ``name`` for ``kind``; a :class:`PluginError` naming the
    plugin and its distribution when it cannot be imported or needs another API version."""
    plugins = entries(kind)
    if name not in plugins:
        close = difflib.get_close_matches(name, list(plugins), n=1) if isinstance(name, str) else []
        hint = f"did you mean {close[0]!r}? " if close else ""
        forms = POLICY_FORMS if kind == "policies" else ""
        raise PluginError(f"unknown {SINGULAR.get(kind, kind)} {name!r}; {hint}"
                          f"available: {', '.join(plugins) or 'none'}{forms}")
    return load_entry(plugins[name])


def load_entry(entry: Entry):
    """Import what ``entry`` points at (see :func:`load`); a :class:`PluginError` for a name two
    distributions declare."""
    if entry.clashes:
        raise PluginError(entry.clash_message())
    module, _, attr = entry.target.partition(":")
    try:
        obj = import_module(module)
        for part in filter(None, attr.split(".")):
            obj = getattr(obj, part)
    except Exception as exc:  # noqa: BLE001 - whatever a third-party module raises on import
        if entry.distribution == _own_distribution():
            raise  # a bug of ours: the traceback is what helps
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise PluginError(f"{entry.describe()} cannot be loaded: {reason}") from None
    check_api_version(entry, getattr(obj, "api_version", None))
    return obj


def check_api_version(entry: Entry, required) -> None:
    """A plugin's ``api_version`` must have our major version and at most our minor one."""
    if required is None:
        return
    ours = tuple(int(p) for p in API_VERSION.split("."))
    try:
        parts = tuple(int(p) for p in str(required).split("."))
    except ValueError:
        parts = ()
    if not 1 <= len(parts) <= 2:
        raise PluginError(f"{entry.describe()} declares api_version {required!r}; expected \"MAJOR.MINOR\"")
    if parts[0] != ours[0] or (len(parts) == 2 and parts[1] > ours[1]):
        raise PluginError(f"{entry.describe()} needs plugin API {required}; this batsched-ml provides "
                          f"{API_VERSION}")
