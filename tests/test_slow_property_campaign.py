"""The property-based tests at scale (issue 13; slow): many random workloads x configurations.

The same strategies and checks as ``test_properties.py`` and ``test_equivalences.py``, with a
drawn seed instead of CI's fixed examples, many more examples, and shrinking: a failure is
reported as a minimal workload with its flags. Each property:

* ``schedules``: every configuration gives a valid (``analysis/checker.py``), deterministic schedule;
* ``cli``: the whole configuration space through the command line runs and passes the checker,
  or is refused in one ``batsched-ml: error:`` line and exit 2 (``configuration_space.py``);
* ``walltime-easy``: probabilistic backfilling with point masses at the walltimes is EASY;
* ``compiled``: conservative's compiled pass is its Python pass (both reservation models); and with
  the compiled pass from 4 queued jobs on (back to Python below 2), so that small workloads switch
  between the passes,
  every conservative configuration still gives a valid, deterministic schedule;
* ``serve``: a configuration behind ``serve`` (ZeroMQ) gives the in-process run;
* ``snapshots``: a run of the whole configuration space paused at a drawn instant and resumed from its
  snapshot gives the uninterrupted run's outputs byte for byte; ``killed``: the same for a run with
  ``--checkpoint-every`` killed (SIGKILL) at drawn wall-clock moments and resumed each time
  (``snapshot_cases.py``; a twentieth of the examples: each kill costs a worker process);
* outputs digested in two fresh processes with different ``PYTHONHASHSEED`` are identical
  (set iteration order, hashing: what two runs in one process cannot see).

Scale and seed from the environment::

    BATSCHED_ML_PROPERTY_EXAMPLES=10000 BATSCHED_ML_PROPERTY_SEED=1 \\
        nice python -m pytest -m slow tests/test_slow_property_campaign.py -k schedules \\
        --hypothesis-show-statistics

(default: 300 examples, seed 0). ``--hypothesis-show-statistics`` lists what the examples
exercised (schedulers, options, kills, requeues, walltimes reached...).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import configuration_space as space
import equivalence_cases as eq
import pytest
import snapshot_cases
from hypothesis import HealthCheck, Phase, event, given, seed, settings
from hypothesis import strategies as st
from random_cases import configurations, describe, run_twice, workloads

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("BATSCHED_ML_PROPERTY_EXAMPLES", "300"))
SEED = int(os.environ.get("BATSCHED_ML_PROPERTY_SEED", "0"))
TESTS = Path(__file__).resolve().parent


def campaign(examples: int = EXAMPLES, **strategies):
    """``@given`` with the campaign's settings: a seeded draw (not CI's derandomized one), shrinking on."""
    def decorate(test):
        return seed(SEED)(settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                                   phases=[Phase.explicit, Phase.generate, Phase.shrink],
                                   suppress_health_check=list(HealthCheck), report_multiple_bugs=False)(
            given(**strategies)(test)))
    return decorate


EXERCISED = {"kill": b'"KILL_JOB"', "requeue": b'"REGISTER_JOB"', "walltime reached": b"COMPLETED_WALLTIME_REACHED",
             "rejection": b'"REJECT_JOB"', "call me later": b'"CALL_ME_LATER"'}


def _tally(config: dict, output: bytes = b"") -> None:
    """What an example exercised, in hypothesis's statistics."""
    event(f"scheduler={config['scheduler']}")
    event(f"reservations={config.get('reservations')}, latency={config.get('latency')}")
    for option in ("predictor", "correction", "classifier", "starvation_threshold"):
        if config.get(option) is not None:
            event(f"with {option}")
    for name, marker in EXERCISED.items():
        if marker in output:
            event(f"runs with a {name}")


@pytest.fixture(autouse=True)
def _quiet_numerics():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numeric warnings of degenerate random inputs: the checker decides
        yield


@campaign(workload=workloads(max_jobs=16), config=configurations())
def test_schedules(workload, config):
    problems, output = run_twice(workload, config)
    _tally(config, output)
    assert not problems, describe(workload, config, problems)


@campaign(workload=workloads(max_jobs=16), case=space.cli_configurations())
def test_cli(workload, case):
    problems, outcome = space.run_cli_case(workload, case)
    event(f"outcome={outcome}")
    for key in ("scheduler", "classifier", "distribution"):
        event(f"{key}={case['config'].get(key)}")
    assert not problems, space.describe_cli(workload, case, problems)


