"""The errors a user can cause (bad input, bad option, a broken peer): the CLI
prints them as one clear line and exits 2 instead of showing a traceback."""

from __future__ import annotations

from .config.plugins import PluginError
from .core.machine import MachineError
from .core.scheduler import SchedulingError
from .protocol.codec import ProtocolError
from .simulator.engine import SimulationError
from .workloads import PlatformError, SwfFormatError, WorkloadError


class PlotError(RuntimeError):
    """Plotting is not possible here (matplotlib missing). Defined here, not with the plots,
    so that reading this list does not import numpy (``serve`` starts without it)."""


USER_ERRORS = (WorkloadError, SwfFormatError, PlatformError, PluginError, SimulationError, SchedulingError,
               MachineError, PlotError, OSError, ValueError, ProtocolError)
