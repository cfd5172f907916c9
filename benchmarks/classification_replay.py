"""Learning quality of the small/large classifier without scheduling: a replay of a trace.

The classifier (``classifiers.online.OnlineClassification``, the object the scheduler drives)
sees each job's submission at its submission time and its completion at the finish time of a
given run (a jobs CSV, e.g. EASY-FCFS's), in time order; nothing is scheduled. Precision and
recall (Zrigui et al., Table 5) come out in seconds instead of a simulation's minutes, so model
and feature levers can be screened on the four traces and several seeds before the few that
matter are simulated. The schedule enters only through the completion times (which jobs are
history when another is submitted), so a replay of run A's completions is close to, not equal
to, run A's own scores.

    python benchmarks/classification_replay.py WORKLOAD.json JOBS.csv [--seed 0 1 2] [-o KEY=VALUE ...]
        [--classifier random-forest] [--timezone TZ] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from batsched_ml.analysis.metrics import merge_attempts, read_jobs_csv  # noqa: E402
from batsched_ml.classifiers.features import HEADER_OFFSET, CalendarClock, parse_zone_option  # noqa: E402
from batsched_ml.classifiers.online import OnlineClassification  # noqa: E402
from batsched_ml.config.compose import build_classifier  # noqa: E402
from batsched_ml.config.declare import parse_option  # noqa: E402
from batsched_ml.core.job import Job  # noqa: E402
from batsched_ml.workloads import load_workload  # noqa: E402

LEARNER_OPTIONS = ("period", "history", "divider_window", "feature_divider", "label_divider", "runtime_features")


def replay_jobs(workload: dict, jobs_csv) -> list[tuple[Job, float]]:
    """(job, finish time) of every job that ran in ``jobs_csv``, with the workload's fields."""
    records = merge_attempts(read_jobs_csv(jobs_csv))
    finish = dict(zip(records.job_id.tolist(), records.finish.tolist()))
    profiles = workload.get("profiles", {})
    out = []
    for seq, j in enumerate(workload["jobs"]):
        end = finish.get(str(j["id"]))
        if end is None or end != end:  # rejected or absent
            continue
        delay = profiles.get(j["profile"], {}).get("delay")
        job = Job(id=f"w0!{j['id']}", workload="w0", name=str(j["id"]), subtime=float(j["subtime"]),
                  walltime=float(j.get("walltime", -1)), res=int(j["res"]), profile=j["profile"], data=j,
                  submission_time=float(j["subtime"]), seq=seq, runtime=delay)
        out.append((job, float(end)))
    return out


def replay(jobs: list[tuple[Job, float]], learner: OnlineClassification) -> dict:
    """Feed submissions and completions in time order (completions first at equal times)."""
    events = [(job.subtime, 1, job.seq, job) for job, _ in jobs] + [(end, 0, job.seq, job) for job, end in jobs]
    events.sort(key=lambda e: e[:3])
    for t, kind, seq, job in events:
        learner.tick(t)
        if kind:
            learner.classify(job)
        else:
            learner.completed(job.id, seq, job.runtime)
    return learner.report()


def dump(jobs, learner, path) -> None:
    """job id, res, requested time, runtime, P(small), predicted and true class of every classified job."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("job_id,res,walltime,runtime,subtime,p_small,predicted_small,true_small\n")
        for job, _ in jobs:
            p = learner.probabilities.get(job.id)
            cls = learner.classes.get(job.id)
            if p is None or cls is None or cls[1] is None:
                continue
            f.write(f"{job.name},{job.res},{job.walltime},{job.runtime},{job.subtime},{p:.6f},{cls[0]},{cls[1]}\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload")
    ap.add_argument("jobs_csv")
    ap.add_argument("--seed", type=int, nargs="+", default=[0])
    ap.add_argument("--classifier", default="random-forest")
    ap.add_argument("--timezone", default=None, help="as -o timezone=: a tz name, seconds east of UTC or header-offset")
    ap.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--json", help="append one JSON line per seed to this file")
    ap.add_argument("--dump", help="write each classified job's P(small) and true class to DUMP.sSEED.csv")
    args = ap.parse_args(argv)
    workload = load_workload(args.workload)
    clock = CalendarClock.from_swf(workload.get("swf") or {})
    if args.timezone is not None:
        zone = parse_zone_option(args.timezone)
        zone = clock.header_offset if zone == HEADER_OFFSET else zone
        clock = CalendarClock(clock.unix_start_time, clock.subtime_offset, zone)
    options = dict(parse_option(item) for item in args.option)
    learner_options = {k: options.pop(k) for k in LEARNER_OPTIONS if k in options}
    jobs = replay_jobs(workload, args.jobs_csv)
    for seed in args.seed:
        t0, cpu0 = time.perf_counter(), time.process_time()
        classifier = build_classifier(args.classifier, options, seed=seed)
        classifier.reset()
        learner = OnlineClassification(classifier, clock,
                                       store_classes=bool(args.dump), keep_probabilities=bool(args.dump),
                                       **learner_options)
        rep = replay(jobs, learner)
        if args.dump:
            dump(jobs, learner, f"{args.dump}.s{seed}.csv")
        o = rep["overall"]
        row = {"workload": args.workload, "seed": seed, "classifier": args.classifier, "options": args.option,
               "timezone": args.timezone, "accuracy": o["accuracy"], "precision": o["precision"],
               "recall": o["recall"], "TS": o["TS"], "FS": o["FS"], "TL": o["TL"], "FL": o["FL"],
               "training_s": rep["training_time"], "wall_s": time.perf_counter() - t0,
               "cpu_s": time.process_time() - cpu0, "jobs": len(jobs)}
        print(f"seed {seed}: accuracy {o['accuracy']:.3f} precision {o['precision']:.3f} recall {o['recall']:.3f}"
              f"  (TS {o['TS']} FS {o['FS']} FL {o['FL']}; training {rep['training_time']:.1f} s,"
              f" wall {row['wall_s']:.1f} s, CPU {row['cpu_s']:.1f} s = {1000 * row['cpu_s'] / len(jobs):.2f} s"
              " per 1,000 jobs)")
        if args.json:
            with open(args.json, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
