"""The deployment files (issue 15 §4): docker-compose.yml is valid against the Compose
specification (checked offline), runs Batsim so that its outputs are written before the stack
stops, writes them as the host user, and names one Batsim image, the one the README names."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"


def compose():
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_file_matches_the_compose_spec(tmp_path):
    """check-jsonschema ships the Compose specification's schema: no network, no docker needed.
    A misspelt top-level key must fail, so the check is not vacuous."""
    pytest.importorskip("check_jsonschema")
    broken = tmp_path / "broken-compose.yml"
    broken.write_text(COMPOSE.read_text().replace("\nservices:", "\nservice:"))
    done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
                           str(COMPOSE), str(broken)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    report = done.stdout + done.stderr
    assert "broken-compose.yml" in report
    assert f"{COMPOSE}::" not in report, report  # the real file has no error


def test_documented_command_lets_batsim_finish_writing():
    """Batsim writes its CSVs after the scheduler answered SIMULATION_ENDS, and `serve` exits right
    after answering: the run must end with Batsim's exit (`compose run batsim`), not the first
    container's (`up --abort-on-container-exit`)."""
    header = COMPOSE.read_text().split("\nname:")[0]
    commands = [line.strip("# ").strip() for line in header.splitlines() if line.startswith("#   ")]
    assert any(c.startswith("docker compose run") and c.split("#")[0].split()[-1] == "batsim" for c in commands)
    assert not any("--abort-on-container-exit" in c for c in commands)
    readme = (ROOT / "README.md").read_text()
    assert "docker compose run --rm batsim" in readme and "docker compose build" in readme
    assert "docker compose up --build --abort-on-container-exit" not in readme
    services = compose()["services"]
    assert "scheduler" in services["batsim"]["depends_on"]
    assert services["scheduler"].get("restart", "no") == "no"  # a restarted serve would wait forever


def test_outputs_belong_to_the_host_user():
    batsim = compose()["services"]["batsim"]
    assert re.fullmatch(r"\$\{HOST_UID:-\d+\}:\$\{HOST_GID:-\d+\}", batsim["user"])
    assert any(v.startswith("./out:") for v in batsim["volumes"])
    assert "mkdir -p out" in COMPOSE.read_text() and "HOST_UID=$(id -u)" in (ROOT / "README.md").read_text()


def test_one_batsim_image_named_in_compose_and_readme():
    image = compose()["services"]["batsim"]["image"]
    name, _, tag = image.partition(":")
    assert name == "oarteam/batsim" and re.fullmatch(r"4\.\d+\.\d+", tag), image
    texts = [(ROOT / "README.md").read_text(), (ROOT / "Dockerfile").read_text(), COMPOSE.read_text()]
    named = {m for text in texts for m in re.findall(r"oarteam/batsim:([\w.-]+)", text)}
    assert named == {tag}, named
