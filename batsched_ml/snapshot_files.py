"""Snapshot files: the documented, versioned and signed container of a paused simulation (issue 42).

Layout of format 3 (``docs/snapshots.md`` describes what each part holds)::

    batsched-ml snapshot 3\\n          the magic line and the format version
    {"sim_time": ..., "frames": [...]}\\n  the header: one JSON object (UTF-8) saying what the snapshot
                                       is, with the SHA-256 and size of each shared frame it needs
    hmac-sha256 <64 hex digits>\\n     HMAC-SHA256 of the two lines above and the payload
    <payload>                          the run's own frame: a pickle (protocol 5)

**Shared frames.** What a run ended or accumulated before the previous snapshot is in the frames
that earlier snapshots wrote (pickles compressed with Zstandard; with zlib in format 2, also read):
each is stored once, in ``frames/`` beside the snapshot files, named by its SHA-256
(``frames/<sha256>.frame``), and later snapshots list it in their header. So a snapshot writes
what changed since the previous one, not the whole history: a snapshot file is used with its
folder's ``frames/`` (copy both). The header, signed, names each
frame's digest, and a frame whose content does not match it is refused.

**Trust.** The payload is a pickle, and loading a pickle runs whatever code it names: a file someone
hands you must not be loaded. Every snapshot is signed with this installation's key and a file whose
signature does not verify is refused in one line, before anything is unpickled. The key is
``BATSCHED_ML_SNAPSHOT_KEY`` (its UTF-8 bytes) when set -- CI, tests, a cluster's workers that do not
share a home directory -- else a random key created on first use in
``$XDG_CONFIG_HOME/batsched-ml/snapshot.key`` (``~/.config`` by default), readable by its owner only.

**Atomic writes.** A snapshot is written to a temporary file beside its destination, synced, then
renamed over it: a process killed at any moment leaves the previous complete file, never a torn one.
``keep_last`` keeps the K latest snapshots of a folder.

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

__all__ = ["FORMAT_VERSION", "FRAMES", "KEY_ENV", "SUFFIX", "Frame", "Snapshot", "SnapshotError", "keep_last",
           "key_path", "signing_key", "snapshot_name", "snapshots_in"]

FORMAT_VERSION = 3
READABLE = ("2", "3")  # format 3 compresses the shared frames with Zstandard, not zlib
FRAMES = "frames"  # the folder of the shared frames, beside the snapshot files
FRAME_SUFFIX = ".frame"
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


class Frame:
    """A part of a run's snapshots written once and shared by the later ones: its bytes and their
    SHA-256 (hex; computed once)."""

    __slots__ = ("data", "digest")

    def __init__(self, data: bytes, digest: str | None = None):
        self.data = data
        self.digest = digest or hashlib.sha256(data).hexdigest()

    def __repr__(self) -> str:
        return f"Frame({self.digest[:12]}..., {len(self.data)} bytes)"


def frames_dir(path) -> Path:
    """Where the shared frames of the snapshot file ``path`` are: ``frames/`` beside it."""
    return Path(path).parent / FRAMES


@dataclass
class Snapshot:
    """A paused run: ``header`` (JSON: what it is, where it stopped, the run it continues),
    ``payload`` (the run's own pickled objects) and ``frames`` (the shared frames it refers to),
    for ``Simulator.from_snapshot``."""

    header: dict
    payload: bytes = field(repr=False)
    frames: list = field(default_factory=list, repr=False)  # Frame objects, in order
    path: str | None = None  # the file it was loaded from or saved to

    @property
    def size(self) -> int:
        """Bytes of the snapshot file and of every frame it needs."""
        return len(self.payload) + sum(len(frame.data) for frame in self.frames)

    @property
    def sim_time(self) -> float:
        """The simulated date (seconds) the run was paused at."""
        return float(self.header["sim_time"])

    def encode(self, key: bytes | None = None) -> bytes:
        """The file's bytes: header (with the frames' digests and sizes), signature, payload."""
        header = dict(self.header, frames=[[frame.digest, len(frame.data)] for frame in self.frames])
        head = MAGIC + str(FORMAT_VERSION).encode() + b"\n" + json.dumps(header, sort_keys=True).encode() + b"\n"
        return head + SIGNATURE + _signature(key or signing_key(), head, self.payload) + b"\n" + self.payload

    def save(self, path, key: bytes | None = None) -> int:
        """Write the frames not yet in ``frames/`` beside ``path``, then the file, each atomically (a
        temporary file synced, then renamed); returns the bytes written."""
        written = 0
        folder = frames_dir(path)
        for frame in self.frames:
            target = folder / f"{frame.digest}{FRAME_SUFFIX}"
            if not target.exists():
                write_atomically(target, frame.data)
                written += len(frame.data)
        data = self.encode(key)
        write_atomically(path, data)
        self.path = str(path)
        return written + len(data)

    @classmethod
    def load(cls, path, key: bytes | None = None) -> "Snapshot":
        """Read and check a snapshot file: its format, then its signature (before any unpickling)."""
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise SnapshotError(f"cannot read snapshot {path}: {exc.strerror or exc}") from None
        return cls.decode(data, str(path), key, frames_dir(path))

    @classmethod
    def decode(cls, data: bytes, name: str = "snapshot", key: bytes | None = None, frames=None) -> "Snapshot":
        """A snapshot from its file's bytes, its shared frames read from the folder ``frames``."""
        lines = data.split(b"\n", 3)
        if len(lines) < 4 or not lines[0].startswith(MAGIC):
            raise SnapshotError(f"{name} is not a batsched-ml snapshot")
        version = lines[0][len(MAGIC):].decode("ascii", "replace")
        if version not in READABLE:
            raise SnapshotError(f"{name} is a snapshot of format {version}; this batsched-ml reads formats "
                                f"{' and '.join(READABLE)}")
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
        listed = header.pop("frames", [])
        return cls(header, body, [_read_frame(name, frames, digest, size) for digest, size in listed], name)


