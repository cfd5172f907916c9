"""End-to-end checks against the REAL Batsim 4.2.1 and the C++ batsched 1.4.0 (optional).

Runs only when the executables are found: ``BATSIM_BIN`` / ``BATSCHED_BIN`` (paths), else ``batsim`` /
``batsched`` on PATH; every test skips cleanly otherwise. The build is not part of this repository
(see the team notes on building Batsim 4.2.1 and batsched 1.4.0 outside it).

* the C++ batsched on the real Batsim reproduces the golden run (sanity of the build);
* the real Batsim drives ``batsched-ml serve``: same schedule as batsched (EASY, cores model) and as our
  embedded simulator; a kill-and-requeue scheduler works with ``--enable-dynamic-jobs``;
* our simulator (``simulate --connect``) drives the C++ batsched: same schedule as the golden run.

KTH-5k on 100 hosts when the shared golden files are there, the bundled 60-job workload otherwise;
every test stays well under a minute.
"""

from __future__ import annotations

import csv
import gzip
import os
import shutil
import socket
import subprocess
import threading
from argparse import Namespace
from pathlib import Path

import pytest

from conftest import shared_dir  # tests/ is on sys.path (pytest's rootdir conftest)
from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.server.peer import simulate_connected
from batsched_ml.server.serve import ServerStats, run_server

from test_server import KillRequeue

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
RUN_TIMEOUT = 120.0  # hard bound of one Batsim run (seconds); the runs take 1-20 s


def _executable(env: str, name: str) -> str | None:
    path = os.environ.get(env) or shutil.which(name)
    if path and os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    return None


BATSIM = _executable("BATSIM_BIN", "batsim")
BATSCHED = _executable("BATSCHED_BIN", "batsched")

needs_batsim = pytest.mark.skipif(BATSIM is None, reason="real Batsim not found (set BATSIM_BIN or put batsim on PATH)")
needs_batsched = pytest.mark.skipif(BATSCHED is None,
                                    reason="C++ batsched not found (set BATSCHED_BIN or put batsched on PATH)")


GOLDEN = shared_dir() / "golden" if shared_dir() is not None else None
TINY = (DATA / "platform-16.xml", DATA / "tiny.json.gz", DATA / "tiny.easy_jobs.csv")
if GOLDEN is not None:
    BIG = (GOLDEN / "platform-100.xml", GOLDEN / "KTH-5k.json.gz", GOLDEN / "outputs" / "KTH-5k.easy_jobs.csv.gz")
else:
    BIG = TINY


# ------------------------------------------------------------------ helpers


def free_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def plain_workload(path: Path, tmp_path: Path) -> Path:
    """Batsim reads plain JSON only: decompress a ``.json.gz`` next to the run."""
    if path.suffix != ".gz":
        return path
    out = tmp_path / path.stem
    out.write_bytes(gzip.decompress(path.read_bytes()))
    return out


def read_jobs(path: Path) -> dict:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        return {row["job_id"]: row for row in csv.DictReader(f)}


def compare(a: dict, b: dict, tol: float) -> tuple[float, int]:
    """Share of the common jobs starting within ``tol`` s of each other; number of final states that differ."""
    common = set(a) & set(b)
    within = states = 0
    for job_id in common:
        if abs(float(a[job_id]["starting_time"]) - float(b[job_id]["starting_time"])) <= tol:
            within += 1
        states += a[job_id]["final_state"] != b[job_id]["final_state"]
    return within / max(len(common), 1), states


def run_batsim(platform, workload, prefix, endpoint, *extra) -> subprocess.CompletedProcess:
    cmd = [BATSIM, "-p", str(platform), "-w", str(workload), "-e", str(prefix), "-s", endpoint, "-q", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)


class Server:
    """``run_server`` in a thread (bound before Batsim starts); ``join()`` gives its exit code."""

    def __init__(self, scheduler, endpoint, **kwargs):
        import io

        self.err = io.StringIO()
        self.stats = ServerStats()
        self.code = None
        ready = threading.Event()

        def target():
            self.code = run_server(scheduler, endpoint, timeout=RUN_TIMEOUT, err=self.err, stats=self.stats,
                                   ready=ready, **kwargs)
            ready.set()

        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()
        assert ready.wait(30)

    def join(self) -> int:
        self.thread.join(RUN_TIMEOUT)
        assert not self.thread.is_alive(), "serve did not stop"
        return self.code


