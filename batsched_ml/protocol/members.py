"""Reading the members of one event's ``data`` the way Batsim does: typed members, job ids, the
exact member set of a decision, allocation strings (parsed directly into a ``CoreSet``: procset
costs ~10 µs per allocation and is quadratic on fragmented sets). Job and profile descriptions
are :mod:`~batsched_ml.protocol.descriptions`'. Each
problem is an :class:`Invalid` saying what is wrong; ``decoding.decode`` adds where."""

from __future__ import annotations

import math

from ..config.validate import MAX_CORES
from .coreset import CoreSet
from .errors import quote as _q

__all__ = ["Invalid", "MAX_CORE_ID", "OutOfOrder", "alloc_member", "check_job_id", "dict_member", "exact_members",
           "is_number", "job_id_list", "job_id_member", "member", "parse_alloc", "str_member"]

# Largest core id accepted in an allocation string: a typo such as "0-99999999999"
# would otherwise build a gigantic bitmask. Every command shares this limit (``config.validate.MAX_CORES``).
MAX_CORE_ID = MAX_CORES - 1


class Invalid(Exception):
    """A problem inside one event's data; ``decode`` adds the context."""


class OutOfOrder(Invalid):
    """A well-formed event that Batsim never sends at this point (a second simulation start, the
    completion of a job that does not run...): reported as a ProtocolViolation."""


def is_number(value) -> bool:
    kind = type(value)
    return (kind is float and math.isfinite(value)) or kind is int


def member(data: dict, key: str):
    try:
        return data[key]
    except KeyError:
        raise Invalid(f"missing data member {_q(key)}") from None


def str_member(data: dict, key: str) -> str:
    value = member(data, key)
    if type(value) is not str:
        raise Invalid(f"data member {_q(key)} must be a string, got {_q(value)}")
    return value


def dict_member(data: dict, key: str) -> dict:
    value = member(data, key)
    if type(value) is not dict:
        raise Invalid(f"data member {_q(key)} must be an object, got {_q(value)}")
    return value


def check_job_id(value, key: str, element: bool = False) -> str:
    """``value`` if it is a job id ``workload!name``; the error text names ``key`` (built only then)."""
    if type(value) is str:
        workload, bang, name = value.partition("!")
        if workload and name and "!" not in name:
            return value
    what = f"an element of {key!r}" if element else f"data member {key!r}"
    if type(value) is not str:
        raise Invalid(f"{what} must be a string 'workload!name', got {_q(value)}")
    raise Invalid(
        f"{what} {_q(value)} is not a job id: it needs exactly one '!' between a workload "
        "name and a job name (e.g. 'w0!17')"
    )


def job_id_member(data: dict, key: str = "job_id") -> str:
    return check_job_id(member(data, key), key)


def job_id_list(data: dict, key: str = "job_ids") -> list:
    ids = member(data, key)
    if type(ids) is not list or not ids:
        raise Invalid(f"data member {_q(key)} must be a non-empty array of job ids, got {_q(ids)}")
    for job_id in ids:
        check_job_id(job_id, key, True)
    return ids


def exact_members(data: dict, expected: tuple[str, ...], etype: str) -> None:
    """Batsim aborts unless ``data`` has exactly these members (protocol.cpp MemberCount checks)."""
    if len(data) == len(expected) and all(key in data for key in expected):
        return
    wanted = " and ".join(repr(key) for key in expected)
    unexpected = [key for key in data if key not in expected]
    if unexpected:
        raise Invalid(
            f"data must have only {wanted}, but it also has {', '.join(map(repr, unexpected))} "
            f"(Batsim checks the member count of {etype} and aborts)"
        )
    missing = next(key for key in expected if key not in data)
    raise Invalid(f"missing data member {_q(missing)}")


def parse_alloc(text: str) -> CoreSet:
    """Parse Batsim's allocation text (``"0-3 5 7-9"``) into a CoreSet.

    Accepts what Batsim accepts: single-space separated ids ``N`` or closed ranges
    ``N-M`` (N <= M), in any order, overlaps merged. Raises ValueError with the
    offending token otherwise, and for an empty string.
    """
    if type(text) is not str:
        raise ValueError(f"an allocation must be a string like '0-3 5', got {_q(text)}")
    if not text:
        raise ValueError("the allocation is empty")
    mask = 0
    for token in text.split(" "):
        first, dash, last = token.partition("-")
        if not (first.isdigit() and first.isascii() and (not dash or (last.isdigit() and last.isascii()))):
            raise ValueError(
                f"malformed allocation {_q(text)}: token {_q(token)} is not 'N' or 'N-M' "
                "(non-negative integers separated by single spaces)"
            )
        lo = int(first)
        hi = int(last) if dash else lo
        if hi < lo:
            raise ValueError(f"malformed allocation {_q(text)}: range {_q(token)} is reversed")
        if hi > MAX_CORE_ID:
            raise ValueError(f"malformed allocation {_q(text)}: core id {hi} exceeds {MAX_CORE_ID}")
        mask |= ((1 << (hi - lo + 1)) - 1) << lo
    return CoreSet(mask)


def alloc_member(data: dict, key: str) -> CoreSet:
    try:
        return parse_alloc(member(data, key))
    except ValueError as error:
        raise Invalid(f"data member {_q(key)}: {error}") from None
