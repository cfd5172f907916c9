"""Shared fixtures: where the bundled data and the (optional) shared golden data live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"


def shared_dir() -> Path | None:
    env = os.environ.get("BATSCHED_ML_SHARED")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "shared")
    for path in candidates:
        if (path / "golden").is_dir():
            return path
    return None


@pytest.fixture
def shared() -> Path:
    path = shared_dir()
    if path is None:
        pytest.skip("../shared (golden Batsim runs, traces) is not available")
    return path
