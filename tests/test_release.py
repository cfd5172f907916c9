"""A release a researcher can install (issue 40, section 4): the wheel carries the samples, installs
into a fresh virtual environment and runs the quick start and ``plugins`` from any directory; one
version everywhere; ``python -m build`` + ``twine check`` (slow: run by .ci/run)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import batsched_ml

ROOT = Path(__file__).resolve().parents[1]
# the runtime dependencies' top-level modules: the fresh environment borrows them from this one
DEPENDENCIES = ("numpy", "zmq", "procset", "sklearn", "scipy", "sortedcontainers", "tqdm", "dask", "distributed",
                "numba", "matplotlib", "tomli_w", "gymnasium", "greenlet", "cma")


def _need_build_tools() -> None:
    """The wheel is built without build isolation (seconds instead of ~20 s of fetching setuptools):
    the test extra's setuptools and wheel must be here."""
    missing = [m for m in ("setuptools", "wheel") if importlib.util.find_spec(m) is None]
    import setuptools

    if not missing and int(setuptools.__version__.split(".")[0]) < 68:
        missing = [f"setuptools>=68 (have {setuptools.__version__})"]
    if missing:
        if os.environ.get("CI"):
            raise AssertionError(f"the test extra is not installed: {missing}")
        pytest.skip(f"building the wheel needs {', '.join(missing)}: pip install -e '.[test]'")


def _source_copy(tmp: Path) -> Path:
    """What a build reads (package, samples' targets, pyproject, README), away from the clone: a
    build writes build/ and egg-info next to its sources."""
    src = tmp / "src"
    shutil.copytree(ROOT / "batsched_ml", src / "batsched_ml", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for name in ("workloads", "platforms"):
        shutil.copytree(ROOT / name, src / name)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    return src


def _dependencies_directory(tmp: Path) -> Path:
    """A folder of links to this environment's installed packages but batsched-ml and its example
    plugins (their editable hooks, ``.pth`` files): the fresh environment's dependencies."""
    deps = tmp / "deps"
    deps.mkdir()
    homes = {Path(importlib.util.find_spec(m).origin).parents[1] for m in DEPENDENCIES}
    for home in homes:
        for entry in home.iterdir():
            name = entry.name.lower()
            if "batsched" in name or name.endswith(".pth") or name.startswith("__editable__") \
                    or (deps / entry.name).exists():
                continue
            (deps / entry.name).symlink_to(entry)
    return deps


def _run(*args, cwd, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          **kwargs)
    assert done.returncode == 0, f"{args}: {done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A wheel built from the sources and installed into a fresh virtual environment:
    ``(wheel, the environment's bin directory)``."""
    _need_build_tools()
    tmp = tmp_path_factory.mktemp("release")
    src = _source_copy(tmp)
    # setuptools' PEP 517 backend called as pip would without isolation (pip itself adds 3-6 s here)
    _run(sys.executable, "-c", "import sys; from setuptools import build_meta; build_meta.build_wheel(sys.argv[1])",
         tmp / "dist", cwd=src)
    (wheel,) = (tmp / "dist").glob("*.whl")
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp)
    python = venv / "bin" / "python"
    purelib = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp)
                   .stdout.strip())
    (purelib / "borrowed_dependencies.pth").write_text(f"{_dependencies_directory(tmp)}\n")
    _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", "--no-compile",
         wheel, cwd=tmp)
    shutil.rmtree(src)  # nothing of the sources is left to import by accident
    return wheel, venv / "bin"


def test_the_wheel_carries_the_samples_and_the_one_version(installed):
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        metadata = z.read(f"batsched_ml-{batsched_ml.__version__}.dist-info/METADATA").decode()
        (license_file,) = [n for n in names if ".dist-info/" in n and n.endswith("/LICENSE")]
        assert z.read(license_file) == (ROOT / "LICENSE").read_bytes()
        for sample in ("KTH-SP2-1k.json", "cluster-100.xml", "cluster-16.xml"):
            data = z.read(f"batsched_ml/samples/{sample}")  # the files themselves, not links
            assert data == (ROOT / ("workloads" if sample.endswith(".json") else "platforms") / sample).read_bytes()
    assert "batsched_ml/config/presets.py" in names
    assert re.search(rf"^Version: {re.escape(batsched_ml.__version__)}$", metadata, re.M)
    assert re.search(r"^License: MIT$", metadata, re.M)


