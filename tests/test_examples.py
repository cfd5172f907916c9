"""The example plugins of examples/plugins/ (one installable package per plugin kind), installed
and driven through the real command line: listed by ``plugins``, their options validated, a run
in ``simulate``, in a campaign, and through ``serve`` + ``simulate --connect`` byte-identical to
the in-process run (issue 24 §5).

They must be installed: ``pip install -e examples/plugins/*`` (``.ci/run`` does it). Without
them these tests skip, saying so.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

from test_cli_ux import run as cli  # tests/ is on sys.path
from test_server import tcp_endpoint

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
PLATFORM, WORKLOAD = DATA / "platform-16.xml", DATA / "tiny.json.gz"

# kind -> (distribution, plugin name, a bad option and its one-line message)
EXAMPLES = {
    "schedulers": ("batsched-ml-example-firstfit", "firstfit",
                   ["--scheduler", "firstfit", "-o", "lookahead=0"], "-o lookahead=0: lookahead must be an integer"),
    "policies": ("batsched-ml-example-aged-spf", "aged-spf",
                 ["--policy", "aged-spf", "-o", "policy_aging=-1"], "-o policy_aging=-1: aging must be a number > 0"),
    "predictors": ("batsched-ml-example-last-runtime", "last-runtime",
                   ["--predictor", "last-runtime", "-o", "predictor_factor=0"], "-o predictor_factor=0: factor must"),
    "corrections": ("batsched-ml-example-fixed-step", "fixed-step",
                    ["--predictor", "ave2", "--correction", "fixed-step", "-o", "correction_step=0"],
                    "-o correction_step=0: step must be a number > 0"),
    "classifiers": ("batsched-ml-example-centroid", "centroid",
                    ["--classifier", "centroid", "-o", "scale=maybe"], "-o scale=maybe: scale is a switch"),
    "distributions": ("batsched-ml-example-lognormal", "user-lognormal",
                      ["--scheduler", "probabilistic", "--distribution", "user-lognormal", "-o",
                       "distribution_min_jobs=0"], "-o distribution_min_jobs=0: min_jobs must be an integer"),
}
# every example in two runs: the five that compose with a queue scheduler, and the distribution
CONFIGS = {
    "all-but-distribution": ["--scheduler", "firstfit", "--policy", "aged-spf", "--predictor", "last-runtime",
                             "--correction", "fixed-step", "--classifier", "centroid", "--kill-false-small",
                             "-o", "period=20000", "-o", "unix_start_time=0", "-o", "policy_aging=600"],
    "distribution": ["--scheduler", "probabilistic", "--distribution", "user-lognormal", "-o",
                     "distribution_min_jobs=1"],
}


def _missing() -> list[str]:
    out = []
    for dist, _, _, _ in EXAMPLES.values():
        try:
            version(dist)
        except PackageNotFoundError:
            out.append(dist)
    return out


NOT_INSTALLED = (f"example plugins not installed ({', '.join(_missing())}): pip install -e examples/plugins/* "
                 "(as .ci/run does)")
pytestmark = pytest.mark.skipif(bool(_missing()) and not os.environ.get("CI"), reason=NOT_INSTALLED)


def test_ci_installs_the_examples():
    """In CI (``CI`` set, as .ci/run's runner does) a missing example is a failure, not a skip."""
    assert not _missing(), NOT_INSTALLED


def simulate(prefix, *flags):
    return ("simulate", "-p", str(PLATFORM), "-w", str(WORKLOAD), "-e", str(prefix), "--quiet", *flags)


def test_every_example_is_listed_by_plugins(capsys):
    code, out, _ = cli(capsys, "plugins")
    assert code == 0
    sections = {}
    kind = None
    for line in out.splitlines():
        if not line.startswith(" "):
            kind = line.rstrip(":")
        else:
            sections.setdefault(kind, []).append(line)
    for kind, (dist, name, _, _) in EXAMPLES.items():
        lines = sections[kind]
        i = next(k for k, line in enumerate(lines) if line.split()[0] == name)
        assert f"({dist} 0.1.0)" in lines[i]
        assert lines[i + 1].strip().startswith("-o ") and "BROKEN" not in lines[i + 1]


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_example_options_are_validated(tmp_path, capsys, kind):
    _, _, flags, message = EXAMPLES[kind]
    code, _, err = cli(capsys, *simulate(tmp_path / "run", *flags))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("batsched-ml: error: ") and message in err, err


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_examples_run_in_simulate_and_through_serve_byte_identical(tmp_path, capsys, name):
    flags = CONFIGS[name]
    dynamic = ["--enable-dynamic-jobs"] if "--kill-false-small" in flags else []
    code, _, err = cli(capsys, *simulate(tmp_path / "inproc", *flags, *dynamic, "--json"))
    assert code == 0, err
    run_json = json.loads((tmp_path / "inproc_run.json").read_text())
    assert run_json["scheduler"] == flags[1]
    endpoint = tcp_endpoint()
    serve = subprocess.Popen([sys.executable, "-m", "batsched_ml.cli", "serve", "-s", endpoint, "--timeout", "60",
                              *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    code, _, err = cli(capsys, *simulate(tmp_path / "remote", "--connect", endpoint, "--timeout", "60", *dynamic))
    _, serve_err = serve.communicate(timeout=120)
    assert code == 0 and serve.returncode == 0, err + serve_err
    assert f"(scheduler {run_json['label']})" in serve_err
    assert (tmp_path / "remote_jobs.csv").read_bytes() == (tmp_path / "inproc_jobs.csv").read_bytes()


def test_examples_run_in_a_campaign(tmp_path, capsys):
    """The same configurations as a campaign table give the very jobs CSV of ``simulate``."""
    tables = []
    for name, flags in CONFIGS.items():
        table, options, i = [f"[configs.{name}]"], {}, 0
        while i < len(flags):
            flag = flags[i]
            if flag == "-o":
                key, _, value = flags[i + 1].partition("=")
                options[key] = json.loads(value)
                i += 2
            elif flag == "--kill-false-small":
                table.append("kill_false_small = true")
                i += 1
            else:
                table.append(f'{flag[2:].replace("-", "_")} = "{flags[i + 1]}"')
                i += 2
        table.append("options = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in options.items()) + " }")
        tables.append("\n".join(table))
    campaign = tmp_path / "examples.toml"
    campaign.write_text(f"""[campaign]
name = "examples"
baseline = "distribution"

[traces.tiny]
workload = "{WORKLOAD}"
platform = "{PLATFORM}"

""" + "\n\n".join(tables) + "\n")
    code, _, err = cli(capsys, "campaign", "check", str(campaign))
    assert code == 0, err
    code, _, err = cli(capsys, "campaign", "run", str(campaign), "-o", str(tmp_path / "results"), "--workers", "0",
                       "-q", "--no-report")
    assert code == 0, err
    for name, flags in CONFIGS.items():
        cli(capsys, *simulate(tmp_path / name, *flags))
        from_campaign = gzip.decompress((tmp_path / "results" / "runs" / f"tiny.w0.{name}.s0_jobs.csv.gz").read_bytes())
        assert from_campaign == (tmp_path / f"{name}_jobs.csv").read_bytes()
