"""The documentation site: it builds with warnings as errors (``mkdocs build --strict``, also run
by .ci/run), and every code block that names an example file (first line ``# examples/...``) is
that file exactly, so the tutorial and the plugin pages cannot drift from the tested examples."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```\w*\n# (examples/\S+)\n(.*?)^```", re.S | re.M)


def test_code_blocks_naming_an_example_are_that_example():
    checked = 0
    for page in (ROOT / "docs").rglob("*.md"):
        for path, body in BLOCK.findall(page.read_text(encoding="utf-8")):
            assert body == (ROOT / path).read_text(encoding="utf-8"), f"{page.name}: block of {path} differs"
            checked += 1
    assert checked >= 7  # the tutorial's two files and one per plugin kind


def test_the_site_builds_strictly(tmp_path):
    try:
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("the docs extra is not installed: pip install -e '.[docs]'")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "tutorial" / "index.html").is_file()
    reference = (tmp_path / "site" / "configuration" / "index.html").read_text(encoding="utf-8")
    assert "--kill-false-small" in reference and "<!-- settings -->" not in reference
    # the API reference (issue 40 §6): no raw Sphinx role, Job's fields and needs_walltime listed
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert not re.findall(r":(?:class|meth|func|data|attr|mod|exc):<code>", api)
    for field in ("id", "walltime", "res", "data", "estimate", "start_time", "final_state", "info"):
        assert f'id="batsched_ml.api.Job.{field}"' in api, field
    assert 'id="batsched_ml.api.QueueScheduler.needs_walltime"' in api
