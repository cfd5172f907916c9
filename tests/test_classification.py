"""Small/large classification and kill-and-requeue of false-small jobs (Zrigui et al. 2022)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_dir  # tests/ is on sys.path (pytest's rootdir conftest)
from batsched_ml.analysis.metrics import compute_metrics, merge_attempts, read_jobs_csv
from batsched_ml.classifiers import (
    FEATURE_NAMES,
    CalendarClock,
    GradientBoostingJobClassifier,
    JobClassifier,
    RandomForestJobClassifier,
    ClassifyingScheduler,
    SmallFirst,
)
from batsched_ml.classifiers.models import small_from_proba
from batsched_ml.core.decision_core import DecisionCore
from batsched_ml.policies.orders import FCFS
from batsched_ml.protocol import events as ev
from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.scheduling.easy import EasyBackfilling
from batsched_ml.simulator import engine

SHARED = shared_dir()
KTH5K = SHARED / "golden" / "KTH-5k.json.gz" if SHARED else None
needs_kth = pytest.mark.skipif(KTH5K is None or not KTH5K.exists(), reason="golden KTH-5k workload absent")


class AlwaysSmall(JobClassifier):
    """Every job is small once a divider exists: every long job is a false small."""

    name = "always-small"
    needs_training = False

    def fit(self, X, y):
        return self

    def classify(self, job, x, divider):
        return divider is not None


def workload(jobs):
    """jobs: (id, subtime, delay[, res]) -> a Batsim workload dict (walltime 1000)."""
    out = {"nb_res": 4, "jobs": [], "profiles": {}}
    for j in jobs:
        jid, sub, delay = j[:3]
        res = j[3] if len(j) > 3 else 1
        out["jobs"].append({"id": jid, "subtime": sub, "walltime": 1000, "res": res,
                            "profile": f"d{delay}", "user": 7})
        out["profiles"][f"d{delay}"] = {"type": "delay", "delay": delay}
    return out


# Week 0 (period 100 s): runtimes 10, 20, 30 -> divider 20 from t = 100 on.
# Week 1 at 150: job 4 (50 s) is a false small, killed at 170 and requeued once;
# job 5 (5 s) a true small; job 6 (20 s) completes exactly when its kill call fires.
RACE = workload([(1, 0, 10), (2, 0, 20), (3, 0, 30), (4, 150, 50), (5, 150, 5), (6, 150, 20)])


def sched(classifier=None, kill=True, **options):
    """EASY (small jobs first) wrapped in the classification, as ``compose`` builds it."""
    return ClassifyingScheduler(EasyBackfilling(policy=SmallFirst(FCFS())), classifier or AlwaysSmall(),
                                kill_false_small=kill, period=100, unix_start_time=0, **options)


def run_exact(wl, scheduler, prefix):
    """The embedded simulator without Batsim's messaging latency (exact instants), recording decisions."""
    core = DecisionCore(scheduler)
    sent = []

    def exchange(now, events):
        decisions = core.handle(now, events)
        sent.extend(decisions)
        return now, decisions

    sim = engine.Simulator(wl["nb_res"], [("w0", wl)], dynamic_jobs=scheduler.may_requeue,
                           latency=engine.NO_LATENCY)
    result = sim.run(exchange, prefix=str(prefix))
    return result, core, sent


def rows(jobs_csv):
    t = read_jobs_csv(jobs_csv)
    return dict(zip(t.job_id.tolist(), t.final_state.tolist()))


def assert_nothing_lost(wl, jobs_csv):
    states = rows(jobs_csv)
    originals = {str(j["id"]) for j in wl["jobs"]}
    assert {i.partition("#")[0] for i in states} == originals
    for jid, state in states.items():
        base, _, attempt = jid.partition("#")
        assert attempt in ("", "1"), f"{jid}: requeued more than once"
        if attempt:
            assert states[base] == ev.COMPLETED_KILLED  # only killed jobs are requeued
            assert state != ev.COMPLETED_KILLED  # a requeued job is never killed
    # each logical job ends exactly once with a final, non-killed attempt
    records = merge_attempts(read_jobs_csv(jobs_csv))
    assert len(records) == len(originals)
    assert not (records.final_state == ev.COMPLETED_KILLED).any()
    return states


def test_kill_once_and_race(tmp_path):
    s = sched()
    result, core, sent = run_exact(RACE, s, tmp_path / "race")
    states = assert_nothing_lost(RACE, result.jobs_csv)
    assert states["4"] == ev.COMPLETED_KILLED and states["4#1"] == ev.COMPLETED_SUCCESSFULLY
    # job 6 ends at the very instant of its kill call: completed, not requeued
    assert states["6"] == ev.COMPLETED_SUCCESSFULLY and "6#1" not in states
    assert states["5"] == ev.COMPLETED_SUCCESSFULLY and "5#1" not in states
    assert core.jobs["w0!4#1"].info["small"] is False
    kills = [d for d in sent if isinstance(d, ev.KillJob)]
    assert [d.job_ids for d in kills] == [["w0!4"]]
    notes = [d for d in sent if isinstance(d, ev.Notify) and d.kind == ev.REGISTRATION_FINISHED]
    assert len(notes) == 1
    # sent once nothing can be requeued any more: after the requeue of job 4
    reg = [i for i, d in enumerate(sent) if isinstance(d, ev.RegisterJob)]
    assert reg and sent.index(notes[0]) > reg[-1]
    rep = s.report()["classification"]
    assert rep["kills"] == 1 and rep["weekly"][1]["divider"] == 20
    # one definition of wasted work: Batsim's execution time of the killed attempt (jobs CSV)
    assert compute_metrics(result.jobs_csv)["wasted_core_seconds"] == pytest.approx(20.0)
    assert s.job_details()["classes"][1][:3] == [("w0!1", 0, ""), ("w0!2", 0, ""), ("w0!3", 0, "")]
    # true classes against the divider in force at classification: 4 and 6 are false small
    assert rep["jobs"]["w0!4"] == [1, 0] and rep["jobs"]["w0!6"] == [1, 0] and rep["jobs"]["w0!5"] == [1, 1]
    assert rep["overall"]["TS"] == 1 and rep["overall"]["FS"] == 2


