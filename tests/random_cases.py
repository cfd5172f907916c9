"""Random workloads and scheduler configurations (hypothesis strategies), and one checked run.

Shared by ``tests/test_properties.py`` (a few hundred examples in CI) and
``tests/test_slow_property_campaign.py`` (``-m slow``: thousands, scaled by
``BATSCHED_ML_PROPERTY_EXAMPLES``). The configuration space is
discovered, not listed: every plugin of ``plugins.available`` and every choice of the
CLI's scheduler flags, so a new scheduler, policy or flag value is tested without
editing this file.
"""

from __future__ import annotations

import inspect
import json
import tempfile
from pathlib import Path

import sklearn.ensemble  # noqa: F401 - loads OpenMP now, so that threadpool_limits below reaches it
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

from batsched_ml.analysis.checker import IDLE_SLACK, check_run
from batsched_ml.config.declare import settings
from batsched_ml.config.plugins import available, load
from batsched_ml.config.resolve import scheduler_accepts
from batsched_ml.core.decision_core import DecisionCore
from batsched_ml.core.scheduler import CALL_MARGIN, EXACT_CALL_MARGIN, SchedulingError
from batsched_ml.protocol.codec import encode
from batsched_ml.protocol.events import Message
from batsched_ml.runner import build_scheduler, in_process, load_inputs
from batsched_ml.scheduling.reserving import ProfileScheduler
from batsched_ml.simulator.engine import BATSIM_LATENCY, NO_LATENCY, SimulationError, Simulator

LATENCIES = {"batsim": BATSIM_LATENCY, "exact": NO_LATENCY}
EXACT_SLACK = 1e-5  # exact instants: a job starts the instant it can (CSV dates are to the microsecond)


def cli_choices(flag: str) -> list:
    """The choices of a scheduler flag of ``batsched-ml simulate`` (e.g. ``--reservations``), from
    its declaration (``config.RunConfig``)."""
    return list(next(spec.choices for spec in settings().values() if spec.flag == flag))


SCHEDULERS = list(available("schedulers"))
POLICIES = list(available("policies"))
PREDICTORS = list(available("predictors"))
CORRECTIONS = list(available("corrections"))
CLASSIFIERS = list(available("classifiers"))
RESERVATIONS = cli_choices("--reservations")
BACKFILL_ORDERS = cli_choices("--backfill-order")
TIMINGS = cli_choices("--correction-timing")

# Dates that have bitten before: float slices (issue 13), exact multiples, a week boundary.
AWKWARD = [0.0, 1.0, 60.0, 579.871839913691, 600.0, 1000.5, 1024.1399999999999, 1024.14, 3600.0]

times = st.one_of(st.sampled_from(AWKWARD), st.integers(0, 4000).map(float),
                  st.floats(0, 4000, allow_nan=False, allow_infinity=False))
durations = st.one_of(st.sampled_from([1.0, 10.0, 600.0, 1000.5, 1024.1399999999999, 3600.0]),
                      st.integers(1, 4000).map(float), st.floats(1e-3, 4000, allow_nan=False))