@campaign(workload=workloads(max_jobs=16), config=configurations(["easy"]).map(eq.without_predictor),
          rescan=st.sampled_from(["always", "changes"]))
def test_walltime_distribution_is_easy(workload, config, rescan):
    _tally(config)
    problems = eq.walltime_vs_easy(workload, config, rescan)
    assert not problems, describe(workload, config, problems)


@pytest.fixture
def compiled_from_4_jobs(monkeypatch):
    from batsched_ml.scheduling import conservative

    monkeypatch.setattr(conservative, "COMPILED_FROM", 4)
    monkeypatch.setattr(conservative, "COMPILED_UNTIL", 2)
    monkeypatch.setattr(conservative, "CORES_COMPILED_FROM", 4)  # batsched's model, on any machine
    monkeypatch.setattr(conservative, "CORES_COMPILED_UNTIL", 2)
    monkeypatch.setattr(conservative, "CORES_COMPILED_MACHINE", 1)


@campaign(workload=workloads(max_jobs=16), config=configurations(["conservative"]))
def test_compiled_pass_is_the_python_pass(workload, config):
    _tally(config)
    problems = eq.compiled_vs_python(workload, config)
    assert not problems, describe(workload, config, problems)


@campaign(workload=workloads(max_jobs=16), config=configurations(["conservative"]))
def test_switching_between_the_passes_gives_valid_schedules(compiled_from_4_jobs, workload, config):
    problems, output = run_twice(workload, config)
    _tally(config, output)
    assert not problems, describe(workload, config, problems)


@campaign(examples=max(EXAMPLES // 5, 1), workload=workloads(max_jobs=16),
          config=configurations().map(eq.batsim_timing))
def test_serve_is_the_in_process_run(workload, config):
    _tally(config)
    problems = eq.serve_vs_in_process(workload, config)
    assert not problems, describe(workload, config, problems)


INSTANTS = st.one_of(st.sampled_from([0.0, 1.0, 600.0, 1000.5]), st.floats(0.0, 8000.0))


@campaign(workload=workloads(max_jobs=16), case=space.cli_configurations(runnable=True), at=INSTANTS)
def test_snapshots(workload, case, at):
    problems, happened = snapshot_cases.check_case(workload, case, at)
    event(happened)
    for key in ("scheduler", "classifier", "distribution", "predictor"):
        event(f"{key}={case['config'].get(key)}")
    assert not problems, snapshot_cases.describe(workload, case, at, problems)


@campaign(examples=max(EXAMPLES // 20, 1), workload=workloads(max_jobs=16),
          case=space.cli_configurations(runnable=True), at=INSTANTS,
          every=st.sampled_from([10.0, 50.0, 300.0, 1000.0]),
          delays=st.lists(st.floats(0.02, 1.0), min_size=1, max_size=3))
def test_killed(workload, case, at, every, delays):
    problems, happened = snapshot_cases.check_case(workload, case, at, every, delays)
    event(happened)
    assert not problems, snapshot_cases.describe(workload, case, at, problems)


# ------------------------------------------------------------ determinism across processes
DIGESTS = """
import hashlib, json, sys, warnings
sys.path.insert(0, sys.argv[1])
from hypothesis import HealthCheck, Phase, given, seed, settings
from random_cases import configurations, run_twice, workloads
warnings.simplefilter("ignore")
out = []

@seed(int(sys.argv[2]))
@settings(max_examples=int(sys.argv[3]), deadline=None, database=None, derandomize=False,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
@given(workload=workloads(max_jobs=16), config=configurations())
def draw(workload, config):
    _, output = run_twice(workload, config)
    example = json.dumps([workload, config], sort_keys=True).encode()
    out.append(hashlib.sha256(example).hexdigest()[:16] + " " + hashlib.sha256(output).hexdigest()[:16])

draw()
print("\\n".join(out))
"""


def test_outputs_are_the_same_in_processes_with_other_hash_seeds():
    examples = max(EXAMPLES // 5, 1)
    runs = []
    for hash_seed in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", DIGESTS, str(TESTS), str(SEED), str(examples)],
                              env=dict(os.environ, PYTHONHASHSEED=hash_seed), capture_output=True, text=True,
                              timeout=3600)
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(done.stdout.split())
    assert runs[0], "no example was drawn"
    assert runs[0] == runs[1]  # the same examples, the same outputs, line by line