class OneCoreSmall(AlwaysSmall):
    """Once a divider exists, exactly the one-core jobs are small."""

    def classify(self, job, x, divider):
        return divider is not None and job.res == 1


def test_requeue_order_original(tmp_path):
    # divider 20 from t = 100. Job 4 (1 core, small) starts at 150 and is killed at 170, when job 7
    # (4 cores, large, waiting since 150) and job 9 (4 cores, large, since 160) are queued: 4#1 queues
    # behind both (resubmitted at 170) or first (its first submission, 150; ties by id, as FCFS does).
    wl = workload([(1, 0, 10), (2, 0, 20), (3, 0, 30), (4, 150, 50), (7, 150, 300, 4), (9, 160, 5, 4)])
    starts = {}
    for order in ("resubmission", "original"):
        s = sched(classifier=OneCoreSmall(), requeue_order=order)
        result, core, sent = run_exact(wl, s, tmp_path / order)
        assert_nothing_lost(wl, result.jobs_csv)
        t = read_jobs_csv(result.jobs_csv)
        starts[order] = dict(zip(t.job_id.tolist(), t.starting_time.tolist()))
        assert core.jobs["w0!4#1"].submission_time == (150 if order == "original" else 170)
    assert (starts["resubmission"]["7"], starts["resubmission"]["9"], starts["resubmission"]["4#1"]) == (170, 470, 475)
    assert (starts["original"]["4#1"], starts["original"]["7"], starts["original"]["9"]) == (170, 220, 520)
    with pytest.raises(ValueError, match="requeue_order"):
        sched(requeue_order="front")


def test_with_batsim_latency_nothing_lost(tmp_path):
    s = sched()
    result, core = simulate(4, RACE, s, prefix=tmp_path / "lat")
    states = assert_nothing_lost(RACE, result.jobs_csv)
    assert "4#1" in states and not result.unfinished
    assert core.registration_done


def test_kill_answered_without_progress_is_not_requeued():
    """Real Batsim: the job completes while the kill travels; JOB_KILLED lists it without progress."""
    s = sched()
    core = DecisionCore(s)
    profiles = {"w0": {"d10": {"type": "delay", "delay": 10}, "d50": {"type": "delay", "delay": 50}}}
    core.handle(0.0, [ev.SimulationBegins(0.0, 4, 4, config={"dynamic-jobs-enabled": True}, profiles=profiles)])

    def job(i, t, prof):
        return ev.JobSubmitted(t, f"w0!{i}", {"id": f"w0!{i}", "subtime": t, "walltime": 1000, "res": 1,
                                               "profile": prof})

    core.handle(0.0, [job(1, 0.0, "d10")])
    core.handle(10.0, [ev.JobCompleted(10.0, "w0!1", ev.COMPLETED_SUCCESSFULLY, 0, "0")])
    out = core.handle(150.0, [job(2, 150.0, "d50"), ev.Notify(150.0, ev.NO_MORE_STATIC_JOB_TO_SUBMIT)])
    assert s.divider == 10 and core.jobs["w0!2"].info["small"]
    assert any(isinstance(d, ev.CallMeLater) and d.at == 160.0 for d in out)
    assert not any(isinstance(d, ev.Notify) for d in out)  # job 2 may still be requeued
    out = core.handle(160.0, [ev.RequestedCall(160.0)])
    assert [d.job_ids for d in out if isinstance(d, ev.KillJob)] == [["w0!2"]]
    assert not any(isinstance(d, ev.Notify) for d in out)  # a kill is pending
    out = core.handle(160.001, [ev.JobCompleted(160.001, "w0!2", ev.COMPLETED_SUCCESSFULLY, 0, "0"),
                                ev.JobKilled(160.001, ["w0!2"], {})])
    assert not any(isinstance(d, (ev.RegisterJob, ev.RegisterProfile)) for d in out)
    assert [d.kind for d in out if isinstance(d, ev.Notify)] == [ev.REGISTRATION_FINISHED]
    assert s.kills == 0 and s.kill_races == 1
    assert core.handle(170.0, [ev.RequestedCall(170.0)]) == []  # never notified twice


def test_no_kill_option_keeps_dynamic_jobs_off(tmp_path):
    s = sched(kill=False)
    assert not s.may_requeue
    result, core, sent = run_exact(RACE, s, tmp_path / "nokill")
    states = rows(result.jobs_csv)
    assert set(states) == {str(j["id"]) for j in RACE["jobs"]}
    assert not any(isinstance(d, (ev.KillJob, ev.Notify)) for d in sent)
    # small jobs first: at 150 job 4 and 6 and 5 are all small; FCFS within the class
    assert states["4"] == ev.COMPLETED_SUCCESSFULLY


