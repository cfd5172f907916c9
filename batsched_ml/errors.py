"""The errors a user can cause (bad input, bad option, a broken peer): the CLI
prints them as one clear line and exits 2 instead of showing a traceback."""

from __future__ import annotations

from .core.machine import MachineError
from .core.scheduler import SchedulingError
from .plugins import PluginError
from .simulator.engine import SimulationError
from .workloads import PlatformError, SwfFormatError, WorkloadError


class PlotError(RuntimeError):
    """Plotting is not possible here (matplotlib missing). Defined here, not with the plots,
    so that reading this list does not import numpy (``serve`` starts without it)."""


def _protocol_error():
    try:
        from .protocol.codec import ProtocolError
    except ImportError:  # pragma: no cover - codec always present in a full install
        return ()
    return (ProtocolError,)


USER_ERRORS = (WorkloadError, SwfFormatError, PlatformError, PluginError, SimulationError, SchedulingError,
               MachineError, PlotError, OSError, ValueError, *_protocol_error())