def test_the_installed_wheel_runs_the_quick_start_and_plugins_from_anywhere(installed, tmp_path):
    _, bin_dir = installed
    where = tmp_path / "elsewhere"  # outside the repository: no workloads/ or platforms/ here
    where.mkdir()
    located = _run(bin_dir / "python", "-c", "import batsched_ml; print(batsched_ml.__file__)", cwd=where)
    assert Path(located.stdout.strip()).is_relative_to(bin_dir.parent)
    assert _run(bin_dir / "batsched-ml", "--version", cwd=where).stdout.strip() == \
        f"batsched-ml {batsched_ml.__version__}"
    done = _run(bin_dir / "batsched-ml", "simulate", "-p", "sample:cluster-100", "-w", "sample:KTH-SP2-1k",
                "-e", "out/kth1k", "--scheduler", "easy", "--policy", "fcfs", "--quiet", cwd=where)
    assert re.search(r"^jobs\s+1,000$", done.stdout, re.M)
    run = json.loads((where / "out" / "kth1k_run.json").read_text())
    assert run["status"] == "complete" and run["batsched_ml"] == batsched_ml.__version__
    listing = _run(bin_dir / "batsched-ml", "plugins", cwd=where).stdout
    assert re.search(rf"^  easy +batsched_ml\.scheduling\.easy:EasyBackfilling \(batsched-ml "
                     rf"{re.escape(batsched_ml.__version__)}\)$", listing, re.M)
    assert "BROKEN" not in listing
    assert "recommended-classification" in _run(bin_dir / "batsched-ml", "presets", cwd=where).stdout


def test_one_version_everywhere():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "batsched_ml.__version__"}
    nix = (ROOT / "nix" / "default.nix").read_text()
    assert "builtins.readFile ../batsched_ml/__init__.py" in nix and not re.search(r'version = "\d', nix)
    changelog = (ROOT / "CHANGELOG.md").read_text()
    first = re.search(r"^## \[?(\d+\.\d+\.\d+)", changelog, re.M)
    assert first and first.group(1) == batsched_ml.__version__


def test_the_samples_are_the_bytes_the_readme_names():
    """One sample, two places: the package's copy (what a wheel, Docker or Nix build carries, with no
    link to dereference) and the clone's, which the README's first command names."""
    from batsched_ml.workloads.samples import SAMPLES, samples_directory

    for name in SAMPLES:
        top = ROOT / ("workloads" if name.endswith(".json") else "platforms") / name
        packaged = samples_directory() / name
        assert not packaged.is_symlink() and packaged.read_bytes() == top.read_bytes(), name


def test_the_samples_run_by_name_from_any_directory(tmp_path, monkeypatch, capsys):
    from batsched_ml.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "-p", "sample:cluster-16", "-w", "sample:KTH-SP2-1k.json", "-e", "o/small",
                 "--quiet"]) == 0
    assert "rejected 159 jobs" in capsys.readouterr().err
    assert main(["check", "o/small_jobs.csv", "-w", "sample:KTH-SP2-1k", "-p", "sample:cluster-16"]) == 0
    assert main(["simulate", "-p", "sample:cluster-10", "-w", "sample:KTH-SP2-1k", "-e", "o/x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("batsched-ml: error: unknown sample 'cluster-10'; the samples: "
                                               "KTH-SP2-1k = a workload")


def test_a_campaign_names_the_samples(tmp_path):
    pytest.importorskip("distributed")
    from batsched_ml.campaign.spec import load_campaign

    path = tmp_path / "c.toml"
    path.write_text('[traces.KTH]\nworkload = "sample:KTH-SP2-1k"\nplatform = "sample:cluster-100"\n'
                    '[configs.easy]\nscheduler = "easy"\n')
    trace = load_campaign(path).traces["KTH"]
    assert trace.missing is None and trace.path.read_bytes() == (ROOT / "workloads" / "KTH-SP2-1k.json").read_bytes()


@pytest.mark.slow
def test_python_m_build_makes_an_sdist_and_a_wheel_that_pass_twine_check(tmp_path):
    """What a release is made of (.ci/run runs it: ~20 s, it fetches the build backend)."""
    for module in ("build", "twine"):
        if importlib.util.find_spec(module) is None:
            pytest.fail(f"{module} is not installed: pip install -e '.[release]'")
    src = _source_copy(tmp_path)
    _run(sys.executable, "-m", "build", "-o", tmp_path / "dist", src, cwd=tmp_path)
    built = sorted(p.name for p in (tmp_path / "dist").iterdir())
    version = batsched_ml.__version__
    assert built == [f"batsched_ml-{version}-py3-none-any.whl", f"batsched_ml-{version}.tar.gz"]
    checked = _run(sys.executable, "-m", "twine", "check", "--strict", *(tmp_path / "dist").iterdir(), cwd=tmp_path)
    assert checked.stdout.count("PASSED") == 2
    with zipfile.ZipFile(tmp_path / "dist" / built[0]) as z:  # built from the sdist: the samples went through it
        assert len(z.read("batsched_ml/samples/KTH-SP2-1k.json")) == (ROOT / "workloads" / "KTH-SP2-1k.json").stat().st_size