def test_kill_only_if_waiting_spares_a_kill_that_frees_cores_for_nobody(tmp_path):
    # RACE: at 170 job 4 (a false small) is due for its kill and nothing waits: it runs on to 200.
    s = sched(kill_only_if_waiting=True)
    result, core, sent = run_exact(RACE, s, tmp_path / "idle")
    states = assert_nothing_lost(RACE, result.jobs_csv)
    assert states["4"] == ev.COMPLETED_SUCCESSFULLY and "4#1" not in states
    assert not any(isinstance(d, ev.KillJob) for d in sent)
    learned = s.report()["classification"]
    assert learned["kills"] == 0 and learned["kills_spared"] == 1
    # job 7 (4 cores, submitted at 160) waits for the core job 4 holds: the kill frees it
    busy = workload([(1, 0, 10), (2, 0, 20), (3, 0, 30), (4, 150, 50), (5, 150, 5), (6, 150, 20),
                     (7, 160, 30, 4)])
    s = sched(kill_only_if_waiting=True)
    result, core, sent = run_exact(busy, s, tmp_path / "busy")
    states = assert_nothing_lost(busy, result.jobs_csv)
    assert states["4"] == ev.COMPLETED_KILLED and states["4#1"] == ev.COMPLETED_SUCCESSFULLY
    assert s.report()["classification"]["kills_spared"] == 0
    with pytest.raises(ValueError, match="kill_only_if_waiting must be true or false"):
        sched(kill_only_if_waiting="yes")


def test_small_first_order():
    from batsched_ml.core.job import Job
    from batsched_ml.policies.orders import FCFS

    def mk(i, t, small):
        j = Job(id=f"w0!{i}", workload="w0", name=str(i), subtime=t, walltime=10, res=1, profile="p",
                data={}, submission_time=t, seq=i)
        j.info["small"] = small
        return j

    p = SmallFirst(FCFS())
    jobs = [mk(1, 0, False), mk(2, 1, True), mk(3, 2, False), mk(4, 3, True)]
    assert [j.seq for j in sorted(jobs, key=lambda j: p.key(j, 5))] == [2, 4, 1, 3]
    assert not p.dynamic


def test_small_first_starvation_threshold_within_each_class():
    from batsched_ml.core.job import Job
    from batsched_ml.policies.orders import SPF

    def mk(i, t, small, estimate):
        j = Job(id=f"w0!{i}", workload="w0", name=str(i), subtime=t, walltime=estimate, res=1, profile="p",
                data={}, submission_time=t, seq=i, estimate=estimate)
        j.info["small"] = small
        return j

    jobs = [mk(1, 0, False, 900), mk(2, 50, False, 100), mk(3, 60, True, 500), mk(4, 70, True, 50),
            mk(5, 10, True, 800)]
    p = SmallFirst(SPF(), starvation_threshold=100)
    assert p.dynamic
    order = lambda now: [j.seq for j in sorted(jobs, key=lambda j: p.key(j, now))]  # noqa: E731
    assert order(100) == [4, 3, 5, 2, 1]  # nobody has waited more than 100 s: SPF in each class
    # at 105 large job 1 has waited 105 s: first of the large jobs, still behind the small ones
    assert order(105) == [4, 3, 5, 1, 2]
    assert order(115) == [5, 4, 3, 1, 2]  # small job 5 too: first of the small jobs
    assert order(165) == [5, 3, 4, 1, 2]  # 3 starves too (waited 105 s): oldest first
    with pytest.raises(ValueError, match="class_starvation_threshold"):
        sched(class_starvation_threshold=0)


def test_small_first_by_probability():
    from batsched_ml.core.job import Job
    from batsched_ml.policies.orders import FCFS

    def mk(i, small, p):
        j = Job(id=f"w0!{i}", workload="w0", name=str(i), subtime=i, walltime=10, res=1, profile="p",
                data={}, submission_time=i, seq=i)
        j.info.update(small=small, p_small=p)
        return j

    jobs = [mk(1, True, 0.6), mk(2, False, 0.1), mk(3, True, 0.9), mk(4, False, 0.45), mk(5, True, 0.6)]
    order = lambda p: [j.seq for j in sorted(jobs, key=lambda j: p.key(j, 10))]  # noqa: E731
    assert order(SmallFirst(FCFS())) == [1, 3, 5, 2, 4]
    assert order(SmallFirst(FCFS(), by_probability="small")) == [3, 1, 5, 2, 4]  # ties in FCFS order
    assert order(SmallFirst(FCFS(), by_probability="both")) == [3, 1, 5, 4, 2]
    assert not SmallFirst(FCFS(), by_probability="both").dynamic
    with pytest.raises(ValueError, match="order_by_probability"):
        SmallFirst(FCFS(), by_probability="large")


def test_compiled_forest_matches_sklearn():
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(1500, 20)), 1)
    y = (X[:, 0] + 0.7 * rng.normal(size=1500) > 0).astype(int)
    c = RandomForestJobClassifier(n_estimators=15, random_state=1).fit(X, y)
    T = np.round(rng.normal(size=(500, 20)), 1)
    fast = np.array([c.classify(None, list(t), 1.0) for t in T], dtype=int)
    assert (fast == c.predict(T)).all()
    assert 0.3 < fast.mean() < 0.7


@pytest.mark.parametrize("n,draws,skew", [(6000, 500, 0.0), (3000, 40, 0.97)])
def test_subsampled_forest_grows_sklearns_trees(n, draws, skew):
    """Fitting each tree on its bootstrap's rows gives scikit-learn's forest, tree for tree (the
    second case has draws of one class only, fitted on every row as scikit-learn does)."""
    from sklearn.ensemble import RandomForestClassifier

    from batsched_ml.classifiers.models import SubsampledForest

    rng = np.random.default_rng(5)
    X = np.round(rng.normal(size=(n, 17)) * 30, 1)
    y = (X[:, 0] + 20 * rng.normal(size=n) > 60 * skew).astype(np.int64)
    params = dict(n_estimators=12, max_depth=12, min_samples_leaf=5, max_samples=draws, random_state=4)
    ours = SubsampledForest(RandomForestClassifier(**params)).fit(X, y)
    theirs = RandomForestClassifier(**params).fit(X, y)
    assert len(ours.estimators_) == len(theirs.estimators_) == 12
    for a, b in zip(ours.estimators_, theirs.estimators_):
        for name in ("children_left", "children_right", "feature", "threshold", "value", "n_node_samples",
                     "weighted_n_node_samples", "impurity"):
            assert np.array_equal(getattr(a.tree_, name), getattr(b.tree_, name)), name
    T = np.round(rng.normal(size=(300, 17)) * 30, 1)
    assert np.array_equal(ours.predict_proba(T), theirs.predict_proba(T))
    assert np.array_equal(ours.feature_importances_, theirs.feature_importances_)
    if skew:  # some draws had one class only: a single leaf, still with both classes' columns
        assert any(t.tree_.node_count == 1 and t.tree_.value.shape[2] == 2 for t in ours.estimators_)


