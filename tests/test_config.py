"""One run configuration, composition, strict options, plugin loading (issue 24 §1, §2, §5).

Every case the issue found silent (a flag ignored, ``-o compiled=False`` taken as true) or
crashing (a TypeError, a ModuleNotFoundError traceback) is here one line and exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batsched_ml import cli
from batsched_ml.config import plugins
from batsched_ml.config.compose import build_scheduler
from batsched_ml.config.declare import ConfigError, RunConfig, settings
from batsched_ml.config.params import Params
from batsched_ml.config.plugins import PluginError
from batsched_ml.config.resolve import resolve
from test_cli_ux import assert_one_line_error, run  # tests/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
PLATFORM = str(DATA / "platform-16.xml")
WORKLOAD = str(DATA / "tiny.json.gz")

# third-party-looking plugins: (group, name) -> (target, distribution)
EXTRA = {
    ("batsched_ml.schedulers", "bare-firstfit"): ("plugin_fixtures:BareFirstFit", "myplugin 0.1"),
    ("batsched_ml.schedulers", "open-firstfit"): ("plugin_fixtures:OpenFirstFit", "myplugin 0.1"),
    ("batsched_ml.schedulers", "ordered-firstfit"): ("plugin_fixtures:OrderedFirstFit", "myplugin 0.1"),
    ("batsched_ml.schedulers", "broken"): ("myplugin.nothere:X", "myplugin 0.1"),
    ("batsched_ml.schedulers", "future"): ("plugin_fixtures:FutureScheduler", "futureplugin 3.0"),
    ("batsched_ml.schedulers", "newer-minor"): ("plugin_fixtures:NewerMinorScheduler", "futureplugin 3.0"),
    ("batsched_ml.policies", "missing-attr"): ("plugin_fixtures:NoSuchPolicy", "myplugin 0.1"),
}


@pytest.fixture
def third_party(monkeypatch):
    """Entry points as if the package ``myplugin`` declared them."""
    real = plugins._installed

    def installed(group):
        extra = tuple((name, target, dist) for (g, name), (target, dist) in EXTRA.items() if g == group)
        return real(group) + extra

    monkeypatch.setattr(plugins, "_installed", installed)


def one_line_error(code, err, *fragments):
    assert_one_line_error(code, err, "batsched-ml: error: ", *fragments)


def simulate(tmp_path, *flags):
    return ("simulate", "-p", PLATFORM, "-w", WORKLOAD, "-e", str(tmp_path / "run"), "--quiet", *flags)


# ------------------------------------------------------- refused, never ignored
@pytest.mark.parametrize("flags, fragment", [
    (("--scheduler", "fcfs", "--backfill-order", "sjbf"), "scheduler 'fcfs' takes no --backfill-order"),
    (("--scheduler", "fcfs", "--reservations", "cores"), "scheduler 'fcfs' takes no --reservations"),
    (("--scheduler", "conservative", "--backfill-order", "sjbf"), "scheduler 'conservative' takes no --backfill-order"),
    (("--scheduler", "easy", "--distribution", "hmm"), "scheduler 'easy' takes no --distribution (runtime"),
    (("--correction", "incremental",), "--correction needs --predictor: with the requested time"),
    (("--predictor", "ave2", "--correction-timing", "next-event"), "--correction-timing needs --correction"),
    (("--kill-false-small",), "--kill-false-small needs --classifier"),
    (("-o", "compiled=False", "--scheduler", "conservative"), "-o compiled=False: compiled is a switch"),
    (("-o", "compiled=maybe", "--scheduler", "conservative"), "-o compiled=maybe: compiled is a switch"),
    (("--classifier", "clairvoyant", "-o", "store_classes=no"), "-o store_classes=no: store_classes is a switch"),
    (("-o", "predictor_window=3",), "-o predictor_window: a predictor option, given without --predictor"),
    (("-o", "n_estimators=3",), "-o n_estimators: a classification option, given without --classifier"),
    (("-o", "distribution_window=3",), "needs a scheduler that takes --distribution (probabilistic)"),
    (("--scheduler", "probabilistic", "-o", "distribution_windw=3", "--distribution", "user"),
     "did you mean 'distribution_window'?"),
    (("--scheduler", "esy",), "unknown scheduler 'esy'; did you mean 'easy'?"),
])
def test_a_setting_the_configuration_cannot_honour_is_one_line(tmp_path, capsys, flags, fragment):
    code, _, err = run(capsys, *simulate(tmp_path, *flags))
    one_line_error(code, err, fragment)
    assert not (tmp_path / "run_jobs.csv").exists()


def test_switch_options_take_true_false_and_null(tmp_path, capsys):
    for value, compiled in (("false", False), ("true", True), ("null", None)):
        config = resolve(RunConfig(scheduler="conservative", options={"compiled": json.loads(value)}))
        assert build_scheduler(config).compiled is compiled
    code, _, err = run(capsys, *simulate(tmp_path, "--classifier", "clairvoyant", "-o", "store_classes=false"))
    assert code == 0, err
    assert not (tmp_path / "run_classes.csv").exists()


def test_classification_wraps_probabilistic_too(tmp_path, capsys):
    """Was a TypeError (seed given twice): classification is a decorator of any queue scheduler."""
    code, _, err = run(capsys, *simulate(tmp_path, "--scheduler", "probabilistic", "--distribution", "user",
                                         "--classifier", "clairvoyant", "--json"))
    assert code == 0, err
    run_json = json.loads((tmp_path / "run_run.json").read_text())
    assert run_json["label"] == "probabilistic fcfs, clairvoyant, user distribution"


def test_probabilistic_default_distribution_is_explicit(tmp_path, capsys):
    code, _, err = run(capsys, *simulate(tmp_path, "--scheduler", "probabilistic"))
    assert code == 0, err
    run_json = json.loads((tmp_path / "run_run.json").read_text())
    assert run_json["distribution"] == "walltime"
    assert run_json["label"] == "probabilistic fcfs, walltime distribution"


def test_run_json_is_the_resolved_configuration(tmp_path, capsys):
    code, _, err = run(capsys, *simulate(tmp_path, "--scheduler", "fcfs", "--policy", "spf", "--seed", "3"))
    assert code == 0, err
    run_json = json.loads((tmp_path / "run_run.json").read_text())
    config = {k: run_json[k] for k in RunConfig().to_dict()}
    assert config == resolve(RunConfig(scheduler="fcfs", policy="spf", seed=3)).to_dict()
    assert run_json["reservations"] is None and run_json["backfill_order"] is None  # fcfs takes neither
    assert run_json["label"] == "fcfs spf"


def test_scheduler_flags_with_connect_are_refused(tmp_path, capsys):
    code, _, err = run(capsys, *simulate(tmp_path, "--connect", "tcp://127.0.0.1:1", "--policy", "spf"))
    one_line_error(code, err, "--policy configures the in-process scheduler; with --connect")


# ------------------------------------------------------- one vocabulary
def test_cli_table_and_python_build_the_same_configuration():
    parser = cli.build_parser()
    args = parser.parse_args(["simulate", "-p", "p", "-w", "w", "--predictor", "eloss", "--correction",
                              "incremental", "--backfill-order", "sjbf", "-o", "predictor_gamma=small-area",
                              "--seed", "4"])
    from_cli = RunConfig.from_args(args)
    from_table = RunConfig.from_table({"predictor": "eloss", "correction": "incremental", "backfill_order": "sjbf",
                                       "options": {"predictor_gamma": "small-area"}}).replace(seed=4)
    from_python = RunConfig(predictor="eloss", correction="incremental", backfill_order="sjbf", seed=4,
                            options={"predictor_gamma": "small-area"})
    assert from_cli == from_table == from_python
    from batsched_ml.config.resolve import run_label

    assert run_label(resolve(from_cli)) == "easy fcfs, eloss/incremental, sjbf, predictor_gamma=small-area"


def test_every_setting_has_one_flag_in_simulate_and_serve():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for command in ("simulate", "serve"):
        flags = sub.choices[command]._option_string_actions
        for name, spec in settings().items():
            assert flags[spec.flag].dest == name


def test_resolve_fills_only_what_the_scheduler_takes():
    easy = resolve(RunConfig())
    assert (easy.policy, easy.reservations, easy.backfill_order, easy.distribution) == ("fcfs", "count", "queue", None)
    fcfs = resolve(RunConfig(scheduler="fcfs"))
    assert (fcfs.reservations, fcfs.backfill_order) == (None, None)
    assert resolve(RunConfig(predictor="ave2", correction="doubling")).correction_timing == "immediate"
    assert resolve(RunConfig(predictor="ave2")).correction_timing is None
    assert resolve(easy) == easy  # idempotent


def test_resolve_loads_each_plugin_once(monkeypatch):
    """Resolving reads in one direction: the plugins a configuration names are loaded once, then
    their options read from what was loaded (issue 40 §6), not fetched again component by component."""
    from batsched_ml.config import resolve as resolving

    calls = []

    def counting_load(kind, name):
        calls.append((kind, name))
        return plugins.load(kind, name)

    monkeypatch.setattr(resolving, "load", counting_load)
    config = RunConfig(scheduler="easy", policy="spf", predictor="ave2", correction="incremental",
                       classifier="random-forest", options={"predictor_window": 3, "n_estimators": 10})
    resolved = resolving.resolve(config)
    assert resolved.options == {"predictor_window": 3, "n_estimators": 10}
    assert sorted(calls) == sorted({("schedulers", "easy"), ("policies", "spf"), ("predictors", "ave2"),
                                    ("corrections", "incremental"), ("classifiers", "random-forest")})


# ------------------------------------------------------- third-party schedulers
def test_a_bare_scheduler_runs_and_refuses_flags(third_party, tmp_path, capsys):
    """Was: TypeError: FirstFit.__init__() got an unexpected keyword argument 'policy'."""
    code, _, err = run(capsys, *simulate(tmp_path, "--scheduler", "bare-firstfit"))
    assert code == 0, err
    assert json.loads((tmp_path / "run_run.json").read_text())["label"] == "bare-firstfit"
    code, _, err = run(capsys, *simulate(tmp_path, "--scheduler", "bare-firstfit", "--policy", "spf"))
    one_line_error(code, err, "scheduler 'bare-firstfit' takes no --policy")


@pytest.mark.parametrize("flags, fragment", [
    (("--policy", "spf"), "takes no --policy"),
    (("--predictor", "eloss"), "takes no --predictor"),
    (("--backfill-order", "sjbf"), "takes no --backfill-order"),
    (("--classifier", "random-forest"), "takes no --classifier (classification orders the queue"),
    (("-o", "anything=1"), "has no option 'anything'"),
])
def test_flags_given_to_a_kwargs_scheduler_are_refused(third_party, tmp_path, capsys, flags, fragment):
    """Was: silently ignored while PREFIX_run.json labelled the run 'firstfit spf, eloss, sjbf'."""
    code, _, err = run(capsys, *simulate(tmp_path, "--scheduler", "open-firstfit", *flags))
    one_line_error(code, err, "scheduler 'open-firstfit'", fragment)


def test_a_queue_scheduler_plugin_gets_its_collaborators(third_party, tmp_path, capsys):
    code, _, err = run(capsys, *simulate(tmp_path, "--scheduler", "ordered-firstfit", "--policy", "spf",
                                         "--predictor", "ave2", "--classifier", "clairvoyant", "-o", "greedy=false"))
    assert code == 0, err
    scheduler = build_scheduler(RunConfig(scheduler="ordered-firstfit", policy="spf", predictor="ave2",
                                          classifier="clairvoyant", options={"greedy": False}))
    assert scheduler.scheduler.policy.base.name == "spf" and scheduler.scheduler.greedy is False
    assert type(scheduler.scheduler.estimator.predictor).__name__ == "UserAverage"
    code, _, err = run(capsys, *simulate(tmp_path, "--scheduler", "ordered-firstfit", "--reservations", "cores"))
    one_line_error(code, err, "scheduler 'ordered-firstfit' takes no --reservations")


def test_a_broken_entry_point_is_one_line_naming_its_distribution(third_party, tmp_path, capsys):
    code, _, err = run(capsys, *simulate(tmp_path, "--scheduler", "broken"))
    one_line_error(code, err, "scheduler 'broken' (entry point myplugin.nothere:X of myplugin 0.1) cannot be "
                              "loaded: ModuleNotFoundError: No module named 'myplugin'")
    code, _, err = run(capsys, *simulate(tmp_path, "--policy", "missing-attr"))
    one_line_error(code, err, "policy 'missing-attr'", "AttributeError")


def test_plugins_marks_broken_entry_points(third_party, capsys):
    code, out, _ = run(capsys, "plugins")
    assert code == 0
    lines = out.splitlines()
    broken = lines.index(next(line for line in lines if line.strip().startswith("broken ")))
    assert "myplugin.nothere:X (myplugin 0.1)" in lines[broken]
    assert lines[broken + 1].strip().startswith("BROKEN: ModuleNotFoundError")
    ordered = lines.index(next(line for line in lines if line.strip().startswith("ordered-firstfit")))
    assert "-o greedy=true" in lines[ordered + 1]
    easy = lines.index(next(line for line in lines if line.strip().startswith("easy ")))
    assert "(batsched-ml " in lines[easy]


def test_api_version_is_checked(third_party, tmp_path, capsys):
    code, _, err = run(capsys, *simulate(tmp_path, "--scheduler", "future"))
    one_line_error(code, err, "of futureplugin 3.0) needs plugin API 2.0; this batsched-ml provides 1.2")
    code, _, err = run(capsys, *simulate(tmp_path, "--scheduler", "newer-minor"))
    one_line_error(code, err, "needs plugin API 1.9")


# ------------------------------------------------------- scikit-learn's contract
def _learning_components():
    from batsched_ml.config.plugins import entries, load_entry

    for kind in ("predictors", "corrections", "classifiers", "distributions"):
        for name, entry in entries(kind).items():
            yield kind, name, load_entry(entry)


@pytest.mark.parametrize("kind, name, cls", list(_learning_components()), ids=lambda v: getattr(v, "__name__", v))
def test_learning_components_follow_the_estimator_contract(kind, name, cls):
    obj = cls()
    assert isinstance(obj, Params)
    params = obj.get_params()
    # the constructor stores each parameter under its own name, unchanged, and nothing learned
    assert all(not key.endswith("_") for key in vars(obj)), vars(obj)
    assert set(vars(obj)) == set(params)
    obj.validate_params()
    from sklearn.base import clone

    assert clone(obj).get_params() == params
    assert obj.set_params(**params) is obj


def test_validation_happens_at_build_not_in_the_constructor():
    from batsched_ml.predictors.basic import UserAverage

    stored = UserAverage(window=0)  # stores
    assert stored.window == 0
    with pytest.raises(ConfigError.__mro__[1], match="window must be an integer >= 1"):
        stored.reset()
    with pytest.raises(ValueError, match="-o predictor_window=0: window must be"):
        build_scheduler(RunConfig(predictor="ave2", options={"predictor_window": 0}))


def test_learned_state_before_learning_says_so():
    from batsched_ml.distributions.user import UserDistribution

    with pytest.raises(AttributeError, match="call reset\\(\\) or fit\\(\\) first"):
        UserDistribution().predict_proba([])


def test_plugin_errors_are_lookup_errors():
    with pytest.raises(PluginError):
        plugins.load("schedulers", "nope")
