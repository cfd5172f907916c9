"""Probabilistic backfilling (Nissimov & Feitelson): bins, Algorithm 1, the DP of Algorithm 2,
the distribution plugins and the scheduler end to end."""

from __future__ import annotations

import copy
import importlib.util
import itertools
import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest

from batsched_ml.cli import main as cli_main
from batsched_ml.config.plugins import available
from batsched_ml.core.job import Job
from batsched_ml.distributions import RuntimeBins
from batsched_ml.distributions.hmm import HMMDistribution, _distinct_rows
from batsched_ml.distributions.user import UserDistribution
from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.scheduling.release_dp import ReleaseOutlook, RunningTerminations

DATA = Path(__file__).resolve().parent / "data"
ROOT = Path(__file__).resolve().parents[1]
TINY = (DATA / "platform-16.xml", DATA / "tiny.json.gz")


def make_job(seq=1, walltime=1000.0, res=1, user=1, subtime=0.0):
    return Job(id=f"w0!{seq}", workload="w0", name=str(seq), subtime=subtime, walltime=walltime, res=res,
               profile="p", data={"user": user}, submission_time=subtime, seq=seq)


# ------------------------------------------------------------------ bins and Algorithm 1
def test_bins_are_logarithmic_from_one_second():
    bins = RuntimeBins(1.8, 1000.0)
    assert bins.edges[0] == 1.0
    np.testing.assert_allclose(bins.hi / bins.lo, 1.8)
    assert bins.edges[-1] >= 1000.0 > bins.edges[-2]
    assert bins.index(0.2) == 0 and bins.index(1.0) == 0 and bins.index(1.8) == 1
    assert bins.index(1e9) == len(bins) - 1


def test_conditioning_cuts_below_elapsed_and_above_walltime_log_uniformly():
    bins = RuntimeBins(2.0, 64.0)  # bins [1,2) [2,4) [4,8) [8,16) [16,32) [32,64)
    p = np.full((1, 6), 1 / 6)
    new, ok = bins.condition(p, [6.0], [20.0])
    assert ok[0]
    # [4,8) keeps log(8/6)/log 2 of its mass, [8,16) all, [16,32) log(20/16)/log 2, the rest none
    expected = np.array([0, 0, math.log2(8 / 6), 1.0, math.log2(20 / 16), 0])
    np.testing.assert_allclose(new[0], expected / expected.sum())
    # all the mass below the elapsed time: nothing left (the scheduler then uses a point mass)
    only_low = np.array([[1.0, 0, 0, 0, 0, 0]])
    new, ok = bins.condition(only_low, [3.0], [20.0])
    assert not ok[0] and new.sum() == 0


# ------------------------------------------------------------------ the DP (Algorithm 2)
def brute_force_risk(cores, bin_probs, bin_ends, missing, size, q, ends) -> float:
    """sum_j q_j max_{t < ends_j} P(missing <= c(t) < missing + size), enumerating every
    combination of the running jobs' end bins."""
    times = sorted({t for row in bin_ends for t in row})
    prob_range = {}
    for t in times:
        total = 0.0
        for combo in itertools.product(*[range(len(row)) for row in bin_probs]):
            w = math.prod(bin_probs[i][j] for i, j in enumerate(combo))
            released = sum(c for c, row, j in zip(cores, bin_ends, combo) if row[j] <= t)
            if missing <= released < missing + size:
                total += w
        prob_range[t] = total
    risk = 0.0
    for qj, end in zip(q, ends):
        before = [prob_range[t] for t in times if t < end]
        risk += qj * (max(before) if before else 0.0)
    return risk


def outlook_for(cores, bin_probs, bin_ends, missing, sizes):
    times, owners, cums = [], [], []
    for i, (probs, ends) in enumerate(zip(bin_probs, bin_ends)):
        cum = np.cumsum(probs)
        cum[-1] = 1.0
        times += list(ends)
        owners += [i] * len(ends)
        cums += list(cum)
    order = np.lexsort((owners, times))
    return ReleaseOutlook(np.array(times)[order], np.array(owners)[order], np.array(cums)[order], cores,
                          missing, sizes)


def random_case(rng, n_jobs):
    cores = rng.integers(1, 6, n_jobs).tolist()
    bin_probs, bin_ends = [], []
    for _ in range(n_jobs):
        k = int(rng.integers(1, 4))
        p = rng.random(k)
        bin_probs.append((p / p.sum()).tolist())
        # coarse times so that several jobs often end at the same instant
        bin_ends.append(sorted(rng.choice(np.arange(1, 9), size=k, replace=False).astype(float).tolist()))
    busy = sum(cores)
    missing = int(rng.integers(1, busy + 1))
    sizes = sorted(set(rng.integers(1, 8, 3).tolist()))
    return cores, bin_probs, bin_ends, missing, sizes


