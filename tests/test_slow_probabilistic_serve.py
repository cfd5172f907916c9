"""Probabilistic backfilling through ``serve`` gives the embedded run's schedule on KTH-5k (slow).

For each runtime distribution: ``batsched-ml simulate`` (embedded), then ``batsched-ml serve`` as
its own process driven by ``batsched-ml simulate --connect`` (the embedded simulator acting as
Batsim 4.2.1); the two jobs CSVs must be byte-identical. Real processes and sockets, the full
golden workload (5,000 jobs): about a minute per distribution, hence ``slow``
(``python -m pytest -m slow tests/test_slow_probabilistic_serve.py``). CI checks the same claim
on a 200-job excerpt (``test_server.py``, ``test_equivalences.py``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_server import tcp_endpoint  # tests/ is on sys.path (pytest's rootdir conftest)

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 600

pytestmark = pytest.mark.slow


def _cli(*args) -> list:
    return [sys.executable, "-m", "batsched_ml.cli", *map(str, args)]


@pytest.mark.parametrize("distribution", ["hmm", "user", "forest"])
def test_serve_and_connect_give_the_embedded_schedule_on_kth_5k(shared, tmp_path, distribution):
    platform, workload = shared / "golden" / "platform-100.xml", shared / "golden" / "KTH-5k.json.gz"
    flags = ["--scheduler", "probabilistic", "--distribution", distribution]
    embedded = subprocess.run(_cli("simulate", "-p", platform, "-w", workload, "-e", tmp_path / "inproc",
                                   "--quiet", *flags), cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    assert embedded.returncode == 0, embedded.stderr
    endpoint = tcp_endpoint()
    serve = subprocess.Popen(_cli("serve", "-s", endpoint, "--timeout", "120", *flags), cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        connect = subprocess.run(_cli("simulate", "-p", platform, "-w", workload, "-e", tmp_path / "remote",
                                      "--quiet", "--connect", endpoint, "--timeout", "120"),
                                 cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
        _, serve_err = serve.communicate(timeout=TIMEOUT)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    assert connect.returncode == 0 and serve.returncode == 0, connect.stderr + serve_err
    remote = (tmp_path / "remote_jobs.csv").read_bytes()
    assert remote.count(b"\n") == 5001  # every job of the workload, and the header
    assert remote == (tmp_path / "inproc_jobs.csv").read_bytes()