@st.composite
def workloads(draw, max_jobs: int = 12, max_cores: int = 8) -> dict:
    """A Batsim workload: identical instants, jobs ending before, exactly at and after their
    walltime, jobs without walltime or larger than the machine, shared profiles; sometimes
    split in two workloads (the second under ``"more"``, see :func:`workload_list`)."""
    nb_res = draw(st.integers(1, max_cores))
    instants = draw(st.lists(times, min_size=1, max_size=4))
    jobs, profiles = [], {}
    for i in range(draw(st.integers(1, max_jobs))):
        subtime = draw(st.one_of(st.sampled_from(instants), times))
        res = draw(st.integers(1, nb_res))
        if draw(st.integers(0, 19)) == 0:
            res = nb_res + draw(st.integers(1, 3))  # rejected: larger than the machine
        walltime = draw(durations)
        shape = draw(st.sampled_from(["under", "exact", "over", "just-over", "just-under", "free", "zero"]))
        delay = {"under": lambda: walltime * draw(st.floats(0.01, 0.99)),
                 "exact": lambda: walltime,
                 "over": lambda: walltime * draw(st.floats(1.01, 3.0)),
                 "just-over": lambda: walltime + draw(st.sampled_from([1e-6, 1e-3, 0.5])),
                 "just-under": lambda: max(walltime - draw(st.sampled_from([1e-6, 1e-3, 0.5])), 0.0),
                 "free": lambda: draw(durations),
                 "zero": lambda: 0.0}[shape]()
        name = f"d{delay!r}"
        profiles[name] = {"type": "delay", "delay": delay}
        job = {"id": i, "subtime": subtime, "res": res, "profile": name, "user": draw(st.integers(0, 2))}
        if draw(st.integers(0, 24)) != 0:  # mostly with a walltime; some without (or -1)
            job["walltime"] = walltime
        elif draw(st.booleans()):
            job["walltime"] = -1
        jobs.append(job)
    workload = {"nb_res": nb_res, "jobs": jobs, "profiles": profiles}
    if len(jobs) > 1 and draw(st.integers(0, 7)) == 0:
        # a second workload (w1) with every other job: two submitters, same job names
        workload["jobs"] = jobs[::2]
        workload["more"] = [{"nb_res": nb_res, "jobs": jobs[1::2], "profiles": profiles}]
    return workload


def workload_list(workload: dict) -> list:
    """The workloads of a drawn example, in order (``w0``, ``w1``...)."""
    first = {k: v for k, v in workload.items() if k != "more"}
    return [first] + workload.get("more", [])


@st.composite
def configurations(draw, schedulers=None, policies=None, classifiers=True) -> dict:
    """Keyword arguments of ``runner.build_scheduler`` plus ``latency`` (a key of LATENCIES);
    the scheduler among ``schedulers`` and the policy among ``policies`` (default: every one),
    no classifier unless ``classifiers``."""
    scheduler = draw(st.sampled_from(schedulers or SCHEDULERS))
    config = {
        "scheduler": scheduler,
        "policy": draw(st.sampled_from(policies or POLICIES)),
        "reservations": draw(st.sampled_from(RESERVATIONS)),
        "backfill_order": draw(st.sampled_from(BACKFILL_ORDERS)),
        "starvation_threshold": draw(st.one_of(st.none(), st.sampled_from([0.0, 1.0, 60.0, 1000.0]),
                                               st.floats(0, 5000))),
        "predictor": draw(st.sampled_from([None] + PREDICTORS)),
        "correction": draw(st.sampled_from([None] + CORRECTIONS)),
        "correction_timing": draw(st.sampled_from(TIMINGS)),
        "classifier": draw(st.sampled_from([None, None] + CLASSIFIERS)) if classifiers else None,
        "latency": draw(st.sampled_from(sorted(LATENCIES))),
    }
    # (drawn for every scheduler so that examples stay put; kept only where they mean something:
    # a setting the scheduler does not take, or a correction without a predictor, is refused)
    takes = scheduler_accepts(load("schedulers", scheduler))
    for name in ("reservations", "backfill_order", "starvation_threshold", "policy"):
        if name not in takes:
            del config[name]
    if config["predictor"] is None:
        config["correction"] = None
    if config["correction"] is None:
        config["correction_timing"] = None
    if "policy" not in takes:
        config["classifier"] = None
    if issubclass(load("schedulers", scheduler), ProfileScheduler) and draw(st.booleans()):
        config["rjms_delay"] = draw(st.sampled_from([0.0, 5.0, 0.5]))
    if config["classifier"] is not None:
        config["kill_false_small"] = draw(st.booleans())
        # weeks short enough for these workloads to retrain, small models to keep runs fast
        config["period"] = draw(st.sampled_from([100.0, 600.0, 1000.5, 604800.0]))
        config["unix_start_time"] = 0
        config["history"] = draw(st.sampled_from(["all", "previous-weeks"]))
        config["divider_window"] = draw(st.sampled_from(["week", "all"]))
        params = inspect.signature(load("classifiers", config["classifier"])).parameters
        for name, value in (("n_estimators", 3), ("max_iter", 5), ("max_samples", None)):
            if name in params:
                config[name] = value
        if "small_threshold" in params:
            config["small_threshold"] = draw(st.sampled_from([0.35, 0.5]))
    return config


