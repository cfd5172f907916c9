"""Where the benchmarks' inputs come from, and a one-line message when one is missing.

Every input is public or can be regenerated: the SWF traces come from the Parallel Workloads
Archive (PWA); the Batsim workloads and platform of ``../shared/golden`` are what
``batsched-ml convert`` makes of the KTH-SP2 trace (same jobs, same profiles, same XML); the
golden Batsim outputs come from Batsim 4.2.1 + batsched 1.4.0 (commands in the README,
"Benchmarks and their data"). Paths: ``--traces-dir DIR`` / ``--golden DIR`` on every benchmark,
or ``BATSCHED_ML_SHARED`` (a directory holding ``traces/`` and ``golden/``), else ``../shared``
next to the checkout.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

SHARED = Path(os.environ.get("BATSCHED_ML_SHARED", Path(__file__).resolve().parents[2] / "shared"))
PWA = "https://www.cs.huji.ac.il/labs/parallel/workload/"
# trace name -> (PWA directory, file name)
PWA_FILES = {
    "KTH": ("l_kth_sp2", "KTH-SP2-1996-2.1-cln.swf.gz"),
    "CTC": ("l_ctc_sp2", "CTC-SP2-1996-3.1-cln.swf.gz"),
    "SDSC-SP2": ("l_sdsc_sp2", "SDSC-SP2-1998-4.2-cln.swf.gz"),
    "SDSC-BLUE": ("l_sdsc_blue", "SDSC-BLUE-2000-4.2-cln.swf.gz"),
}
KTH_SWF = PWA_FILES["KTH"][1]
# golden file -> the command that makes it from the PWA's KTH-SP2 trace
GOLDEN_FROM_KTH = {
    "KTH-SP2-1996-2.1-cln.json.gz": f"batsched-ml convert {KTH_SWF} -w KTH-SP2-1996-2.1-cln.json.gz "
                                    "-p platform-100.xml",
    "KTH-5k.json.gz": f"batsched-ml convert {KTH_SWF} --max-jobs 5000 -w KTH-5k.json.gz -p platform-100.xml",
    "platform-100.xml": f"batsched-ml convert {KTH_SWF} -w KTH-SP2-1996-2.1-cln.json.gz -p platform-100.xml",
}


class MissingData(Exception):
    """An input file is absent: the message says which, and where to get it."""


def add_data_arguments(parser, traces: bool = True, golden: bool = False) -> None:
    """``--traces-dir`` and ``--golden``."""
    if traces:
        parser.add_argument("--traces-dir", type=Path, default=SHARED / "traces",
                            metavar="DIR", help="directory of the PWA .swf.gz files (default: %(default)s)")
    if golden:
        parser.add_argument("--golden", type=Path, default=SHARED / "golden", metavar="DIR",
                            help="directory of the golden workloads and platform (default: %(default)s)")


def pwa_url(file: str) -> str:
    """The Parallel Workloads Archive address of a trace file (the archive's index if unknown)."""
    for folder, pwa_file in PWA_FILES.values():
        if pwa_file == file:
            return f"{PWA}{folder}/{file}"
    return PWA


def campaign_file(campaign: Path, traces_dir: Path | None = None) -> Path:
    """The campaign file to load, its SWF traces checked first (a missing one is named with its
    PWA address). The traces directory (``traces_dir``, default ``SHARED/traces``) goes into the
    campaigns' own variable, ``BATSCHED_ML_TRACES``, for every later load (worker processes too)."""
    from batsched_ml.campaign.spec import TRACES_ENV, load_campaign

    campaign = Path(campaign)
    traces_dir = Path(traces_dir or SHARED / "traces")
    if traces_dir.is_dir():
        os.environ[TRACES_ENV] = str(traces_dir)
    else:
        os.environ.pop(TRACES_ENV, None)
    traces = load_campaign(campaign).traces.values()
    missing = [t.path.name for t in traces if t.missing]
    if missing:
        raise MissingData(f"needs {missing[0]} from the Parallel Workloads Archive ({pwa_url(missing[0])}) in "
                          f"{traces_dir} (or pass --traces-dir DIR); {campaign.name} reads "
                          f"{', '.join(t.path.name for t in traces if t.source == 'swf')}")
    return campaign


def trace_path(name_or_path, traces_dir: Path | None = None) -> Path:
    """A trace by short name (``KTH``, ``CTC``, ``SDSC-SP2``, ``SDSC-BLUE``) in ``traces_dir``, or a path."""
    if name_or_path in PWA_FILES:
        _, file = PWA_FILES[name_or_path]
        path = Path(traces_dir or SHARED / "traces") / file
        if not path.is_file():
            raise MissingData(f"needs {file} from the Parallel Workloads Archive ({pwa_url(file)}) "
                              f"in {path.parent} (or pass --traces-dir DIR)")
        return path
    path = Path(name_or_path)
    if not path.is_file():
        raise MissingData(f"no trace {name_or_path!r}: give a file path or one of {', '.join(PWA_FILES)} "
                          f"(Parallel Workloads Archive file names: "
                          f"{', '.join(f for _, f in PWA_FILES.values())})")
    return path


def trace_label(name_or_path) -> str:
    """``KTH`` for ``KTH`` or for a path to the KTH-SP2 file; the file's stem otherwise."""
    if name_or_path in PWA_FILES:
        return name_or_path
    file = Path(name_or_path).name
    for name, (_, pwa_file) in PWA_FILES.items():
        if file == pwa_file:
            return name
    return file.split(".swf")[0]


def golden_path(file: str, golden_dir: Path | None = None) -> Path:
    path = Path(golden_dir or SHARED / "golden") / file
    if not path.is_file():
        how = GOLDEN_FROM_KTH.get(file)
        hint = f"make it with `{how}` ({KTH_SWF} from {PWA}{PWA_FILES['KTH'][0]}/)" if how else \
            "see the README, 'Benchmarks and their data'"
        raise MissingData(f"needs {path} (or pass --golden DIR): {hint}")
    return path


def reports_missing_data(main):
    """Run ``main``; a :class:`MissingData` (or a user error from batsched-ml) becomes one line
    on stderr and exit status 2, not a traceback."""
    from batsched_ml.errors import USER_ERRORS

    @functools.wraps(main)
    def wrapper(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        except (MissingData, *USER_ERRORS) as exc:
            print(f"{Path(sys.argv[0]).name}: {exc}", file=sys.stderr)
            return 2

    return wrapper
