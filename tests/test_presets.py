"""Named presets (issue 40, section 5): ``--preset NAME`` and ``preset = "NAME"`` are the
configurations the experiments measured, overridable key by key, listed with their sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batsched_ml import cli
from batsched_ml.config import presets
from batsched_ml.config.declare import RunConfig
from batsched_ml.config.resolve import resolve, run_label

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "workloads" / "KTH-SP2-1k.json"
PLATFORM = ROOT / "platforms" / "cluster-100.xml"
SIX_OPTIONS = ["--classifier", "random-forest", "--kill-false-small", "-o", "order_by_probability=both",
               "-o", "probability_head_start=1209600", "-o", "speculative_backfill=0", "-o", "n_estimators=40",
               "-o", "min_samples_leaf=50"]

# preset -> (experiment file, config) whose runs its source cites: the same configuration exactly
MEASURED_AS = {
    "easy": ("gaussier2015", "easy"),
    "easy-spf-threshold": ("zrigui2022", "base-spf"),
    "easy++": ("gaussier2015", "easy++"),
    "eloss-triple": ("gaussier2015", "eloss-triple"),
    "probabilistic": ("nissimov2008", "prob-hmm"),
    "zrigui2022-fcfs-ci": ("zrigui2022", "ci-fcfs"),
    "zrigui2022-spf-ci": ("zrigui2022", "ci-spf"),
    "recommended-classification": ("zrigui2022-seeds", "ci-fcfs-head-start2w-speculative-leaf50"),
}


def from_flags(*flags) -> RunConfig:
    args = cli.build_parser().parse_args(["simulate", "-p", "p", "-w", "w", *flags])
    return resolve(RunConfig.from_args(args))


def test_the_issues_presets_are_all_there():
    assert set(MEASURED_AS) <= set(presets.names())


@pytest.mark.parametrize("name", list(MEASURED_AS))
def test_each_preset_is_the_configuration_its_experiment_ran(name):
    from batsched_ml.campaign.spec import load_campaign

    experiment, config = MEASURED_AS[name]
    measured = load_campaign(ROOT / "experiments" / f"{experiment}.toml").configs[config].config
    preset = from_flags("--preset", name)
    assert preset.preset == name and preset.replace(preset=None) == measured
    assert experiment in presets.get(name).source and config in presets.get(name).source


def test_recommended_classification_is_the_six_option_command():
    assert from_flags("--preset", "recommended-classification").replace(preset=None) == from_flags(*SIX_OPTIONS)


def test_flags_override_a_preset_key_by_key():
    got = from_flags("--preset", "recommended-classification", "-o", "n_estimators=80", "--policy", "spf")
    assert got.policy == "spf" and got.classifier == "random-forest" and got.kill_false_small
    assert got.options == {"order_by_probability": "both", "probability_head_start": 1209600,
                           "speculative_backfill": 0, "n_estimators": 80, "min_samples_leaf": 50}
    assert from_flags("--preset", "easy++", "--backfill-order", "queue").backfill_order == "queue"
    assert got.changed_from_preset() == ["policy=spf", "n_estimators=80"]
    assert run_label(got).startswith("recommended-classification with policy=spf, n_estimators=80: easy spf, ")


def test_an_unknown_preset_is_one_line(tmp_path, capsys):
    code = cli.main(["simulate", "-p", str(PLATFORM), "-w", str(WORKLOAD), "-e", str(tmp_path / "x"),
                     "--preset", "recommended-clasification"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("batsched-ml: error: unknown preset 'recommended-clasification'; did you mean "
                             "'recommended-classification'?")


def test_the_preset_run_gives_the_six_option_runs_jobs_byte_for_byte_and_names_itself(tmp_path, capsys):
    """The bundled sample; CTC-SP2 seed 0 was compared the same way (the issue's acceptance, minutes)."""
    common = ["simulate", "-p", str(PLATFORM), "-w", str(WORKLOAD), "--quiet", "--seed", "1"]
    assert cli.main([*common, "-e", str(tmp_path / "six"), *SIX_OPTIONS]) == 0
    assert cli.main([*common, "-e", str(tmp_path / "preset"), "--preset", "recommended-classification"]) == 0
    assert (tmp_path / "six_jobs.csv").read_bytes() == (tmp_path / "preset_jobs.csv").read_bytes()
    run = json.loads((tmp_path / "preset_run.json").read_text())
    recommended = presets.get("recommended-classification")
    assert run["preset"] == "recommended-classification" and run["preset_version"] == recommended.version
    assert run["preset_expansion"] == ["--scheduler", "easy", "--policy", "fcfs", *SIX_OPTIONS]
    assert run["preset_changed"] == []
    assert run["label"] == ("recommended-classification: easy fcfs, random-forest kill, order_by_probability=both, "
                            "probability_head_start=1209600, speculative_backfill=0, n_estimators=40, "
                            "min_samples_leaf=50")
    assert "preset" not in json.loads((tmp_path / "six_run.json").read_text())


def test_presets_command_lists_each_expansion_source_and_change(capsys):
    assert cli.main(["presets"]) == 0
    out = capsys.readouterr().out
    for preset in presets.PRESETS.values():
        flags = " ".join(RunConfig(**preset.values()).argv())
        assert f"{preset.name} (v{preset.version}): " in out and f"  expands to: {flags}\n" in out
        assert f"  source: {preset.source}\n" in out
        assert len(preset.changes) == preset.version - 1  # every version after the first says what changed
    assert "expands to: --scheduler easy --policy fcfs --classifier random-forest --kill-false-small " \
           "-o order_by_probability=both -o probability_head_start=1209600 -o speculative_backfill=0 " \
           "-o n_estimators=40 -o min_samples_leaf=50" in out
    assert "changed: v2 (2026-11-27, issue 25): probability_head_start 604800 -> 1209600" in out


def test_a_campaign_config_takes_a_preset_and_overrides_it_key_by_key(tmp_path):
    pytest.importorskip("distributed")
    from batsched_ml.campaign.spec import load_campaign

    path = tmp_path / "c.toml"
    path.write_text(f"""
[traces.KTH1k]
workload = "{WORKLOAD}"
platform = "{PLATFORM}"

[configs.best]
preset = "recommended-classification"

[configs.best-80]
preset = "recommended-classification"
options = {{ n_estimators = 80 }}

[configs.easy-plus]
preset = "easy++"
backfill_order = "queue"
""")
    configs = load_campaign(path).configs
    assert configs["best"].config.replace(preset=None) == from_flags(*SIX_OPTIONS)
    assert configs["best-80"].config.options["n_estimators"] == 80
    assert configs["best-80"].config.options["probability_head_start"] == 1209600
    assert configs["easy-plus"].config.backfill_order == "queue" and configs["easy-plus"].config.predictor == "ave2"
    # the report's configurations table gives the preset and what the config changes of it
    assert configs["best"].command == "--preset recommended-classification"
    assert configs["best-80"].command == "--preset recommended-classification -o n_estimators=80"


def test_python_takes_a_preset_too():
    from batsched_ml.runner import build_scheduler

    scheduler = build_scheduler(preset="probabilistic")
    assert type(scheduler).__name__ == "ProbabilisticBackfilling" and scheduler.distribution_name == "hmm"
    assert RunConfig.from_kwargs(preset="easy++", backfill_order="queue").predictor == "ave2"