def command_line(config: dict) -> str:
    """The ``batsched-ml simulate`` flags of a configuration (for failure reports)."""
    flags = []
    for key, value in config.items():
        if key == "latency" or value is None or value is False:
            continue
        if key in settings() and value is not True:
            flags.append(f"{settings()[key].flag} {value}")
        elif value is True:
            flags.append(f"--{key.replace('_', '-')}")
        else:
            flags.append(f"-o {key}={json.dumps(value)}")
    return " ".join(flags) + ("" if config["latency"] == "batsim" else "  (exact instants: NO_LATENCY)")


# Schedulers that start the head of their queue whenever it fits. Not conservative: its
# compression re-places jobs one at a time in queue order while later jobs keep their
# reservations (batsched's, and Mu'alem & Feitelson's), so the head may wait with free cores.
HEAD_FIRST = {"fcfs", "easy"}


def fcfs_ordered(config: dict) -> bool:
    """The queue is in submission order (starving jobs move to the head oldest first: the
    same order) and the scheduler starts its head whenever it fits."""
    return config["scheduler"] in HEAD_FIRST and config["policy"] == "fcfs" and config.get("classifier") is None


def run_once(workload: dict, config: dict, prefix: Path):
    """Run one configuration in the embedded simulator (as ``runner.simulate`` does, with the
    messages recorded); returns (violations as text, bytes that two runs must share)."""
    options = dict(config)
    latency = LATENCIES[options.pop("latency")]
    scheduler = build_scheduler(**options)
    core = DecisionCore(scheduler, call_margin=EXACT_CALL_MARGIN if latency == NO_LATENCY else CALL_MARGIN)
    exchange = in_process(core)
    transcript = []

    def recording(now, events):
        reply_now, decisions = exchange(now, events)
        transcript.append(encode(Message(now, list(events))))
        transcript.append(encode(Message(reply_now, list(decisions))))
        return reply_now, decisions

    workloads = workload_list(workload)
    nb_hosts, names, loaded = load_inputs(workload["nb_res"], workloads)
    sim = Simulator(nb_hosts, loaded, host_names=names, dynamic_jobs=scheduler.may_requeue, latency=latency)
    problems = []
    try:
        sim.run(recording, prefix=str(prefix))
    except (SimulationError, SchedulingError) as exc:
        problems.append(f"simulation error: {type(exc).__name__}: {exc}")
    jobs_csv = Path(f"{prefix}_jobs.csv")
    output = b""
    if jobs_csv.exists():
        slack = IDLE_SLACK if latency is BATSIM_LATENCY else EXACT_SLACK
        problems += [str(v) for v in check_run(jobs_csv, workloads, workload["nb_res"],
                                                 rejected=dict(core.rejected), idle_slack=slack,
                                                 fcfs_head=fcfs_ordered(config))]
        output = jobs_csv.read_bytes()
    return problems, output + b"\n".join(transcript)


def run_twice(workload: dict, config: dict) -> tuple[list[str], bytes]:
    """Run twice: every violation of the checker and any difference between the two runs,
    and the first run's output bytes. (One OpenMP thread: on a busy machine, fitting a tiny
    gradient-boosting model with the default thread pool takes ~1 s instead of 30 ms.)"""
    with threadpool_limits(1), tempfile.TemporaryDirectory() as tmp:
        problems, first = run_once(workload, config, Path(tmp) / "a")
        _, second = run_once(workload, config, Path(tmp) / "b")
    if first != second:
        problems.append("not deterministic: two runs gave different outputs")
    return problems, first


def check_case(workload: dict, config: dict) -> list[str]:
    return run_twice(workload, config)[0]


def describe(workload: dict, config: dict, problems: list) -> str:
    return (f"{len(problems)} problem(s):\n  " + "\n  ".join(problems[:10])
            + f"\nflags: {command_line(config)}\nworkload: {json.dumps(workload)}")
