"""Probabilistic EASY vs plain EASY on a full trace, in side-by-side rounds, before and after a change.

Usage::

    python benchmarks/bench_probabilistic_rounds.py [--before REF] [--rounds N] [--config prob-hmm]
        [--trace KTH-SP2] [--max-jobs N] [--traces-dir DIR]

Each round runs, one process at a time: plain EASY, ``--config`` at git ``REF`` (default: the
merge base with main; extracted with ``git archive`` to a temporary directory) and ``--config``
at this checkout. The configurations and traces are those of ``experiments/nissimov2008.toml``
(this checkout's, handed to both sides as ``runner.build_scheduler`` settings). Every run is a
fresh process (the one-time imports count, as in a real run) and reports the CPU time of
``runner.simulate``. On a shared
machine single timings vary a lot, so the ratios are taken within a round and their median is
printed; the jobs CSVs of the two ``--config`` runs must be byte-identical (a speed change must
not change the schedule). ``--before none`` only times EASY and this checkout.

Needs: the trace from the Parallel Workloads Archive (its file named in the campaign) in
../shared/traces or ``--traces-dir DIR``.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from benchdata import SHARED  # noqa: E402

CAMPAIGN = ROOT / "experiments" / "nissimov2008.toml"

# runs in a fresh interpreter: ``ROOT SETTINGS_JSON SWF NODES MAX_JOBS PREFIX`` -> JSON on stdout
CHILD = """
import json, sys, time
from pathlib import Path
root, settings, swf, nodes, max_jobs, prefix = sys.argv[1:]
sys.path[:0] = [root]
import batsched_ml
assert batsched_ml.__file__.startswith(root), batsched_ml.__file__
from batsched_ml import runner
from batsched_ml.workloads import read_swf, swf_to_workload
workload, _ = swf_to_workload(read_swf(Path(swf)), max_jobs=int(max_jobs) or None, nodes=int(nodes) or None)
scheduler = runner.build_scheduler(**json.loads(settings))
t0 = time.process_time()
runner.simulate(workload["nb_res"], workload, scheduler, prefix=prefix)
print(json.dumps({"cpu_s": time.process_time() - t0}))
"""


def campaign_settings(config: str, trace: str) -> tuple[dict, dict]:
    """``(runner.build_scheduler settings of the config, the trace's table)`` from the campaign file."""
    data = tomllib.loads(CAMPAIGN.read_text(encoding="utf-8"))
    configs, traces = data["configs"], data["traces"]
    if config not in configs or trace not in traces:
        raise SystemExit(f"bench_probabilistic_rounds: error: {CAMPAIGN.name} has configs {', '.join(configs)} "
                         f"and traces {', '.join(traces)}")
    settings = {k: v for k, v in configs[config].items() if k != "options"}
    settings.update(configs[config].get("options", {}))
    return settings, traces[trace]


def run(root: Path, config: str, args, out: Path) -> float:
    out.mkdir(parents=True, exist_ok=True)
    settings, trace = campaign_settings(config, args.trace)
    done = subprocess.run([sys.executable, "-c", CHILD, str(root), json.dumps(settings),
                           str(args.traces_dir / trace["swf"]), str(trace.get("nodes", 0)),
                           str(args.max_jobs or 0), str(out / f"{args.trace}.{config}")],
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.splitlines()[-1])["cpu_s"]


def checkout(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default=None, help="git ref of the code to compare with (default: merge base "
                                                   "with main); 'none': time EASY and this checkout only")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--config", default="prob-hmm")
    ap.add_argument("--trace", default="KTH-SP2", help="a trace of nissimov2008.toml")
    ap.add_argument("--max-jobs", type=int, default=None)
    ap.add_argument("--traces-dir", type=Path, default=SHARED / "traces")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        before = None
        if args.before != "none":
            ref = args.before or subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], check=True,
                                                capture_output=True, text=True).stdout.strip()
            before = checkout(ref, Path(tempfile.mkdtemp(dir=tmp)))
        rows = []
        for i in range(args.rounds):
            easy = run(ROOT, "easy", args, tmp / "easy")
            old = run(before, args.config, args, tmp / "before") if before else None
            new = run(ROOT, args.config, args, tmp / "after")
            rows.append((easy, old, new))
            print(f"round {i + 1}: EASY {easy:.2f} s, " + (f"before {old:.2f} s, " if old else "")
                  + f"after {new:.2f} s", flush=True)
        name = f"{args.trace}.{args.config}_jobs.csv"
        med = statistics.median
        print(f"median after / EASY {med(n / e for e, _, n in rows):.2f}x "
              f"(range {min(n / e for e, _, n in rows):.2f}-{max(n / e for e, _, n in rows):.2f})")
        if before:
            print(f"median before / EASY {med(o / e for e, o, _ in rows):.2f}x, "
                  f"after / before {med(n / o for _, o, n in rows):.3f}")
            same = filecmp.cmp(tmp / "before" / name, tmp / "after" / name, shallow=False)
            print("jobs CSVs before/after:", "byte-identical" if same else "DIFFERENT")
            return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
