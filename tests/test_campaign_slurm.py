"""A campaign loses a Dask worker halfway through its tasks and still ends with the uninterrupted
campaign's results.csv (issue 42 §4): the lost worker's task is run again on the other worker and
resumes from its latest snapshot (the campaign says ``resumed:``, runs.log counts it).

Two ways to lose a worker: SIGKILL of a ``dask worker`` process (a real ``dask scheduler`` and two
workers on 127.0.0.1, the ``--dask`` path), and ``scancel`` of a worker's Slurm job (a one-node
Slurm started for the test, the ``--slurm`` path; skipped with its reason where Slurm cannot start:
not root, Slurm or munge not installed, dask-jobqueue missing). The campaign has two tasks, one per
worker, each ~3 s of CPU with a snapshot per simulated day, and the worker is lost once both tasks
have written one: the lost task had a snapshot to resume from, and would rerun from the start
without the checkpoints (the test then fails on ``resumed``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from batsched_ml.campaign.run import run_campaign  # noqa: E402
from batsched_ml.campaign.spec import load_campaign  # noqa: E402
from test_campaign import csv_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = f"""
[campaign]
name = "lost-worker"
baseline = "forest"
seeds = [1, 2]
checkpoint_every = "1d"

[traces.KTH1k]
workload = "{ROOT / 'workloads' / 'KTH-SP2-1k.json'}"
platform = "{ROOT / 'platforms' / 'cluster-100.xml'}"