def test_random_forest_fits_trees_on_their_draws_only():
    """With ``max_samples`` below the history, each tree sees its draws, not every row."""
    rng = np.random.default_rng(2)
    X = np.round(rng.normal(size=(4000, 8)), 1)
    y = (X[:, 0] > 0).astype(int)
    c = RandomForestJobClassifier(n_estimators=5, max_samples=300, random_state=1).fit(X, y)
    assert all(t.tree_.n_node_samples[0] <= 300 for t in c.model_.estimators_)


def test_compiled_boosting_matches_sklearn_bit_for_bit():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(2000, 8))
    X[rng.random(X.shape) < 0.05] = np.nan  # missing values take the side the training sent them to
    y = (np.nan_to_num(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.7 * rng.normal(size=2000) > 0.4).astype(int)
    T = rng.normal(size=(600, 8))
    T[rng.random(T.shape) < 0.05] = np.nan
    for t in (0.5, 0.35, 0.7):
        c = GradientBoostingJobClassifier(max_iter=40, small_threshold=t).fit(X, y)
        assert c.compiled_ is not None
        # half the cells exactly on a split threshold of their feature: the comparison's edge
        splits = [(f, v) for tree in c.compiled_.trees for f, v, leaf in zip(tree[2], tree[3], tree[5]) if not leaf]
        for row in T[:300]:
            for f, v in (splits[k] for k in rng.integers(len(splits), size=4)):
                row[f] = v
        proba = c.predict_proba(T)
        answers = [c.classify_with_probability(None, list(row), 1.0) for row in T]
        assert [p for _, p in answers] == proba[:, 1].tolist()  # the same floats, not close ones
        assert [int(small) for small, _ in answers] == c.predict(T).tolist()
        assert [c.classify(None, list(row), 1.0) for row in T[:50]] == [small for small, _ in answers[:50]]
        assert 0.2 < np.mean([small for small, _ in answers]) < 0.8


def test_boosting_without_its_compiled_trees_asks_sklearn():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(800, 4))
    y = (X[:, 0] > 0).astype(int)
    c = GradientBoostingJobClassifier(max_iter=20, small_threshold=0.4).fit(X, y)
    fast = [c.classify_with_probability(None, list(row), 1.0) for row in X[:100]]
    c.compiled_ = None  # what a scikit-learn whose fitted trees are laid out otherwise leaves
    assert [c.classify_with_probability(None, list(row), 1.0) for row in X[:100]] == fast
    assert [c.small_probability(None, list(row), 1.0) for row in X[:100]] == [p for _, p in fast]


def test_gradient_boosting_classes_do_not_depend_on_the_seed():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(1500, 6))
    y = (X[:, 0] + rng.normal(size=1500) > 0).astype(int)
    a = GradientBoostingJobClassifier(random_state=0).fit(X, y).predict_proba(X)
    b = GradientBoostingJobClassifier(random_state=12345).fit(X, y).predict_proba(X)
    assert np.array_equal(a, b)
    forest = [RandomForestJobClassifier(random_state=s).fit(X, y).predict_proba(X) for s in (0, 12345)]
    assert not np.array_equal(*forest)  # the forest's do: what this test tells apart


def _mixed_region_data(seed=0):
    """x = 0: all large, x = 2: all small, x = 1: 40% small (P(small) ~ 0.4 there); a constant column."""
    rng = np.random.default_rng(seed)
    x = np.repeat([0.0, 1.0, 2.0], 300)
    y = np.concatenate([np.zeros(300), rng.permutation(np.arange(300) < 120), np.ones(300)]).astype(int)
    X = np.column_stack([x, np.ones_like(x)])
    T = np.column_stack([np.repeat([0.0, 1.0, 2.0], 50), np.ones(150)])
    return X, y, T


@pytest.mark.parametrize("model", [RandomForestJobClassifier, GradientBoostingJobClassifier])
def test_small_threshold_direction(model):
    X, y, T = _mixed_region_data()
    kw = {"n_estimators": 20, "min_samples_leaf": 20} if model is RandomForestJobClassifier else \
        {"max_iter": 100, "max_depth": 1}
    preds = {t: model(random_state=1, small_threshold=t, **kw).fit(X, y).predict(T)
             for t in (0.2, 0.35, 0.5, 0.65, 0.8)}
    for lo, hi in ((0.2, 0.35), (0.35, 0.5), (0.5, 0.65), (0.65, 0.8)):
        assert (preds[lo] >= preds[hi]).all()  # a lower threshold keeps every small and may add some
    # the x = 1 jobs (P(small) ~ 0.4) are small at 0.35 only: strictly more small jobs
    assert (preds[0.35][50:100] == 1).all() and (preds[0.5][50:100] == 0).all()
    assert preds[0.35].sum() > preds[0.5].sum()
    assert (preds[0.5][:50] == 0).all() and (preds[0.8][100:] == 1).all()
    proba = model(random_state=1, small_threshold=0.35, **kw).fit(X, y).predict_proba(T)
    assert np.array_equal(proba, model(random_state=1, **kw).fit(X, y).predict_proba(T))  # proba unchanged


