"""Bootstrap intervals of campaign means, paired reductions and single runs (analysis/uncertainty.py)."""

from __future__ import annotations

import numpy as np
import pytest

from batsched_ml.analysis.uncertainty import (
    comparison_lines,
    job_interval,
    mean_difference,
    mean_interval,
    paired_reduction,
    run_uncertainty,
    worst_share,
)


def test_mean_interval_brackets_the_mean_and_needs_two_runs():
    got = mean_interval([38.6, 40.2, 41.2])
    assert got.estimate == pytest.approx(40.0)
    assert 38.6 <= got.low < got.estimate < got.high <= 41.2
    one = mean_interval([40.0, None, float("nan")])
    assert one.n == 1 and one.estimate == 40.0 and not one.has_interval
    assert mean_interval([]).estimate is None
    same = mean_interval([5.0, 5.0, 5.0])
    assert (same.low, same.high) == (5.0, 5.0)


def test_mean_interval_is_seeded():
    values = np.random.default_rng(3).normal(size=12)
    assert mean_interval(values) == mean_interval(values)
    assert mean_interval(values, seed=1) != mean_interval(values, seed=2)


def test_mean_interval_covers_the_true_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    hits = sum(mean_interval(rng.normal(10.0, 2.0, 40), n_resamples=999, seed=i).holds(10.0) for i in range(200))
    assert 176 <= hits <= 199  # 88% to 99.5%: percentile intervals run a little narrow at n = 40


def test_paired_reduction_pairs_runs_of_very_different_windows():
    baseline = {(w, 0): v for w, v in enumerate([100.0, 1000.0, 10000.0, 50.0])}
    config = {k: 0.9 * v for k, v in baseline.items()}
    got = paired_reduction(config, baseline)
    assert got.estimate == pytest.approx(10.0)
    assert got.low == pytest.approx(10.0) and got.high == pytest.approx(10.0)
    assert not got.holds(0.0)
    # unpaired, the windows' spread would swamp the 10%: the means' intervals overlap widely
    assert mean_interval(list(config.values())).holds(mean_interval(list(baseline.values())).estimate)


def test_paired_reduction_within_noise_when_signs_disagree():
    baseline = {(0, s): 100.0 for s in range(5)}
    config = {(0, s): v for s, v in enumerate([90.0, 108.0, 95.0, 104.0, 101.0])}
    got = paired_reduction(config, baseline)
    assert got.estimate == pytest.approx(0.4)
    assert got.holds(0.0)
    lines = comparison_lines({"base": {"cum": baseline}, "x": {"cum": config}}, "base", ["cum"])
    assert lines[-1].endswith("~ |")


def test_paired_reduction_uses_only_common_runs():
    got = paired_reduction({(0, 0): 50.0, (0, 1): 60.0, (0, 2): None}, {(0, 0): 100.0, (0, 3): 100.0})
    assert got.n == 1 and got.estimate == pytest.approx(50.0) and not got.has_interval
    assert paired_reduction({(0, 0): 1.0}, {(0, 1): 1.0}).estimate is None
    assert paired_reduction({(0, 0): 1.0}, {(0, 0): 0.0}).estimate is None


def test_mean_difference_of_two_independent_sets_of_runs():
    seeds = [60.1, 58.9, 61.4]        # a learned config's reductions over seeds
    copies = [45.2, 46.0, 44.8, 45.5]  # a deterministic one's over jitter copies
    got = mean_difference(seeds, copies)
    assert got.estimate == pytest.approx(60.133333 - 45.375, abs=1e-4)
    assert 58.9 - 46.0 <= got.low < got.estimate < got.high <= 61.4 - 44.8
    assert not got.holds(0.0)
    overlapping = mean_difference([50.0, 58.0, 44.0], [51.0, 49.0, 53.0])
    assert overlapping.holds(0.0)
    one = mean_difference([50.0], [40.0, 41.0])
    assert one.estimate == pytest.approx(9.5) and not one.has_interval
    assert mean_difference([], [1.0]).estimate is None
    flat = mean_difference([3.0, 3.0], [1.0, 1.0])
    assert (flat.low, flat.high) == (2.0, 2.0)


def test_job_interval_of_a_sum_and_a_mean():
    rng = np.random.default_rng(0)
    bsld = 1.0 + rng.pareto(1.5, 5000)
    ave = job_interval(bsld)
    cum = job_interval(bsld, total=True)
    assert ave.estimate == pytest.approx(bsld.mean())
    assert cum.estimate == pytest.approx(bsld.sum())
    assert cum.low == pytest.approx(ave.low * 5000) and cum.high == pytest.approx(ave.high * 5000)
    assert ave.low < ave.estimate < ave.high
    # a heavier tail gives a relatively wider interval
    light = job_interval(1.0 + rng.exponential(1.0, 5000))
    assert (ave.high - ave.low) / ave.estimate > (light.high - light.low) / light.estimate


def test_worst_share():
    assert worst_share([1.0] * 99 + [100.0]) == pytest.approx(100.0 / 199.0)
    assert worst_share([2.0] * 10) == pytest.approx(0.1)  # one job of ten: the worst 1% is one job
    assert worst_share([]) is None
    assert worst_share([1.0, 2.0, 3.0, 4.0], fraction=0.5) == pytest.approx(0.7)


