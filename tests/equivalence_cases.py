"""One checked example of each promised equivalence (``test_equivalences.py``, and at scale
``test_slow_property_campaign.py``): both sides run on the same workload and
configuration (``random_cases``); the result is the list of problems (the checker's, and any
difference between the two runs)."""

from __future__ import annotations

import csv
import tempfile
import threading
from pathlib import Path

from random_cases import run_once, workload_list
from threadpoolctl import threadpool_limits

from batsched_ml.runner import build_scheduler, simulate

TIMEOUT = 60.0  # seconds: any wait on the ZeroMQ side


def without_predictor(config: dict) -> dict:
    """For ``walltime_vs_easy``: with a predictor EASY plans with predictions, while the risk of
    point masses at the walltimes reads walltimes: not the same scheduler by design."""
    return dict(config, predictor=None, correction=None, correction_timing=None)


def batsim_timing(config: dict) -> dict:
    """For ``serve_vs_in_process``: a connected run has Batsim's latencies."""
    return dict(config, latency="batsim")


def _both(workload: dict, first: dict, second: dict) -> list[str]:
    """Run two configurations; the checker's problems and whether their outputs (jobs file and
    every message) differ."""
    with threadpool_limits(1), tempfile.TemporaryDirectory() as tmp:
        problems, one = run_once(workload, first, Path(tmp) / "a")
        more, two = run_once(workload, second, Path(tmp) / "b")
    problems += more
    if one != two:
        problems.append("the two runs differ (jobs file or messages)")
    return problems


def walltime_vs_easy(workload: dict, config: dict, rescan: str = "always") -> list[str]:
    """EASY and probabilistic backfilling with point masses at the walltimes (no predictor)."""
    easy = dict(without_predictor(config), scheduler="easy")
    probabilistic = dict(easy, scheduler="probabilistic", distribution="walltime", rescan=rescan)
    return _both(workload, easy, probabilistic)


def compiled_vs_python(workload: dict, config: dict) -> list[str]:
    """Conservative backfilling with its compiled pass at every pass, and with the Python pass, in
    either model (``count``: ``compression/``; ``cores``: ``ArrayCoreProfile``'s searches)."""
    return _both(workload, dict(config, scheduler="conservative", compiled=True),
                 dict(config, scheduler="conservative", compiled=False))


def serve_vs_in_process(workload: dict, config: dict) -> list[str]:
    """The same configuration in process and behind ``serve`` (ZeroMQ, ipc://), driven by our
    simulator as Batsim drives it (Batsim's latencies: what a connected run has)."""
    from batsched_ml.server.peer import run_connected
    from batsched_ml.server.serve import run_server

    options = {k: v for k, v in batsim_timing(config).items() if k != "latency"}
    workloads = workload_list(workload)
    problems = []
    with threadpool_limits(1), tempfile.TemporaryDirectory() as tmp:
        local = build_scheduler(**options)
        inproc, _ = simulate(workload["nb_res"], workloads, local, prefix=Path(tmp) / "inproc")
        remote = build_scheduler(**options)
        endpoint = f"ipc://{tmp}/s.ipc"
        ready, code = threading.Event(), []
        thread = threading.Thread(target=lambda: code.append(run_server(remote, endpoint, timeout=TIMEOUT,
                                                                        ready=ready)), daemon=True)
        thread.start()
        if not ready.wait(TIMEOUT):
            return ["serve did not start"]
        connected = run_connected(workload["nb_res"], workloads, endpoint, Path(tmp) / "remote", timeout=TIMEOUT,
                                  dynamic_jobs=remote.may_requeue)
        thread.join(TIMEOUT)
        if code != [0]:
            problems.append(f"serve exited with {code}")
        if _without_reject_reasons(connected.jobs_csv) != _without_reject_reasons(inproc.jobs_csv):
            problems.append("serve's jobs file differs from the in-process one")
        if connected.messages != inproc.messages:
            problems.append(f"{connected.messages} messages through serve, {inproc.messages} in process")
    return problems


def _without_reject_reasons(jobs_csv) -> list:
    """The jobs file's rows, a rejected job's metadata left out: the in-process simulator writes
    the scheduler's reason there, which REJECT_JOB does not carry on the wire."""
    with open(jobs_csv, newline="") as f:
        rows = list(csv.reader(f))
    state, metadata = rows[0].index("final_state"), rows[0].index("metadata")
    return [row[:metadata] + row[metadata + 1:] if row[state] == "REJECTED" else row for row in rows]