def test_small_threshold_forest_classify_follows_predict():
    # quarter-integer features: exact in float32, in which scikit-learn's trees compare (the compiled
    # forest compares the float64 values: on features that are not float32-exact, such as 0.1, the two
    # may take different branches on values within float32 rounding of a split)
    rng = np.random.default_rng(4)
    X = np.round(4 * rng.normal(size=(1500, 20))) / 4
    y = (X[:, 0] + 0.7 * rng.normal(size=1500) > 0).astype(int)
    T = np.round(4 * rng.normal(size=(500, 20))) / 4
    counts = []
    for t in (0.3, 0.35, 0.5, 0.7):
        c = RandomForestJobClassifier(n_estimators=15, random_state=1, small_threshold=t).fit(X, y)
        fast = np.array([c.classify(None, list(row), 1.0) for row in T], dtype=int)
        assert (fast == c.predict(T)).all()
        assert (fast == (c.predict_proba(T)[:, 1] > t)).sum() >= len(T) - 1  # P(small) > t, up to rounding
        counts.append(fast.sum())
    assert counts[0] >= counts[1] > counts[2] > counts[3]


def test_small_threshold_default_is_the_majority_rule():
    rng = np.random.default_rng(5)
    X = np.round(rng.normal(size=(800, 6)), 1)
    y = (X[:, 0] + rng.normal(size=800) > 0).astype(int)
    T = np.round(rng.normal(size=(400, 6)), 1)
    default = RandomForestJobClassifier(n_estimators=9, random_state=2).fit(X, y)
    half = RandomForestJobClassifier(n_estimators=9, random_state=2, small_threshold=0.5).fit(X, y)
    assert default.small_threshold == 0.5
    proba = default.predict_proba(T)
    # predict before the option: argmax of predict_proba, ties -> 0 (large)
    assert np.array_equal(default.predict(T), np.argmax(proba, axis=1))
    assert np.array_equal(half.predict(T), default.predict(T))
    # the compiled forest's own comparison before the option: sum of per-tree P(small) > sum of P(large)
    trees = default.compiled_.trees
    for row in T:
        s0 = s1 = 0.0
        for left, right, feature, threshold, p0, p1 in trees:
            node = 0
            while left[node] != -1:
                node = left[node] if row[feature[node]] <= threshold[node] else right[node]
            s0 += p0[node]
            s1 += p1[node]
        assert half.classify(None, list(row), 1.0) == (s1 > s0) == default.classify(None, list(row), 1.0)
    # tie rule: exactly at the threshold is large, at 0.5 as at any other threshold
    assert small_from_proba(np.array([[0.5, 0.5], [0.4, 0.6]]), 0.5).tolist() == [0, 1]
    for t in (0.35, 0.5, 0.8):
        assert small_from_proba(np.array([[1 - t, t]]), t).tolist() == [0]
    # an unfitted or one-class model answers its constant whatever the threshold
    one = RandomForestJobClassifier(small_threshold=0.2).fit(X, np.zeros(len(X)))
    assert one.predict(T).sum() == 0 and not one.classify(None, list(T[0]), 1.0)
    assert RandomForestJobClassifier(small_threshold=0.8).fit(X, np.ones(len(X))).predict(T).all()


@pytest.mark.parametrize("value", [0, 1, 0.0, 1.0, -0.1, 1.5, float("nan"), "0.35", True, None])
def test_small_threshold_bad_values(value):
    for model in (RandomForestJobClassifier, GradientBoostingJobClassifier):
        stored = model(small_threshold=value)  # scikit-learn's contract: the constructor only stores
        assert stored.get_params()["small_threshold"] is value
        with pytest.raises(ValueError, match="small_threshold must be a number > 0 and < 1"):
            stored.validate_params()
        with pytest.raises(ValueError, match="small_threshold must be a number > 0 and < 1"):
            stored.fit(np.zeros((4, 2)), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="small_threshold"):
        build_scheduler("easy", classifier="random-forest", small_threshold=value)


def test_small_threshold_option_reaches_the_classifier():
    s = build_scheduler("easy", classifier="random-forest", kill_false_small=True, small_threshold=0.35)
    assert s.classifier.small_threshold == 0.35
    assert s.report()["classification"]["classifier_params"]["small_threshold"] == 0.35
    s = build_scheduler("easy", classifier="gradient-boosting", small_threshold=0.6)
    assert s.classifier.small_threshold == 0.6
    assert build_scheduler("easy", classifier="random-forest").classifier.small_threshold == 0.5
    with pytest.raises(ValueError, match="has no option 'small_threshold' with these flags"):
        build_scheduler("easy", classifier="clairvoyant", small_threshold=0.35)


def test_calendar_clock():
    # KTH-SP2: UnixStartTime 843527095 = 1996-09-24 01:04:55 UTC; Stockholm is UTC+2 in September
    clock = CalendarClock(843527095, 0, 7200)
    (hour, dow, dom, month, week, quarter), day = clock.temporal(0.0)
    assert (hour, dow, dom, month, quarter) == (3, 1, 24, 9, 3) and week == 39
    assert CalendarClock.from_swf({"UnixStartTime": 10, "subtime_offset": 5, "TimeZone": 0}).local(1) == 16


