"""Finished tasks, stored by cache key under ``RESULTS_DIR/cache/``: the row as JSON plus the
run's files. Each entry is written file by file with atomic renames, the row last, so an
interrupted write leaves no entry (the task simply runs again). ``costs.json`` keeps each
configuration's simulation seconds per job, so the next run can start its longest tasks first."""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["ResultCache", "config_cost_key"]

COSTS = "costs.json"


def config_cost_key(argv) -> str:
    """A configuration's identity for run-time estimates: its simulate flags (not its name)."""
    return " ".join(argv)


class ResultCache:
    def __init__(self, results_dir):
        self.dir = Path(results_dir) / "cache"
        self._costs: dict[str, list[float]] | None = None   # flags -> [seconds, jobs]

    def _load_costs(self) -> dict[str, list[float]]:
        if self._costs is None:
            try:
                raw = json.loads((self.dir / COSTS).read_text(encoding="utf-8"))
                self._costs = {k: [float(v[0]), float(v[1])] for k, v in raw.items()}
            except (OSError, ValueError, TypeError, IndexError, AttributeError):
                self._costs = {}
        return self._costs

    def costs(self) -> dict[str, float]:
        """Seconds of simulation per job of each configuration seen so far (by its flags)."""
        return {k: s / n for k, (s, n) in self._load_costs().items() if n > 0 and s >= 0}

    def note_cost(self, argv, seconds, jobs: int) -> None:
        """Record one finished run (kept in memory until :meth:`save_costs`)."""
        if seconds is None or jobs <= 0:
            return
        entry = self._load_costs().setdefault(config_cost_key(argv), [0.0, 0.0])
        entry[0] += float(seconds)
        entry[1] += jobs

    def save_costs(self) -> None:
        if self._costs:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._write(self.dir / COSTS, json.dumps(self._costs, sort_keys=True).encode("utf-8"))

    def _row_path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def file(self, key: str, suffix: str) -> Path:
        return self.dir / f"{key}{suffix}"

    def get(self, key: str) -> dict | None:
        """The cached row of ``key``, or None when absent or incomplete."""
        path = self._row_path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not all(self.file(key, s).is_file() for s in entry.get("files", [])):
            return None
        return entry["row"]

    def put(self, key: str, row: dict, files: dict[str, bytes]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        for suffix, data in files.items():
            self._write(self.file(key, suffix), data)
        entry = {"row": row, "files": sorted(files)}
        self._write(self._row_path(key), json.dumps(entry, sort_keys=True, default=float).encode("utf-8"))

    def files(self, key: str) -> list[str]:
        try:
            return json.loads(self._row_path(key).read_text(encoding="utf-8")).get("files", [])
        except (OSError, ValueError):
            return []

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
