"""Checks of numeric settings (``batsched_ml.config``'s second step), shared by the command line,
the Python API and the components, which check their own parameters with them.

A value out of range (a negative starvation threshold, a tau of -1, zero trees)
would not crash: it would silently change the results. Each check returns the
value, converted, or raises a :class:`ValidationError` (a ``ValueError``) whose
message is one line naming the setting, what it must be and what it got; the
CLI prints it as ``batsched-ml: error: ...`` and exits 2.

For argparse, :func:`arg` turns a check into a ``type=`` callable::

    p.add_argument("--tau", type=arg(positive, "--tau"))
"""

from __future__ import annotations

import argparse
import math
import numbers

# numpy / scikit-learn seeds: 0 <= seed < 2**32
SEED_LIMIT = 2**32


class ValidationError(ValueError):
    """A setting out of its range (one-line message)."""


def check_number(value, name: str, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, integer: bool = False,
                 allow_none: bool = False, meaning: str = ""):
    """``value`` as an int (``integer``) or a finite float within ``[low, high]``
    (``low_open`` / ``high_open``: bounds excluded); ``meaning`` ends the message
    with what the setting does, so the user sees why the bound exists."""
    if value is None and allow_none:
        return None
    ok = isinstance(value, numbers.Integral) if integer else isinstance(value, numbers.Real)
    if isinstance(value, bool) or not ok:
        ok = False
    else:
        number = int(value) if integer else float(value)
        ok = math.isfinite(number)  # NaN and infinities too
        if ok and low is not None:
            ok = number > low if low_open else number >= low
        if ok and high is not None:
            ok = number < high if high_open else number <= high
    if not ok:
        raise ValidationError(f"{name} must be {_describe(low, high, low_open, high_open, integer)}"
                              f"{f' ({meaning})' if meaning else ''}, "
                              f"got {value!r}")
    return number


def _describe(low, high, low_open, high_open, integer) -> str:
    kind = "an integer" if integer else "a number"
    lo = None if low is None else f"{'>' if low_open else '>='} {_plain(low)}"
    hi = None if high is None else f"{'<' if high_open else '<='} {_plain(high)}"
    if lo and hi:
        return f"{kind} {lo} and {hi}"
    return f"{kind} {lo or hi}" if (lo or hi) else f"a finite {kind.split()[-1]}"