def test_timezone_header_offset(tmp_path):
    """``-o timezone=header-offset``: the header's numeric TimeZone instead of its named zone."""
    import json

    from batsched_ml.config.validate import ValidationError

    wl = dict(RACE, swf={"UnixStartTime": 843480031, "TimeZone": 3600, "TimeZoneString": "Europe/Stockholm",
                         "subtime_offset": 0.0})
    path = tmp_path / "w.json"
    path.write_text(json.dumps(wl))
    named = CalendarClock.resolve({"w0": str(path)}, {})
    fixed = CalendarClock.resolve({"w0": str(path)}, {"timezone": "header-offset"})
    assert named.timezone == "Europe/Stockholm" and fixed.timezone == "UTC+01:00"
    assert named.local(0.0) - fixed.local(0.0) == 3600  # late September: summer time, one hour ahead
    assert named.local(90 * 86400.0) == fixed.local(90 * 86400.0)  # December: the same clock
    del wl["swf"]["TimeZone"]
    path.write_text(json.dumps(wl))
    with pytest.raises(ValidationError, match="no numeric TimeZone"):
        CalendarClock.resolve({"w0": str(path)}, {"timezone": "header-offset"})


@needs_kth
def test_small_first_probability_head_start_bounds_who_passes_whom():
    from batsched_ml.config.validate import ValidationError
    from batsched_ml.core.job import Job

    def mk(i, sub, small, p):
        j = Job(id=f"w0!{i}", workload="w0", name=str(i), subtime=sub, walltime=10, res=1, profile="p",
                data={}, submission_time=sub, seq=i)
        j.info.update(small=small, p_small=p)
        return j

    # head start 100 s per unit of P(small): large job 2 (p 0.9, submitted 50 s after job 1) passes
    # job 1 (p 0.1): 50 - 90 < 0 - 10; job 3 (p 1.0) comes 200 s after job 1 and does not pass it
    # (200 - 100 > -10), although by P(small) alone it would go first.
    jobs = [mk(1, 0, False, 0.1), mk(2, 50, False, 0.9), mk(3, 200, False, 1.0), mk(4, 300, True, 0.6),
            mk(5, 310, True, 0.9)]
    order = lambda p: [j.seq for j in sorted(jobs, key=lambda j: p.key(j, 400))]  # noqa: E731
    policy = SmallFirst(FCFS(), by_probability="both", head_start=100)
    assert order(policy) == [5, 4, 2, 1, 3]
    assert order(SmallFirst(FCFS(), by_probability="both")) == [5, 4, 3, 2, 1]
    assert order(SmallFirst(FCFS(), by_probability="small", head_start=100)) == [5, 4, 1, 2, 3]
    assert not policy.dynamic  # a static key: the queue is not re-sorted at every pass
    # nobody is passed by a job of its class submitted head_start or more after it
    for a in jobs:
        for b in jobs:
            if a.info["small"] == b.info["small"] and b.submission_time - a.submission_time >= 100:
                assert policy.key(a, 400) < policy.key(b, 400)
    # one queue: the class no longer jumps a job over the other class; small jobs 4 and 5 (submitted
    # 300 / 310 s) wait behind the large jobs 1-3, and nobody, of either class, is passed by a job
    # submitted head_start or more after it
    one = SmallFirst(FCFS(), by_probability="one-queue", head_start=100)
    assert order(one) == [2, 1, 3, 5, 4]
    for a in jobs:
        for b in jobs:
            if b.submission_time - a.submission_time >= 100:
                assert one.key(a, 400) < one.key(b, 400)
    with pytest.raises(ValueError, match="one-queue needs probability_head_start"):
        SmallFirst(FCFS(), by_probability="one-queue")
    with pytest.raises(ValueError, match="probability_head_start needs order_by_probability"):
        SmallFirst(FCFS(), head_start=100)
    with pytest.raises(ValidationError, match="probability_head_start must be a number > 0"):
        SmallFirst(FCFS(), by_probability="both", head_start=0)
    with pytest.raises(ValueError, match="probability_head_start are the queue order's"):
        ClassifyingScheduler(EasyBackfilling(policy=SmallFirst(FCFS(), by_probability="both")), AlwaysSmall(),
                             order_by_probability="both", probability_head_start=100)
    # the run option reaches the queue order
    built = build_scheduler("easy", classifier="random-forest", order_by_probability="both",
                            probability_head_start=3600)
    assert built.scheduler.policy.head_start == 3600 and built.scheduler.policy.by_probability == "both"


@needs_kth
def test_first_week_all_large_then_classified():
    s = build_scheduler("easy", classifier="clairvoyant", store_classes=True)
    result, core = simulate(100, str(KTH5K), s)
    first = [j for j in core.jobs.values() if j.submission_time < 604800]
    later = [j for j in core.jobs.values() if j.submission_time >= 604800]
    assert first and not any(j.info["small"] for j in first)
    assert any(j.info["small"] for j in later) and not all(j.info["small"] for j in later)
    rep = s.report()["classification"]
    assert rep["overall"]["precision"] == 1.0 and rep["overall"]["recall"] == 1.0
    assert rep["weekly"][0]["predicted_small"] == 0 and rep["weekly"][1]["divider"] is not None


@needs_kth
def test_random_forest_idempotent_deterministic(tmp_path):
    from batsched_ml.workloads import load_workload

    wl = load_workload(KTH5K)
    wl = dict(wl, jobs=wl["jobs"][:1200])
    outs = []
    for k in range(2):
        s = build_scheduler("easy", classifier="random-forest", kill_false_small=True, seed=3,
                            period=86400, n_estimators=10)
        result, core = simulate(100, wl, s, prefix=tmp_path / f"run{k}")
        assert core.registration_done and not result.unfinished
        outs.append(Path(result.jobs_csv).read_bytes())
        rep = s.report()["classification"]
    assert outs[0] == outs[1]
    assert rep["kills"] > 0 and rep["retrainings"] > 3
    assert rep["overall"]["precision"] > 0.6
    # the learning's cost in CPU seconds beside its wall seconds (which grow with the machine's load)
    assert rep["training_cpu_time"] > 0 and rep["classification_cpu_time"] > 0
    states = assert_nothing_lost(wl, result.jobs_csv)
    assert sum(1 for i in states if "#" in i) == rep["kills"]


