"""Probabilistic backfilling through ``serve``: the same schedule as the embedded run (issue 10).

Usage::

    python benchmarks/probabilistic_serve.py [--golden DIR] [--distribution hmm user forest]
        [--max-jobs N] [-o KEY=VALUE ...]

For each distribution: ``batsched-ml simulate`` (embedded) on KTH-5k, then
``batsched-ml serve --scheduler probabilistic --distribution D`` as its own process driven by
``batsched-ml simulate --connect`` (the embedded simulator acting as Batsim 4.2.1, since no
Batsim binary is needed); the two jobs CSVs must be byte-identical. Prints the wall time of
each and exits 1 when a pair differs. ``--max-jobs`` cuts the workload (a quick check).
"""

from __future__ import annotations

import argparse
import filecmp
import gzip
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import add_data_arguments, golden_path, reports_missing_data  # noqa: E402


def _endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def _cli(*args) -> list:
    return [sys.executable, "-m", "batsched_ml.cli", *map(str, args)]


def check(platform: Path, workload: Path, flags: list, tmp: Path) -> dict:
    t0 = time.perf_counter()
    subprocess.run(_cli("simulate", "-p", platform, "-w", workload, "-e", tmp / "inproc", "--quiet", *flags),
                   check=True, cwd=ROOT)
    inproc = time.perf_counter() - t0
    endpoint = _endpoint()
    serve = subprocess.Popen(_cli("serve", "-s", endpoint, "--timeout", "120", *flags), cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.perf_counter()
    connect = subprocess.run(_cli("simulate", "-p", platform, "-w", workload, "-e", tmp / "remote", "--quiet",
                                  "--connect", endpoint, "--timeout", "120"), cwd=ROOT, stdout=subprocess.DEVNULL)
    _, err = serve.communicate(timeout=120)
    remote = time.perf_counter() - t0
    if connect.returncode or serve.returncode:
        raise SystemExit(f"serve/connect failed ({connect.returncode}, {serve.returncode}): {err.strip()}")
    same = filecmp.cmp(tmp / "inproc_jobs.csv", tmp / "remote_jobs.csv", shallow=False)
    jobs = sum(1 for _ in open(tmp / "inproc_jobs.csv")) - 1
    return {"identical": same, "jobs": jobs, "inproc_s": inproc, "serve_s": remote}


@reports_missing_data
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_arguments(p, traces=False, golden=True)
    p.add_argument("--distribution", nargs="+", default=["hmm", "user", "forest"])
    p.add_argument("--max-jobs", type=int, default=None)
    p.add_argument("-o", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    platform = golden_path("platform-100.xml", args.golden)
    workload = golden_path("KTH-5k.json.gz", args.golden)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.max_jobs:
            with gzip.open(workload, "rt") as f:
                data = json.load(f)
            data["jobs"] = data["jobs"][:args.max_jobs]
            workload = tmp / "cut.json"
            workload.write_text(json.dumps(data))
        for dist in args.distribution:
            flags = ["--scheduler", "probabilistic", "--distribution", dist]
            for option in args.o:
                flags += ["-o", option]
            r = check(platform, workload, flags, tmp)
            failed += not r["identical"]
            print(f"{dist:8s} jobs {r['jobs']}  embedded {r['inproc_s']:6.1f} s  serve + connect "
                  f"{r['serve_s']:6.1f} s  jobs CSV {'identical' if r['identical'] else 'DIFFERENT'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
