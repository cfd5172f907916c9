"""Snapshot files: the documented, versioned and signed container of a paused simulation (issue 42).

Layout of format 1 (``docs/snapshots.md`` describes what each part holds)::

    batsched-ml snapshot 1\\n          the magic line and the format version
    {"sim_time": ..., ...}\\n          the header: one JSON object (UTF-8) saying what the snapshot is
    hmac-sha256 <64 hex digits>\\n     HMAC-SHA256 of the two lines above and the payload
    <payload>                          the paused run: frames of zlib-compressed pickles (protocol 5)

**Trust.** The payload is a pickle, and loading a pickle runs whatever code it names: a file someone
hands you must not be loaded. Every snapshot is signed with this installation's key and a file whose
signature does not verify is refused in one line, before anything is unpickled. The key is
``BATSCHED_ML_SNAPSHOT_KEY`` (its UTF-8 bytes) when set -- CI, tests, a cluster's workers that do not
share a home directory -- else a random key created on first use in
``$XDG_CONFIG_HOME/batsched-ml/snapshot.key`` (``~/.config`` by default), readable by its owner only.

**Atomic writes.** A snapshot is written to a temporary file beside its destination, synced, then
renamed over it: a process killed at any moment leaves the previous complete file, never a torn one.
:func:`keep_last` keeps the K latest snapshots of a folder.

Standard library only: a bottom-layer module (the simulator, the CLI and campaigns use it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FORMAT_VERSION", "KEY_ENV", "SUFFIX", "Snapshot", "SnapshotError", "keep_last", "key_path",
           "signing_key", "snapshot_name", "snapshots_in"]

FORMAT_VERSION = 1
MAGIC = b"batsched-ml snapshot "
KEY_ENV = "BATSCHED_ML_SNAPSHOT_KEY"
SUFFIX = ".snapshot"
SIGNATURE = b"hmac-sha256 "


class SnapshotError(ValueError):
    """A snapshot that cannot be used as asked: unreadable, unsigned, of another format or run (one line)."""


def key_path() -> Path:
    """Where this installation's signing key lives when ``BATSCHED_ML_SNAPSHOT_KEY`` is not set."""
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "batsched-ml" / "snapshot.key"


def signing_key() -> bytes:
    """The key snapshots are signed and checked with: ``BATSCHED_ML_SNAPSHOT_KEY``, else the key
    file (created on first use, mode 0600)."""
    given = os.environ.get(KEY_ENV)
    if given:
        return given.encode("utf-8")
    path = key_path()
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise SnapshotError(f"cannot read the snapshot signing key {path}: {exc.strerror or exc}") from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it meanwhile
        return path.read_bytes().strip()
    except OSError as exc:
        raise SnapshotError(f"cannot create the snapshot signing key {path} ({exc.strerror or exc}); set "
                            f"{KEY_ENV} instead") from None
    key = secrets.token_hex(32).encode("ascii")
    with os.fdopen(fd, "wb") as out:
        out.write(key + b"\n")
    return key


def _signature(key: bytes, head: bytes, payload: bytes) -> bytes:
    mac = hmac.new(key, head, hashlib.sha256)
    mac.update(payload)
    return mac.hexdigest().encode("ascii")


@dataclass
class Snapshot:
    """A paused run: ``header`` (JSON: what it is, where it stopped, the run it continues) and
    ``payload`` (the pickled run, for ``Simulator.from_snapshot``)."""

    header: dict
    payload: bytes = field(repr=False)
    path: str | None = None  # the file it was loaded from or saved to

    @property
    def sim_time(self) -> float:
        """The simulated date (seconds) the run was paused at."""
        return float(self.header["sim_time"])

    def encode(self, key: bytes | None = None) -> bytes:
        """The file's bytes: header, signature, payload."""
        head = MAGIC + str(FORMAT_VERSION).encode() + b"\n" + json.dumps(self.header, sort_keys=True).encode() + b"\n"
        return head + SIGNATURE + _signature(key or signing_key(), head, self.payload) + b"\n" + self.payload

    def save(self, path, key: bytes | None = None) -> int:
        """Write atomically (a temporary file synced, then renamed over ``path``); returns its size."""
        data = self.encode(key)
        write_atomically(path, data)
        self.path = str(path)
        return len(data)

    @classmethod
    def load(cls, path, key: bytes | None = None) -> "Snapshot":
        """Read and check a snapshot file: its format, then its signature (before any unpickling)."""
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise SnapshotError(f"cannot read snapshot {path}: {exc.strerror or exc}") from None
        return cls.decode(data, str(path), key)

    @classmethod
    def decode(cls, data: bytes, name: str = "snapshot", key: bytes | None = None) -> "Snapshot":
        lines = data.split(b"\n", 3)
        if len(lines) < 4 or not lines[0].startswith(MAGIC):
            raise SnapshotError(f"{name} is not a batsched-ml snapshot")
        version = lines[0][len(MAGIC):].decode("ascii", "replace")
        if version != str(FORMAT_VERSION):
            raise SnapshotError(f"{name} is a snapshot of format {version}; this batsched-ml reads format "
                                f"{FORMAT_VERSION}")
        head = lines[0] + b"\n" + lines[1] + b"\n"
        signature, body = lines[2], lines[3]
        expected = SIGNATURE + _signature(key or signing_key(), head, body)
        if not hmac.compare_digest(signature, expected):
            where = f"{KEY_ENV}" if os.environ.get(KEY_ENV) else str(key_path())
            raise SnapshotError(f"{name} is not signed with this installation's key ({where}): it was changed, "
                                f"or written elsewhere; refusing to load it (a snapshot's payload is a pickle, "
                                f"which runs code when loaded)")
        try:
            header = json.loads(lines[1])
        except ValueError as exc:
            raise SnapshotError(f"{name} is damaged: {exc}") from None
        return cls(header, body, name)


def write_atomically(path, data: bytes) -> None:
    """``data`` in ``path`` or, if the process dies first, whatever ``path`` held before."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(temporary, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    try:
        directory = os.open(path.parent, os.O_RDONLY)
    except OSError:  # pragma: no cover - a platform without directory handles
        return
    try:
        os.fsync(directory)  # the rename itself survives a crash of the machine
    finally:
        os.close(directory)


def snapshot_name(sim_time: float) -> str:
    """A snapshot's file name: its simulated date, zero-padded so that names sort by date."""
    return f"snapshot-{int(sim_time):012d}s{SUFFIX}"


def snapshots_in(directory) -> list[Path]:
    """The snapshot files of ``directory``, the earliest date first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.name.startswith("snapshot-") and p.name.endswith(SUFFIX))


def keep_last(directory, keep: int) -> list[Path]:
    """Delete all but the ``keep`` latest snapshots of ``directory`` (and temporary files that a killed
    writer left); returns the deleted ones."""
    old = snapshots_in(directory)[:-keep] if keep > 0 else []
    for path in old:
        path.unlink(missing_ok=True)
    for stale in Path(directory).glob(f".snapshot-*{SUFFIX}.tmp-*"):
        pid = stale.name.rpartition("-")[2]
        if pid.isdigit() and not _alive(int(pid)):
            stale.unlink(missing_ok=True)
    return old


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
