"""Task kinds: what the tasks of a campaign table do, found by name.

A ``[configs.NAME]`` table is crossed with the traces and seeds; its ``kind`` (default
``simulate``) says which keys it takes, what one (trace, seed) is cut into (:class:`Unit`: a
window, a jitter copy, an evaluation sequence) and how one unit runs. A ``[train.NAME]`` table is
a task per seed that writes a file (a trained policy); configs name that file ``@NAME`` in any
string value (``policy = "rl:@NAME"``), and run each seed on the file of the same seed.

Kinds are plugins: the entry-point group ``batsched_ml.campaign_tasks`` maps a name to a
:class:`TaskKind` subclass. ``simulate`` is built in (``tasks.SimulateKind``); the reinforcement-
learning package registers ``train-policy`` and ``evaluate-policy``, so that this layer, below
it, never imports it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CampaignError

__all__ = ["REFERENCE", "TaskKind", "Unit", "get_kind", "kind_names", "references", "substitute"]

# ``@NAME`` in a config's string value: the file [train.NAME] writes (NAME as a campaign name)
REFERENCE = re.compile(r"@([A-Za-z0-9][A-Za-z0-9_.+-]*)")


@dataclass(frozen=True)
class Unit:
    """One task's share of a trace: ``window`` (index), ``window_start`` (seconds from the trace's
    start), ``digest`` (what the task reads: the input part of its cache key), ``nb_jobs`` (its
    size, for run-time estimates) and the kind's own ``inputs`` (files, a sequence's start...)."""

    window: int
    window_start: float
    digest: str
    nb_jobs: int
    inputs: dict = field(default_factory=dict)


class TaskKind:
    """A kind of campaign task (see the module docstring). Subclasses set ``name``, ``command``
    (the command line the settings are flags of, for reports) and ``output`` (the suffix of the
    file a training writes; ``None`` for a config's kind) and implement the methods."""

    name = ""
    command = ""
    output: str | None = None

    def keys(self) -> list[str]:
        """The table keys the kind takes (besides ``kind``, ``seeds``, ``traces``, ``axes``)."""
        raise NotImplementedError

    def settings(self, table: dict, where: str, deferred: frozenset = frozenset()):
        """The table's settings, validated (a :class:`CampaignError` naming ``where`` if not): an
        object with ``to_dict()`` (what the cache key reads). ``deferred``: the keys whose value
        names a training's file (``@NAME``), which cannot be checked before it is written."""
        raise NotImplementedError

    def argv(self, table: dict, where: str) -> tuple[str, ...]:
        """The table as ``command``'s flags (reports, run-time estimates)."""
        raise NotImplementedError

    def with_seed(self, settings, seed: int):
        """``settings`` of the run of ``seed``."""
        return dataclasses.replace(settings, seed=seed)

    def with_files(self, settings, files: dict):
        """``settings`` with every ``@NAME`` replaced by ``files[NAME]`` (a path)."""
        return substitute(settings, files)

    def file_digests(self, settings) -> dict:
        """``{path: sha256}`` of the files the settings name (a policy file), for the cache key: an
        edited file is a new run. ``@NAME`` references are not files yet (their key stands in)."""
        return {}

    def unit_key(self, settings):
        """What of ``settings`` decides :meth:`units` (configs with the same share their cut)."""
        return None

    def units(self, trace, settings, inputs_dir: Path) -> list[Unit]:
        """What a config's tasks on ``trace`` (a ``traces.TraceSpec``) are cut into."""
        raise NotImplementedError

    def training_unit(self, traces: list, settings, inputs_dir: Path) -> Unit:
        """A training's one unit, reading ``traces`` (a list of ``TraceSpec``)."""
        raise NotImplementedError

    def run(self, task) -> dict:
        """Run ``task`` (a ``tasks.Task``) on a worker: ``{"row": {...}, "files": {suffix: bytes}}``
        (a training's file under ``output``), or ``{"timeout": s, "finished": n, "total": n}``."""
        raise NotImplementedError

    def row_metrics(self, row: dict) -> dict:
        """What a report shows of a training's row (its ``metrics``): by default all of it."""
        return dict(row.get("metrics") or {})


def kind_names() -> list[str]:
    from ..config.plugins import available

    return list(available("campaign_tasks"))


def get_kind(name: str, where: str = "") -> TaskKind:
    """The kind registered as ``name`` (a :class:`CampaignError` naming the known ones if none)."""
    from ..config.plugins import PluginError, load

    if not isinstance(name, str):
        raise CampaignError(f"{where} kind must be a name such as \"simulate\", not {name!r}".strip())
    try:
        cls = load("campaign_tasks", name)
    except PluginError as exc:
        raise CampaignError(f"{where}: {exc}" if where else str(exc)) from None
    return cls()


def references(value) -> set[str]:
    """The ``@NAME`` names in a table's string values (nested tables and lists too)."""
    if isinstance(value, str):
        return set(REFERENCE.findall(value))
    if isinstance(value, dict):
        return set().union(*(references(v) for v in value.values())) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*(references(v) for v in value)) if value else set()
    return set()


def substitute(value, files: dict):
    """``value`` (a string, dict, list or dataclass) with every ``@NAME`` of ``files`` replaced by
    ``files[NAME]``."""
    if isinstance(value, str):
        return REFERENCE.sub(lambda m: str(files.get(m.group(1), m.group(0))), value)
    if isinstance(value, dict):
        return {k: substitute(v, files) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, files) for v in value]
    if isinstance(value, tuple):
        return tuple(substitute(v, files) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: substitute(getattr(value, f.name), files) for f in dataclasses.fields(value)
                   if f.init}
        return dataclasses.replace(value, **changes)
    return value