@pytest.mark.parametrize("seed", range(80))
def test_dp_matches_brute_force_enumeration(seed):
    rng = np.random.default_rng(seed)
    cores, bin_probs, bin_ends, missing, sizes = random_case(rng, int(rng.integers(3, 6)))
    outlook = outlook_for(cores, bin_probs, bin_ends, missing, sizes)
    for size in sizes:
        k = int(rng.integers(1, 4))
        q = rng.random(k)
        q /= q.sum()
        ends = np.sort(rng.choice(np.arange(1, 10), size=k, replace=False)).astype(float)
        expected = brute_force_risk(cores, bin_probs, bin_ends, missing, size, q, ends)
        accepted, risk = outlook.risk(size, q, ends, tau=2.0)  # no early exit
        assert accepted
        assert risk == pytest.approx(expected, abs=1e-12)
        # the batch form (every candidate of a pass at once), padded with zero probabilities
        padded_q, padded_ends = np.append(q, 0.0)[None, :], np.append(ends, 0.5)[None, :]
        assert outlook.risks([size], padded_q, padded_ends)[0] == pytest.approx(expected, abs=1e-12)
        # with a threshold: refused exactly when the risk reaches it (early exits included)
        for tau in (0.0, 0.05, 0.3):
            ok, _ = outlook.risk(size, q, ends, tau=tau)
            assert ok == (expected < tau - 1e-12 or expected == 0.0) or abs(expected - tau) < 1e-9


def test_dp_works_in_units_of_the_common_core_count():
    cores, probs, ends = [8, 16, 8], [[0.5, 0.5], [1.0], [0.2, 0.8]], [[2.0, 5.0], [4.0], [1.0, 6.0]]
    outlook = outlook_for(cores, probs, ends, 12, [8, 4, 20])
    assert outlook.unit == 8
    for size in (8, 4, 20):
        expected = brute_force_risk(cores, probs, ends, 12, size, [1.0], [7.0])
        assert outlook.risk(size, [1.0], [7.0], tau=2.0)[1] == pytest.approx(expected, abs=1e-12)


def test_simultaneous_ends_release_together():
    # two 2-core jobs ending together: the head (missing 2) and a 2-core candidate both fit then
    outlook = outlook_for([2, 2], [[1.0], [1.0]], [[5.0], [5.0]], 2, [2])
    assert outlook.risk(2, [1.0], [10.0], tau=0.0) == (True, 0.0)
    # with one of them alone released at 5, the candidate would delay the head
    outlook = outlook_for([2, 2], [[1.0], [1.0]], [[5.0], [7.0]], 2, [2])
    assert outlook.risk(2, [1.0], [10.0], tau=0.5) == (False, 1.0)
    assert outlook.risk(2, [1.0], [5.0], tau=0.0) == (True, 0.0)  # ends exactly when the cores come


def test_tau_zero_refuses_any_positive_risk():
    outlook = outlook_for([1, 1], [[1e-6, 1 - 1e-6], [1.0]], [[1.0, 50.0], [60.0]], 1, [1])
    accepted, risk = outlook.risk(1, [1.0], [10.0], tau=0.0)
    assert not accepted and risk == pytest.approx(1e-6)
    assert outlook.risk(1, [1.0], [10.0], tau=0.05)[0]


def reference_window_probabilities(outlook_args, times):
    """D_g(r) for every distinct event time, from the full distribution of released cores
    (every count, every job multiplied in afresh at each time: the textbook recursion)."""
    ev_times, owners, cums, cores, missing, sizes = outlook_args
    rows = []
    for t in times:
        pmf = np.zeros(sum(cores) + 1)
        pmf[0] = 1.0
        for i, c in enumerate(cores):
            mine = (owners == i) & (ev_times <= t)
            p = cums[mine].max() if mine.any() else 0.0
            pmf = pmf * (1.0 - p) + np.concatenate((np.zeros(c), pmf[:-c])) * p
        rows.append([pmf[missing:missing + r].sum() for r in sizes])
    return np.array(rows).reshape(len(times), len(sizes))


def large_case(rng):
    """Tens of running jobs with several bins each on up to a few hundred cores: many event
    times (several stretches of the lazy computation), jobs wider than every needed count,
    simultaneous ends."""
    n = int(rng.integers(5, 40))
    cores = rng.integers(1, 60, n) * int(rng.choice([1, 1, 2, 4]))
    cores[rng.random(n) < 0.1] = 400  # wider than anything needed
    times, owners, cums = [], [], []
    for i in range(n):
        k = int(rng.integers(1, 7))
        ends = np.sort(rng.choice(np.arange(1, 120), size=k, replace=False)).astype(float)
        cum = np.cumsum(rng.dirichlet(np.ones(k)))
        cum[-1] = 1.0
        times += ends.tolist()
        owners += [i] * k
        cums += cum.tolist()
    order = np.lexsort((owners, times))
    ev = np.array(times)[order], np.array(owners)[order], np.array(cums)[order]
    missing = int(rng.integers(1, int(cores.sum()) + 1))
    sizes = sorted(set(rng.integers(1, 200, int(rng.integers(1, 8))).tolist()))
    return (*ev, cores.tolist(), missing, sizes)


