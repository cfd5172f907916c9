"""SimGrid platform files: counting and naming Batsim's compute resources.

Batsim gives compute resource ids ``0..n-1`` in LEXICOGRAPHIC order of host
names (``node0, node1, node10, node11, ..., node2``), so an allocation ``2``
means ``node10``. We only need host names, not the network: ``<cluster>`` /
``<cabinet>`` elements expand to ``prefix + i + suffix`` for each ``i`` of their
``radical``, ``<host>`` elements are single hosts. As in Batsim 4.2.1 (machines.cpp,
permissions.cpp), a host's ``role`` property is ``compute_node`` (the default), ``master`` or
``storage``; the host named ``master_host`` (Batsim's default ``--master-host``) is the master
without a role; a platform needs exactly one master, and its compute hosts a positive speed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from ..config.validate import machine_size

__all__ = ["Platform", "PlatformError", "read_platform", "write_platform", "parse_radical"]

ROLES = ("", "compute_node", "master", "storage")  # permissions.cpp; "" is a compute node
DEFAULT_MASTER = "master_host"  # Batsim's --master-host default
_SPEED = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


class PlatformError(ValueError):
    """A platform file we cannot read, or one without any compute host."""


@dataclass
class Platform:
    """Compute hosts of a platform; ``host_names[i]`` is Batsim resource ``i``."""

    nb_hosts: int
    host_names: list[str]
    path: str = ""


def parse_radical(radical: str) -> list[int]:
    """``"0-3,8,10-12"`` -> ``[0, 1, 2, 3, 8, 10, 11, 12]`` (SimGrid radical syntax)."""
    return [i for lo, hi in radical_ranges(radical) for i in range(lo, hi + 1)]


def radical_ranges(radical: str) -> list[tuple[int, int]]:
    """``"0-3,8"`` -> ``[(0, 3), (8, 8)]``: what a radical spans, counted before it is expanded."""
    out: list[tuple[int, int]] = []
    for part in radical.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise ValueError(f"bad radical {radical!r}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"bad radical {radical!r}: {lo}-{hi} is decreasing")
        out.append((lo, hi))
    return out


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]  # tolerate an XML namespace


def _role(elem: ET.Element, path, what: str) -> str | None:
    """The ``role`` property of ``elem`` (None: it has none); a role Batsim does not know is an error."""
    for child in elem:
        if _local(child.tag) == "prop" and child.get("id") == "role":
            role = child.get("value", "")
            if role not in ROLES:
                raise PlatformError(f"{path}: {what} has role {role!r}: Batsim knows only "
                                    f"{', '.join(repr(r) for r in ROLES[1:])}")
            return role
    return None


def _check_speed(elem: ET.Element, path, what: str) -> None:
    """A compute host computes: Batsim refuses a speed <= 0 (its first power state's, the one it
    starts in unless ``pstate`` says otherwise)."""
    speed = elem.get("speed")
    if speed is None:
        raise PlatformError(f"{path}: {what} has no 'speed' (SimGrid requires one)")
    states = speed.split(",")
    try:
        text = states[int(elem.get("pstate", "0"))]
    except (ValueError, IndexError):
        raise PlatformError(f"{path}: {what}: 'pstate' {elem.get('pstate')!r} is not one of its "
                            f"{len(states)} speeds") from None
    match = _SPEED.fullmatch(text)
    if match is None:
        raise PlatformError(f"{path}: {what}: speed {text.strip()!r} is not a number with a unit (e.g. 1Gf)")
    if float(match.group(1)) <= 0:
        raise PlatformError(f"{path}: {what} is a compute host with speed {text.strip()!r}: Batsim "
                            "requires a strictly positive computing speed")


def read_platform(path: str | Path) -> Platform:
    """Compute host names of a SimGrid XML platform, in Batsim's id order (``sample:NAME``: a
    bundled platform, ``samples``)."""
    from .samples import sample_path

    path = Path(sample_path(path))
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise PlatformError(f"{path}: malformed XML: {exc}") from exc
    except OSError as exc:
        raise PlatformError(f"{path}: cannot read platform: {exc.strerror or exc}") from exc
    names: list[str] = []
    masters: list[str] = []
    for elem in root.iter():
        tag = _local(elem.tag)
        if tag in ("cluster", "cabinet"):
            prefix, suffix = elem.get("prefix", ""), elem.get("suffix", "")
            ident = elem.get("id", "")
            what = f"{tag} {ident!r}"
            radical = elem.get("radical")
            if radical is None:
                raise PlatformError(f"{path}: {what} has no 'radical'")
            try:
                ranges = radical_ranges(radical)
            except ValueError as exc:
                raise PlatformError(f"{path}: {what}: {exc}") from exc
            _check_size(path, len(names) + sum(hi - lo + 1 for lo, hi in ranges))
            hosts = [f"{prefix}{i}{suffix}" for lo, hi in ranges for i in range(lo, hi + 1)]
            role = _role(elem, path, what)  # SimGrid gives a cluster's properties to each of its hosts
            if DEFAULT_MASTER in hosts:
                _default_master(path, role, what)
                masters.append(DEFAULT_MASTER)
                hosts.remove(DEFAULT_MASTER)
            if role == "master":
                masters.extend(hosts)
            elif role != "storage" and hosts:
                _check_speed(elem, path, what)
                names.extend(hosts)
        elif tag == "host":
            ident = elem.get("id")
            if not ident:
                raise PlatformError(f"{path}: a <host> has no 'id'")
            what = f"host {ident!r}"
            role = _role(elem, path, what)
            if ident == DEFAULT_MASTER:
                _default_master(path, role, what)
                role = "master"
            if role == "master":
                masters.append(ident)
            elif role != "storage":
                _check_speed(elem, path, what)
                names.append(ident)
    if not names:
        raise PlatformError(f"{path}: no compute host (only master/storage hosts, or none)")
    if len(masters) != 1:
        raise PlatformError(f"{path}: " + (
            "no master host: Batsim needs one, with role 'master' or named 'master_host'" if not masters
            else f"{len(masters)} master hosts ({', '.join(masters[:3])}): Batsim accepts one"))
    _check_size(path, len(names))  # <host> elements count one by one
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})[:5]
        raise PlatformError(f"{path}: duplicate host names {dup}")
    names.sort()  # Batsim's resource ids follow the lexicographic order of names
    return Platform(nb_hosts=len(names), host_names=names, path=str(path))


def _default_master(path, role: str | None, what: str) -> None:
    """Batsim adds the role 'master' to the host named master_host: a role of its own makes
    'ROLE,master', which Batsim refuses."""
    if role is not None:
        raise PlatformError(f"{path}: {what}: the host {DEFAULT_MASTER!r} is Batsim's default master, "
                            f"so it cannot also carry the role {role!r}")


def _check_size(path, nb_hosts: int) -> None:
    """Refuse a machine larger than batsched-ml handles before its host names are built."""
    try:
        machine_size(nb_hosts, "its number of compute hosts")
    except ValueError as exc:
        raise PlatformError(f"{path}: {exc}") from None


_TEMPLATE = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="AS0" routing="Full">
    <cluster id="compute" prefix="node" suffix="" radical="0-{last}" speed="1Gf" bw="125MBps" lat="50us"/>
    <cluster id="master" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="125MBps" lat="50us">
      <prop id="role" value="master"/>
    </cluster>
    <link id="backbone" bandwidth="1.25GBps" latency="500us"/>
    <zoneRoute src="compute" dst="master" gw_src="nodecompute_router" gw_dst="master_hostmaster_router">
      <link_ctn id="backbone"/>
    </zoneRoute>
  </zone>
</platform>
"""


def write_platform(nb_hosts: int, path: str | Path) -> None:
    """Homogeneous cluster ``node0..node{n-1}`` + ``master_host0``, as the golden files."""
    nb_hosts = machine_size(nb_hosts, "nb_hosts")
    path = Path(path)
    if not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_TEMPLATE.format(last=int(nb_hosts) - 1).encode("ascii"))
