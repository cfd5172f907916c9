"""Features of Zrigui et al. 2022, Table 4, kept incrementally.

Per job at submission: requested time and processors; the submission's hour,
day of week, day of month, month, ISO week and quarter on the trace's local
clock; for each of the categories (user, requested time), (user, processors)
and (user, submission day), the class of the previous 1, 2, 3 completed jobs of
that category (1 small, 0 large, -1 none) and the share of its completed jobs
that are small (-1 when it has none). Classes are taken against the divider in
force at the submission; before any divider exists (first week) they are -1.

Per category the table keeps a deque of the last three runtimes and a sorted
list of all runtimes, so every feature vector costs a few bisections.

Two additions, off by default: ``positions`` / ``against`` recompute the lag and share
features of past rows against another divider (so that a retraining's features and labels use
the same one), and ``RUNTIME_FEATURE_NAMES`` are the user's recent actual runtimes as numbers
(independent of any divider).
"""

from __future__ import annotations

import datetime as _dt
import warnings
from collections import deque
from pathlib import Path

import numpy as np
from sortedcontainers import SortedList

from ..incremental import AppendOnlyList

FEATURE_NAMES = (
    "requested_time", "processors",
    "hour", "day_of_week", "day_of_month", "month", "week", "quarter",
    "lag1_user_reqtime", "lag2_user_reqtime", "lag3_user_reqtime",
    "lag1_user_procs", "lag2_user_procs", "lag3_user_procs",
    "lag1_user_day", "lag2_user_day", "lag3_user_day",
    "share_small_user_reqtime", "share_small_user_procs", "share_small_user_day",
)

RUNTIME_FEATURE_NAMES = (
    "log_last_runtime_user_reqtime", "log_last_runtime_user_procs", "log_last_runtime_user_day",
    "log_median_runtime_user_reqtime", "log_median_runtime_user_procs",
    "log_last_runtime_user", "log_last2_runtime_user", "log_median_runtime_user",
)
LAG_SHARE_SLICE = slice(8, 20)  # the 9 lag and 3 share columns of FEATURE_NAMES

_EPOCH = _dt.datetime(1970, 1, 1)


HEADER_OFFSET = "header-offset"


def parse_zone_option(value):
    """A ``-o timezone=`` value: a tz database name (``Europe/Stockholm``, with DST), a fixed
    offset in seconds east of UTC (the SWF header's unit) or ``header-offset`` (the header's
    numeric ``TimeZone``, whatever its ``TimeZoneString``: the same calendar shifted by the
    daylight-saving hour, one campaign config for every trace); None = the workload's own
    zone. A bad value raises ValidationError naming the forms."""
    from ..config.validate import ValidationError
    from ..workloads.timezone import resolve_time_zone

    if value is None or value == "":
        return None
    if value == HEADER_OFFSET:
        return value

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            if resolve_time_zone(text, None).source == "TimeZoneString":
                return text
            raise ValidationError(f"unknown time zone {text!r}: give a tz database name such as "
                             "'Europe/Stockholm', an offset in seconds east of UTC (e.g. 3600) or "
                             f"{HEADER_OFFSET!r}") from None
    if resolve_time_zone(None, seconds).source != "TimeZone" and seconds != 0:
        raise ValidationError(f"time zone offset {value!r} out of range: seconds east of UTC, "
                         "strictly between -86400 and 86400")
    return float(seconds)


