"""A one-node Slurm on 127.0.0.1 for tests: munged, slurmctld and slurmd started from a temporary
configuration (nothing of /etc is read or written), killed on exit even when the test failed.

Needs root (slurmd starts jobs as their user) and Debian's ``slurmctld``, ``slurmd`` and ``munge``
packages (Slurm 22.05). :func:`one_node_slurm` raises :class:`SlurmUnavailable`, whose message says
why, where it cannot start: the tests skip with that reason.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo")


class SlurmUnavailable(RuntimeError):
    """Why a one-node Slurm cannot run here."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary(name: str) -> str:
    for folder in (None, "/usr/sbin", "/sbin"):
        path = shutil.which(name, path=folder)
        if path:
            return path
    raise SlurmUnavailable(f"{name} is not installed (Debian: apt-get install slurmctld slurmd munge)")


def slurm_conf(root: Path, ctld_port: int, slurmd_port: int, munge_socket: Path, cpus: int, memory_mb: int) -> str:
    """A slurm.conf: one node (``localhost``, 127.0.0.1) in one partition ``debug``, every state
    and log file under ``root``, no cgroups, no accounting."""
    return "\n".join([
        "ClusterName=batschedtest",
        "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SlurmdParameters=config_overrides",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "MpiDefault=none",
        "ReturnToService=2",
        "KillWait=2",  # scancel: SIGTERM, then SIGKILL 2 s later
        "SchedulerParameters=sched_interval=1",
        f"NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN",
        "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


@contextmanager
def one_node_slurm(root, *, cpus: int = 2, memory_mb: int = 2000, timeout: float = 30.0):
    """Start munged, slurmctld and slurmd under ``root``; yields the environment (``SLURM_CONF``)
    that Slurm's commands (sbatch, squeue, scancel) need. Every daemon is killed on exit."""
    if os.geteuid() != 0:
        raise SlurmUnavailable("a one-node Slurm needs root (slurmd runs the jobs as their users)")
    paths = {name: _binary(name) for name in DAEMONS + CLIENTS}
    root = Path(root)
    for sub in ("state", "spool", "munge"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(root / "munge", 0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    munge_socket = root / "munge" / "munge.socket"
    conf = root / "slurm.conf"
    conf.write_text(slurm_conf(root, _free_port(), _free_port(), munge_socket, cpus, memory_mb))
    env = dict(os.environ, SLURM_CONF=str(conf))
    with ExitStack() as stack:
        def start(*argv):
            log = open(root / f"{Path(argv[0]).name}.out", "wb")
            stack.callback(log.close)
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            stack.callback(_kill, proc)
            return proc

        start(paths["munged"], "--foreground", "--force", f"--key-file={key}", f"--socket={munge_socket}",
              f"--pid-file={root / 'munge' / 'munged.pid'}", f"--seed-file={root / 'munge' / 'munged.seed'}",
              f"--log-file={root / 'munge' / 'munged.log'}")
        _wait(lambda: munge_socket.exists(), timeout, "munged did not start", root / "munge" / "munged.log")
        daemons = [start(paths["slurmctld"], "-D", "-i", "-f", str(conf)),
                   start(paths["slurmd"], "-D", "-N", "localhost", "-f", str(conf))]

        def node_idle():
            for proc in daemons:
                if proc.poll() is not None:
                    out = (root / f"{Path(proc.args[0]).name}.out").read_text(errors="replace").strip()
                    raise SlurmUnavailable(f"{Path(proc.args[0]).name} exited ({proc.returncode}): "
                                           f"{out.splitlines()[-1:] or 'no output'}")
            out = subprocess.run([paths["sinfo"], "-h", "-N", "-o", "%T"], env=env, capture_output=True, text=True)
            return out.returncode == 0 and out.stdout.strip() in ("idle", "mixed", "allocated")

        _wait(node_idle, timeout, "the Slurm node did not come up", root / "slurmctld.log", root / "slurmd.log")
        stack.callback(_cancel_every_job, paths, env)  # (before the daemons go: slurmd ends the jobs' processes)
        yield env


def _cancel_every_job(paths: dict, env: dict, timeout: float = 20.0) -> None:
    """Cancel the jobs left on this cluster (a failed test's workers) and wait until they are gone."""
    def jobs():
        out = subprocess.run([paths["squeue"], "-h", "-o", "%i"], env=env, capture_output=True, text=True)
        return out.stdout.split() if out.returncode == 0 else []

    left = jobs()
    if left:
        subprocess.run([paths["scancel"], *left], env=env, capture_output=True)
        deadline = time.monotonic() + timeout
        while jobs() and time.monotonic() < deadline:
            time.sleep(0.2)


def _kill(proc: subprocess.Popen) -> None:
    """The daemon and what it started (its session): slurmd's job steps too."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _wait(ready, timeout: float, what: str, *logs: Path) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            tails = [f"{log.name}: {log.read_text(errors='replace').strip().splitlines()[-1:]}"
                     for log in logs if log.exists()]
            raise SlurmUnavailable(f"{what} within {timeout:g} s ({'; '.join(tails) or 'no log'})")
        time.sleep(0.2)
