"""Finished tasks, stored by cache key under ``RESULTS_DIR/cache/``: the row as JSON plus the
run's files. Each entry is written file by file with atomic renames, the row last, so an
interrupted write leaves no entry (the task simply runs again)."""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["ResultCache"]


class ResultCache:
    def __init__(self, results_dir):
        self.dir = Path(results_dir) / "cache"

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