def _plain(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


# ------------------------------------------------------------ common shapes
def positive(value, name: str, meaning: str = "", allow_none: bool = False) -> float:
    return check_number(value, name, low=0, low_open=True, meaning=meaning, allow_none=allow_none)


def non_negative(value, name: str, meaning: str = "", allow_none: bool = False) -> float:
    return check_number(value, name, low=0, meaning=meaning, allow_none=allow_none)


def finite(value, name: str, meaning: str = "", allow_none: bool = False) -> float:
    return check_number(value, name, meaning=meaning, allow_none=allow_none)


def positive_int(value, name: str, meaning: str = "", allow_none: bool = False) -> int:
    return check_number(value, name, low=1, integer=True, meaning=meaning, allow_none=allow_none)


def non_negative_int(value, name: str, meaning: str = "", allow_none: bool = False) -> int:
    return check_number(value, name, low=0, integer=True, meaning=meaning, allow_none=allow_none)


def open_fraction(value, name: str, meaning: str = "") -> float:
    """Strictly between 0 and 1."""
    return check_number(value, name, low=0, high=1, low_open=True, high_open=True, meaning=meaning)


def seed(value, name: str = "seed") -> int:
    return check_number(value, name, low=0, high=SEED_LIMIT - 1, integer=True,
                        meaning="seed of every random component")


# The largest machine batsched-ml handles (2**22 cores): ``serve`` refuses a larger one in Batsim's
# SIMULATION_BEGINS (``protocol.codec.MAX_CORE_ID``), and every other command agrees with it.
MAX_CORES = 1 << 22


def max_cores() -> int:
    """The largest machine batsched-ml handles (:data:`MAX_CORES`)."""
    return MAX_CORES


def machine_size(value, name: str = "cores") -> int:
    """A machine's core count: 1 to :func:`max_cores`. A larger one is refused before anything
    is built (a platform of 10^8 hosts would take gigabytes before the first job)."""
    return check_number(value, name, low=1, high=max_cores(), integer=True,
                        meaning="the most cores batsched-ml handles, as serve")


def starvation_threshold(value, name: str = "starvation_threshold") -> float | None:
    return non_negative(value, name, "seconds a job may wait before it moves to the head of the queue",
                        allow_none=True)


def tau(value, name: str = "tau") -> float:
    return positive(value, name, "bounded-slowdown threshold in seconds")


def timeout(value, name: str = "timeout") -> float | None:
    return positive(value, name, "seconds; leave it out to wait forever", allow_none=True)


UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def duration(text, name: str, meaning: str = "", zero: bool = False) -> float:
    """A duration in seconds from ``90``, ``90s``, ``10min``, ``12h``, ``7d`` or ``2w`` (> 0, or >= 0
    with ``zero``)."""
    raw = str(text).strip()
    number, unit = raw, "s"
    for suffix in sorted(UNITS, key=len, reverse=True):
        if raw.endswith(suffix):
            number, unit = raw[:-len(suffix)], suffix
            break
    try:
        value = float(number)
    except ValueError:
        raise ValidationError(f"{name} expects a duration such as 3600, 90s, 10min, 12h, 7d or 2w, got "
                              f"{text!r}") from None
    return (non_negative if zero else positive)(value * UNITS[unit], name, meaning)


def duration_arg(name: str, meaning: str = "", zero: bool = False):
    """An argparse ``type=`` callable for ``duration``."""

    def parse(text: str) -> float:
        try:
            return duration(text, name, meaning, zero)
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(str(exc).replace(f"{name} ", "", 1)) from None

    parse.__name__ = name
    return parse


# ------------------------------------------------------------------ argparse
def arg(check, name: str, *args, integer: bool = False):
    """An argparse ``type=`` callable: parse the string (int when ``integer``), then ``check`` it.

    The check's message becomes argparse's error, so the CLI exits 2 with one line."""

    def parse(text: str):
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expects {'an integer' if integer else 'a number'}, got {text!r}") from None
        try:
            return check(value, name, *args)
        except ValidationError as exc:
            message = str(exc).replace(f"{name} must be", "must be", 1).rsplit(", got ", 1)[0]
            raise argparse.ArgumentTypeError(f"{message}, got {text}") from None

    parse.__name__ = name  # argparse names the type in some messages
    return parse


# ------------------------------------------------------------------- paths
def output_prefix(prefix, name: str = "-e", separator: str = "_") -> str:
    """Check an output prefix and create its directory. Batsim 4.2.1 puts ``separator`` "_"
    between the prefix and each file (``DIR/NAME`` -> ``DIR/NAME_jobs.csv``); Batsim 5 puts
    nothing (``separator=""``), so there ``DIR/`` is a prefix too (``DIR/jobs.csv``).

    A file where a directory is needed gets a sentence, not ``[Errno 17] File exists``."""
    from pathlib import Path

    path = Path(prefix)
    example = f"DIR/NAME{separator}jobs.csv"
    is_directory = str(prefix).endswith(("/", "\\"))
    if is_directory and separator:
        raise ValidationError(f"{name} {prefix}: names a directory; {name} takes an output prefix DIR/NAME "
                              f"(outputs go to DIR/NAME_jobs.csv and DIR/NAME_schedule.csv), "
                              f"e.g. {name} {path / 'run'}")
    directory = path if is_directory else path.parent
    for parent in reversed([directory, *directory.parents]):
        if parent.exists() and not parent.is_dir():
            raise ValidationError(f"{name} {prefix}: {parent} is an existing file, not a directory; "
                                  f"{name} takes an output prefix DIR/NAME (outputs go to {example})")
    directory.mkdir(parents=True, exist_ok=True)
    return str(prefix)
