"""The package's import architecture (issue 24 §6): the layers of pyproject.toml's
``[tool.importlinter]`` hold (no module imports from a layer above its own) and no two sibling
modules import each other, directly or through others. ``lint-imports`` is import-linter's
command; the contract itself is in pyproject.toml."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def lint_imports() -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.fail("lint-imports not found: install the test extra (pip install -e '.[test]'), "
                    "which brings import-linter")
    return subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_import_contracts_are_kept():
    done = lint_imports()
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert f"{len(contracts)} kept, 0 broken" in done.stdout


def test_no_module_level_import_cycle():
    """Belt and braces: no strongly connected component of two or more modules at all."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("batsched_ml")
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan, iterative enough for this package's depth
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    assert cycles == []


def test_nothing_below_the_cli_imports_it():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("batsched_ml")
    cli = graph.find_descendants("batsched_ml.cli") | {"batsched_ml.cli"}
    importers = {m for module in cli for m in graph.find_modules_that_directly_import(module)}
    assert importers - cli == set()
