"""Does batsched's EASY have the two behaviours that textbook EASY lacks? Evidence from the golden runs.

Textbook EASY (our ``--reservations count``) tries every waiting job at every scheduling point,
in queue order. batsched's ``easy_bf`` (our ``--reservations cores``), when no job ended since
its previous pass, tries only the jobs that arrived since, in arrival order. Two variants of the
``cores`` model each give up one of these behaviours:

* ``full-pass-every-arrival``: the whole queue at every pass;
* ``arrivals-in-queue-order``: the incremental pass, its arrivals sorted in queue order;

and every variant's run is compared with real Batsim 4.2.1 + batsched 1.4.0's (the golden jobs
files, ``easy`` = FCFS and ``easy_spf`` = SPF): the share of jobs starting within 5 s and within
50 us of batsched's start, and, for the jobs the variant moves, how many match batsched (same
start within 50 us and same cores) in the variant and as we run it.

Usage: python benchmarks/easy_golden_evidence.py [KTH-5k|KTH-SP2-1996-2.1-cln] [--golden DIR]
(results: benchmarks/results/easy.md)
"""

from __future__ import annotations

import argparse
import csv
import gzip
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import add_data_arguments, golden_path, reports_missing_data  # noqa: E402

from batsched_ml.runner import simulate  # noqa: E402
from batsched_ml.scheduling.easy import EasyBackfilling  # noqa: E402


class FullPassEveryArrival(EasyBackfilling):
    """batsched's model, but the whole queue at every pass (textbook EASY's reading)."""

    def _reads_whole_queue(self, full_pass: bool) -> bool:
        return True


class ArrivalsInQueueOrder(EasyBackfilling):
    """batsched's model, but the incremental pass tries its arrivals in queue order."""

    def _new_arrivals(self, now: float) -> list:
        return self.queue.in_queue_order(super()._new_arrivals(now), now)


VARIANTS = {"as-we-run-it": EasyBackfilling, "full-pass-every-arrival": FullPassEveryArrival,
            "arrivals-in-queue-order": ArrivalsInQueueOrder}
GOLDEN_VARIANTS = {"easy": "fcfs", "easy_spf": "spf"}  # batsched variant -> our --policy


def read_jobs(path) -> dict:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return {row["job_id"]: row for row in csv.DictReader(f)}


def matches(ours: dict, gold: dict, job: str) -> bool:
    return (abs(float(ours[job]["starting_time"]) - float(gold[job]["starting_time"])) <= 5e-5
            and ours[job]["allocated_resources"] == gold[job]["allocated_resources"])


@reports_missing_data
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", nargs="?", default="KTH-5k", help="golden workload (default KTH-5k)")
    add_data_arguments(parser, traces=False, golden=True)
    args = parser.parse_args(argv)
    platform = golden_path("platform-100.xml", args.golden)
    workload = golden_path(f"{args.workload}.json.gz", args.golden)
    print(f"{'workload':<22} {'batsched':<9} {'variant':<25} {'<= 5 s':>9} {'<= 50 us':>9} {'moved':>6} "
          f"{'variant = batsched':>19} {'ours = batsched':>16}")
    with tempfile.TemporaryDirectory() as tmp:
        for variant, policy in GOLDEN_VARIANTS.items():
            gold = read_jobs(golden_path(f"outputs/{args.workload}.{variant}_jobs.csv.gz", args.golden))
            runs = {}
            for name, cls in VARIANTS.items():
                result, _ = simulate(platform, workload, cls(policy=policy, reservations="cores"),
                                     prefix=Path(tmp) / f"{variant}-{name}")
                runs[name] = ours = read_jobs(result.jobs_csv)
                gaps = [abs(float(ours[j]["starting_time"]) - float(gold[j]["starting_time"])) for j in gold]
                moved = [j for j in gold if (ours[j]["starting_time"], ours[j]["allocated_resources"])
                         != (runs["as-we-run-it"][j]["starting_time"], runs["as-we-run-it"][j]["allocated_resources"])]
                print(f"{args.workload:<22} {variant:<9} {name:<25} {sum(g <= 5 for g in gaps) / len(gaps):>9.2%} "
                      f"{sum(g <= 5e-5 for g in gaps) / len(gaps):>9.2%} {len(moved):>6} "
                      f"{sum(matches(ours, gold, j) for j in moved):>19} "
                      f"{sum(matches(runs['as-we-run-it'], gold, j) for j in moved):>16}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
