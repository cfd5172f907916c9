"""Trace windows: disjoint sequences of D days cut from one workload, each simulated alone.

Papers evaluate schedulers on several periods of a trace rather than on the whole of it
(Carastan-Santos & de Camargo: ten disjoint 15-day sequences per trace), which gives a
spread of results (box plots) and keeps each simulation short.
"""

from __future__ import annotations

from dataclasses import dataclass

DAY = 86400.0
SELECTIONS = ("spread", "first")


@dataclass(frozen=True)
class WindowSpec:
    """``days`` per window, ``count`` windows (None: all whole windows), picked evenly over the
    trace (``select="spread"``) or the first ones (``"first"``), from ``start_days`` on."""

    days: float
    count: int | None = None
    select: str = "spread"
    start_days: float = 0.0

    def __post_init__(self):
        if not self.days > 0:
            raise ValueError(f"windows: days must be > 0, got {self.days!r}")
        if self.count is not None and (isinstance(self.count, bool) or not isinstance(self.count, int)
                                       or self.count < 1):
            raise ValueError(f"windows: count must be an integer >= 1, got {self.count!r}")
        if self.select not in SELECTIONS:
            raise ValueError(f"windows: select must be one of {', '.join(SELECTIONS)}, got {self.select!r}")
        if not self.start_days >= 0:
            raise ValueError(f"windows: start_days must be >= 0, got {self.start_days!r}")


def window_starts(first_submission: float, last_submission: float, spec: WindowSpec) -> list[float]:
    """Start times (trace seconds) of the chosen windows; a window must end by the last submission."""
    length = spec.days * DAY
    origin = first_submission + spec.start_days * DAY
    whole = int((last_submission - origin) // length) if last_submission >= origin else 0
    starts = [origin + k * length for k in range(whole)]
    if spec.count is None or spec.count >= len(starts):
        if spec.count is not None and spec.count > len(starts):
            raise ValueError(f"windows: the trace holds {len(starts)} whole windows of {spec.days:g} days, "
                             f"{spec.count} requested")
        return starts
    if spec.select == "first":
        return starts[: spec.count]
    if spec.count == 1:
        return [starts[0]]
    step = (len(starts) - 1) / (spec.count - 1)  # first and last included, evenly in between
    return [starts[round(i * step)] for i in range(spec.count)]


def cut_window(workload: dict, start: float, days: float) -> dict:
    """The jobs of ``workload`` submitted in ``[start, start + days)``, submission times shifted
    so the window starts at 0; profiles reduced to those used; the SWF calendar offset moved so
    that calendar features (time of day, day of week) still see the real dates."""
    end = start + days * DAY
    jobs = [dict(j, subtime=j["subtime"] - start) for j in workload["jobs"] if start <= j["subtime"] < end]
    used = {j["profile"] for j in jobs}
    out = {k: v for k, v in workload.items() if k not in ("jobs", "profiles")}
    out["jobs"] = jobs
    out["profiles"] = {name: p for name, p in workload["profiles"].items() if name in used}
    if isinstance(workload.get("swf"), dict):
        out["swf"] = dict(workload["swf"], subtime_offset=float(workload["swf"].get("subtime_offset") or 0) + start)
    out["window"] = {"start": start, "days": days}
    return out


def split_windows(workload: dict, spec: WindowSpec) -> list[tuple[float, dict]]:
    """``[(start, window workload), ...]`` for the windows ``spec`` chooses, in time order."""
    subtimes = [j["subtime"] for j in workload["jobs"]]
    if not subtimes:
        raise ValueError("windows: the workload has no jobs")
    starts = window_starts(min(subtimes), max(subtimes), spec)
    if not starts:
        raise ValueError(f"windows: the trace is shorter than one window of {spec.days:g} days")
    return [(s, cut_window(workload, s, spec.days)) for s in starts]
