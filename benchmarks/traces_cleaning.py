"""What the conversion rules do to each Parallel Workloads Archive trace: jobs touched by each
cleaning rule, jobs without a requested time, and the time zone the calendar features use.

Usage: python benchmarks/traces_cleaning.py [TRACE.swf.gz ...] [--missing-walltime runtime|max|drop]

Needs the traces (e.g. ``../shared/traces/*.swf.gz``, from
https://www.cs.huji.ac.il/labs/parallel/workload/); with no argument it takes every
``*.swf.gz`` of ``../shared/traces``. Prints one Markdown table row per trace.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from batsched_ml.workloads import read_swf, swf_to_workload

COLUMNS = ("dropped_run_time<=0", "dropped_no_processors", "dropped_no_requested_time", "processors_capped",
           "walltime_filled", "run_time_capped_at_walltime")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="*")
    parser.add_argument("--missing-walltime", default="runtime", choices=("runtime", "max", "drop"))
    args = parser.parse_args()
    traces = args.traces or sorted(str(p) for p in (Path(__file__).resolve().parents[2] / "shared" / "traces")
                                   .glob("*.swf.gz"))
    if not traces:
        print("no trace given and none in ../shared/traces: pass SWF files (Parallel Workloads Archive)",
              file=sys.stderr)
        return 2
    print("| trace | read | kept | " + " | ".join(COLUMNS) + " | time zone |")
    print("|---|" + "---:|" * (2 + len(COLUMNS)) + "---|")
    for path in traces:
        workload, report = swf_to_workload(read_swf(path), missing_walltime=args.missing_walltime)
        cleaning = report.cleaning()
        zone = report.time_zone_note.replace("|", "/")
        cells = [f"{cleaning[c]:,}" for c in COLUMNS]
        print(f"| {report.source} | {report.read:,} | {report.kept:,} | " + " | ".join(cells) + f" | {zone} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