def test_feature_table_recomputes_lags_and_shares_against_another_divider():
    """``against(positions, D)`` gives the lags and shares ``features`` gives at submission with D."""
    from batsched_ml.classifiers.features import LAG_SHARE_SLICE, FeatureTable
    from batsched_ml.core.job import Job

    rng = np.random.default_rng(11)
    table = FeatureTable(CalendarClock(0, 0, 0), track=True)
    pending, rows = [], []
    for seq in range(1500):
        job = Job(id=f"w0!{seq}", workload="w0", name=str(seq), subtime=seq * 600.0,
                  walltime=float(rng.choice([60, 600, 3600])), res=int(rng.choice([1, 2, 8])), profile="p",
                  data={"user": int(rng.integers(5))}, submission_time=seq * 600.0, seq=seq)
        divider = float(rng.choice([30.0, 100.0, 400.0, 1000.0]))
        x, keys = table.features(job, divider)
        rows.append((divider, x[LAG_SHARE_SLICE], table.positions(keys)))
        pending.append((keys, float(rng.lognormal(5, 1.5))))
        while pending and rng.random() < 0.6:  # complete some jobs, in a shuffled order
            table.add(*pending.pop(int(rng.integers(len(pending)))))
        if seq % 250 == 249:  # as retrainings do, between additions (``against`` extends what it grouped)
            picked = [r for r in rows if r[0] == 100.0]
            assert np.array_equal(table.against([r[2] for r in picked], 100.0), np.array([r[1] for r in picked]))
    reloaded = pickle.loads(pickle.dumps(table))  # (without what ``against`` grouped: rebuilt)
    assert table._grouped is not None and "_grouped" not in table.__getstate__() and reloaded._grouped is None
    for divider in (30.0, 100.0, 400.0, 1000.0):
        picked = [r for r in rows if r[0] == divider]
        got = table.against([r[2] for r in picked], divider)
        assert np.array_equal(got, np.array([r[1] for r in picked], dtype=np.float64))
        assert np.array_equal(reloaded.against([r[2] for r in picked], divider), got)
        assert (got[:, :9] == 1).any() and (got[:, :9] == 0).any() and (got[:, 9:] > 0).any()
    # against another divider the same rows change
    other = table.against([r[2] for r in rows if r[0] == 30.0], 1000.0)
    assert not np.array_equal(other, np.array([r[1] for r in rows if r[0] == 30.0]))


class AllLarge(JobClassifier):
    """Every job large, at P(small) = ``one_core`` for a one-core job and ``wider`` for more
    (probe and speculation candidates)."""

    name = "all-large"
    needs_training = False

    def __init__(self, one_core=0.5, wider=0.01):
        super().__init__()
        self.one_core = one_core
        self.wider = wider

    def fit(self, X, y):
        return self

    def classify(self, job, x, divider):
        return False

    def small_probability(self, job, x, divider):
        return self.one_core if job.res == 1 else self.wider


def test_probe_promotes_a_waiting_large_job(tmp_path):
    # week 0: runtimes 10, 20, 30 -> divider 20 from t = 100. Job 4 fills the machine until 650;
    # job 5 (4 cores) and job 6 (1 core, 5 s) wait, large. probe_after = 1: job 6 is probed after
    # 1 x 20 x (1 - 0.5) / 0.5 = 20 s of wait, at the next event (job 7 at 190): small, so it
    # runs first at 650, before the older job 5 (P = 0.01: its probe would come after 1,980 s).
    wl = workload([(1, 0, 10), (2, 0, 20), (3, 0, 30), (4, 150, 500, 4), (5, 150, 50, 4), (6, 160, 5),
                   (7, 190, 5)])
    outs = {}
    for probe in (None, 1):
        s = sched(classifier=AllLarge(0.5, 0.01), probe_after=probe)
        result, core, sent = run_exact(wl, s, tmp_path / f"probe{probe}")
        assert_nothing_lost(wl, result.jobs_csv)
        t = read_jobs_csv(result.jobs_csv)
        outs[probe] = dict(zip(t.job_id.tolist(), t.starting_time.tolist()))
        if probe:
            assert s.report()["classification"]["probes"] == 2  # jobs 6 and 7 (7 at 650)
            assert core.jobs["w0!6"].info["probed"] and not core.jobs["w0!5"].info.get("probed")
    assert outs[None]["5"] == 650 and outs[None]["6"] == 700
    assert outs[1]["6"] == 650 and outs[1]["5"] > 650


class FollowsTheDay(JobClassifier):
    """Small when the user's last completed job of the day was small (``lag1_user_day``) and the
    job asks for one core: it answers differently as the lags move."""

    name = "follows-the-day"
    needs_training = False

    def fit(self, X, y):
        return self

    def small_probability(self, job, x, divider):
        return 0.9 if x[FEATURE_NAMES.index("lag1_user_day")] == 1 and job.res == 1 else 0.1

    def classify(self, job, x, divider):
        return self.small_probability(job, x, divider) > 0.5


