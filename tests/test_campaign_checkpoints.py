"""Campaign tasks checkpoint as they go (issue 42 §4): a campaign killed halfway -- SIGKILL of its
whole process group, Dask workers included -- is run again and resumes each unfinished task from
its latest snapshot; its results.csv is the uninterrupted campaign's (but the wall-clock column)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from batsched_ml.campaign.run import run_campaign  # noqa: E402
from batsched_ml.campaign.spec import CampaignError, load_campaign  # noqa: E402
from test_campaign import csv_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = f"""
[campaign]
name = "killed"
baseline = "easy"
checkpoint_every = "1d"

[traces.KTH1k]
workload = "{ROOT / 'workloads' / 'KTH-SP2-1k.json'}"
platform = "{ROOT / 'platforms' / 'cluster-100.xml'}"

[configs.easy]
scheduler = "easy"

[configs.classified]
scheduler = "easy"
classifier = "random-forest"
kill_false_small = true
options = {{ period = 86400, unix_start_time = 0, n_estimators = 20 }}

[configs.probabilistic]
scheduler = "probabilistic"
distribution = "hmm"
"""


def _snapshots(results: Path) -> list:
    return list((results / "checkpoints").glob("*/snapshots/*.snapshot"))


def test_a_campaign_killed_halfway_resumes_its_tasks_to_the_same_results(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN)
    whole = run_campaign(load_campaign(path), tmp_path / "whole", workers=0, progress=False, log=lambda m: None)
    assert whole.computed == 3 and not list((tmp_path / "whole" / "checkpoints").glob("*"))  # cleaned up
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "batsched_ml.cli", "campaign", "run", str(path), "-o", str(killed),
                             "--workers", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None and len(_snapshots(killed)) < 2:
        time.sleep(0.05)
    assert proc.poll() is None, "the campaign ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)  # the client, the Dask scheduler and its worker
    proc.wait()
    assert _snapshots(killed)
    said = []
    again = run_campaign(load_campaign(path), killed, workers=0, progress=False, log=said.append)
    assert again.resumed >= 1, said
    assert any(line.startswith("resumed: KTH1k/") for line in said)
    assert csv_rows(killed / "results.csv") == csv_rows(tmp_path / "whole" / "results.csv")


def test_checkpoint_settings_are_checked(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.replace('checkpoint_every = "1d"', 'checkpoint_every = "soon"'))
    with pytest.raises(CampaignError, match=r"\[campaign\] checkpoint_every expects a duration"):
        load_campaign(path)
    path.write_text(CAMPAIGN.replace('checkpoint_every = "1d"', "checkpoint_every_wall = false"))
    campaign = load_campaign(path)
    assert campaign.checkpoint_every is None and campaign.checkpoint_every_wall is None