[configs.forest]
scheduler = "probabilistic"
distribution = "forest"
"""
TASKS = 2
WAIT = 300  # seconds, for what a loaded 2-core machine may take


@pytest.fixture(scope="module")
def campaign_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("campaign") / "lost-worker.toml"
    path.write_text(CAMPAIGN)
    return path


@pytest.fixture(scope="module")
def uninterrupted(campaign_file) -> Path:
    """results.csv of the same campaign run in one process, never interrupted."""
    results = campaign_file.parent / "uninterrupted"
    outcome = run_campaign(load_campaign(campaign_file), results, workers=0, progress=False, log=lambda m: None)
    assert outcome.computed == TASKS and outcome.resumed == 0
    return results / "results.csv"


def _tasks_with_snapshots(results: Path) -> int:
    return sum(1 for folder in (results / "checkpoints").glob("*")
               if list((folder / "snapshots").glob("*.snapshot")))


def _campaign(campaign_file: Path, results: Path, *flags: str, env=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "batsched_ml.cli", "campaign", "run", str(campaign_file),
                             "-o", str(results), "--no-report", "--quiet", *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)


def _lose_a_worker_halfway(run: subprocess.Popen, results: Path, lose, running: int = TASKS) -> str:
    """Once the ``running`` tasks have a snapshot each, ``lose()`` one worker; returns the campaign's
    stderr."""
    deadline = time.monotonic() + WAIT
    while run.poll() is None and _tasks_with_snapshots(results) < running:
        assert time.monotonic() < deadline, "the tasks wrote no snapshots"
        time.sleep(0.05)
    assert run.poll() is None, f"the campaign ended before a worker was lost: {run.stderr.read()}"
    lose()
    try:
        _, stderr = run.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        run.kill()
        raise
    assert run.returncode == 0, stderr
    return stderr


def _assert_resumed_to_the_same_results(stderr: str, results: Path, uninterrupted: Path) -> None:
    resumed = [line for line in stderr.splitlines() if line.startswith("resumed: KTH1k/")]
    assert len(resumed) == 1, stderr  # the lost worker's task, from its snapshot ...
    assert float(resumed[0].split("simulated time ")[1].split()[0]) >= 86400  # ... of day 1 or later
    last = json.loads((results / "runs.log").read_text().splitlines()[-1])
    assert (last["computed"], last["resumed"], last["failed"]) == (TASKS, 1, 0)
    assert not list((results / "checkpoints").glob("*"))  # stored tasks need no snapshots
    assert csv_rows(results / "results.csv") == csv_rows(uninterrupted)


def _dask(*args: str, env) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_a_dask_worker_killed_mid_task_leaves_its_task_to_another_that_resumes_it(tmp_path, campaign_file,
                                                                                  uninterrupted):
    from distributed import Client
    from distributed.utils import open_port

    address = f"tcp://127.0.0.1:{open_port('127.0.0.1')}"
    # the settings docs/campaigns.md gives a cluster of one task per worker at a time
    env = dict(os.environ, DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION="1.0",
               DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING="False")
    procs = [_dask("distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                   "--no-dashboard", env=env)]
    try:
        workers = [_dask("distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny",
                         "--no-dashboard", "--host", "127.0.0.1", env=env) for _ in range(TASKS)]
        procs += workers
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(TASKS, timeout=120)
        results = tmp_path / "results"
        run = _campaign(campaign_file, results, "--dask", address)
        stderr = _lose_a_worker_halfway(run, results, lambda: os.kill(workers[0].pid, signal.SIGKILL))
        assert workers[0].wait() == -signal.SIGKILL
    finally:
        for proc in procs:
            _stop(proc)
    _assert_resumed_to_the_same_results(stderr, results, uninterrupted)


@pytest.fixture
def slurm(tmp_path):
    """A one-node Slurm (2 CPUs) for this test, and the environment its commands need."""
    pytest.importorskip("dask_jobqueue", reason="--slurm needs dask-jobqueue (pip install 'batsched-ml[slurm]')")
    from slurm_node import SlurmUnavailable, one_node_slurm

    try:
        started = one_node_slurm(tmp_path / "slurm", cpus=2, memory_mb=2000)
        env = started.__enter__()
    except SlurmUnavailable as exc:
        pytest.skip(f"no one-node Slurm here: {exc}")
    try:
        yield env
    finally:
        started.__exit__(None, None, None)


@pytest.mark.parametrize("jobs", [2, 1])
def test_a_slurm_worker_job_cancelled_mid_task_leaves_its_task_to_another_that_resumes_it(
        tmp_path, campaign_file, uninterrupted, slurm, jobs):
    """``--slurm 2``: the other job's worker (or the job replacing the cancelled one) resumes the task;
    ``--slurm 1``: only the job submitted in the cancelled one's place can."""
    logs = tmp_path / "worker-logs"
    # what each worker job asks of Slurm: dask-jobqueue's configuration, as docs/campaigns.md shows it;
    # a lost job is replaced 1 s after its worker left (Dask's lost-worker-timeout, 15 s by default)
    env = dict(slurm, DASK_JOBQUEUE__SLURM__CORES="1", DASK_JOBQUEUE__SLURM__MEMORY="1GB",
               DASK_JOBQUEUE__SLURM__WALLTIME="00:10:00", DASK_JOBQUEUE__SLURM__LOG_DIRECTORY=str(logs),
               DASK_DISTRIBUTED__DEPLOY__LOST_WORKER_TIMEOUT="1s")
    results = tmp_path / "results"
    run = _campaign(campaign_file, results, "--slurm", str(jobs), env=env)
    cancelled = []

    def cancel_one_job():
        jobs_now = subprocess.run(["squeue", "-h", "-o", "%i %T"], env=env, capture_output=True, text=True,
                                  check=True).stdout.split("\n")
        running = sorted(line.split()[0] for line in jobs_now if line.endswith(" RUNNING"))
        assert len(running) == jobs, jobs_now
        subprocess.run(["scancel", running[0]], env=env, check=True)
        cancelled.append(running[0])

    try:
        stderr = _lose_a_worker_halfway(run, results, cancel_one_job, running=jobs)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    _assert_resumed_to_the_same_results(stderr, results, uninterrupted)
    submitted = sorted(int(path.stem.rsplit("-", 1)[1]) for path in logs.glob("*.err"))
    assert submitted[:jobs] == list(range(1, jobs + 1)) and cancelled == ["1"], submitted
    if jobs == 1:
        assert submitted == [1, 2]  # the replacement, which alone could resume the task
    shutil.rmtree(logs, ignore_errors=True)


def test_slurm_flag_errors_are_one_line(tmp_path, campaign_file, monkeypatch, capsys):
    from batsched_ml.cli import main

    def error(*flags):
        assert main(["campaign", "run", str(campaign_file), "-o", str(tmp_path / "r"), "--quiet", *flags]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("batsched-ml: error: "), lines
        return lines[0]

    assert "drop --dask and --workers" in error("--slurm", "2", "--workers", "1")
    assert "number of Slurm jobs >= 1" in error("--slurm", "0")
    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)  # not installed
    assert "pip install 'batsched-ml[slurm]'" in error("--slurm", "2")
    assert not (tmp_path / "r" / "results.csv").exists()
