"""Learned policies (Carastan-Santos & de Camargo 2017): the Lublin generator, the trial kernel,
the regression, ``expr:`` / ``learned:`` policies and the ``learn-policy`` / ``generate`` commands."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from batsched_ml.cli import main
from batsched_ml.config.compose import build_policy
from batsched_ml.learning.regression import Shape, all_shapes, fit_all, fit_shape, policy_document
from batsched_ml.learning.trials import draw_tuples, simulate_trials, trial_scores
from batsched_ml.policies.expression import ExpressionError, ExpressionPolicy
from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.workloads.lublin import generate_lublin, lublin_jobs

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ generator
def test_generator_is_reproducible_by_seed():
    a, b, c = (generate_lublin(64, 300, seed=s) for s in (5, 5, 6))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert json.dumps(a, sort_keys=True) != json.dumps(c, sort_keys=True)
    assert a["nb_res"] == 64 and len(a["jobs"]) == 300


def test_generator_respects_the_model_shape():
    t = lublin_jobs(128, 20000, seed=1)
    sizes, runtimes, estimates = t["allocated_procs"], t["run_time"], t["requested_time"]
    assert sizes.min() >= 1 and sizes.max() <= 128
    assert abs(np.mean(sizes == 1) - 0.244) < 0.015           # serial probability
    parallel = sizes[sizes > 1]
    assert np.mean(np.log2(parallel) % 1 == 0) > 0.7          # mostly powers of two
    assert runtimes.min() >= 1 and runtimes.max() <= np.exp(12)
    assert np.all(estimates >= runtimes)                      # an estimate never undercuts the runtime
    # bigger jobs run longer (the hyper-gamma's weight depends on the size)
    assert np.median(runtimes[sizes >= 32]) > 2 * np.median(runtimes[sizes == 1])
    # daily cycle: more arrivals in working hours than at night
    hours = (t["submit_time"] % 86400) // 3600
    assert np.sum((hours >= 9) & (hours < 17)) > 2 * np.sum(hours < 8)


def test_generator_matches_the_shared_lublin_trace(shared):
    from scipy.stats import ks_2samp

    path = shared / "traces" / "lublin_256.swf.gz"
    if not path.exists():
        pytest.skip("lublin_256.swf.gz not in ../shared")
    ref = np.loadtxt(gzip.open(path, "rt"), comments=";")
    ours = lublin_jobs(256, 10000, seed=1)
    for name, theirs, mine in [("sizes", ref[:, 4], ours["allocated_procs"]),
                               ("runtimes", ref[:, 3], ours["run_time"]),
                               ("inter-arrivals", np.diff(ref[:, 1]), np.diff(ours["submit_time"]))]:
        assert ks_2samp(theirs, mine).pvalue > 0.01, name
    assert abs(np.mean(ref[:, 4] == 1) - np.mean(ours["allocated_procs"] == 1)) < 0.02


def test_generate_command_writes_identical_files(tmp_path, capsys):
    for name in ("a", "b"):
        assert main(["generate", "lublin", "--cores", "32", "--jobs", "50", "--seed", "2",
                     "-w", str(tmp_path / f"{name}.json"), "-p", str(tmp_path / f"{name}.xml")]) == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    from batsched_ml.workloads import read_platform

    assert read_platform(tmp_path / "a.xml").nb_hosts == 32
    with pytest.raises(SystemExit) as exit_:  # rejected by the argument parser (config/validate.py)
        main(["generate", "lublin", "--cores", "0", "--jobs", "5", "-w", str(tmp_path / "c.json")])
    assert exit_.value.code == 2


# ------------------------------------------------------------------ trial kernel
def _list_schedule(tasks, cores):
    """Reference: strict list scheduling, one task at a time, by scanning the running set."""
    running, last, starts = [], 0.0, []
    for r, n, s in tasks:
        t = max(last, s)
        while sum(m for e, m in running if e > t) + n > cores:
            t = min(e for e, m in running if e > t)
        running.append((t + r, n))
        last = t
        starts.append(t)
    return starts


def test_trial_scores_equal_exhaustive_enumeration():
    s_tasks = np.array([[50, 6, 0], [20, 3, 5], [90, 2, 8]], dtype=float)
    q_tasks = np.array([[30, 4, 10], [5, 1, 12], [70, 8, 12], [2, 2, 20], [40, 5, 25]], dtype=float)
    perms = np.array(list(itertools.permutations(range(5))))
    sums = np.zeros(5)
    expected_ave = []
    for p in perms:
        starts = _list_schedule(list(s_tasks) + list(q_tasks[p]), 8)[3:]
        wait = np.array(starts) - q_tasks[p, 2]
        r = q_tasks[p, 0]
        ave = np.mean(np.maximum((wait + r) / np.maximum(r, 10), 1))
        expected_ave.append(ave)
        sums[p[0]] += ave
    np.testing.assert_allclose(simulate_trials(s_tasks, q_tasks, perms, 8), expected_ave)
    got = trial_scores(s_tasks, q_tasks, len(perms), 8, permutations=perms, chunk=7)
    np.testing.assert_allclose(got, sums / sums.sum())
    assert got.sum() == pytest.approx(1.0)


def test_trial_scores_on_model_tuples_are_seeded_and_sum_to_one():
    table = lublin_jobs(256, 400, seed=4)
    jobs = np.column_stack([table["run_time"], table["allocated_procs"], table["submit_time"]])
    (s_tasks, q_tasks), = draw_tuples(jobs, 1, seed=3)
    assert s_tasks.shape == (16, 3) and q_tasks.shape == (32, 3) and s_tasks[0, 2] == 0
    a = trial_scores(s_tasks, q_tasks, 600, 256, seed=1, chunk=256)
    b = trial_scores(s_tasks, q_tasks, 600, 256, seed=1, chunk=600)
    np.testing.assert_allclose(a, b, rtol=1e-12)  # chunking does not change the draws
    np.testing.assert_array_equal(a, trial_scores(s_tasks, q_tasks, 600, 256, seed=1, chunk=256))
    assert a.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError):
        trial_scores(s_tasks, q_tasks, 10, 64)  # tasks bigger than the machine


# ------------------------------------------------------------------ regression
def _synthetic(n_points=600, seed=0):
    rng = np.random.default_rng(seed)
    r = np.exp(rng.uniform(0, 11, n_points))
    n = 2.0 ** rng.integers(0, 9, n_points)
    s = rng.uniform(1, 2e5, n_points)
    return r, n, s


def test_regression_recovers_known_coefficients():
    r, n, s = _synthetic()
    shape = Shape("log10", "id", "log10", "*", "+")
    score = shape.evaluate([3e-5, 1.0, 0.0261], r, n, s)
    fit = fit_shape(shape, r, n, s, score)
    c = fit.coefficients
    assert c[0] * c[1] == pytest.approx(3e-5, rel=1e-4)
    assert c[2] == pytest.approx(0.0261, rel=1e-4)
    assert fit.rank_error < 1e-8
    assert shape.simplified(c) == "log10(r) * n + 870 * log10(s)"
    candidates = [shape, Shape("sqrt", "id", "log10", "*", "+"), Shape("id", "sqrt", "id", "+", "*")]
    ranked = fit_all(r, n, s, score, shapes=candidates, starts=2)
    assert ranked[0].shape == shape and ranked[0].rank_error < ranked[1].rank_error
    assert len(all_shapes()) == 576
    twin = Shape("log10", "inv", "log10", "/", "+")  # log10(r) / inv(n) is log10(r) * n
    assert twin.canonical() == shape
    twin_fit = fit_shape(twin, r, n, s, score, starts=1)
    doc = policy_document([twin_fit, fit], 5, {})
    assert [(f["beta"], f["op1"]) for f in doc["functions"]] == [("id", "*")]  # one, in canonical form
    kept = ExpressionPolicy(doc["functions"][0]["expression"])
    assert kept.value(500.0, 16, 9000.0) == pytest.approx(twin.evaluate(twin_fit.coefficients, 500.0, 16, 9000.0))


def test_policy_file_round_trips_through_learned(tmp_path):
    r, n, s = _synthetic(200)
    shape = Shape("sqrt", "id", "log10", "*", "+")
    score = shape.evaluate([1e-4, 2.0, 0.05], r, n, s)
    fits = fit_all(r, n, s, score, shapes=[shape, Shape("id", "id", "id", "+", "+")], starts=1)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(policy_document(fits, 2, {"procedure": {}})))
    policy = build_policy(f"learned:{path}#1")
    assert policy.value(400.0, 8, 3000.0) == pytest.approx(shape.evaluate(fits[0].coefficients, 400.0, 8, 3000.0))
    assert build_policy(f"learned:{path}").expression == policy.expression
    with pytest.raises(ExpressionError, match="has 2 functions"):
        build_policy(f"learned:{path}#3")
    with pytest.raises(ExpressionError):
        build_policy(f"learned:{tmp_path / 'missing.json'}")


# ------------------------------------------------------------------ expr: policies
def test_expression_values_clip_r_and_s_and_order_ties_like_builtins():
    p = ExpressionPolicy("log10(r)*n + 870*log10(s) - w/2")
    assert p.dynamic
    assert p.value(0.5, 4, 0.0, 10) == pytest.approx(0.0 - 5)  # r and s clipped at 1 s
    assert p.value(100.0, 4, 1000.0, 0) == pytest.approx(2 * 4 + 870 * 3)
    assert ExpressionPolicy("1/(w - w)").value(10, 1, 1, 5) == float("inf")  # sorts last
    assert not ExpressionPolicy("r*n").dynamic


@pytest.mark.parametrize("bad", [
    "__import__('os').system('true')", "r.__class__", "open('x')", "x + 1", "lambda: 1", "[r][0]",
    "r if n else s", "r < n", "max(r, n, key=abs)", "'a' * 3", "", "log10(r", "(r)(n)", "True + r",
])
def test_expression_parser_refuses_anything_but_arithmetic(bad):
    with pytest.raises(ExpressionError):
        ExpressionPolicy(bad)


def test_bad_expression_on_the_command_line_exits_2(tmp_path, capsys):
    code = main(["simulate", "-p", str(ROOT / "tests/data/platform-16.xml"), "-w", str(ROOT / "tests/data/tiny.json.gz"),
                 "-e", str(tmp_path / "o"), "--policy", "expr:__import__('os')"])
    assert code == 2
    assert "not allowed" in capsys.readouterr().err


TABLE3 = {"f1": "log10(r) * n + 8.70e2 * log10(s)", "f2": "sqrt(r) * n + 2.56e4 * log10(s)",
          "f3": "r * n + 6.86e6 * log10(s)", "f4": "r * sqrt(n) + 5.30e5 * log10(s)"}


@pytest.mark.parametrize("scheduler", ["fcfs", "easy"])
@pytest.mark.parametrize("builtin", sorted(TABLE3))
def test_table3_expressions_give_exactly_the_builtin_schedules(tmp_path, scheduler, builtin):
    workload = ROOT / "workloads" / "KTH-SP2-1k.json"
    platform = ROOT / "platforms" / "cluster-100.xml"
    csvs = []
    for name, policy in (("builtin", builtin), ("expr", f"expr:{TABLE3[builtin]}")):
        result, _ = simulate(platform, workload, build_scheduler(scheduler, policy=policy), prefix=tmp_path / name)
        csvs.append(Path(result.jobs_csv).read_bytes())
    assert csvs[0] == csvs[1]


# ------------------------------------------------------------------ learn-policy
def test_learn_policy_command_writes_ranked_functions_and_resumes(tmp_path, capsys):
    out = tmp_path / "pol.json"
    args = ["learn-policy", "--cores", "256", "--tuples", "2", "--trials", "64", "--jobs", "300", "--top", "3",
            "--starts", "1", "--bases", "log10,sqrt", "--operators", "+,*", "--workers", "0", "-q", "-o", str(out)]
    assert main(args) == 0
    doc = json.loads(out.read_text())
    assert [f["rank"] for f in doc["functions"]] == [1, 2, 3]
    errors = [f["rank_error"] for f in doc["functions"]]
    assert errors == sorted(errors)
    scores = tmp_path / "pol.scores.csv"
    first = scores.read_text()
    assert len(first.splitlines()) == 1 + 2 * 32
    assert main(args[:4] + ["3"] + args[5:]) == 0  # one more tuple: the first two are kept
    assert scores.read_text().startswith(first) and len(scores.read_text().splitlines()) == 1 + 3 * 32
    assert "2 already scored" in capsys.readouterr().out
    build_policy(f"learned:{out}#3")
    assert main(args + ["--operators", "%"]) == 2


def test_generator_load_grows_with_the_machine_as_in_the_papers_workloads():
    """The model's arrivals do not depend on the machine while sizes scale with it (uhi = log2(cores)):
    the paper's own lublin_256.swf / lublin_1024.swf (its artifact, 20,000 jobs each) offer a load of
    0.81 / 1.04 of their machine, mean sizes 22.4 / 78.3 cores. Ours must be that overloaded too."""
    def offered(cores):
        t = lublin_jobs(cores, 20000, seed=0)
        span = t["submit_time"].max() - t["submit_time"].min()
        return (t["run_time"] * t["allocated_procs"]).sum() / (span * cores), t["allocated_procs"].mean()

    (load256, size256), (load1024, size1024) = offered(256), offered(1024)
    assert 0.7 < load256 < 0.95 and 0.9 < load1024 < 1.15
    assert 20 < size256 < 25 and 70 < size1024 < 85


# ------------------------------------------------------------------ the paper's sequence simulator
def _window_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("carastan2017_window", ROOT / "benchmarks/carastan2017_window.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _seq(s, r, n, e=None):
    return {"s": s, "r": r, "n": n, "e": e or r}


def test_paper_simulator_reorders_only_a_window_of_the_list():
    w = _window_module()
    seq = _seq([0, 1, 2, 3], [100, 100, 100, 1], [1, 1, 1, 1])
    spt = w.policy("spt")
    # whole queue: at t=100 the 1 s job (j3) passes j1 and j2
    assert w.simulate(seq, 1, spt, window=0, head=0, latency=0) == pytest.approx((1 + 9.8 + 2.0 + 2.99) / 4)
    # window of 2 positions: j3 is not visible at t=100, j1 starts, then j3 passes j2
    assert w.simulate(seq, 1, spt, window=2, head=0, latency=0) == pytest.approx((1 + 1.99 + 19.8 + 2.99) / 4)
    # the first `head` jobs are not measured
    assert w.simulate(seq, 1, spt, window=0, head=1, latency=0) == pytest.approx((9.8 + 2.0 + 2.99) / 3)


def test_paper_simulator_unicef_puts_one_core_jobs_first_and_backfills_one_job():
    w = _window_module()
    seq = _seq([0, 1, 2], [100, 10, 1000], [4, 4, 1])
    # log2(1 + 1e-20) = 0: the one-core job j2 has an infinite priority and blocks j1 until 1100
    assert w.simulate(seq, 4, w.policy("unicef"), head=0, latency=0) == pytest.approx((1 + 110.9 + 1.098) / 3)
    assert w.simulate(seq, 4, w.policy("unicef+1"), head=0, latency=0) == pytest.approx((1 + 10.9 + 1.108) / 3)
    seq = _seq([0, 1, 2], [100, 10, 50], [3, 4, 1])
    fcfs = w.policy("fcfs")
    assert w.simulate(seq, 4, fcfs, head=0, latency=0) == pytest.approx((1 + 10.9 + 3.16) / 3)
    # j2 fits on the free core and ends (t=52) before the head j1 can start (t=100)
    assert w.simulate(seq, 4, fcfs, head=0, backfill=True, latency=0) == pytest.approx((1 + 10.9 + 1) / 3)


def test_paper_sequences_are_consecutive_head_plus_days():
    from types import SimpleNamespace

    w = _window_module()
    jobs = lublin_jobs(256, 3000, seed=1)
    seqs = w.sequences(SimpleNamespace(jobs=jobs), count=4, days=1, head=16)
    assert len(seqs) == 4
    first = 0
    for q in seqs:
        assert q["s"][0] == 0 and max(q["s"]) <= 86400 and len(q["s"]) > 16
        assert q["r"] == jobs["run_time"][first:first + len(q["s"])].astype(int).tolist()
        first += len(q["s"])
        assert jobs["submit_time"][first] - jobs["submit_time"][first - len(q["s"])] > 86400
