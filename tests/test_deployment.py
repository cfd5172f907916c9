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


# The top level Compose v1 reads (docker-compose 1.29's schema: these keys and x- extensions); a
# top-level `name:` (Compose v2 only) made Debian's docker-compose 1.29.2 refuse the file.
COMPOSE_V1_TOP_LEVEL = ("version", "services", "networks", "volumes", "secrets", "configs")


def test_compose_file_is_read_by_compose_v1_too():
    top = compose()
    extra = [key for key in top if key not in COMPOSE_V1_TOP_LEVEL and not key.startswith("x-")]
    assert not extra, f"Compose v1 refuses the top-level key(s) {extra}"
    docs = (ROOT / "docs" / "deployment.md").read_text()
    assert "docker-compose" in docs and "1.29.2" in docs


def test_documented_command_lets_batsim_finish_writing():
    """Batsim writes its CSVs after the scheduler answered SIMULATION_ENDS, and `serve` exits right
    after answering: the run must end with Batsim's exit (`compose run batsim`), not the first
    container's (`up --abort-on-container-exit`)."""
    header = COMPOSE.read_text().split("\nname:")[0]
    commands = [line.strip("# ").strip() for line in header.splitlines() if line.startswith("#   ")]
    assert any(c.startswith("docker compose run") and c.split("#")[0].split()[-1] == "batsim" for c in commands)
    assert not any("--abort-on-container-exit" in c for c in commands)
    readme = (ROOT / "docs" / "deployment.md").read_text()
    assert "docker compose run --rm batsim" in readme and "docker compose build" in readme
    assert "docker compose up --build --abort-on-container-exit" not in readme
    services = compose()["services"]
    assert "scheduler" in services["batsim"]["depends_on"]
    assert services["scheduler"].get("restart", "no") == "no"  # a restarted serve would wait forever


def test_outputs_belong_to_the_host_user():
    """Nix runs as root in its container: Batsim's files are handed to HOST_UID:HOST_GID at the end,
    whatever Batsim's exit status, and that status is the container's."""
    batsim = compose()["services"]["batsim"]
    assert re.fullmatch(r"\$\{HOST_UID:-\d+\}", batsim["environment"]["HOST_UID"])
    assert re.fullmatch(r"\$\{HOST_GID:-\d+\}", batsim["environment"]["HOST_GID"])
    script = batsim["command"][-1].replace("$$", "$")
    lines = [line.strip() for line in script.splitlines()]
    run = next(i for i, line in enumerate(lines) if "/bin/batsim" in line)
    status = lines.index("status=$?")
    chown = next(i for i, line in enumerate(lines) if line.startswith("chown -R \"$HOST_UID:$HOST_GID\" /data/out"))
    assert run < status < chown and lines[-1] == "exit $status"
    assert "-e /data/out/out" in script and any(v.startswith("./out:/data/out") for v in batsim["volumes"])
    assert "mkdir -p out" in COMPOSE.read_text() and "HOST_UID=$(id -u)" in (ROOT / "docs" / "deployment.md").read_text()


def test_one_batsim_version_for_every_deployment():
    """Issue 15 §4a: compose builds Batsim from the same nix pin as the nix shell (4.2.0), and the
    README states that one version; no Docker Hub Batsim image is used anywhere."""
    batsim = compose()["services"]["batsim"]
    assert batsim["image"].startswith("nixos/nix:")
    script = batsim["command"][-1]
    assert "nix-build --no-out-link /data/nix/pins.nix -A kapack.batsim" in script
    assert "./nix:/data/nix:ro" in batsim["volumes"]
    shell = (ROOT / "nix" / "shell.nix").read_text()
    assert "kapack.batsim # Batsim 4.2.0" in shell
    pin = re.search(r"nur-kapack/archive/([0-9a-f]{40})", (ROOT / "nix" / "pins.nix").read_text()).group(1)
    readme = (ROOT / "docs" / "deployment.md").read_text()
    section = readme.split("### Batsim version")[1].split("\n### ")[0]
    assert "Batsim 4.2.0" in section and pin[:8] in section
    texts = [readme, (ROOT / "Dockerfile").read_text(), COMPOSE.read_text()]
    assert not any(re.search(r"oarteam/batsim:[\w.-]+", text) for text in texts)


def test_nix_package_has_every_runtime_dependency():
    """nix/default.nix propagates exactly pyproject.toml's dependencies (an extra such as
    dask[distributed] is its packages; procset comes from nur-kapack)."""
    import tomllib

    declared = set()
    for requirement in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()
        declared.add(name)
        extras = re.search(r"\[([^\]]+)\]", requirement)
        if extras:
            declared.update(e.strip().lower() for e in extras.group(1).split(","))
    nix = (ROOT / "nix" / "default.nix").read_text()
    inputs = re.search(r"propagatedBuildInputs = \[(.*?)\];", nix, re.S).group(1)
    packaged = {re.sub(r"^(ps|kapack)\.", "", item).lower() for item in inputs.split()}
    assert packaged == declared
