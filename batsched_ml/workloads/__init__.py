"""Workloads: SWF traces -> cleaned Batsim JSON workloads, and SimGrid platforms.

``read_swf`` parses a trace, ``swf_to_workload`` applies the golden cleaning
rules, ``load_workload``/``write_workload`` handle Batsim JSON, and
``read_platform``/``write_platform`` the SimGrid XML (host names in Batsim's
lexicographic resource order). ``convert_swf`` chains them for the CLI;
``to_v5``/``as_v5`` write and read Batsim 5 workloads (``DelayProfile``). ``sample:NAME``
names a bundled sample wherever a file is read (``samples``).
"""

from importlib import import_module

# Each name is imported from its module on first use: the SWF conversion needs numpy, which
# loading a Batsim workload or a platform (``serve``, ``simulate``) does not.
_MODULE_OF = {
    "DELAY_PROFILE": "batsim5", "as_v5": "batsim5", "is_v4_workload": "batsim5", "to_v5": "batsim5",
    "typed_job": "batsim5", "typed_profiles": "batsim5",
    "ConversionReport": "convert", "convert_swf": "convert", "profile_name": "convert",
    "swf_to_workload": "convert",
    "WorkloadError": "loader", "load_workload": "loader", "validate_workload": "loader",
    "write_workload": "loader",
    "Platform": "platform", "PlatformError": "platform", "parse_radical": "platform",
    "read_platform": "platform", "write_platform": "platform",
    "SWF_FIELDS": "swf", "SwfFormatError": "swf", "SwfTrace": "swf", "read_swf": "swf",
    "SampleError": "samples", "sample_path": "samples",
}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_MODULE_OF[name]}", __name__), name)
    globals()[name] = value
    return value