class Batsched:
    """The C++ batsched as a subprocess (it binds ``tcp://*:PORT``)."""

    def __init__(self, endpoint, *options):
        port = endpoint.rsplit(":", 1)[1]
        self.proc = subprocess.Popen([BATSCHED, "-s", f"tcp://*:{port}", *options, "--verbosity", "quiet"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def wait(self) -> int:
        try:
            return self.proc.wait(RUN_TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


@needs_batsim
@needs_batsched
def test_batsched_on_real_batsim_reproduces_the_golden_run(tmp_path):
    platform, workload, golden = TINY
    endpoint = free_endpoint()
    sched = Batsched(endpoint, "-v", "easy_bf")
    run = run_batsim(platform, plain_workload(workload, tmp_path), tmp_path / "ref", endpoint)
    assert sched.wait() == 0 and run.returncode == 0, run.stdout + run.stderr
    ours, expected = read_jobs(tmp_path / "ref_jobs.csv"), read_jobs(golden)
    assert set(ours) == set(expected)
    assert compare(ours, expected, 0.01) == (1.0, 0)


@needs_batsim
def test_real_batsim_drives_our_server_like_batsched(tmp_path):
    platform, workload, golden = BIG
    endpoint = free_endpoint()
    server = Server(build_scheduler("easy", policy="fcfs", reservations="cores"), endpoint)
    run = run_batsim(platform, plain_workload(workload, tmp_path), tmp_path / "real", endpoint)
    assert server.join() == 0, server.err.getvalue()
    assert run.returncode == 0, run.stdout + run.stderr
    real = read_jobs(tmp_path / "real_jobs.csv")
    # Same decisions as batsched 1.4.0 under the same Batsim (measured: byte-identical jobs file).
    expected = read_jobs(golden)
    assert set(real) == set(expected)
    assert compare(real, expected, 0.01) == (1.0, 0)
    # And the embedded simulator agrees with the real Batsim.
    embedded, _ = simulate(platform, workload, build_scheduler("easy", policy="fcfs", reservations="cores"),
                           prefix=tmp_path / "embedded")
    emb = read_jobs(Path(embedded.jobs_csv))
    assert set(emb) == set(real)
    share, states = compare(real, emb, 5.0)
    assert share >= 0.999 and states == 0


@needs_batsim
def test_real_batsim_kill_and_requeue_through_our_server(tmp_path):
    platform, workload, _ = TINY
    endpoint = free_endpoint()
    scheduler = KillRequeue()
    server = Server(scheduler, endpoint)
    run = run_batsim(platform, plain_workload(workload, tmp_path), tmp_path / "real", endpoint,
                     "--enable-dynamic-jobs")
    assert server.join() == 0, server.err.getvalue()
    assert run.returncode == 0, run.stdout + run.stderr
    assert scheduler.requeued, "the test scheduler should have requeued something"
    real = read_jobs(tmp_path / "real_jobs.csv")
    for job_id in scheduler.requeued:
        short = job_id.split("!", 1)[1]
        assert real[short.split("#")[0]]["final_state"] == "COMPLETED_KILLED"
        assert real[short]["final_state"] in ("COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED")
    embedded_scheduler = KillRequeue()
    embedded, _ = simulate(platform, workload, embedded_scheduler, prefix=tmp_path / "embedded", dynamic_jobs=True)
    emb = read_jobs(Path(embedded.jobs_csv))
    assert embedded_scheduler.requeued == scheduler.requeued
    assert set(emb) == set(real)
    assert compare(real, emb, 5.0) == (1.0, 0)


@needs_batsim
@pytest.mark.skipif(GOLDEN is None, reason="needs the shared KTH-5k workload")
@pytest.mark.parametrize("speculative", [False, True])
def test_real_batsim_classifier_kills_through_our_server(tmp_path, speculative):
    """Kills of false-small jobs, and with speculative backfilling of large ones (more kills, and
    requeues late in the run: registration must stay open for them), on the real Batsim."""
    platform, workload, _ = BIG
    endpoint = free_endpoint()
    options = dict(policy="fcfs", classifier="random-forest", kill_false_small=True)
    if speculative:
        options.update(order_by_probability="both", probability_head_start=604800, speculative_backfill=0.0)
    server = Server(build_scheduler("easy", **options), endpoint)
    run = run_batsim(platform, plain_workload(workload, tmp_path), tmp_path / "real", endpoint,
                     "--enable-dynamic-jobs")
    assert server.join() == 0, server.err.getvalue()
    assert run.returncode == 0, run.stdout + run.stderr
    real = read_jobs(tmp_path / "real_jobs.csv")
    requeued = [j for j in real if "#" in j]
    assert requeued, "the classifier should have killed and requeued false-small jobs"
    for job_id in requeued:
        assert real[job_id.split("#")[0]]["final_state"] == "COMPLETED_KILLED"
    originals = [j for j in real if "#" not in j]
    assert len(originals) == 5000
    embedded, _ = simulate(platform, workload, build_scheduler("easy", **options), prefix=tmp_path / "embedded")
    emb = read_jobs(Path(embedded.jobs_csv))
    # Simultaneous completions may reach the scheduler in another order in the two simulators
    # (SimGrid's float rounding); the classifier trains in submission order, so it does not care.
    share, _ = compare(real, emb, 5.0)
    assert share >= 0.995


@needs_batsim
@pytest.mark.parametrize("timing", ["immediate", "next-event"])
def test_real_batsim_runs_the_eloss_triple_through_our_server(tmp_path, timing):
    """Corrections on the real Batsim: every CALL_ME_LATER is in Batsim's future, every job ends
    once, and the schedule is the embedded simulator's."""
    platform, workload, _ = BIG
    endpoint = free_endpoint()
    options = dict(policy="fcfs", predictor="eloss", correction="incremental", backfill_order="sjbf",
                   correction_timing=timing)
    scheduler = build_scheduler("easy", **options)
    server = Server(scheduler, endpoint)
    run = run_batsim(platform, plain_workload(workload, tmp_path), tmp_path / "real", endpoint)
    assert server.join() == 0, server.err.getvalue()
    assert run.returncode == 0, run.stdout + run.stderr
    real = read_jobs(tmp_path / "real_jobs.csv")
    assert {row["final_state"] for row in real.values()} <= {"COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"}
    assert scheduler.report()["predictions"]["nb_corrections"] > 0
    embedded_scheduler = build_scheduler("easy", **options)
    embedded, _ = simulate(platform, workload, embedded_scheduler, prefix=tmp_path / "embedded")
    emb = read_jobs(Path(embedded.jobs_csv))
    assert set(emb) == set(real)
    share, states = compare(real, emb, 5.0)
    assert share >= 0.99 and states == 0


@needs_batsched
@pytest.mark.parametrize("variant, options", [("easy", ["-v", "easy_bf"]), ("conservative", ["-v", "conservative_bf"])])
def test_our_simulator_drives_the_cpp_batsched(tmp_path, variant, options):
    platform, workload, golden = BIG
    if GOLDEN is not None:
        golden = GOLDEN / "outputs" / f"KTH-5k.{variant}_jobs.csv.gz"
    elif variant != "easy":
        pytest.skip("only the easy golden run is bundled")
    endpoint = free_endpoint()
    sched = Batsched(endpoint, *options)
    # batsched 1.4.0 never sends NOTIFY registration_finished: run like Batsim without dynamic jobs.
    args = Namespace(platform=str(platform), workload=[str(workload)], export=str(tmp_path / "peer"),
                     connect=endpoint, timeout=60.0, dynamic_jobs=False)
    result = simulate_connected(args)
    assert sched.wait() == 0
    ours, expected = read_jobs(Path(result.jobs_csv)), read_jobs(golden)
    assert set(ours) == set(expected)
    assert compare(ours, expected, 0.01) == (1.0, 0)
