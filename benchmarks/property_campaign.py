"""The property-based test at scale (issue 13): N random workloads x scheduler configurations.

Same strategies and checks as ``tests/test_properties.py`` (``tests/random_cases.py``): each
example is run twice and checked by ``analysis/checker.py``. By default the first failure
stops the campaign and hypothesis shrinks it to a minimal workload, printed with its flags.
``--collect`` records every failure instead (one JSON line each) and goes on.
``--digests FILE`` writes one line per example (number, input digest, output digest): run the campaign twice with
different ``PYTHONHASHSEED`` values and compare the files to check determinism across
processes (set iteration order, hashing), which two runs in one process cannot see.

    nice python benchmarks/property_campaign.py --examples 10000 --seed 1
    nice python benchmarks/property_campaign.py --examples 2000 --scheduler conservative --compiled-from 4

``--property`` chooses what each example checks: ``schedules`` (default, above), ``cli`` (the whole
configuration space through the command line: a run the checker accepts, or one error line and
exit 2; ``tests/configuration_space.py``), or an equivalence (``tests/equivalence_cases.py``):
``walltime-easy`` (probabilistic with point masses = EASY), ``compiled`` (conservative's compiled
pass = its Python pass), ``serve`` (``serve`` over ZeroMQ = the in-process run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from random_cases import command_line, configurations, describe, run_twice, workloads  # noqa: E402


def _properties(args) -> dict:
    """name -> (strategy of one example's case, check(workload, case) -> (problems, output bytes),
    describe(workload, case, problems), flags of a case for the failure records)."""
    import configuration_space as space
    import equivalence_cases as eq

    def configs(schedulers=None):
        return configurations(schedulers or args.scheduler, args.policy, not args.no_classifier)

    def cli(workload, case):
        problems, outcome = space.run_cli_case(workload, case)
        return problems, outcome.encode()

    def pair(check):
        def run(workload, case):
            return check(workload, *case), b""
        return run

    def described(workload, case, problems):
        return describe(workload, case[0], problems)

    return {
        "schedules": (configs(), run_twice, describe, command_line),
        "cli": (space.cli_configurations(), cli, space.describe_cli, lambda case: " ".join(case["argv"])),
        "walltime-easy": (st.tuples(configs(["easy"]).map(eq.without_predictor), st.sampled_from(["always", "changes"])),
                          pair(eq.walltime_vs_easy),
                          described, lambda case: command_line(case[0]) + f" -o rescan={case[1]}"),
        "compiled": (st.tuples(configs(["conservative"])), pair(eq.compiled_vs_python), described,
                     lambda case: command_line(case[0])),
        "serve": (st.tuples(configs().map(eq.batsim_timing)), pair(eq.serve_vs_in_process), described,
                  lambda case: command_line(case[0])),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-jobs", type=int, default=16)
    parser.add_argument("--max-cores", type=int, default=8)
    parser.add_argument("--scheduler", action="append", default=None, help="only these schedulers (repeatable)")
    parser.add_argument("--policy", action="append", default=None, help="only these policies (repeatable)")
    parser.add_argument("--no-classifier", action="store_true", help="never draw a classifier")
    parser.add_argument("--collect", default=None, metavar="FILE.jsonl",
                        help="record every failure here and go on (no shrinking)")
    parser.add_argument("--replay", default=None, metavar="FILE.jsonl",
                        help="re-check the failures a --collect run recorded, then exit")
    parser.add_argument("--digests", default=None, metavar="FILE", help="one output digest per example")
    parser.add_argument("--property", default="schedules",
                        choices=["schedules", "cli", "walltime-easy", "compiled", "serve"],
                        help="what each example checks (default: valid deterministic schedules)")
    parser.add_argument("--compiled-from", type=int, default=None, metavar="N",
                        help="conservative's compiled pass from N queued jobs (back to Python below N/2), "
                             "so that small workloads run it and switch between the passes (default: 256)")
    args = parser.parse_args(argv)
    if args.compiled_from is not None:
        from batsched_ml.scheduling import conservative

        conservative.COMPILED_FROM, conservative.COMPILED_UNTIL = args.compiled_from, args.compiled_from // 2
    warnings.simplefilter("ignore")  # numeric warnings of degenerate random inputs; the checker decides
    properties = _properties(args)
    if args.replay:
        return replay(args.replay, properties)
    strategy, check, describe_case, flags = properties[args.property]

    count, failures, started = [0], [0], time.perf_counter()
    seen = Counter()  # what the examples exercised
    collect = open(args.collect, "w") if args.collect else None
    digests = open(args.digests, "w") if args.digests else None
    phases = [Phase.explicit, Phase.generate] + ([] if collect else [Phase.shrink])

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None, phases=phases, derandomize=False,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @given(workload=workloads(max_jobs=args.max_jobs, max_cores=args.max_cores), config=strategy)
    def campaign(workload, config):
        count[0] += 1
        try:
            problems, output = check(workload, config)
        except Exception as exc:  # noqa: BLE001 - a crash is a failure like any other
            if collect is None:
                raise
            problems, output = [f"crash: {type(exc).__name__}: {exc}"], b""
        _tally(seen, args.property, config, output)
        if digests is not None:
            example = json.dumps([workload, config], sort_keys=True).encode()
            digests.write(f"{count[0]} {_digest(example)} {_digest(output)}\n")
        if count[0] % 500 == 0:
            print(f"{count[0]} examples, {failures[0]} failing, {time.perf_counter() - started:.0f} s",
                  file=sys.stderr, flush=True)
        if problems:
            failures[0] += 1
            if collect is None:
                raise AssertionError(describe_case(workload, config, problems))
            collect.write(json.dumps({"property": args.property, "problems": problems, "flags": flags(config),
                                      "config": config, "workload": workload}) + "\n")
            collect.flush()

    status = 0
    try:
        campaign()
    except AssertionError as exc:
        print(f"FAILED (minimal example after shrinking):\n{exc}")
        status = 1
    elapsed = time.perf_counter() - started
    print(json.dumps({"property": args.property, "examples": count[0], "failing": failures[0], "seed": args.seed,
                      "compiled_from": args.compiled_from,
                      "seconds": round(elapsed, 1), "exercised": dict(sorted(seen.items()))}))
    return status


def replay(path, properties: dict) -> int:
    """Re-run recorded failures: how many still fail (e.g. after a fix)."""
    still = total = 0
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            total += 1
            _, check, describe_case, _ = properties[record.get("property", "schedules")]
            problems, _ = check(record["workload"], record["config"])
            if problems:
                still += 1
                print(describe_case(record["workload"], record["config"], problems)[:2000], "\n")
    print(json.dumps({"replayed": total, "still_failing": still}))
    return 1 if still else 0


EXERCISED = {"kill": b'"KILL_JOB"', "requeue": b'"REGISTER_JOB"', "walltime-reached": b"COMPLETED_WALLTIME_REACHED",
             "rejection": b'"REJECT_JOB"', "call-me-later": b'"CALL_ME_LATER"'}


def _tally(seen: Counter, prop: str, config, output: bytes) -> None:
    if prop == "cli":
        seen[f"outcome={output.decode()}"] += 1
        for key in ("scheduler", "classifier", "distribution"):
            seen[f"{key}={config['config'].get(key)}"] += 1
        return
    if prop != "schedules":
        config = config[0]
        seen[f"reservations={config['reservations']}"] += 1
    seen[f"scheduler={config['scheduler']}"] += 1
    seen[f"latency={config['latency']}"] += 1
    for option in ("predictor", "correction", "classifier", "starvation_threshold"):
        if config.get(option) is not None:
            seen[f"with {option}"] += 1
    for name, marker in EXERCISED.items():
        if marker in output:
            seen[f"runs with {name}"] += 1


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


if __name__ == "__main__":
    sys.exit(main())
