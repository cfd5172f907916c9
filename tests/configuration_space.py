"""The whole configuration space of ``batsched-ml simulate``, drawn from what the program declares.

Every flag of ``simulate``'s "scheduler" argument group is drawn: a flag naming a plugin
(``--scheduler``, ``--policy``, ``--predictor``, ``--correction``, ``--classifier``,
``--distribution``: ``--<kind>`` for each kind of ``plugins.GROUPS``) among the registered
plugins (``plugins.available``) or an unknown name, ``--preset`` among the presets or an unknown
name, and for ``--policy`` also the specs
(``expr:``, ``learned:FILE#k``, ``rl:FILE`` with the shipped files, a missing file); a flag with choices among them; a switch on
or off; a typed value among valid and invalid ones; and ``-o KEY=VALUE`` among the keys the drawn
configuration's constructors declare (``config.resolve.option_schema``), or a misspelt one. A new
plugin, flag or constructor parameter is drawn without editing this file (an unknown kind of flag
fails loudly instead of being skipped).

``run_cli_case`` runs one draw through ``batsched_ml.cli.main`` in this process: it must either
run, with a schedule the independent checker accepts, or be refused before anything runs with
exactly one ``batsched-ml...: error: ...`` line on stderr and exit code 2.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
import warnings
from pathlib import Path

from hypothesis import strategies as st
from random_cases import fcfs_ordered, workload_list
from threadpoolctl import threadpool_limits

from batsched_ml.analysis.checker import IDLE_SLACK, check_run
from batsched_ml.cli import build_parser, main
from batsched_ml.config import presets
from batsched_ml.config.declare import RunConfig
from batsched_ml.config.plugins import GROUPS, SINGULAR, available, load
from batsched_ml.config.resolve import option_schema, resolve, show_default
from batsched_ml.workloads.loader import write_workload
from batsched_ml.workloads.platform import write_platform

ERROR_LINE = re.compile(r"^batsched-ml[^:]*: error: \S")
UNKNOWN = "no-such-plugin"  # a plugin name nobody registered: must be refused
# values of a typed flag (a number, a seed): valid ones, and out-of-range or malformed ones
TYPED_VALUES = ["0", "1", "60", "1000.5", "-1", "nan", "inf", "abc", "4294967296"]
# --policy also takes a spec besides the policy plugins: a formula (expr:), a learned function
# (learned:FILE#k) and a trained scoring network (rl:FILE, issue 27), each as shipped in
# experiments/policies, and a file that does not exist (refused in one line)
POLICY_FILES = Path(__file__).resolve().parent.parent / "experiments" / "policies"
RL_POLICIES = [f"rl:{POLICY_FILES / 'rl' / 'rl-sdsc-sp2-easy-s0.json'}",
               f"rl:{POLICY_FILES / 'rl' / 'rl-lublin-256-none-s0.json'}", "rl:no-such-network.json"]
EXPRESSIONS = ["expr:r*n", f"learned:{POLICY_FILES / 'lublin256-t32-p16k.json'}#1", *RL_POLICIES]
# -o values that keep a draw quick (classifiers' models, weeks short enough to retrain); any
# other key drawn gets its declared default
QUICK = {"n_estimators": 3, "max_iter": 5, "max_samples": None, "period": 600.0, "unix_start_time": 0,
         "distribution_n_estimators": 3, "distribution_warmup": 600.0}
MISSPELT = "no_such_option"
# the draw (of 0..29) that picks an unknown name or a misspelt key: not 0 nor 29, which hypothesis
# draws far more often than 1 in 30
RARE = 13


def _scheduler_flags() -> list:
    """The actions of ``simulate``'s "scheduler" argument group (the flags choosing a scheduler)."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    simulate = commands.choices["simulate"]
    group = next(g for g in simulate._action_groups if g.title == "scheduler")
    return list(group._group_actions)