class CalendarClock:
    """Simulated time -> local calendar time of the trace.

    ``utc = unix_start_time + subtime_offset + t``, read on the trace's local clock:
    ``timezone`` is a tz database name (``"Europe/Paris"``: with daylight saving time,
    through ``zoneinfo``) or a fixed offset east of UTC in seconds (the SWF header's
    numeric ``TimeZone``). ``from_swf`` prefers the header's ``TimeZoneString``.
    """

    def __init__(self, unix_start_time: float = 0.0, subtime_offset: float = 0.0, timezone=0.0,
                 source: str = "default", header_offset: float | None = None):
        from ..workloads.timezone import resolve_time_zone

        self.unix_start_time = unix_start_time
        self.subtime_offset = subtime_offset
        self.header_offset = header_offset  # the SWF header's numeric TimeZone, when known
        self.utc_base = float(unix_start_time or 0) + float(subtime_offset or 0)
        if isinstance(timezone, str):
            choice = resolve_time_zone(timezone, None)
            if choice.source != "TimeZoneString":
                raise ValueError(f"unknown time zone {timezone!r} (a tz database name such as "
                                 "'Europe/Paris', or an offset in seconds)")
        else:
            choice = resolve_time_zone(None, timezone or 0)
        self.zone = choice
        self.timezone = choice.label
        self.source = source
        offset = choice.fixed_offset
        self._fixed = offset
        self.base = self.utc_base + (offset or 0.0)

    @classmethod
    def from_swf(cls, swf: dict, source: str = "workload") -> "CalendarClock":
        """From a converted workload's ``swf`` object: the named zone when known, else the offset."""
        from ..workloads.timezone import resolve_time_zone

        choice = resolve_time_zone(swf.get("TimeZoneString"), swf.get("TimeZone"))
        zone = choice.label if choice.source == "TimeZoneString" else (choice.fixed_offset or 0.0)
        header = swf.get("TimeZone")
        return cls(swf.get("UnixStartTime") or 0, swf.get("subtime_offset") or 0, zone, source=source,
                   header_offset=float(header) if isinstance(header, (int, float)) else None)

    @classmethod
    def resolve(cls, workloads: dict | None, options: dict) -> "CalendarClock":
        """From the plugin options' ``unix_start_time``, else the SIMULATION_BEGINS workload
        files, else UTC epoch 0. A ``timezone`` option (a tz name or seconds east of UTC)
        overrides the zone whichever the source, so a trace's zone can be corrected without
        restating its start time."""
        zone = options.get("timezone")
        clock = cls._resolve_start(workloads, options)
        if zone is None or zone == "":
            return clock
        zone = parse_zone_option(zone)
        if zone == HEADER_OFFSET:
            if clock.header_offset is None:
                from ..config.validate import ValidationError

                raise ValidationError(f"-o timezone={HEADER_OFFSET}: the workload's swf header has no numeric "
                                      "TimeZone")
            zone = clock.header_offset
        return cls(clock.unix_start_time, clock.subtime_offset, zone, source=f"{clock.source}, timezone option",
                   header_offset=clock.header_offset)

    @classmethod
    def _resolve_start(cls, workloads: dict | None, options: dict) -> "CalendarClock":
        if options.get("unix_start_time") is not None:
            return cls(options["unix_start_time"], options.get("subtime_offset", 0), 0, source="options")
        for path in (workloads or {}).values():
            p = Path(str(path))
            if not p.is_file():
                continue
            try:
                from ..workloads import load_workload

                swf = load_workload(p).get("swf")
            except Exception as exc:  # noqa: BLE001 - any unreadable file means "no clock here"
                warnings.warn(f"cannot read the calendar of {p}: {exc}", stacklevel=3)
                continue
            if isinstance(swf, dict) and swf.get("UnixStartTime") is not None:
                return cls.from_swf(swf, source=str(p))
        if options.get("timezone") in (None, ""):
            warnings.warn("no trace calendar (workload 'swf' object or -o unix_start_time=...): temporal "
                          "features use UTC from epoch 0", stacklevel=3)
        return cls(source="epoch")

    def local(self, t: float) -> float:
        """Local wall-clock seconds since the epoch (UTC + the zone's offset at that instant)."""
        if self._fixed is not None:
            return self.base + t
        utc = self.utc_base + t
        offset = _dt.datetime.fromtimestamp(utc, self.zone.tzinfo).utcoffset()
        return utc + offset.total_seconds()

    def temporal(self, t: float) -> tuple:
        """(hour, day of week 0=Monday, day of month, month, ISO week, quarter) and the day index."""
        local = self.local(t)
        d = _EPOCH + _dt.timedelta(seconds=local)
        week = d.isocalendar()[1]
        return (d.hour, d.weekday(), d.day, d.month, week, (d.month - 1) // 3 + 1), int(local // 86400)


class _Category:
    __slots__ = ("last", "sorted", "index")

    def __init__(self, index: int = 0):
        self.last = deque(maxlen=3)
        self.sorted = SortedList()
        self.index = index


def _log_runtime(runtime) -> float:
    return float(np.log10(max(runtime, 1.0)))


class FeatureTable:
    """Incremental category histories; ``features(job, divider)`` is O(log n).

    ``runtimes``: also keep a per-user category (every job of the user) and append
    ``RUNTIME_FEATURE_NAMES`` to each feature vector. ``track``: ``against`` may recompute
    past rows' lags and shares. Every added runtime is kept in order with its category (the
    table is their replay): a snapshot writes each addition once, and loading replays them.
    """

    def __init__(self, clock: CalendarClock, runtimes: bool = False, track: bool = False):
        self.clock = clock
        self.cats: dict = {}
        self.runtimes = runtimes
        self.track = track
        self._keys = AppendOnlyList()  # the categories' keys, by index
        self._added_cat = AppendOnlyList()  # category index of every added runtime, in order
        self._added_runtime = AppendOnlyList()
        self._grouped = None  # ``against``'s inputs as of its last call: see _by_category

    def __getstate__(self) -> dict:
        """Pickled as its additions (snapshots of a run write each once), not its ~15,000 categories
        (nor ``against``'s arrays, rebuilt from the additions)."""
        state = dict(self.__dict__)
        del state["cats"]
        del state["_grouped"]
        return state

    def __setstate__(self, state: dict) -> None:
        """The categories rebuilt from the additions: each one's runtimes in the order added."""
        self.__dict__.update(state)
        self._grouped = None
        self.cats = {key: _Category(index) for index, key in enumerate(self._keys)}
        cat_of = np.asarray(self._added_cat, dtype=np.int64)
        order = np.argsort(cat_of, kind="stable")
        ends = np.cumsum(np.bincount(cat_of, minlength=len(self._keys))).tolist()
        runtimes = [self._added_runtime[i] for i in order.tolist()]
        start = 0
        for cat, end in zip(self.cats.values(), ends):
            added = runtimes[start:end]
            cat.last.extend(added[-3:])
            cat.sorted.update(added)
            start = end

    def keys(self, job, day: int) -> tuple:
        user = job.data.get("user", -1)
        keys = (("p", user, job.walltime), ("q", user, job.res), ("d", user, day))
        return keys + (("u", user),) if self.runtimes else keys

    def features(self, job, divider) -> tuple[list, tuple]:
        temporal, day = self.clock.temporal(job.subtime)
        keys = self.keys(job, day)
        lags, shares = [], []
        for key in keys[:3]:
            cat = self.cats.get(key)
            if cat is None or divider is None:
                lags += (-1, -1, -1)
                shares.append(-1.0)
                continue
            last = list(cat.last)
            for i in (1, 2, 3):
                lags.append((1 if last[-i] < divider else 0) if len(last) >= i else -1)
            n = len(cat.sorted)
            shares.append(cat.sorted.bisect_left(divider) / n if n else -1.0)
        x = [job.walltime, job.res, *temporal, *lags, *shares]
        if self.runtimes:
            x += self._runtime_features(keys)
        return x, keys

    def _runtime_features(self, keys) -> list:
        """RUNTIME_FEATURE_NAMES: log10 runtimes (at least 1 s) of the categories' last jobs
        and medians, -1 where a category has no completed job."""
        cats = [self.cats.get(k) for k in keys]

        def last(cat, i=1):
            return _log_runtime(cat.last[-i]) if cat is not None and len(cat.last) >= i else -1.0

        def median(cat):
            return _log_runtime(cat.sorted[len(cat.sorted) // 2]) if cat is not None and cat.sorted else -1.0

        p, q, d, u = cats
        return [last(p), last(q), last(d), median(p), median(q), last(u), last(u, 2), median(u)]

    def positions(self, keys) -> tuple:
        """(category index, completed jobs) of the Table-4 categories of ``keys`` now (-1, 0 when
        a category is new): what :meth:`against` needs to recompute this row's lags and shares."""
        out = []
        for key in keys[:3]:
            cat = self.cats.get(key)
            out += (-1, 0) if cat is None else (cat.index, len(cat.sorted))
        return tuple(out)

    def against(self, positions, divider: float) -> np.ndarray:
        """The 9 lag and 3 share features of rows with these :meth:`positions`, recomputed
        against ``divider`` (needs ``track``); the same values ``features`` would have given
        at the row's submission had ``divider`` been in force."""
        pos = np.asarray(positions, dtype=np.int64).reshape(-1, 2)  # (category, jobs completed) x 3 per row
        rows = len(pos) // 3
        sorted_cat, flat = self._by_category()
        start = np.zeros(len(self.cats) + 1, dtype=np.int64)
        np.cumsum(np.bincount(sorted_cat, minlength=len(self.cats)), out=start[1:])
        # a category appears with its first completion: a row's unknown category (-1) has n = 0
        n = pos[:, 1]
        base = start[np.maximum(pos[:, 0], 0)]
        end = base + n  # one past the category's last runtime the row saw
        is_small = flat < divider
        below = np.concatenate(([0], np.cumsum(is_small)))
        small = np.concatenate((np.zeros(3), is_small))  # small[3 + k]: the k-th runtime (3 ahead: see below)
        out = np.empty((rows, 12))
        for i in (1, 2, 3):  # where n < i, end - i is another category's runtime or a pad: masked
            out[:, i - 1:9:3] = np.where(n >= i, small[end + (3 - i)], -1.0).reshape(rows, 3)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[:, 9:] = np.where(n > 0, (below[end] - below[base]) / np.maximum(n, 1), -1.0).reshape(rows, 3)
        return out

    def _by_category(self) -> tuple[np.ndarray, np.ndarray]:
        """The categories of the additions and their runtimes, grouped by category (each one's in
        the order added): ``against``'s inputs. Extended from the previous call's instead of
        rebuilt from the lists (the additions only grow: the grouped prefix plus the new ones is
        one stable merge, not a sort of the whole history), at each retraining."""
        m = len(self._added_cat)
        k, sorted_cat, flat = self._grouped or (0, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        if k != m:
            new_cat = np.asarray(self._added_cat[k:], dtype=np.int64)
            new_runtime = np.asarray(self._added_runtime[k:], dtype=np.float64)
            cats = np.concatenate([sorted_cat, new_cat])
            merged = np.argsort(cats, kind="stable")  # stable: the order added within a category
            sorted_cat, flat = cats[merged], np.concatenate([flat, new_runtime])[merged]
            self._grouped = (m, sorted_cat, flat)
        return sorted_cat, flat

    def add(self, keys: tuple, runtime: float) -> None:
        """Record a completed job (``keys`` from its ``features`` call) with its actual runtime."""
        for key in keys:
            cat = self.cats.get(key)
            if cat is None:
                cat = self.cats[key] = _Category(len(self.cats))
                self._keys.append(key)
            cat.last.append(runtime)
            cat.sorted.add(runtime)
            self._added_cat.append(cat.index)
            self._added_runtime.append(runtime)