def test_run_uncertainty_keys():
    out = run_uncertainty({60.0: [1.0, 2.0, 30.0, 1.0]})
    assert set(out) == {"avebsld_tau60_ci95", "cum_bsld_tau60", "cum_bsld_tau60_ci95", "worst1pct_share_tau60"}
    low, high = out["cum_bsld_tau60_ci95"]
    assert out["cum_bsld_tau60"] == pytest.approx(34.0)
    assert low <= 34.0 <= high


def test_paired_job_reduction_of_two_single_runs():
    from batsched_ml.analysis.uncertainty import paired_job_reduction

    rng = np.random.default_rng(2)
    base = 1.0 + rng.pareto(1.2, 4000)
    better = base * 0.7  # every job 30% better: no doubt left whichever jobs are drawn
    got = paired_job_reduction(better, base)
    assert got.estimate == pytest.approx(30.0) and got.low == pytest.approx(30.0) and got.high == pytest.approx(30.0)
    noisy = base * rng.choice([0.5, 1.5], size=len(base))  # as good as the baseline on average
    got = paired_job_reduction(noisy, base)
    assert got.low < got.estimate < got.high and got.high - got.low > 5
    with pytest.raises(ValueError, match="aligned"):
        paired_job_reduction([1.0], [1.0, 2.0])


def _jobs_csv(path, waits):
    """A Batsim jobs CSV of jobs 0..n-1 (30 s each) with these waits."""
    from batsched_ml.analysis.metrics import JOBS_COLUMNS

    lines = [",".join(JOBS_COLUMNS)]
    for i, w in enumerate(waits):
        lines.append(f"{i},w0,d30,0.0,1,100.0,1,COMPLETED_SUCCESSFULLY,{w},30.0,{w + 30},{w},{w + 30},1.0,0,-1,\"\"")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_campaign_section(tmp_path):
    from batsched_ml.analysis.uncertainty import campaign_section

    rows = [{"trace": "T", "window": 0, "config": c, "seed": s, "status": "ok", "v": v}
            for c, vals in (("base", [100.0] * 3), ("learned", [60.0, 70.0, 65.0]), ("noisy", [90.0, 110.0, 101.0]))
            for s, v in enumerate(vals)]
    rows.append({"trace": "T", "window": 0, "config": "broken", "seed": 0, "status": "error", "v": None})
    lines = campaign_section(rows, "T", ["base", "learned", "noisy", "broken"], "base", ["cum_bsld60"],
                             lambda r, m: r["v"])
    table = [line for line in lines if line.startswith("| ")]
    assert table[1].startswith("| base | 3 | 100.0 [100.0, 100.0] |")
    assert "-35.0% [-40.0, -30.0] better" in table[2] and "~" not in table[2]  # the change, not the reduction
    assert "~" in table[3]  # -0.3% with seeds on both sides of 0
    assert not any("broken" in line for line in table)
    # a baseline run once (seed 0) beside a config's five seeds: every seed is compared with it
    once = [r for r in rows if r["config"] != "base" or r["seed"] == 0]
    lines = campaign_section(once, "T", ["base", "learned"], "base", ["cum_bsld60"], lambda r, m: r["v"])
    row = next(line for line in lines if line.startswith("| learned"))
    assert "| 3 |" in row and "-35.0% [-40.0, -30.0] better" in row
    # single deterministic runs: the jobs resampled
    waits = np.random.default_rng(0).exponential(3000, 300)
    paths = {"base": _jobs_csv(tmp_path / "b.csv", waits), "better": _jobs_csv(tmp_path / "x.csv", waits * 0.5)}
    rows = [{"trace": "T", "window": 0, "config": c, "seed": 0, "status": "ok"} for c in paths]
    lines = campaign_section(rows, "T", list(paths), "base", ["mean_wait", "kills"],
                             lambda r, m: {"base": 3000.0, "better": 1500.0}[r["config"]] if m == "mean_wait" else 0,
                             single_run_jobs=paths.get)
    row = next(line for line in lines if line.startswith("| better"))
    assert "-50.0% [-50.0, -50.0] better (jobs)" in row


def test_run_figures_of_a_jobs_csv(tmp_path):
    from batsched_ml.analysis.uncertainty import run_figures

    waits = [0.0] * 99 + [60_000.0]
    out = run_figures(_jobs_csv(tmp_path / "j.csv", waits), taus=(60.0,))
    # 99 jobs of bsld 1 and one of (60000 + 30) / 60 = 1000.5
    assert out["cum_bsld_tau60"] == pytest.approx(99 + 1000.5)
    assert out["worst1pct_share_tau60"] == pytest.approx(1000.5 / 1099.5)
    low, high = out["cum_bsld_tau60_ci95"]
    assert low < 1099.5 < high and low >= 100  # the interval is as lopsided as the tail


def test_metrics_command_shows_the_intervals(tmp_path, capsys):
    import json

    from batsched_ml.cli import main

    path = _jobs_csv(tmp_path / "j.csv", [0.0] * 99 + [60_000.0])
    assert main(["metrics", str(path), "--json", "--tau", "60"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["avebsld_tau60"] == pytest.approx(1099.5 / 100)
    assert out["cum_bsld_tau60"] == pytest.approx(1099.5)
    assert out["worst1pct_share_tau60"] == pytest.approx(1000.5 / 1099.5)
    low, high = out["avebsld_tau60_ci95"]
    assert low < out["avebsld_tau60"] < high
    assert main(["metrics", str(path)]) == 0
    assert "worst1pct_share_tau60" in capsys.readouterr().out