def test_reclassify_waiting_uses_a_completion_after_the_submission(tmp_path):
    # Week 0 (100 s): runtimes 10, 20, 30 -> divider 20, the day's last completion large (30 s).
    # Job 4 holds 3 of the 4 cores from 150 to 650; job 5 (4 cores) waits for 650. Job 8 (1 core,
    # walltime 100) backfills at 155 and completes at 165 in 10 s: small. Job 6 (1 core, 5 s),
    # submitted at 160 while 8 runs, is classed large and waits behind job 5 until 700.
    # Re-classified at 165 it is small (its lag now sees job 8): the head of the queue, it takes
    # the core job 8 freed at once.
    wl = workload([(1, 0, 10), (2, 0, 20), (3, 0, 30), (4, 150, 500, 3), (5, 150, 50, 4), (6, 160, 5)])
    wl["jobs"].append({"id": 8, "subtime": 155, "walltime": 100, "res": 1, "profile": "d10", "user": 7})
    wl["profiles"]["d10"] = {"type": "delay", "delay": 10}
    wl["jobs"].sort(key=lambda j: (j["subtime"], j["id"]))
    starts = {}
    for again in (False, True):
        s = sched(classifier=FollowsTheDay(), reclassify_waiting=again)
        result, core, _ = run_exact(wl, s, tmp_path / f"again{again}")
        assert_nothing_lost(wl, result.jobs_csv)
        t = read_jobs_csv(result.jobs_csv)
        starts[again] = dict(zip(t.job_id.tolist(), t.starting_time.tolist()))
        learned = s.report()["classification"]
        if again:
            assert learned["reclass_changes"] == 1 and core.jobs["w0!6"].info["small"]
            # scored at submission job 6 is a false large; it started small, a true small
            assert learned["overall"]["FL"] == learned["overall_at_start"]["FL"] + 1
        else:
            assert "overall_at_start" not in learned and not core.jobs["w0!6"].info["small"]
    assert starts[False]["8"] == 155 and starts[True]["8"] == 155
    assert starts[False]["5"] == 650 and starts[False]["6"] == 700
    assert starts[True]["6"] == 165 and starts[True]["5"] == 650


def test_speculative_backfill_runs_a_large_job_for_one_divider_in_a_hole(tmp_path):
    # Divider 20 from t = 100. Job 4 holds 3 of the 4 cores from 150 to 650; job 5 (4 cores)
    # has the reservation at 650. Jobs 6 (5 s), 7 (100 s) and 9 (5 s), one core each with
    # walltime 1000, cannot backfill for their walltime. Speculatively, job 6 runs at 160 and
    # completes in 5 s; job 7 runs at 170 and is killed at the divider (190); job 9 takes the
    # core 7 freed. 7 is requeued at its first place: after job 5, before job 10 (4 cores,
    # submitted at 185, after 7's first submission but before its kill).
    wl = workload([(1, 0, 10), (2, 0, 20), (3, 0, 30), (4, 150, 500, 3), (5, 150, 50, 4), (6, 160, 5),
                   (7, 170, 100), (9, 180, 5), (10, 185, 100, 4)])
    s = sched(classifier=AllLarge(0.1, 0.1), speculative_backfill=0.05)
    result, core, _ = run_exact(wl, s, tmp_path / "spec")
    assert_nothing_lost(wl, result.jobs_csv)
    states = rows(result.jobs_csv)
    assert states["7"] == ev.COMPLETED_KILLED and "6#1" not in states and "9#1" not in states
    t = read_jobs_csv(result.jobs_csv)
    start = dict(zip(t.job_id.tolist(), t.starting_time.tolist()))
    assert start["6"] == 160 and start["7"] == 170 and start["9"] == 190 and start["5"] == 650
    assert start["7#1"] == 700 and start["10"] == 800
    learned = s.report()["classification"]
    assert learned["speculative_starts"] == 3 and learned["speculative_kills"] == 1
    # below P(small) = 0.1 nothing is tried: 6 and 7 wait for 5
    s = sched(classifier=AllLarge(0.1, 0.1), speculative_backfill=0.5)
    result, core, _ = run_exact(wl, s, tmp_path / "none")
    t = read_jobs_csv(result.jobs_csv)
    start = dict(zip(t.job_id.tolist(), t.starting_time.tolist()))
    assert start["6"] == 700 and "7#1" not in start and s.report()["classification"]["speculative_starts"] == 0


def test_speculative_backfill_is_refused_without_kills():
    with pytest.raises(ValueError, match="speculative_backfill needs kill_false_small"):
        sched(classifier=AllLarge(0.1, 0.1), kill=False, speculative_backfill=0.1)
    with pytest.raises(ValueError, match="speculative_backfill"):
        sched(classifier=AllLarge(0.1, 0.1), speculative_backfill=1.0)


def test_speculative_backfill_keeps_registration_open_while_a_large_job_may_be_tried(tmp_path):
    # The last static job is submitted at 187; job 12 (walltime 300) backfills at 190 and then
    # nothing is killable any more, but jobs 9 and 11 (large) still wait. When 12 frees its core
    # at 490, 9 is tried (done in 5 s), then 11, killed at the divider (5 s from t = 200) and
    # requeued. Registration must still be open then (Batsim refuses a job registered after
    # NOTIFY registration_finished).
    wl = workload([(1, 0, 10), (2, 0, 20), (3, 0, 30), (4, 150, 500, 3), (5, 150, 50, 4), (6, 160, 5),
                   (7, 170, 100), (9, 180, 5), (10, 185, 100, 4), (11, 186, 100)])
    wl["jobs"].append({"id": 12, "subtime": 187, "walltime": 300, "res": 1, "profile": "d300", "user": 7})
    wl["profiles"]["d300"] = {"type": "delay", "delay": 300}
    s = sched(classifier=AllLarge(0.1, 0.1), speculative_backfill=0.05)
    result, core, sent = run_exact(wl, s, tmp_path / "open")
    assert_nothing_lost(wl, result.jobs_csv)
    t = read_jobs_csv(result.jobs_csv)
    start = dict(zip(t.job_id.tolist(), t.starting_time.tolist()))
    assert start["12"] == 190 and start["9"] == 490 and start["11"] == 495 and "11#1" in start
    notify = [i for i, d in enumerate(sent) if type(d) is ev.Notify and d.kind == ev.REGISTRATION_FINISHED]
    registers = [i for i, d in enumerate(sent) if type(d) is ev.RegisterJob]
    assert notify and registers and max(registers) < notify[0]
