"""Campaign files as data: inheritance and matrices, expanded into one flat campaign.

* A file may start with ``extends = "other.toml"`` (a path relative to it): it is that campaign
  with this file's tables over it. ``[campaign]`` and each ``[traces.NAME]`` / ``[configs.NAME]``
  merge key by key, a key given here replacing the other file's value whole (``windows``,
  ``options`` and ``generate`` included); ``[[paper]]`` and ``[[tables]]``, when given here,
  replace the other file's lists. New traces and configs come after the inherited ones.
* A config may say ``extends = "NAME"``: it is config NAME (of the flat campaign, so possibly one a
  matrix made) with its own keys over it, by the same rule.
* A config with ``matrix = { AXIS = {LABEL = VALUE, ...}, ... }`` is a base crossed with axes: one
  config per combination of labels, the first axis outermost, each the base's keys, then each
  axis's VALUE (a table of keys, or one value for the key named like the axis; a list
  ``[V1, V2]`` is ``{V1 = V1, V2 = V2}``). ``name = "{AXIS1}-{AXIS2}"`` names them (default
  ``NAME-{AXIS1}-...``); each remembers its labels as ``axes``, which the report's ``[[tables]]``
  lay out. Any config may give ``axes`` itself.

The result (:func:`expand`) is a campaign without ``extends`` or ``matrix``, which
``campaign run`` writes into its results directory (:func:`write_campaign`) as the campaign as run.
"""

from __future__ import annotations

import itertools
import string
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CampaignError", "DeclaredPath", "PATH_KEYS", "as_table", "check_keys", "expand", "read_campaign_file",
           "write_campaign"]

PATH_KEYS = ("swf", "workload", "platform")  # trace keys that name a file
NAMED_TABLES = ("traces", "configs")  # merged name by name, then key by key


class CampaignError(ValueError):
    """A campaign file that cannot be run as written (the CLI prints it on one line, exit 2)."""


@dataclass(frozen=True)
class DeclaredPath:
    """A trace's file as written, and the directory of the campaign file that wrote it (a parent
    file's relative paths stay relative to the parent)."""

    text: str
    base: Path


def check_keys(table: dict, valid, where: str) -> None:
    """A :class:`CampaignError` naming every key of ``table`` not in ``valid``, with the valid key
    each one is probably a typo of."""
    from ..config.declare import did_you_mean

    unknown = [k for k in table if k not in valid]
    if unknown:
        named = ", ".join(f"{k!r}{did_you_mean(k, valid)}" for k in unknown)
        raise CampaignError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {named}; valid keys: "
                            f"{', '.join(valid)}")


def as_table(value, where: str) -> dict:
    """``value`` when it is a TOML table, else a :class:`CampaignError`."""
    if not isinstance(value, dict):
        raise CampaignError(f"{where} must be a table")
    return value


def read_campaign_file(path: Path, _chain: tuple = ()) -> dict:
    """The campaign of ``path`` with its ``extends`` chain merged in (configs not expanded yet);
    trace file names become :class:`DeclaredPath`."""
    path = Path(path)
    if path.resolve() in _chain:
        names = " -> ".join(p.name for p in (*_chain, path.resolve()))
        raise CampaignError(f"extends makes a cycle: {names}")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        where = "extends: cannot read" if _chain else "cannot read campaign file"
        raise CampaignError(f"{where} {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CampaignError(f"{path}: invalid TOML: {exc}") from None
    base = path.resolve().parent
    for table in (data.get("traces") or {}).values():
        if isinstance(table, dict):
            for key in PATH_KEYS:
                if isinstance(table.get(key), str):
                    table[key] = DeclaredPath(table[key], base)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str) or not parent:
        raise CampaignError(f"{path}: extends must be the path of another campaign file")
    parent_path = Path(parent) if Path(parent).is_absolute() else base / parent
    try:
        inherited = read_campaign_file(parent_path, (*_chain, path.resolve()))
    except CampaignError as exc:
        raise CampaignError(f"{path}: {exc}") from None
    return merge(inherited, data)


def merge(parent: dict, child: dict) -> dict:
    """``child`` over ``parent`` (see the module docstring)."""
    out = {key: value for key, value in parent.items()}
    for key, value in child.items():
        if key == "campaign" and isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        elif key in NAMED_TABLES and isinstance(value, dict) and isinstance(out.get(key), dict):
            tables = dict(out[key])
            for name, table in value.items():
                old = tables.get(name)
                tables[name] = {**old, **table} if isinstance(old, dict) and isinstance(table, dict) else table
            out[key] = tables
        else:
            out[key] = value
    return out


