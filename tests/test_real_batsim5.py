"""End-to-end checks against the REAL Batsim 5.0.0-rc2 (optional).

Runs only when ``BATSIM5_BIN`` points at rc2's ``batsim`` (and, for the peer test,
``BATSIM5_PROCESS_EDC`` at its test decision component ``process-edc``); every test skips cleanly
otherwise. Building rc2 is not part of this repository (``../shared/golden-v5/BUILD.md``).

* rc2 drives ``serve --batsim 5`` (and ``serve`` recognising it) with fcfs on tiny: rc2's jobs.csv
  equals the one rc2 wrote with its own process scheduler (``golden-v5/outputs``);
* rc2 drives a kill-and-requeue scheduler (``dynamic_registration`` + acknowledgements): the recorded
  EDC's run (``golden-v5/outputs/tiny6-killrequeue-json``), job for job;
* our Batsim 5 peer (``simulate --connect --batsim 5``) drives rc2's process-edc: the jobs.csv rc2
  wrote with it, and the embedded simulator's with our fcfs (no Batsim 5 needed, only process-edc);
* KTH-5k (``slow``): every configuration of issue 41 runs to the end, every job ending once.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from batsched_ml.config.compose import build_scheduler as build_configured
from batsched_ml.config.declare import RunConfig
from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.server.peer import run_connected
from batsched_ml.server.serve import ServerStats, run_server
from batsim5_replay import DATA, WORKLOADS, PreemptOnce
from conftest import shared_dir

ROOT = Path(__file__).resolve().parents[1]
PLATFORM_16 = ROOT / "tests" / "data" / "platform-16.xml"
RUN_TIMEOUT = 300.0


def _executable(env: str) -> str | None:
    path = os.environ.get(env)
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


BATSIM5 = _executable("BATSIM5_BIN")
PROCESS_EDC = _executable("BATSIM5_PROCESS_EDC")
needs_batsim5 = pytest.mark.skipif(BATSIM5 is None, reason="real Batsim 5 not found (set BATSIM5_BIN)")
needs_process_edc = pytest.mark.skipif(PROCESS_EDC is None,
                                       reason="rc2's process-edc not found (set BATSIM5_PROCESS_EDC)")


def free_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def read_jobs(path: Path) -> dict:
    with open(path, newline="") as f:
        return {row["job_id"]: row for row in csv.DictReader(f)}


def run_rc2(platform: Path, workload: Path, out: Path, endpoint: str, init: str = "{}"):
    """rc2 against the decision component at ``endpoint``; its files in ``out/``."""
    cmd = [BATSIM5, "-p", str(platform), "-w", str(workload), "-e", f"{out}/", "--edc-socket-str", endpoint, init]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)


def serve_against_rc2(scheduler, platform, workload, out, batsim="5"):
    """``run_server`` (bound first, in a thread) driven by rc2; (server code, errors, rc2's run, stats)."""
    endpoint = free_endpoint()
    err, stats, ready, codes = io.StringIO(), ServerStats(), threading.Event(), []
    thread = threading.Thread(target=lambda: codes.append(run_server(
        scheduler, endpoint, timeout=RUN_TIMEOUT, err=err, stats=stats, ready=ready, batsim=batsim)), daemon=True)
    thread.start()
    assert ready.wait(30)
    done = run_rc2(platform, workload, out, endpoint)
    thread.join(RUN_TIMEOUT)
    return (codes[0] if codes else None), err.getvalue(), done, stats


def ends_once(jobs: dict, expected_ids) -> None:
    """Every job of the workload ends once (jobs.csv has one row per job id, a final state each)."""
    assert set(expected_ids) <= set(jobs)
    for row in jobs.values():
        assert row["final_state"] in ("COMPLETED_SUCCESSFULLY", "COMPLETED_KILLED", "COMPLETED_WALLTIME_REACHED",
                                      "COMPLETED_FAILED", "REJECTED"), row


@needs_batsim5
@pytest.mark.parametrize("batsim", ["5", None], ids=["--batsim-5", "recognised"])
def test_rc2_drives_serve_fcfs_like_its_own_process_scheduler(tmp_path, batsim):
    code, errors, done, stats = serve_against_rc2(build_scheduler("fcfs"), PLATFORM_16, WORKLOADS / "tiny.v5.json",
                                                  tmp_path / "out", batsim)
    assert done.returncode == 0 and code == 0, errors + done.stderr[-2000:]
    ours = (tmp_path / "out" / "jobs.csv").read_bytes()
    assert ours == (DATA / "outputs" / "tiny-fcfs-process-json" / "jobs.csv").read_bytes()
    assert stats.messages == 118  # as in the recorded exchange


@needs_batsim5
def test_rc2_drives_a_kill_and_requeue(tmp_path):
    """The recorded preempting EDC's run, through our requeue (``w0!15#1`` for its ``dyn!15-requeued``):
    the same kills, allocations and final states; the starts within 0.5 ms (rc2 applies the
    events of a reply one after another, and ours registers a profile copy where the recorded EDC
    reused the profile: one event more, 0.1 ms later)."""
    code, errors, done, _ = serve_against_rc2(PreemptOnce(), PLATFORM_16, WORKLOADS / "tiny6.v5.json",
                                              tmp_path / "out")
    assert done.returncode == 0 and code == 0, errors + done.stderr[-2000:]
    ours = read_jobs(tmp_path / "out" / "jobs.csv")
    recorded = read_jobs(DATA / "outputs" / "tiny6-killrequeue-json" / "jobs.csv")
    recorded["15#1"] = recorded.pop("15-requeued")
    assert set(ours) == set(recorded)
    for job_id, row in recorded.items():
        mine = ours[job_id]
        assert (mine["final_state"], mine["allocated_resources"]) == (row["final_state"], row["allocated_resources"])
        assert abs(float(mine["starting_time"]) - float(row["starting_time"])) <= 5e-4, job_id
    assert ours["15#1"]["profile"] == "w0!d3477#1" and ours["15"]["final_state"] == "COMPLETED_KILLED"


@needs_process_edc
def test_our_batsim5_peer_drives_rc2s_process_scheduler(tmp_path):
    """Our peer is rc2 to rc2's own C++ process scheduler (JSON mode): the jobs file rc2 wrote with
    that scheduler (``golden-v5/outputs``), byte for byte, and so the in-process ``--batsim 5`` run."""
    endpoint = free_endpoint()
    edc = subprocess.Popen([PROCESS_EDC, "--socket-endpoint", endpoint], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    try:
        result = run_connected(PLATFORM_16, WORKLOADS / "tiny.v5.json", endpoint, f"{tmp_path}/peer-", timeout=60,
                               batsim=5)
        assert edc.wait(30) == 0, edc.stderr.read()
    finally:
        if edc.poll() is None:
            edc.kill()
            edc.wait()
    assert not result.unfinished and result.messages == 118  # as in the recorded exchange
    peer = (tmp_path / "peer-jobs.csv").read_bytes()
    assert peer == (DATA / "outputs" / "tiny-fcfs-process-json" / "jobs.csv").read_bytes()
    simulate(PLATFORM_16, WORKLOADS / "tiny.v5.json", build_scheduler("fcfs"), prefix=f"{tmp_path}/inproc-", batsim=5)
    assert peer == (tmp_path / "inproc-jobs.csv").read_bytes()


# ------------------------------------------------------------------ KTH-5k, every configuration of issue 41

KTH5K_CONFIGS = {
    "fcfs": {"scheduler": "fcfs"},
    "easy-cores": {"scheduler": "easy", "reservations": "cores"},
    "easy-count": {"scheduler": "easy", "reservations": "count"},
    "conservative": {"scheduler": "conservative"},
    "classification-kills": {"scheduler": "easy", "classifier": "random-forest", "kill_false_small": True,
                             "options": {"order_by_probability": "both", "probability_head_start": 1209600,
                                         "speculative_backfill": 0, "n_estimators": 40, "min_samples_leaf": 50}},
    "probabilistic-hmm": {"scheduler": "probabilistic", "distribution": "hmm"},
}


def kth5k_v5() -> Path | None:
    shared = shared_dir()
    path = None if shared is None else shared / "golden-v5" / "workloads" / "KTH-5k.v5.json.gz"
    return path if path is not None and path.is_file() else None


@needs_batsim5
@pytest.mark.slow
@pytest.mark.parametrize("name", list(KTH5K_CONFIGS))
def test_rc2_runs_every_configuration_on_kth5k(tmp_path, name):
    workload_gz = kth5k_v5()
    if workload_gz is None:
        pytest.skip("../shared/golden-v5 not found")
    workload = tmp_path / "KTH-5k.v5.json"
    workload.write_bytes(gzip.decompress(workload_gz.read_bytes()))
    scheduler = build_configured(RunConfig(**KTH5K_CONFIGS[name]))
    code, errors, done, stats = serve_against_rc2(scheduler, shared_dir() / "golden" / "platform-100.xml", workload,
                                                  tmp_path / "out")
    assert done.returncode == 0 and code == 0, errors + done.stderr[-2000:]
    jobs = read_jobs(tmp_path / "out" / "jobs.csv")
    static = {str(job["id"]) for job in json.loads(workload.read_text())["jobs"]}
    ends_once(jobs, static)
    requeued = [job_id for job_id in jobs if "#" in job_id]
    killed = [job_id for job_id, row in jobs.items() if row["final_state"] == "COMPLETED_KILLED"]
    assert len(requeued) == len(killed)
    if name == "classification-kills":
        assert killed, "the recommended classification kills false small jobs on KTH-5k"
