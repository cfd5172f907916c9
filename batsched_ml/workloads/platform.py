"""SimGrid platform files: counting and naming Batsim's compute resources.

Batsim gives compute resource ids ``0..n-1`` in LEXICOGRAPHIC order of host
names (``node0, node1, node10, node11, ..., node2``), so an allocation ``2``
means ``node10``. We only need host names, not the network: ``<cluster>`` /
``<cabinet>`` elements expand to ``prefix + i + suffix`` for each ``i`` of their
``radical``, ``<host>`` elements are single hosts. Hosts whose ``role``
property is ``master`` (or ``storage``) are not compute resources; as a fallback
an id or prefix starting with ``master`` marks a master too.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from ..validation import machine_size

__all__ = ["Platform", "PlatformError", "read_platform", "write_platform", "parse_radical"]

_NON_COMPUTE_ROLES = ("master", "storage")


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


def _role(elem: ET.Element) -> str:
    for child in elem:
        if _local(child.tag) == "prop" and child.get("id") == "role":
            return child.get("value", "")
    return ""


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
    for elem in root.iter():
        tag = _local(elem.tag)
        if tag in ("cluster", "cabinet"):
            prefix, suffix = elem.get("prefix", ""), elem.get("suffix", "")
            ident = elem.get("id", "")
            if _role(elem) in _NON_COMPUTE_ROLES or _is_master(ident, prefix):
                continue
            radical = elem.get("radical")
            if radical is None:
                raise PlatformError(f"{path}: {tag} {ident!r} has no 'radical'")
            try:
                ranges = radical_ranges(radical)
            except ValueError as exc:
                raise PlatformError(f"{path}: {tag} {ident!r}: {exc}") from exc
            _check_size(path, len(names) + sum(hi - lo + 1 for lo, hi in ranges))
            names.extend(f"{prefix}{i}{suffix}" for lo, hi in ranges for i in range(lo, hi + 1))
        elif tag == "host":
            ident = elem.get("id")
            if not ident:
                raise PlatformError(f"{path}: a <host> has no 'id'")
            if _role(elem) in _NON_COMPUTE_ROLES or _is_master(ident):
                continue
            names.append(ident)
    if not names:
        raise PlatformError(f"{path}: no compute host (only master/storage hosts, or none)")
    _check_size(path, len(names))  # <host> elements count one by one
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})[:5]
        raise PlatformError(f"{path}: duplicate host names {dup}")
    names.sort()  # Batsim's resource ids follow the lexicographic order of names
    return Platform(nb_hosts=len(names), host_names=names, path=str(path))


def _check_size(path, nb_hosts: int) -> None:
    """Refuse a machine larger than batsched-ml handles before its host names are built."""
    try:
        machine_size(nb_hosts, "its number of compute hosts")
    except ValueError as exc:
        raise PlatformError(f"{path}: {exc}") from None


def _is_master(*names: str) -> bool:
    return any(n.startswith("master") for n in names if n)


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
