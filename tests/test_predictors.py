"""Runtime predictors, corrections and the estimator seam (EASY++, E-Loss regression)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from batsched_ml import runner
from batsched_ml.config.compose import build_estimator
from batsched_ml.core.job import RUNNING, Job
from batsched_ml.predictors import Correction, Estimator
from batsched_ml.predictors.basic import Clairvoyant, RequestedTime, UserAverage
from batsched_ml.predictors.corrections import (
    LADDER,
    DoublingCorrection,
    IncrementalCorrection,
    RequestedCorrection,
)
from batsched_ml.predictors.eloss import ELossRegressor, NAGRegressor, asymmetric_loss

DATA = Path(__file__).parent / "data"
_seq = iter(range(1, 10**9))


def make_job(walltime=1000.0, runtime=None, user=1, res=1, subtime=0.0, name=None):
    n = next(_seq)
    name = name or str(n)
    return Job(id=f"w0!{name}", workload="w0", name=name, subtime=subtime, walltime=walltime, res=res,
               profile="p", data={"user": user}, submission_time=subtime, seq=n, runtime=runtime,
               estimate=walltime)


class FakeCtx:
    def __init__(self, now=0.0):
        self.now = now
        self.calls = []

    def call_me_later(self, at):  # like Context.call_me_later: returns the date asked for
        assert at > self.now
        self.calls.append(at)
        return at


class FakeScheduler:
    def __init__(self, window=(-np.inf, np.inf)):
        self.reestimated = []
        self.window = window

    def reestimate_running(self, job, now):
        self.reestimated.append((job.id, job.estimate, now))

    def correction_window(self):
        return self.window


def complete(est, job, ctx, start, end, state="COMPLETED_SUCCESSFULLY"):
    job.state, job.start_time = RUNNING, start
    ctx.now = start
    est.on_start(job, ctx)
    ctx.now = end
    job.end_time, job.final_state = end, state
    est.on_completion(job, ctx)


# ------------------------------------------------------------- predictors
def test_requested_is_default_and_returns_walltime():
    est = build_estimator("requested", None)
    assert isinstance(est.predictor, RequestedTime) and est.correction is None
    job = make_job(walltime=777.0, runtime=5.0)
    est.attach(None, FakeCtx())
    est.on_submission(job, FakeCtx())
    assert job.estimate == 777.0 and job.info["prediction"] == 777.0


def test_clairvoyant_uses_actual_runtime():
    est = Estimator(Clairvoyant())
    job = make_job(walltime=1000.0, runtime=123.0)
    est.on_submission(job, FakeCtx())
    assert job.estimate == 123.0


def test_ave2_mean_of_last_two_runtimes_of_the_user():
    est = Estimator(UserAverage())
    ctx = FakeCtx()
    est.attach(None, ctx)
    first = make_job(walltime=5000.0, user=7)
    est.on_submission(first, ctx)
    assert first.estimate == 5000.0  # no history: requested time
    for runtime in (100.0, 300.0, 500.0):
        j = make_job(walltime=5000.0, user=7)
        est.on_submission(j, ctx)
        complete(est, j, ctx, start=ctx.now, end=ctx.now + runtime)
    other = make_job(walltime=5000.0, user=8)
    est.on_submission(other, ctx)
    assert other.estimate == 5000.0  # another user's history is not used
    nxt = make_job(walltime=5000.0, user=7)
    est.on_submission(nxt, ctx)
    assert nxt.estimate == pytest.approx(400.0)  # (300 + 500) / 2


def test_only_successful_or_walltime_jobs_are_learned():
    est = Estimator(UserAverage())
    ctx = FakeCtx()
    est.attach(None, ctx)
    j = make_job(walltime=5000.0, user=3)
    est.on_submission(j, ctx)
    complete(est, j, ctx, 0.0, 10.0, state="COMPLETED_KILLED")
    k = make_job(walltime=5000.0, user=3)
    est.on_submission(k, ctx)
    assert k.estimate == 5000.0


@pytest.mark.parametrize("raw,expected", [(0.2, 1.0), (-50.0, 1.0), (5000.0, 1000.0), (42.0, 42.0)])
def test_predictions_are_clipped_to_one_second_and_walltime(raw, expected):
    class Fixed(RequestedTime):
        def predict(self, job, now=0.0):
            return raw

    est = Estimator(Fixed())
    job = make_job(walltime=1000.0)
    est.on_submission(job, FakeCtx())
    assert job.estimate == expected and job.info["prediction"] == expected


def test_get_params_and_set_params():
    m = ELossRegressor(over="linear", under="squared", gamma="constant", eta=10.0)
    params = m.get_params()
    assert params["over"] == "linear" and params["gamma"] == "constant" and params["eta"] == 10.0
    m.set_params(eta=3.0)
    assert m.eta == 3.0
    with pytest.raises(ValueError):
        m.set_params(nope=1)
    assert UserAverage(window=3).get_params() == {"window": 3}


def test_build_estimator_passes_options_and_rejects_unknown():
    est = build_estimator("eloss", "incremental", predictor_options={"gamma": "small-area", "over": "linear"})
    assert est.predictor.gamma == "small-area" and est.predictor.over == "linear"
    assert isinstance(est.correction, IncrementalCorrection)
    with pytest.raises(LookupError):
        build_estimator("nope", None)
    with pytest.raises(ValueError, match="-o predictor_gamma=bad: gamma must be one of"):
        build_estimator("eloss", None, predictor_options={"gamma": "bad"})


# ------------------------------------------------------------ corrections
def _running(estimate, walltime=10**7):
    job = make_job(walltime=walltime)
    job.state, job.start_time, job.estimate = RUNNING, 0.0, estimate
    return job


def test_incremental_ladder_sequence_through_the_estimator():
    est = Estimator(RequestedTime(), IncrementalCorrection())
    sched = FakeScheduler()
    ctx = FakeCtx(0.0)
    est.attach(sched, ctx)
    job = _running(10.0)
    est.on_start(job, ctx)
    est.after_pass(ctx)  # the scheduler's pass ends
    assert ctx.calls == [10.0]
    seen = []
    for _ in range(len(LADDER) + 1):
        ctx.now = job.start_time + job.estimate
        before = job.estimate
        assert est.on_call(ctx)
        est.after_pass(ctx)
        seen.append(job.estimate - before)
        assert ctx.calls[-1] == job.estimate  # next call at the new predicted end
    assert seen == list(LADDER) + [LADDER[-1]]
    assert job.info["corrections"] == len(LADDER) + 1
    assert [r[1] for r in sched.reestimated][:2] == [70.0, 370.0]


def test_incremental_skips_steps_when_the_call_is_late():
    job = _running(10.0)
    # elapsed 400 s: +60 gives 70, +300 gives 370 <= 400, +900 gives 1270
    assert IncrementalCorrection().correct(job, 400.0) == 1270.0


def test_doubling_is_twice_the_elapsed_time():
    job = _running(100.0)
    assert DoublingCorrection().correct(job, 100.0) == 200.0
    assert DoublingCorrection().correct(job, 150.0) == 300.0


def test_requested_correction_jumps_to_walltime():
    assert RequestedCorrection().correct(_running(5.0, walltime=3600.0), 5.0) == 3600.0


@pytest.mark.parametrize("correction", [IncrementalCorrection(), DoublingCorrection(), RequestedCorrection()])
def test_corrections_are_capped_at_requested_and_stop_there(correction):
    est = Estimator(RequestedTime(), correction)
    ctx = FakeCtx(0.0)
    est.attach(FakeScheduler(), ctx)
    job = _running(50.0, walltime=80.0)
    est.on_start(job, ctx)
    est.after_pass(ctx)
    ctx.now = 50.0
    assert est.on_call(ctx)
    est.after_pass(ctx)
    assert job.estimate == 80.0
    n_calls = len(ctx.calls)
    ctx.now = 80.0
    assert not est.on_call(ctx)  # already at the cap: nothing changes
    est.after_pass(ctx)
    assert len(ctx.calls) == n_calls  # and no call at/after the walltime is asked


def test_no_correction_means_no_calls_and_jobs_not_yet_due_untouched():
    est = Estimator(RequestedTime(), None)
    ctx = FakeCtx(0.0)
    est.attach(FakeScheduler(), ctx)
    job = _running(50.0)
    est.on_start(job, ctx)
    est.after_pass(ctx)
    assert ctx.calls == [] and not est.on_call(FakeCtx(60.0))
    est2 = Estimator(RequestedTime(), IncrementalCorrection())
    est2.attach(FakeScheduler(), ctx)
    job2 = _running(50.0)
    est2.on_start(job2, ctx)
    assert not est2.on_call(FakeCtx(49.0)) and job2.estimate == 50.0


def test_next_event_timing_asks_no_call_and_catches_up_as_of_each_due_date():
    est = Estimator(RequestedTime(), IncrementalCorrection(), timing="next-event")
    sched = FakeScheduler()
    ctx = FakeCtx(0.0)
    est.attach(sched, ctx)
    job = _running(10.0)
    est.on_start(job, ctx)
    est.after_pass(ctx)
    assert ctx.calls == []  # no CALL_ME_LATER: no extra protocol messages
    est.before_pass(9.0)
    assert job.estimate == 10.0 and not sched.reestimated
    # next pass at 400 s: corrections due at 10 (+60 -> 70) and 70 (+300 -> 370) and 370 (+900 -> 1270),
    # the same estimate and count as three immediate corrections at those dates
    est.before_pass(400.0)
    assert job.estimate == 1270.0 and job.info["corrections"] == 3 and est.nb_corrections == 3
    assert sched.reestimated == [(job.id, 1270.0, 400.0)]  # the scheduler re-places it once
    est.before_pass(1269.0)
    assert job.estimate == 1270.0


def test_next_event_doubling_is_as_of_the_due_date_not_the_pass():
    est = Estimator(RequestedTime(), DoublingCorrection(), timing="next-event")
    est.attach(FakeScheduler(), FakeCtx(0.0))
    job = _running(100.0)
    est.on_start(job, FakeCtx(0.0))
    est.before_pass(350.0)  # due at 100 -> 200, due at 200 -> 400 > 350
    assert job.estimate == 400.0 and job.info["corrections"] == 2


def test_calls_only_for_corrections_that_reach_the_window():
    """EASY's window is the priority reservation: a correction that keeps the job planned to
    end before it (or falls after it) cannot change a decision, so it gets no call."""
    ctx = FakeCtx(0.0)
    est = Estimator(RequestedTime(), IncrementalCorrection())
    est.attach(FakeScheduler(window=(500.0, 10_000.0)), ctx)
    job = _running(10.0)
    est.on_start(job, ctx)
    est.after_pass(ctx)
    # due 10 -> 70 and 70 -> 370 stay before 500: skipped; due 370 -> 1270 reaches it
    assert ctx.calls == [370.0] and job.estimate == 10.0
    ctx.now = 370.0
    assert est.on_call(ctx)  # the two skipped corrections are applied as of their due dates first
    assert job.estimate == 1270.0 and job.info["corrections"] == 3

    for window, expected in (((-np.inf, 5.0), []), (None, [])):  # reservation over first / empty queue
        ctx2 = FakeCtx(0.0)
        est2 = Estimator(RequestedTime(), IncrementalCorrection())
        est2.attach(FakeScheduler(window=window), ctx2)
        est2.on_start(_running(10.0), ctx2)
        est2.after_pass(ctx2)
        assert ctx2.calls == expected


def test_a_correction_without_preview_is_called_at_every_due_date():
    class Plus100(Correction):
        def correct(self, job, now):
            return job.estimate + 100.0

    ctx = FakeCtx(0.0)
    est = Estimator(RequestedTime(), Plus100())
    est.attach(FakeScheduler(window=(500.0, 10_000.0)), ctx)
    job = _running(10.0)
    est.on_start(job, ctx)
    est.after_pass(ctx)
    assert ctx.calls == [10.0]


def test_unknown_correction_timing_is_rejected():
    with pytest.raises(ValueError, match="timing"):
        Estimator(RequestedTime(), IncrementalCorrection(), timing="later")


# ------------------------------------------------------------------ E-Loss
def test_nag_decreases_loss_on_synthetic_linear_target():
    rng = np.random.default_rng(0)
    w_true = np.array([5.0, 30.0, 0.02, 1000.0])

    def data(n):  # features on wildly different scales: NAG must cope without normalisation
        X = np.column_stack([np.ones(n), rng.uniform(0, 1, n), rng.uniform(0, 1e4, n),
                             rng.uniform(-1e-2, 1e-2, n)])
        return X, X @ w_true

    X, y = data(3000)
    X_test, y_test = data(500)
    model = NAGRegressor(eta=30.0, over="squared", under="squared")
    mse = [np.mean((model.predict(X_test) - y_test) ** 2)]
    for lo, hi in ((0, 300), (300, 1000), (1000, 3000)):
        model.partial_fit(X[lo:hi], y[lo:hi])
        mse.append(np.mean((model.predict(X_test) - y_test) ** 2))
    assert mse == sorted(mse, reverse=True)  # the loss keeps decreasing
    assert mse[-1] < 1e-3 * mse[0]
    np.testing.assert_allclose(model.coef_, w_true, rtol=0.05)


def test_eloss_is_asymmetric_over_prediction_costs_more():
    actual = 1000.0
    over = asymmetric_loss(actual + 100.0, actual)  # default E-Loss: squared over-prediction
    under = asymmetric_loss(actual - 100.0, actual)  # linear under-prediction
    assert over == pytest.approx(100.0 ** 2) and under == pytest.approx(100.0)
    assert over > under
    flipped = asymmetric_loss(actual + 100.0, actual, over="linear", under="squared")
    assert flipped == pytest.approx(100.0)


def test_eloss_regressor_learns_to_underpredict_rather_than_overpredict():
    """With E-Loss the learned model sits below a noisy target; with the mirrored loss, above."""
    rng = np.random.default_rng(1)

    def run(over, under):
        model = ELossRegressor(over=over, under=under, gamma="constant", eta=200.0, alpha=0.0, degree=1).reset()
        preds = []
        for i in range(1500):
            runtime = float(rng.choice([100.0, 1900.0]))
            job = make_job(walltime=4000.0, user=1, subtime=60.0 * i)
            p = model.predict(job, job.subtime)
            if i >= 1000:
                preds.append(p)
            model.partial_fit(job, runtime, job.subtime + 1.0)
        return float(np.median(preds))

    eloss = run("squared", "linear")
    mirrored = run("linear", "squared")
    assert eloss < 1000.0 < mirrored


def test_eloss_features_and_basis_size():
    model = ELossRegressor().reset()
    job = make_job(walltime=3600.0, user=4, res=8, subtime=86400.0 / 4)
    feats = model.features(job, job.subtime)
    assert len(feats) == 20 and feats[0] == 3600.0 and feats[7] == 8.0
    assert feats[16] == pytest.approx(0.0, abs=1e-12) and feats[17] == pytest.approx(1.0)  # 6 h: quarter day
    assert model.basis(feats).shape == (model.n_basis,) == (1 + 20 + 210,)
    p = model.predict(job, job.subtime)
    assert p >= 0.0
    model.partial_fit(job, 1200.0, job.subtime + 1200.0)
    assert model.users_[4].last == [1200.0] and not model.pending_


# ------------------------------------------------------------------ report
def test_report_counts_under_and_over_predictions():
    est = Estimator(UserAverage(), IncrementalCorrection())
    ctx = FakeCtx()
    est.attach(FakeScheduler(), ctx)
    for runtime, walltime in ((100.0, 1000.0), (300.0, 1000.0), (100.0, 1000.0)):
        j = make_job(walltime=walltime, user=2)
        est.on_submission(j, ctx)
        complete(est, j, ctx, ctx.now, ctx.now + runtime)
    rep = est.report()
    # predictions: 1000 (over by 900), 100 (under by 200), 200 (over by 100)
    assert rep["nb_jobs"] == 3
    assert rep["mae"] == pytest.approx(400.0)
    assert rep["over_share"] == pytest.approx(2 / 3) and rep["under_share"] == pytest.approx(1 / 3)
    assert rep["ecdf_error"]["x"] == sorted(rep["ecdf_error"]["x"]) and rep["ecdf_error"]["p"][-1] == 1.0
    assert rep["mean_eloss"] > 0


# -------------------------------------------------------------- end to end
def _run(tmp_path, tag, **kw):
    sched = runner.build_scheduler("easy", **kw)
    result, core = runner.simulate(DATA / "platform-16.xml", DATA / "tiny.json.gz", sched,
                                   prefix=tmp_path / tag)
    return sched, result, core


@pytest.mark.parametrize("predictor", ["ave2", "eloss"])
def test_end_to_end_easy_plus_plus_and_eloss_triple(tmp_path, predictor):
    sched, result, core = _run(tmp_path, "x", predictor=predictor, correction="incremental",
                               backfill_order="sjbf")
    assert not result.unfinished
    states = {j.final_state for j in core.jobs.values()}
    assert states <= {"COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"}  # nobody killed at a prediction
    assert not core.kills_pending
    rep = sched.report()["predictions"]
    assert rep["nb_jobs"] == len(core.jobs)
    assert rep["nb_corrections"] > 0  # some jobs outlived their prediction and were corrected
    for job in core.jobs.values():
        assert 1.0 <= job.info["prediction"] <= job.walltime
        assert job.estimate <= job.walltime
    _, result2, _ = _run(tmp_path, "y", predictor=predictor, correction="incremental", backfill_order="sjbf")
    assert Path(result.jobs_csv).read_text() == Path(result2.jobs_csv).read_text()


def test_end_to_end_clairvoyant_has_no_corrections_without_correction(tmp_path):
    sched, result, core = _run(tmp_path, "c", predictor="clairvoyant")
    assert not result.unfinished
    rep = sched.report()["predictions"]
    assert rep["nb_corrections"] == 0 and rep["mae"] < 0.01


def test_end_to_end_next_event_timing_starts_jobs_only_at_submissions_or_completions(tmp_path):
    """pyss's semantics: a correction alone never triggers a pass, so every job starts at
    (a Batsim latency after) a submission or a completion; the immediate timing may start
    jobs at a correction."""
    import csv

    def starts_off_events(result):
        rows = list(csv.DictReader(open(result.jobs_csv)))
        events = sorted({float(r["submission_time"]) for r in rows} | {float(r["finish_time"]) for r in rows})
        out = 0
        for r in rows:
            start = float(r["starting_time"])
            if not any(0 <= start - e < 0.01 for e in events):
                out += 1
        return out

    sched, result, core = _run(tmp_path, "ne", predictor="eloss", correction="incremental",
                               backfill_order="sjbf", correction_timing="next-event")
    assert not result.unfinished
    assert sched.report()["predictions"]["nb_corrections"] > 0
    assert starts_off_events(result) == 0
    _, result_immediate, _ = _run(tmp_path, "im", predictor="eloss", correction="incremental",
                                  backfill_order="sjbf")
    assert starts_off_events(result_immediate) > 0  # (the workload does exercise the difference)
    assert result.messages < result_immediate.messages  # no CALL_ME_LATER round trips
    _, again, _ = _run(tmp_path, "ne2", predictor="eloss", correction="incremental",
                       backfill_order="sjbf", correction_timing="next-event")
    assert Path(result.jobs_csv).read_text() == Path(again.jobs_csv).read_text()


def test_options_are_routed_by_prefix_and_misspelt_ones_are_errors():
    sched = runner.build_scheduler("easy", predictor="eloss", correction="doubling",
                                   predictor_gamma="small-area", predictor_over="linear", correction_factor=3.0)
    assert sched.estimator.predictor.get_params()["gamma"] == "small-area"
    assert sched.estimator.predictor.get_params()["over"] == "linear"
    assert sched.estimator.correction.factor == 3.0
    with pytest.raises(ValueError, match="no option"):
        runner.build_scheduler("easy", gamma="small-area")  # misspelt: not silently ignored
    with pytest.raises(ValueError, match="without --predictor"):
        runner.build_scheduler("easy", predictor_gamma="small-area")


@pytest.mark.parametrize("predictor", ["ave2", "eloss"])
def test_skipping_irrelevant_calls_leaves_the_schedule_unchanged(tmp_path, predictor):
    """With exact instants (no Batsim latency), EASY asking a call for every correction and
    EASY asking only those that reach the priority reservation give the same schedule."""
    from batsched_ml.simulator.engine import NO_LATENCY

    outputs = {}
    for tag in ("all", "relevant"):
        sched = runner.build_scheduler("easy", predictor=predictor, correction="incremental",
                                       backfill_order="sjbf")
        if tag == "all":
            sched.correction_window = lambda: (-np.inf, np.inf)
        result, _ = runner.simulate(DATA / "platform-16.xml", DATA / "tiny.json.gz", sched,
                                    prefix=tmp_path / tag, latency=NO_LATENCY)
        outputs[tag] = (Path(result.jobs_csv).read_text(), result.messages,
                        sched.report()["predictions"]["nb_corrections"])
    assert outputs["relevant"][0] == outputs["all"][0]
    assert outputs["relevant"][2] == outputs["all"][2]  # the same corrections, counted alike
    assert outputs["relevant"][1] < outputs["all"][1]  # fewer round trips


def test_nag_keeps_learning_after_a_subnormal_feature():
    """Found by the property tests: a job submitted at t = 1e-310 s gives subnormal calendar
    features; 1/s overflowed, the normaliser became inf and the model never moved again."""
    model = NAGRegressor(eta=1.0)
    x = np.array([1.0, 2.0, 3.0])
    model.partial_fit(np.array([[1.0, 1e-310, 3.0]]), [5.0])
    for _ in range(20):
        model.partial_fit(x[None, :], [5.0])
    assert np.isfinite(model.norm_)
    assert float(model.predict(x)) > 1.0
