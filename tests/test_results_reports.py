"""The campaign reports committed under ``benchmarks/results/<campaign>/`` are generated, not edited:
``campaign report`` on the committed ``results.csv`` and ``campaign.toml`` (the campaign as run)
writes the committed ``report.md`` byte for byte. No simulation runs here."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
COMMITTED = sorted(p.parent.name for p in RESULTS.glob("*/report.md"))


def test_every_committed_report_has_its_inputs():
    assert COMMITTED, "no committed campaign report found"
    for name in COMMITTED:
        assert (RESULTS / name / "results.csv").is_file(), name
        assert (RESULTS / name / "campaign.toml").is_file(), name


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_report_is_regenerated_byte_for_byte(name, tmp_path, capsys):
    from batsched_ml.cli import main

    results = tmp_path / name  # the same folder name: a report names nothing of where it was made
    results.mkdir()
    for kept in ("results.csv", "campaign.toml", "trainings.csv"):  # (trainings.csv: when it has trainings)
        if kept != "trainings.csv" or (RESULTS / name / kept).is_file():
            shutil.copy(RESULTS / name / kept, results / kept)
    assert main(["campaign", "report", str(results)]) == 0
    got = (results / "report" / "report.md").read_text(encoding="utf-8")
    want = (RESULTS / name / "report.md").read_text(encoding="utf-8")
    assert got == want, (f"benchmarks/results/{name}/report.md is not what `batsched-ml campaign report` "
                         f"writes from its results.csv and campaign.toml: regenerate it with "
                         f"`batsched-ml campaign report benchmarks/results/{name} -o benchmarks/results/{name}`")


    for figure in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", want):
        assert (RESULTS / name / figure).is_file(), f"benchmarks/results/{name}/{figure}: referenced, not committed"