# ------------------------------------------------------------------ configs
def expand(data: dict) -> dict:
    """``data`` with every config's ``extends`` resolved and every matrix expanded."""
    configs = data.get("configs")
    if not isinstance(configs, dict):
        return data
    raw: dict = {}
    for name, table in configs.items():
        if isinstance(table, dict) and "matrix" in table:
            made = _matrix(name, table)
        else:
            made = {name: table}
        for made_name, made_table in made.items():
            if made_name in raw:
                raise CampaignError(f"[configs.{name}]: config {made_name!r} is defined twice")
            raw[made_name] = made_table
    resolved: dict = {}
    for name in raw:
        resolved[name] = _resolve(name, raw, resolved, ())
    return {**data, "configs": resolved}


def _resolve(name: str, raw: dict, resolved: dict, chain: tuple) -> dict:
    if name in resolved:
        return resolved[name]
    table = raw[name]
    if not isinstance(table, dict) or "extends" not in table:
        return table
    parent = table["extends"]
    where = f"[configs.{name}] extends"
    if not isinstance(parent, str):
        raise CampaignError(f"{where} must name another config")
    if parent in chain or parent == name:
        raise CampaignError(f"{where}: a cycle: {' -> '.join((*chain, name, parent))}")
    if parent not in raw:
        from ..config.declare import did_you_mean

        raise CampaignError(f"{where} {parent!r}: no such config{did_you_mean(parent, raw)}; configs: {', '.join(raw)}")
    inherited = _resolve(parent, raw, resolved, (*chain, name))
    if not isinstance(inherited, dict):
        raise CampaignError(f"{where} {parent!r}, which is not a table")
    return {**inherited, **{k: v for k, v in table.items() if k != "extends"}}


def _matrix(name: str, table: dict) -> dict:
    """The configs of a matrix table, in order (first axis outermost)."""
    where = f"[configs.{name}]"
    axes = table["matrix"]
    if not isinstance(axes, dict) or not axes:
        raise CampaignError(f"{where} matrix must be a table of axes: matrix = {{ AXIS = {{ LABEL = VALUE, ... }} }}")
    values = {axis: _axis(where, axis, labels) for axis, labels in axes.items()}
    template = table.get("name", f"{name}-" + "-".join(f"{{{axis}}}" for axis in axes))
    if not isinstance(template, str):
        raise CampaignError(f"{where} name must be a string such as \"{{{next(iter(axes))}}}-...\"")
    fields = {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}
    unknown = fields - set(axes)
    if unknown:
        raise CampaignError(f"{where} name {template!r}: {{{sorted(unknown)[0]}}} is not an axis; axes: "
                          f"{', '.join(axes)}")
    base = {k: v for k, v in table.items() if k not in ("matrix", "name")}
    out: dict = {}
    for combination in itertools.product(*(values[axis].items() for axis in axes)):
        labels = {axis: label for axis, (label, _) in zip(axes, combination)}
        made = dict(base)
        for _, keys in combination:
            made.update(keys)
        made["axes"] = {**(base.get("axes") or {}), **labels}
        config_name = template.format(**labels)
        if config_name in out:
            raise CampaignError(f"{where} name {template!r} gives {config_name!r} twice: name it by every axis")
        out[config_name] = made
    return out


def _axis(where: str, axis: str, labels) -> dict:
    """``{label: keys}`` of one axis."""
    if isinstance(labels, list):
        if not labels or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in labels):
            raise CampaignError(f"{where} matrix.{axis}: a list of values (strings or numbers)")
        labels = {str(v): v for v in labels}
    if not isinstance(labels, dict) or not labels:
        raise CampaignError(f"{where} matrix.{axis} must be {{ LABEL = VALUE, ... }} or a list of values")
    from ..config.declare import table_keys

    for label, value in labels.items():
        if not isinstance(value, dict) and axis not in table_keys():
            raise CampaignError(f"{where} matrix.{axis}: {label} = {value!r} would set {axis!r}, which is not a "
                                f"setting; give the keys it sets, e.g. {label} = {{ policy = {value!r} }}")
    return {str(label): value if isinstance(value, dict) else {axis: value} for label, value in labels.items()}


# ------------------------------------------------------------------ writing
def write_campaign(data: dict, path: Path) -> None:
    """Write the flat campaign ``data`` as TOML: a trace file with a directory in its name becomes
    an absolute path (the copy is run again from anywhere), a bare name stays (the traces directory
    finds it)."""
    import tomli_w

    def plain(value):
        if isinstance(value, DeclaredPath):
            p = Path(value.text).expanduser()
            if p.is_absolute() or len(p.parts) == 1:
                return value.text
            return str((value.base / p).resolve())
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    path.write_text(tomli_w.dumps(plain(data)), encoding="utf-8")
