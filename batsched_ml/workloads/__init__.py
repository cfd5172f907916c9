"""Workloads: SWF traces -> cleaned Batsim JSON workloads, and SimGrid platforms.

``read_swf`` parses a trace, ``swf_to_workload`` applies the golden cleaning
rules, ``load_workload``/``write_workload`` handle Batsim JSON, and
``read_platform``/``write_platform`` the SimGrid XML (host names in Batsim's
lexicographic resource order). ``convert_swf`` chains them for the CLI.
"""

from .convert import ConversionReport, convert_swf, profile_name, swf_to_workload
from .loader import WorkloadError, load_workload, validate_workload, write_workload
from .platform import Platform, PlatformError, parse_radical, read_platform, write_platform
from .swf import SWF_FIELDS, SwfFormatError, SwfTrace, read_swf

__all__ = [
    "SWF_FIELDS",
    "ConversionReport",
    "Platform",
    "PlatformError",
    "SwfFormatError",
    "SwfTrace",
    "WorkloadError",
    "convert_swf",
    "load_workload",
    "parse_radical",
    "profile_name",
    "read_platform",
    "read_swf",
    "swf_to_workload",
    "validate_workload",
    "write_platform",
    "write_workload",
]
