"""``batsched-ml serve`` and ``simulate --connect`` from the command line, over real sockets:
Batsim's dynamic-jobs flag, what the commands say, and a strict server that answers every
protocol violation with one line and exit 2 (never a traceback)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq

from batsched_ml.cli import main as cli_main
from batsched_ml.protocol import events as ev
from batsched_ml.protocol.codec import encode
from batsched_ml.server.transport import ERROR_PREFIX

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
TINY = (DATA / "platform-16.xml", DATA / "tiny.json.gz")
TIMEOUT = 20.0


def tcp_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def start_serve(endpoint, *extra, env=None) -> subprocess.Popen:
    """``batsched-ml serve`` as its own process, the way a user starts it next to Batsim."""
    return subprocess.Popen([sys.executable, "-m", "batsched_ml.cli", "serve", "-s", endpoint, "--timeout", "20",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=env)


def simulate_cli(prefix, *extra) -> int:
    return cli_main(["simulate", "-p", str(TINY[0]), "-w", str(TINY[1]), "-e", str(prefix), *extra])


# ------------------------------------------------------------------ dynamic jobs (Batsim's flag)


@pytest.mark.parametrize("flags", [(), ("--enable-dynamic-jobs",)], ids=["default-off", "enabled"])
def test_serve_plus_connect_equals_in_process_byte_for_byte(tmp_path, capsys, flags):
    """The README's claim, with real processes and sockets, with dynamic jobs off (Batsim's default)
    and on (``--enable-dynamic-jobs`` in both commands)."""
    endpoint = tcp_endpoint()
    serve = start_serve(endpoint, "--scheduler", "easy")
    code = simulate_cli(tmp_path / "remote", "--connect", endpoint, "--timeout", "20", *flags)
    _, err = serve.communicate(timeout=TIMEOUT)
    assert code == 0 and serve.returncode == 0, err
    assert simulate_cli(tmp_path / "inproc", *flags) == 0
    remote = (tmp_path / "remote_jobs.csv").read_bytes()
    assert remote == (tmp_path / "inproc_jobs.csv").read_bytes()
    # The flag does something: with dynamic jobs, serve's NOTIFY registration_finished is one more
    # message for Batsim, which shifts its timing (the CSV differs from the other setting's).
    other = () if flags else ("--enable-dynamic-jobs",)
    assert simulate_cli(tmp_path / "other", *other) == 0
    assert (tmp_path / "other_jobs.csv").read_bytes() != remote
    capsys.readouterr()


def test_connect_default_is_off_like_batsim(tmp_path, capsys):
    """A requeueing scheduler behind serve needs Batsim's --enable-dynamic-jobs; without it both
    sides say so, naming the flag (a scheduler that never registers jobs works as with Batsim)."""
    endpoint = tcp_endpoint()
    serve = start_serve(endpoint, "--classifier", "clairvoyant", "--kill-false-small")
    code = simulate_cli(tmp_path / "remote", "--connect", endpoint, "--timeout", "20")
    _, err = serve.communicate(timeout=TIMEOUT)
    assert code == 2 and serve.returncode == 2
    assert "--enable-dynamic-jobs" in err and "Traceback" not in err
    assert "--enable-dynamic-jobs" in capsys.readouterr().err


def test_no_dynamic_jobs_is_a_deprecated_alias(tmp_path, capsys):
    assert simulate_cli(tmp_path / "a", "--no-dynamic-jobs") == 0
    assert "--no-dynamic-jobs is deprecated" in capsys.readouterr().err
    assert simulate_cli(tmp_path / "b") == 0
    assert (tmp_path / "a_jobs.csv").read_bytes() == (tmp_path / "b_jobs.csv").read_bytes()
