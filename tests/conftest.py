"""Shared fixtures: where the bundled data and the (optional) shared golden data live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
# Snapshots are signed with this key in the tests (never a key file in the user's config folder); set
# here, before any worker process starts, so that the processes a test starts sign alike.
os.environ.setdefault("BATSCHED_ML_SNAPSHOT_KEY", "batsched-ml tests")


def shared_dir() -> Path | None:
    """The team's shared data (golden Batsim runs, full traces), or None when absent.

    ``BATSCHED_ML_SHARED``, when set, is the only place looked at (an empty folder hides the data: CI's
    second pass runs that way); otherwise ``../shared`` beside the clone.
    """
    env = os.environ.get("BATSCHED_ML_SHARED")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "shared"
    return path if (path / "golden").is_dir() else None


@pytest.fixture
def shared() -> Path:
    path = shared_dir()
    if path is None:
        pytest.skip("../shared (golden Batsim runs, traces) is not available")
    return path


class SharedDataRecorder:
    """Records the tests that read the shared data, so that CI can rerun them with it hidden.

    A test that opens, lists or hands a subprocess a path under the shared folder is recorded (Python's
    audit hooks see every ``open``, directory listing and ``subprocess.Popen``); with the data hidden it
    must skip or pass, never fail: that is what a user's clone, which has no ``../shared``, meets.
    """

    EVENTS = ("open", "os.listdir", "os.scandir", "glob.glob", "subprocess.Popen", "os.exec")

    def __init__(self, root: Path, output: Path):
        self.roots = {str(root), str(root.resolve())}  # as tests spell it, and through any symlink
        self.output = output
        self.current: str | None = None
        self.touched: set[str] = set()
        import sys

        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple) -> None:
        if self.current is None or event not in self.EVENTS or self.current in self.touched:
            return
        for arg in args:
            items = arg if isinstance(arg, (list, tuple)) else (arg,)
            if any(isinstance(item, (str, bytes, os.PathLike)) and any(r in os.fsdecode(item) for r in self.roots)
                   for item in items if not isinstance(item, int)):
                self.touched.add(self.current)
                return

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item):
        self.current = item.nodeid
        yield
        self.current = None

    def pytest_sessionfinish(self):
        if self.touched:
            with open(self.output, "a", encoding="utf-8") as out:
                out.writelines(f"{nodeid}\n" for nodeid in sorted(self.touched))


def pytest_configure(config):
    output = os.environ.get("BATSCHED_ML_RECORD_SHARED_TESTS")
    root = shared_dir()
    if output and root is not None:
        config.pluginmanager.register(SharedDataRecorder(root, Path(output)), "shared-data-recorder")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def dask_scheduler_address():
    """A real ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1 (campaign tests)."""
    import subprocess
    import sys

    pytest.importorskip("distributed")
    from distributed import Client

    address = f"tcp://127.0.0.1:{_free_port()}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", address.rsplit(":", 1)[1], "--no-dashboard"], **quiet)]
    try:
        for _ in range(2):
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                                           "--nthreads", "1", "--no-nanny", "--no-dashboard",
                                           "--host", "127.0.0.1"], **quiet))
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