FLAGS = _scheduler_flags()
PLUGIN_FLAGS = {f"--{SINGULAR[kind]}": kind for kind in GROUPS}


def _flag(action) -> str:
    return max(action.option_strings, key=len)


@st.composite
def cli_configurations(draw, policies: list | None = None, runnable: bool = False) -> dict:
    """``{"argv": [flags...], "config": {dest: value}}``: one point of the configuration space
    (``policies``: draw ``--policy`` among these only, every other flag as usual). ``runnable``:
    only points that run -- plugins by their names, valid values, and of the flags drawn only
    those the drawn scheduler takes and those whose prerequisite was drawn (``runnable_config``)."""
    argv, config = [], {}
    option_action = None
    for action in FLAGS:
        flag = _flag(action)
        if action.dest == "option":
            option_action = action
            continue
        if flag in PLUGIN_FLAGS:
            names = list(available(PLUGIN_FLAGS[flag]))
            if flag == "--policy":
                names += [p for p in EXPRESSIONS if not (runnable and "no-such" in p)]
            if flag == "--policy" and policies is not None:
                value = draw(st.sampled_from(policies))
            elif draw(st.integers(0, 29)) == RARE and not runnable:
                value = UNKNOWN
            else:
                value = draw(st.sampled_from(names + ([None] * len(names) if action.default is None else [])))
        elif action.dest == "preset":  # a named configuration (one draw in four), or an unknown name
            names = presets.names()
            value = UNKNOWN if draw(st.integers(0, 29)) == RARE else \
                draw(st.sampled_from(names + [None] * (3 * len(names))))
        elif action.choices:
            value = draw(st.sampled_from(list(action.choices)))
        elif action.nargs == 0:
            value = draw(st.integers(0, 3)) == 2
        elif action.type is not None:
            values = [v for v in TYPED_VALUES if not runnable or _parses(action, v)]
            value = draw(st.sampled_from(values)) if draw(st.integers(0, 3)) == 2 else None
        else:
            raise AssertionError(f"{flag}: a kind of flag the configuration space does not know how to draw")
        config[action.dest] = value
    if runnable:
        config = runnable_config(config)
    for action in FLAGS:
        value = config.get(action.dest)
        if action.dest == "option" or value is None or value is False:
            continue
        argv += [_flag(action)] if value is True else [_flag(action), str(value)]
    if option_action is not None:
        for key, value in draw(_options(config, runnable)):
            argv += ["-o", f"{key}={value}"]
            config.setdefault("options", {})[key] = value
    return {"argv": argv, "config": config}


def _parses(action, text: str) -> bool:
    try:
        action.type(text)
    except Exception:  # noqa: BLE001 - argparse's type refuses it
        return False
    return True


def runnable_config(config: dict) -> dict:
    """``config`` without the settings the drawn scheduler does not take and those whose
    prerequisite was not drawn (``compose.resolve``'s two refusals; the settings themselves say
    which apply: ``Setting.param`` and ``Setting.needs``)."""
    from batsched_ml.config.resolve import scheduler_accepts
    from batsched_ml.config.declare import settings

    takes = scheduler_accepts(load("schedulers", config.get("scheduler") or "easy"))
    out = dict(config)
    for name, spec in settings().items():  # declaration order: a prerequisite comes first
        if spec.param is not None and spec.param not in takes:
            out[name] = None
        if spec.needs is not None and out.get(spec.needs) in (None, False):
            out[name] = None if not spec.switch else False
    return out


@st.composite
def _options(draw, config: dict, runnable: bool = False) -> list:
    """``-o`` pairs: some of the keys this configuration declares (defaults, or quick values), and
    sometimes (not when ``runnable``) a key it does not have."""
    valid = _valid_option_keys(config)
    pairs = []
    if valid:
        chosen = draw(st.lists(st.sampled_from(sorted(valid)), max_size=3, unique=True))
        chosen += [key for key in QUICK if key in valid and key not in chosen]
        for key in chosen:
            pairs.append((key, _typed(QUICK[key] if key in QUICK else valid[key])))
    if draw(st.integers(0, 29)) == RARE and not runnable:
        pairs.append((MISSPELT, "1"))
    return pairs


