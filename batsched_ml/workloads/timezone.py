"""Which local clock a trace's calendar uses: a named zone (with DST), a fixed offset, or UTC.

The Parallel Workloads Archive headers give ``TimeZoneString`` (a tz database
name such as ``Europe/Paris``; the archive marks the numeric ``TimeZone`` as
deprecated) and/or ``TimeZone`` (seconds east of UTC, no DST). The name wins
when the standard library's ``zoneinfo`` knows it; otherwise the offset is used;
with neither, UTC -- and the choice is always said in words, since a wrong zone
shifts every hour-of-day feature silently.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["TimeZoneChoice", "resolve_time_zone", "format_offset"]

_MAX_OFFSET = 86400  # datetime.timezone accepts strictly less than a day


@dataclass(frozen=True)
class TimeZoneChoice:
    """``tzinfo`` to read UNIX times with; ``label`` names it (``Europe/Paris``,
    ``UTC+01:00`` or ``UTC``); ``source`` is the header key used (or ``none``);
    ``note`` is the sentence ``convert`` prints; ``warning`` is True when no
    usable zone was found."""

    tzinfo: _dt.tzinfo
    label: str
    source: str
    note: str
    warning: bool = False

    @property
    def fixed_offset(self) -> float | None:
        """Seconds east of UTC when the zone has no DST rules (fast path), else None."""
        if isinstance(self.tzinfo, _dt.timezone):
            return self.tzinfo.utcoffset(None).total_seconds()
        return None


def format_offset(seconds: float) -> str:
    """``3600`` -> ``UTC+01:00``, ``-34200`` -> ``UTC-09:30``, ``0`` -> ``UTC``."""
    if not seconds:
        return "UTC"
    sign = "+" if seconds > 0 else "-"
    minutes = int(round(abs(seconds))) // 60
    return f"UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _zone(name: str):
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def _offset(value) -> float | None:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if abs(seconds) < _MAX_OFFSET and seconds == seconds else None


def resolve_time_zone(name=None, offset=None, at: float | None = None) -> TimeZoneChoice:
    """The zone for header values ``TimeZoneString`` = ``name`` and ``TimeZone`` = ``offset``.

    ``at`` (a UNIX time, e.g. the trace's start) lets the note say when the numeric offset
    disagrees with the named zone's standard time there.
    """
    name = name.strip() if isinstance(name, str) else None
    seconds = _offset(offset)
    unknown = ""
    if name:
        zone = _zone(name)
        if zone is not None:
            note = f"time zone {name} (header TimeZoneString, with daylight saving time)"
            if seconds is not None and at is not None:
                when = _dt.datetime.fromtimestamp(at, zone)
                standard = (when.utcoffset() - (when.dst() or _dt.timedelta())).total_seconds()
                if standard != seconds:
                    note += (f"; the header's TimeZone {offset} ({format_offset(seconds)}) disagrees "
                             f"with {name}'s standard time ({format_offset(standard)}) and is not used")
            return TimeZoneChoice(zone, name, "TimeZoneString", note)
        unknown = f"unknown TimeZoneString {name!r}; "
    if seconds is not None:
        label = format_offset(seconds)
        return TimeZoneChoice(_dt.timezone(_dt.timedelta(seconds=seconds)), label, "TimeZone",
                              f"{unknown}time zone {label} (header TimeZone {offset}, fixed offset, "
                              "no daylight saving time)")
    return TimeZoneChoice(_dt.timezone.utc, "UTC", "none",
                          f"warning: {unknown}no time zone in the header (TimeZoneString / TimeZone): "
                          "calendar features use UTC", warning=True)