def random_candidates(rng, sizes, n, horizon=130):
    q = rng.dirichlet(np.ones(6), n) * (rng.random((n, 6)) < 0.7)
    q[:, 0] += q.sum(axis=1) == 0
    q /= q.sum(axis=1, keepdims=True)
    ends = np.sort(rng.uniform(0, horizon, (n, 6)), axis=1)
    return rng.choice(sizes, n).tolist(), q, ends


@pytest.mark.parametrize("seed", range(60))
def test_dp_equals_the_textbook_recursion_on_large_cases(seed):
    """Every event time's D(r) (through the running max the risks read) and every candidate's
    risk equal those of the full distribution recomputed from scratch at each time."""
    rng = np.random.default_rng(1000 + seed)
    args = large_case(rng)
    outlook = ReleaseOutlook(*args)
    expected = np.maximum.accumulate(reference_window_probabilities(args, outlook.times), axis=0)
    sizes, q, ends = random_candidates(rng, args[5], 25)
    want = np.array([sum(qb * (expected[outlook.times < e, args[5].index(s)].max(initial=0.0))
                         for qb, e in zip(qrow, erow)) for s, qrow, erow in zip(sizes, q, ends)])
    np.testing.assert_allclose(outlook.risks(sizes, q, ends), want, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(outlook.runmax, expected, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("seed", range(60))
def test_early_exits_decide_as_the_full_risks(seed):
    """With ``tau`` the batch stops computing for candidates already refused (their value is a
    lower bound that reached tau) and narrows the counts to the sizes still open: the same
    decisions, and the accepted candidates' risks are exact. A later query of a size left
    out re-computes (the same values as a fresh outlook)."""
    rng = np.random.default_rng(2000 + seed)
    args = large_case(rng)
    sizes, q, ends = random_candidates(rng, args[5], 30)
    full = ReleaseOutlook(*args).risks(sizes, q, ends)
    for tau in (0.0, 0.01, 0.05, 0.3):
        outlook = ReleaseOutlook(*args)
        got = outlook.risks(sizes, q, ends, tau)
        accepted = (full < tau) | (full == 0.0)
        np.testing.assert_array_equal((got < tau) | (got == 0.0), accepted)
        np.testing.assert_array_equal(got[accepted], full[accepted])
        assert np.all(got[~accepted] <= full[~accepted] * (1 + 1e-12))
        again = outlook.risks(sizes, q, ends)  # every candidate in full, after the narrowing
        np.testing.assert_array_equal(again, full)


def test_a_single_risk_after_a_narrowed_batch_is_computed_afresh():
    rng = np.random.default_rng(7)
    args = large_case(rng)
    sizes, q, ends = random_candidates(rng, args[5], 30)
    outlook = ReleaseOutlook(*args)
    outlook.risks(sizes, q, ends, 0.01)  # refuses most early: later stretches for small sizes only
    fresh = ReleaseOutlook(*args)
    widest = max(args[5])
    one_q, one_ends = np.array([0.5, 0.5]), np.array([60.0, 125.0])
    assert outlook.risk(widest, one_q, one_ends, 2.0) == fresh.risk(widest, one_q, one_ends, 2.0)


@pytest.mark.parametrize("seed", range(20))
def test_every_single_risk_after_narrowed_batches_is_a_fresh_outlooks(seed):
    """Batches with early exits narrow the sizes computed, possibly more than once (the
    running max of a size left out is right only up to where it was left out); any later
    query, for any size and end, answers as a fresh outlook."""
    rng = np.random.default_rng(3000 + seed)
    args = large_case(rng)
    outlook = ReleaseOutlook(*args)
    sizes, q, ends = random_candidates(rng, args[5], 30)
    outlook.risks(sizes, q, ends, 0.01)  # refuses many early: a few narrowings
    fresh = ReleaseOutlook(*args)
    after_each_time = np.append((fresh.times[:-1] + fresh.times[1:]) / 2, fresh.times[-1] + 1.0)
    for size in sorted(set(args[5]), reverse=True):  # (a query past a size's last exact time starts afresh)
        for end in after_each_time:
            one_q, one_ends = np.array([1.0]), np.array([end])
            assert outlook.risk(size, one_q, one_ends, 2.0) == fresh.risk(size, one_q, one_ends, 2.0)


def test_inconsistent_events_are_refused():
    with pytest.raises(ValueError):
        ReleaseOutlook([1.0, 2.0], [0], [1.0, 1.0], [4], 1, [1])
    with pytest.raises(ValueError):
        ReleaseOutlook([1.0], [3], [1.0], [4], 1, [1])  # no running job 3


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="the compiled DP needs numba")
def test_numba_loads_without_scipy_linalg_which_stays_importable():
    """numba's start-up (a fresh process) skips its BLAS probe, which imports ``scipy.linalg``
    (a third of the start-up); the DP's answers are unchanged and scipy.linalg still imports."""
    import subprocess
    import sys

    script = """
import sys
import numpy as np
from batsched_ml.scheduling.release_dp import ReleaseOutlook
outlook = ReleaseOutlook([1.0, 2.0, 2.0, 3.0], [0, 0, 1, 0], [0.3, 0.6, 1.0, 1.0], [4, 2], 2, [1, 3])
risks = outlook.risks([1, 3], np.array([[0.5, 0.5], [1.0, 0.0]]), np.array([[2.5, 4.0], [2.5, 0.5]]))
print(",".join(map(repr, risks.tolist())), "scipy.linalg" in sys.modules)
import scipy.linalg.cython_blas
print(scipy.linalg.cython_blas.__name__)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    expected = ReleaseOutlook([1.0, 2.0, 2.0, 3.0], [0, 0, 1, 0], [0.3, 0.6, 1.0, 1.0], [4, 2], 2, [1, 3]).risks(
        [1, 3], np.array([[0.5, 0.5], [1.0, 0.0]]), np.array([[2.5, 4.0], [2.5, 0.5]]))
    assert out[0] == ",".join(map(repr, expected.tolist()))  # the same risks, bit for bit
    assert expected.min() > 0.0
    assert out[1] == "False"  # numba loaded without scipy.linalg
    assert out[2] == "scipy.linalg.cython_blas"


def test_a_module_hidden_while_numba_loads_is_hidden_from_that_thread_only(tmp_path, monkeypatch):
    """Other threads of the process (simulations of a campaign) import it as usual meanwhile."""
    import sys
    import threading

    from batsched_ml.scheduling.numba_loading import HiddenInThisThread

    (tmp_path / "hidden_probe_module.py").write_text("VALUE = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hidden_probe_module", raising=False)
    finder = HiddenInThisThread("hidden_probe_module")
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    with pytest.raises(ModuleNotFoundError):
        import hidden_probe_module  # noqa: F401
    seen = []
    other = threading.Thread(target=lambda: seen.append(__import__("hidden_probe_module").VALUE))
    other.start()
    other.join()
    assert seen == [7]
    sys.modules.pop("hidden_probe_module", None)


def test_no_compiled_kernel_calls_blas():
    """``numba_loading.load_numba_without_blas`` makes numba treat BLAS as absent for the whole
    process: it is right only while no compiled kernel of the package uses BLAS."""
    package = ROOT / "batsched_ml"
    compiled = [path for path in package.rglob("*.py") if "numba" in path.read_text()]
    assert any(path.name == "release_kernel.py" for path in compiled)
    for path in compiled:
        text = path.read_text()
        for blas in ("np.dot(", "np.vdot(", "np.inner(", "np.matmul(", "np.linalg", "numpy.linalg", "scipy.linalg."):
            assert blas not in text or path.name == "numba_loading.py", (path, blas)


def test_a_job_as_wide_as_the_window_only_scales_it():
    """A running job wider than every needed count: released, it takes the count past the
    window; kept, it leaves the other jobs' distribution as is."""
    outlook = outlook_for([1, 50], [[0.5, 0.5], [0.3, 0.7]], [[1.0, 3.0], [2.0, 4.0]], 1, [1])
    # D(1) = P(released == 1) = P(1-core job ended) * P(wide job not ended)
    assert outlook.risk(1, [1.0], [1.5], tau=2.0)[1] == pytest.approx(0.5)
    assert outlook.risk(1, [1.0], [2.5], tau=2.0)[1] == pytest.approx(0.5)  # max over t=1 (0.5) and t=2 (0.35)
    assert outlook.risk(1, [1.0], [3.5], tau=2.0)[1] == pytest.approx(0.7)  # t=3: 1 * 0.7


# ------------------------------------------------------------------ running jobs' events
class _Running:
    def __init__(self, res):
        self.res = res


def _running_jobs(rng, n, bins):
    """Random running jobs: ``(job, start, walltime, predicted row)``, some without a prediction."""
    out = []
    for _ in range(n):
        row = rng.random(len(bins)) * (rng.random(len(bins)) < 0.4)
        out.append((_Running(int(rng.integers(1, 9))), float(rng.uniform(0.0, 3000.0)),
                    float(rng.uniform(50.0, 5000.0)), row))
    return out


def _register(term, running, bins):
    """As the scheduler does at a start: the row conditioned on the walltime (or a point mass)."""
    for job, start, upper, row in running:
        cond = bins.condition_on_walltime(row, upper) if row.sum() > 0 else None
        if cond is None:
            term.add(job, start, upper, np.ones(1), np.array([upper]), np.array([upper]))
        else:
            keep = cond > 0
            term.add(job, start, upper, cond[keep], np.minimum(bins.hi[keep], upper), bins.lo[keep])


def test_a_pass_drops_the_events_up_to_now_and_time_only_moves_on():
    """The events a pass leaves behind are never read again: the table keeps only the later
    ones (its size follows the running jobs' future, not their past; the same outlook as a
    table that never saw the earlier pass), and a pass at an earlier time, which would need
    them, is refused."""
    rng = np.random.default_rng(3)
    bins = RuntimeBins(1.8, 1e4)
    running = _running_jobs(rng, 8, bins)
    term, fresh = RunningTerminations(1e-6), RunningTerminations(1e-6)
    _register(term, running, bins)
    _register(fresh, running, bins)
    term.snapshot(0.0)
    term.snapshot(1500.0)
    for got, want in zip(term.snapshot(2500.0), fresh.snapshot(2500.0)):
        np.testing.assert_array_equal(got, want)
    assert term.earliest_release(2500.0, 3) == fresh.earliest_release(2500.0, 3)
    with pytest.raises(ValueError):
        term.snapshot(2000.0)


@pytest.mark.parametrize("seed", range(12))
def test_running_events_are_algorithm_1_at_every_pass(seed):
    """The events after ``now`` carry P(ended by then) re-conditioned on the elapsed time
    (Algorithm 1, ``RuntimeBins.condition``); a job's last event is exactly 1; jobs with no bin
    left end at their walltime (or right after now past it). Registrations and discards between
    passes give the same table as registering the survivors afresh."""
    rng = np.random.default_rng(seed)
    bins = RuntimeBins(1.8, 1e4)
    running = _running_jobs(rng, int(rng.integers(3, 12)), bins)
    term = RunningTerminations(1e-6)
    _register(term, running[:3], bins)
    earlier = sorted(rng.uniform(0.0, 6000.0, 4))
    for now in earlier:
        term.snapshot(float(now))  # an earlier pass: merges what is pending, drops the events up to now
    _register(term, running[3:], bins)
    gone = set(rng.choice(len(running), size=len(running) // 3, replace=False).tolist())
    for i in sorted(gone):
        term.discard(running[i][0])
    alive = [r for i, r in enumerate(running) if i not in gone]
    fresh = RunningTerminations(1e-6)
    _register(fresh, alive, bins)
    for now in sorted(rng.uniform(earlier[-1], 6000.0, 6)):  # passes go forward in time
        now = float(now)
        end, owner, p, cores = term.snapshot(now)
        for got, want in zip((end, owner, p, cores), fresh.snapshot(now)):
            np.testing.assert_array_equal(got, want)
        assert list(cores) == [job.res for job, *_ in alive]
        for slot, (job, start, upper, row) in enumerate(alive):
            mine = owner == slot
            assert mine.any() and p[mine][-1] == 1.0 and np.all(np.diff(p[mine]) >= 0)
            new, ok = bins.condition(row[None, :], [now - start], [upper])  # Algorithm 1 from scratch
            if not ok[0]:  # nothing predicted is left: at the walltime
                assert list(end[mine]) == [start + upper if start + upper > now else now + 1e-6]
                continue
            ends = start + np.minimum(bins.hi, upper)
            left = (new[0] > 0) & (ends > now)
            np.testing.assert_allclose(end[mine], ends[left])
            np.testing.assert_allclose(p[mine], np.cumsum(new[0])[left], rtol=1e-9, atol=1e-12)
        # the screen: the earliest time the running jobs can have released ``missing`` cores
        firsts = sorted((end[owner == slot].min(), c) for slot, c in enumerate(cores))
        for missing in range(1, sum(cores) + 2):
            released = np.cumsum([c for _, c in firsts])
            want = firsts[int(np.searchsorted(released, missing))][0] if missing <= released[-1] else math.inf
            assert term.earliest_release(now, missing) == want


def test_distinct_rows_counts_as_far_as_needed():
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 3, (200, 4)) / 2.0
    for at_most in (1, 5, 40, 100):
        assert _distinct_rows(rows, at_most) == min(at_most, len(np.unique(rows, axis=0)))
    assert _distinct_rows(np.zeros((7, 3)), 16) == 1


# ------------------------------------------------------------------ distributions
def test_user_distribution_mixes_the_user_history_with_the_prior():
    d = UserDistribution(window=2, prior_weight=1.0).reset()
    j = make_job(user=1)
    assert d.predict_proba([j]).sum() == 0  # no history: point mass at the walltime
    for runtime in (3.0, 3.0, 100.0):
        d.partial_fit(make_job(user=1), runtime)
    d.partial_fit(make_job(user=2), 1000.0)
    p = d.predict_proba([j])[0]
    assert p.sum() == pytest.approx(1.0)
    bins = d.bins_
    # window 2: the user's last two runtimes (3 and 100) + one pseudo-job of everyone's four
    assert p[bins.index(3.0)] == pytest.approx((1 + 0.5) / 3)
    assert p[bins.index(100.0)] == pytest.approx((1 + 0.25) / 3)
    assert p[bins.index(1000.0)] == pytest.approx(0.25 / 3)
    assert d.predict_proba([make_job(user=9)]).sum() == 0
    assert UserDistribution(unknown_user="prior").fit([make_job(user=2)], [10.0]).predict_proba(
        [make_job(user=9)]).sum() == pytest.approx(1.0)


def _regime_jobs(n_days=10, seed=0):
    """Jobs whose runtimes switch between a short and a long regime every few hours."""
    rng = np.random.default_rng(seed)
    jobs, runtimes, t = [], [], 0.0
    for i in range(n_days * 96):
        t = i * 900.0 + 10
        long = (i // 16) % 2 == 1
        for k in range(3):
            jobs.append(make_job(seq=len(jobs) + 1, subtime=t + k, walltime=1e5))
            runtimes.append(float(rng.uniform(5000, 20000) if long else rng.uniform(2, 30)))
    return jobs, runtimes


@pytest.mark.parametrize("mode", ["mixture", "map"])
def test_hmm_learns_after_a_week_and_tracks_the_regime(mode):
    jobs, runtimes = _regime_jobs()
    d = HMMDistribution(n_states=4, mode=mode, check_every=3600.0).reset()
    bins = d.bins_
    short_bins = bins.index(30.0) + 1
    seen_model = False
    hits = 0
    scored = 0
    for job, runtime in zip(jobs, runtimes):
        p = d.predict_proba([job], job.subtime)[0]
        if job.subtime < 604800:
            assert p.sum() == 0  # a week of history first
        elif p.sum() > 0:
            seen_model = True
            assert p.sum() == pytest.approx(1.0)
            scored += 1
            hits += (p[:short_bins].sum() > 0.5) == (runtime <= 30)
        # short jobs are known at once, long ones later
        d.partial_fit(job, runtime, job.subtime + min(runtime, 60.0))
    assert seen_model and d.report()["relearns"] >= 1
    assert hits / scored > 0.8  # the filter follows the regime switches


def test_hmm_filter_cache_gives_the_from_scratch_posterior():
    """The filtered posteriors and emission likelihoods are cached between predictions and
    invalidated by late completions (a completion observes its submission slice, hours back):
    the cached posterior is exactly the one filtered afresh from the frozen prior."""
    jobs, runtimes = _regime_jobs(n_days=9)
    d = HMMDistribution(n_states=4, check_every=3600.0, filter_window=12).reset()
    pending = []  # (completion time, job, runtime)
    compared = 0
    for i, (job, runtime) in enumerate(zip(jobs, runtimes)):
        now = job.subtime
        pending.sort(key=lambda e: e[0])
        while pending and pending[0][0] <= now:
            end, done, r = pending.pop(0)
            d.partial_fit(done, r, end)
        post = d.predict_proba([job], now)[0]
        if d.centers_ is not None and i % 5 == 0:
            fresh = copy.deepcopy(d)
            fresh._alphas, fresh._dirty, fresh._emissions = [], None, {}
            np.testing.assert_array_equal(fresh.posterior(now), d.posterior(now))
            np.testing.assert_array_equal(fresh.predict_proba([job], now)[0], post)
            compared += 1
        pending.append((now + runtime, job, runtime))
    assert compared > 100 and d.report()["relearns"] >= 1


def test_plugins_are_listed():
    dists = available("distributions")
    assert {"hmm", "user", "forest", "walltime"} <= set(dists)
    assert "probabilistic" in available("schedulers")


# ------------------------------------------------------------------ the scheduler
def _busy_excerpt() -> dict:
    """The bundled 200-job KTH excerpt, submissions 10x closer together (a queue forms)."""
    from batsched_ml.workloads import read_swf, swf_to_workload

    workload, _ = swf_to_workload(read_swf(DATA / "kth-excerpt.swf"))
    for job in workload["jobs"]:
        job["subtime"] *= 0.1
    return workload


BUSY = _busy_excerpt()


def _run(tmp_path, name, workload=None, **kwargs):
    sched = build_scheduler(**kwargs)
    if workload is None:
        result, _ = simulate(BUSY["nb_res"], BUSY, sched, prefix=tmp_path / name)
    else:
        result, _ = simulate(*workload, sched, prefix=tmp_path / name)
    return Path(result.jobs_csv).read_bytes(), sched


@pytest.mark.parametrize("workload", [None, TINY])
def test_point_masses_everywhere_are_exactly_easy(tmp_path, workload):
    easy, _ = _run(tmp_path, "easy", workload, scheduler="easy")
    for rescan in ("always", "changes"):
        prob, sched = _run(tmp_path, f"p-{rescan}", workload, scheduler="probabilistic", distribution="walltime",
                           rescan=rescan)
        assert prob == easy
    assert sched.report()["probabilistic"]["backfilled"] > 0


def test_point_masses_are_easy_on_kth5k(shared, tmp_path):
    golden = shared / "golden"
    runs = {}
    for name, kwargs in {"easy": dict(scheduler="easy"),
                         "prob": dict(scheduler="probabilistic", distribution="walltime")}.items():
        result, _ = simulate(golden / "platform-100.xml", golden / "KTH-5k.json.gz", build_scheduler(**kwargs),
                             prefix=tmp_path / name)
        runs[name] = Path(result.jobs_csv).read_bytes()
    assert runs["prob"] == runs["easy"]


def test_distributions_change_decisions_and_are_deterministic(tmp_path):
    easy, _ = _run(tmp_path, "easy", scheduler="easy")
    a, sched = _run(tmp_path, "a", scheduler="probabilistic", distribution="user", distribution_window=5)
    b, _ = _run(tmp_path, "b", scheduler="probabilistic", distribution="user", distribution_window=5)
    assert a == b
    rep = sched.report()["probabilistic"]
    assert rep["calibration_jobs"] > 0 and rep["mean_loglik"] <= 0
    assert rep["backfilled"] + rep["refused"] == rep["evaluations"]
    assert a != easy  # the user distributions backfill differently on this workload


@pytest.mark.parametrize("reservations", ["count", "cores"])
def test_backfills_jobs_that_easy_could_not(tmp_path, reservations):
    """A job whose walltime reaches past the head's reservation is still a candidate: EASY's
    horizon test must not filter the queue before the probabilistic condition reads it. In the
    ``cores`` model job 4 takes a core of the head's reservation (all 4 cores): it may, being
    likely to end long before the reservation starts."""
    import csv

    jobs = [(1, 0, 1, 1000, 5, 1),  # (id, subtime, res, walltime, runtime, user): user 1 runs short jobs
            (2, 10, 3, 1000, 1000, 2),  # holds 3 of the 4 cores until 1010
            (3, 11, 4, 100, 50, 2),  # the head: waits for job 2
            (4, 12, 1, 2000, 5, 1)]  # EASY: would delay the head (walltime); user 1's history: 5 s
    workload = {"nb_res": 4, "jobs": [], "profiles": {}}
    for jid, sub, res, wall, run, user in jobs:
        workload["jobs"].append({"id": jid, "subtime": sub, "res": res, "walltime": wall,
                                 "profile": f"d{run}", "user": user})
        workload["profiles"][f"d{run}"] = {"type": "delay", "delay": run}
    starts = {}
    for name, kwargs in {"easy": dict(scheduler="easy"),
                         "prob": dict(scheduler="probabilistic", distribution="user")}.items():
        result, _ = simulate(4, workload, build_scheduler(**kwargs, reservations=reservations),
                             prefix=tmp_path / name)
        with open(result.jobs_csv) as f:
            starts[name] = {row["job_id"]: float(row["starting_time"]) for row in csv.DictReader(f)}
    assert starts["easy"]["4"] > 1000  # after the head
    assert starts["prob"]["4"] == pytest.approx(12.0, abs=0.1)  # backfilled at once
    assert starts["prob"]["3"] == pytest.approx(starts["easy"]["3"])  # without delaying the head


def test_tau_zero_backfills_only_riskless_jobs(tmp_path):
    _, sched = _run(tmp_path, "t0", scheduler="probabilistic", distribution="user", tau=0.0)
    rep = sched.report()["probabilistic"]
    assert rep["backfilled"] > 0 and rep["mean_predicted_delay"] == 0.0


def test_bad_options_are_one_line_errors(capsys):
    platform, workload = TINY
    base = ["simulate", "-p", str(platform), "-w", str(workload), "--scheduler", "probabilistic"]
    assert cli_main(base + ["-o", "tau=2"]) == 2
    assert "tau" in capsys.readouterr().err
    assert cli_main(base + ["--distribution", "nope"]) == 2
    assert "unknown distribution 'nope'" in capsys.readouterr().err
    assert cli_main(["simulate", "-p", str(platform), "-w", str(workload), "--distribution", "user"]) == 2


def test_cli_json_reports_the_probabilistic_decisions(tmp_path, capsys):
    platform, workload = TINY
    code = cli_main(["simulate", "-p", str(platform), "-w", str(workload), "--scheduler", "probabilistic",
                     "--distribution", "user", "-o", "tau=0.1", "-o", "distribution_window=3",
                     "-e", str(tmp_path / "o"), "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    rep = out["scheduler"]["probabilistic"]
    assert rep["tau"] == 0.1 and rep["distribution"] == "user" and rep["distribution_params"]["window"] == 3
    assert "geomean_wait_10s" in out["metrics"] and out["metrics"]["geomean_wait_10s"] >= 10.0
    # point 6 of the issue: decisions taken / refused by the condition, the predicted risk of the
    # backfilled jobs beside how often the head really was delayed, the predictor's calibration
    assert rep["backfilled"] + rep["refused"] == rep["evaluations"] > 0
    assert 0.0 <= rep["mean_predicted_delay"] < 0.1  # every backfilled job was under tau
    assert 0 < rep["head_delay_checked"] <= rep["backfilled"]
    assert rep["head_delayed_share"] == rep["head_delayed"] / rep["head_delay_checked"]
    assert rep["calibration_jobs"] > 0 and rep["mean_loglik"] <= 0.0 and 0.0 <= rep["impossible_share"] <= 1.0


def test_paper_geometric_mean_floors_waits_at_ten_seconds():
    from batsched_ml.analysis.metrics import geomean_wait_floor

    assert geomean_wait_floor([0.0, 0.0]) == pytest.approx(10.0)
    assert geomean_wait_floor([0.0, 1000.0]) == pytest.approx(100.0)
    assert geomean_wait_floor([4.0, 40.0], w_min=4.0) == pytest.approx(math.sqrt(160.0))


def test_serve_gives_the_embedded_schedule(tmp_path):
    """The same decision core behind ZeroMQ: ``serve`` driven like Batsim gives the embedded run's schedule."""
    import socket
    import threading

    from batsched_ml.server.peer import run_connected
    from batsched_ml.server.serve import run_server
    from batsched_ml.workloads.loader import write_workload

    workload = tmp_path / "busy.json"
    write_workload(BUSY, workload)
    platform = DATA / "platform-100.xml"
    options = dict(scheduler="probabilistic", distribution="user", distribution_window=5)
    inproc, _ = simulate(platform, workload, build_scheduler(**options), prefix=tmp_path / "inproc",
                         dynamic_jobs=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        endpoint = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    ready, code = threading.Event(), []
    thread = threading.Thread(target=lambda: code.append(run_server(build_scheduler(**options), endpoint,
                                                                    timeout=60.0, ready=ready)), daemon=True)
    thread.start()
    assert ready.wait(30)
    remote = run_connected(platform, workload, endpoint, tmp_path / "remote", timeout=60.0, dynamic_jobs=True)
    thread.join(60)
    assert code == [0]
    assert Path(remote.jobs_csv).read_bytes() == Path(inproc.jobs_csv).read_bytes()


def test_forest_distribution_trains_weekly():
    from batsched_ml.distributions.forest import ForestDistribution

    jobs, runtimes = _regime_jobs(n_days=9)
    d = ForestDistribution(n_estimators=5, max_depth=6).reset()
    probas = []
    for job, runtime in zip(jobs, runtimes):
        p = d.predict_proba([job], job.subtime)[0]
        probas.append(p)
        if job.subtime < 604800:
            assert p.sum() == 0  # trained at the first week boundary
        d.partial_fit(job, runtime, job.subtime + 1.0)
    assert d.trainings_ >= 1
    assert probas[-1].sum() == pytest.approx(1.0)
    report = d.report()
    assert report["trainings"] == d.trainings_ and report["training_cpu_time"] > 0


def _release_dp_check():
    spec = importlib.util.spec_from_file_location("release_dp_check", ROOT / "benchmarks/release_dp_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_recorded_batches_replay_bit_for_bit_and_a_changed_risk_is_caught(tmp_path, capsys):
    """``benchmarks/bench_release_outlooks.py``: the batches a run asked the DP for, replayed,
    give the same decisions and accepted risks (exit 0); a recording whose accepted risk differs
    in its last bit is reported (exit 1)."""
    spec = importlib.util.spec_from_file_location("bench_release_outlooks",
                                                  ROOT / "benchmarks/bench_release_outlooks.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = tmp_path / "batches.pkl"
    assert bench.main(["--record", str(path), "--jobs", "150", "--cores", "2048"]) == 0
    assert bench.main(["--replay", str(path), "--rounds", "1"]) == 0
    assert "another decision or accepted risk: 0" in capsys.readouterr().out
    data = pickle.loads(path.read_bytes())
    tampered = next(b for b in data["batches"] if ((b[-1] > 0) & (b[-1] < b[-2])).any())
    at = int(np.flatnonzero((tampered[-1] > 0) & (tampered[-1] < tampered[-2]))[0])
    tampered[-1][at] = np.nextafter(tampered[-1][at], 1.0)
    path.write_bytes(pickle.dumps(data))
    assert bench.main(["--replay", str(path), "--rounds", "1"]) == 1


@pytest.mark.parametrize("tau", [0.05, 0.0])
def test_every_batch_of_a_run_decides_as_the_paper_recursion(tmp_path, monkeypatch, tau):
    """A whole run (busy KTH excerpt, per-user distributions): every batch of risks the passes
    ask for, recomputed over every core count by ``benchmarks/release_dp_check.py``'s textbook
    Algorithm 2, gives the same decisions and, where computed in full, the same risks."""
    recorder = _release_dp_check().Recorder(every=1, max_work=1e9)
    recorder.install(monkeypatch.setattr)
    _run(tmp_path, "checked", scheduler="probabilistic", distribution="user", tau=tau)
    report = recorder.report()
    assert report["checked"] == report["batches"] > 20
    assert report["decisions_differing"] == 0
    assert report["max_abs_diff"] < 1e-12


def test_an_ended_job_drops_its_cached_bins(tmp_path):
    """The conditioned bins cached in ``job.info`` while a job waits and runs are dropped when it
    ends: a snapshot writes every ended job into its frames (on SDSC-BLUE they were 80% of its bytes)."""
    sched = build_scheduler(scheduler="probabilistic", distribution="user")
    _, core = simulate(BUSY["nb_res"], BUSY, sched, prefix=tmp_path / "p")
    ended = [job for job in core.jobs.values() if job.start_time >= 0]
    assert len(ended) == len(BUSY["jobs"])
    assert all("start_order" in job.info for job in ended)  # (the scheduler did see them run)
    assert not [job.id for job in ended if "runtime_bins" in job.info]