def _read_frame(name: str, folder, digest: str, size: int) -> Frame:
    """A frame a snapshot lists, checked against the digest its signed header gives."""
    if folder is None:
        raise SnapshotError(f"{name} needs its shared frames: load it from its file (Snapshot.load)")
    path = Path(folder) / f"{digest}{FRAME_SUFFIX}"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"{name} needs its frame {path}, which cannot be read ({exc.strerror or exc}): a "
                            f"snapshot is used with the {FRAMES}/ folder beside it") from None
    frame = Frame(data)
    if len(data) != size or frame.digest != digest:
        raise SnapshotError(f"{name}'s frame {path} was changed since it was written (its digest differs)")
    return frame


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


def keep_last(directory, keep: int, newest: Path | None = None) -> list[Path]:
    """Delete all but the ``keep`` latest snapshots of ``directory``, the frames that only the
    deleted ones needed, and the temporary files that a killed writer left; returns the deleted
    snapshots. ``newest``: the snapshot a run just wrote; those dated after it are of a run it
    replaces (resumed from an earlier snapshot, or started again) and are deleted too."""
    snapshots = snapshots_in(directory)
    later = []
    if newest is not None and Path(newest).name in {p.name for p in snapshots}:
        cut = [p.name for p in snapshots].index(Path(newest).name) + 1
        snapshots, later = snapshots[:cut], snapshots[cut:]
    old, kept = (snapshots[:-keep], snapshots[-keep:]) if keep > 0 else ([], snapshots)
    old += later
    needed = set()
    for path in kept if old else ():
        listed = _frames_listed(path)
        if listed is None:  # unreadable: its frames are kept, and so are all others
            needed = None
            break
        needed |= listed
    for path in old:
        unused = (_frames_listed(path) or set()) - (needed or set())
        path.unlink(missing_ok=True)
        if needed is not None:
            for digest in unused:
                (Path(directory) / FRAMES / f"{digest}{FRAME_SUFFIX}").unlink(missing_ok=True)
    for folder, pattern in ((Path(directory), f".snapshot-*{SUFFIX}.tmp-*"),
                            (Path(directory) / FRAMES, f".*{FRAME_SUFFIX}.tmp-*")):
        for stale in folder.glob(pattern):
            pid = stale.name.rpartition("-")[2]
            if pid.isdigit() and not _alive(int(pid)):
                stale.unlink(missing_ok=True)
    return old


def _frames_listed(path: Path) -> set | None:
    """The digests of the frames a snapshot file's header lists (None if it cannot be read)."""
    try:
        with open(path, "rb") as src:
            src.readline()
            header = json.loads(src.readline())
        return {digest for digest, _ in header.get("frames", [])}
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