def _valid_option_keys(config: dict) -> dict | None:
    """``{key: default}`` of every ``-o`` key the drawn plugins declare (``config.resolve.option_schema``);
    None when the plugins alone are refused (the run is then refused before ``-o`` matters)."""
    names = {kind: config.get(SINGULAR[kind]) for kind in GROUPS}
    chosen = {SINGULAR[kind]: name for kind, name in names.items() if name is not None}
    if config.get("preset") is not None:
        chosen["preset"] = config["preset"]
    try:
        resolved = resolve(RunConfig.from_kwargs(**chosen))
        schema = option_schema(resolved, load("schedulers", resolved.scheduler))
    except Exception:  # noqa: BLE001 - an unknown plugin or a refused combination
        return None
    return None if schema is None else {key: spec.default for key, spec in schema.items()}


def _typed(value) -> str:
    """A value as typed after ``-o KEY=`` (``simulate`` parses it as JSON when it can)."""
    return show_default(value) if not isinstance(value, float) else json.dumps(value)


def run_cli_case(workload: dict, case: dict) -> tuple[list[str], str]:
    """Run one draw through the command line; ``(problems, outcome)`` with outcome ``ran`` or
    ``refused``. (One OpenMP thread: tiny scikit-learn fits are much slower with a pool.)"""
    workloads = workload_list(workload)
    with tempfile.TemporaryDirectory() as tmp, threadpool_limits(1):
        tmp = Path(tmp)
        write_platform(workload["nb_res"], tmp / "p.xml")
        argv = ["simulate", "-p", str(tmp / "p.xml"), "-e", str(tmp / "out" / "run"), "--quiet"]
        for i, w in enumerate(workloads):
            write_workload(w, tmp / f"w{i}.json")
            argv += ["-w", str(tmp / f"w{i}.json")]
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                code = main(argv + case["argv"])
            except SystemExit as exc:  # argparse refuses a flag
                code = exc.code
            except Exception as exc:  # noqa: BLE001 - a traceback is a failure like any other
                return [f"crash: {type(exc).__name__}: {exc}"], "crash"
        lines = err.getvalue().splitlines()
        if code == 2:
            lines += [f"warning: {w.message}" for w in caught]
            problems = []
            if len(lines) != 1 or not ERROR_LINE.match(lines[0]):
                problems.append(f"refused without exactly one 'batsched-ml: error:' line: {lines[:5]}")
            written = sorted(p.name for p in (tmp / "out").glob("*")) if (tmp / "out").exists() else []
            if written:
                problems.append(f"refused after it ran (exit 2, wrote {written}): {lines[-1:]}")
            return problems, "refused"
        if code != 0:
            return [f"exit {code}: {lines[-3:]}"], "failed"
        config = {"scheduler": "easy", "policy": "fcfs", **_with_preset(case["config"])}
        violations = check_run(tmp / "out" / "run_jobs.csv", workloads, workload["nb_res"], idle_slack=IDLE_SLACK,
                               fcfs_head=fcfs_ordered(config))
        return [str(v) for v in violations], "ran"


def _with_preset(config: dict) -> dict:
    """The drawn flags with what their preset sets where they set nothing (the run's settings)."""
    if config.get("preset") is None:
        return config
    return {**config, **{k: v for k, v in presets.get(config["preset"]).settings.items() if config.get(k) in (None, False)}}


def describe_cli(workload: dict, case: dict, problems: list) -> str:
    return (f"{len(problems)} problem(s):\n  " + "\n  ".join(problems[:10])
            + f"\nflags: {' '.join(case['argv'])}\nworkload: {json.dumps(workload)}")
