"""A campaign's ``[[forks]]`` (issue 42 §4): branches from a base run's state at several instants,
compared on the same jobs, paired, in forks.csv and the report; cached like every task; bad
tables named, every one."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pytest

from batsched_ml.analysis.forks import TAU, window_records
from batsched_ml.analysis.metrics import per_job_bsld
from batsched_ml.campaign.report import write_report
from batsched_ml.campaign.run import run_campaign
from batsched_ml.campaign.spec import CampaignError, load_campaign

HEAD = """
[campaign]
name = "forks"
baseline = "easy"

[traces.KTH1k]
workload = "sample:KTH-SP2-1k"
platform = "sample:cluster-100"

[configs.easy]
scheduler = "easy"

[configs.easy-again]
scheduler = "easy"

[configs.fcfs]
scheduler = "fcfs"
"""
FORKS = """
[[forks]]
name = "whatif"
base = "easy"
at = ["2d", "5d"]
window = "1d"
branches = ["easy", "easy-again", "fcfs"]
"""


def _campaign(tmp_path, text: str, head: str = HEAD):
    path = tmp_path / "c.toml"
    path.write_text(head + text)
    return load_campaign(path)


def _forks_csv(results: Path) -> list[dict]:
    with open(results / "forks.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("forks")
    campaign = _campaign(tmp, FORKS)
    outcome = run_campaign(campaign, tmp / "out", workers=0, progress=False, log=lambda m: None)
    return tmp, campaign, outcome


def test_a_fork_campaign_compares_its_branches_at_each_instant(ran):
    tmp, _, outcome = ran
    assert not outcome.failed
    rows = _forks_csv(tmp / "out")
    assert {(float(r["at"]), r["branch"]) for r in rows} == {(at * 86400.0, b) for at in (2, 5)
                                                             for b in ("easy", "easy-again", "fcfs")}
    assert all(r["reference"] == "easy" and int(r["jobs"]) > 0 for r in rows)
    assert len({r["config"] for r in outcome.rows}) == 3  # results.csv: the configs' runs, no fork row
    # at day 2 the queue is long: FCFS (no backfilling) is worse than EASY on the same jobs, surely
    fcfs = next(r for r in rows if r["branch"] == "fcfs" and float(r["at"]) == 2 * 86400.0)
    assert float(fcfs["reduction_high"]) < 0


def test_a_branch_equal_to_the_base_makes_the_base_runs_decisions(ran):
    tmp, _, _ = ran
    rows = _forks_csv(tmp / "out")
    jobs_csv = tmp / "base_jobs.csv"
    jobs_csv.write_bytes(gzip.decompress((tmp / "out" / "runs" / "KTH1k.w0.easy.s0_jobs.csv.gz").read_bytes()))
    for at in (2 * 86400.0, 5 * 86400.0):
        same = {r["branch"]: r for r in rows if float(r["at"]) == at}
        for branch in ("easy", "easy-again"):
            assert float(same[branch]["reduction"]) == 0.0
            assert float(same[branch]["reduction_low"]) == float(same[branch]["reduction_high"]) == 0.0
        # the base run never forked, over the same window: the same jobs with the same slowdowns
        base = window_records(jobs_csv, at, at + 86400.0)
        assert len(base.full_id) == int(same["easy"]["jobs"])
        assert float(per_job_bsld(base, TAU).sum()) == pytest.approx(float(same["easy"]["cum_bsld60"]), rel=1e-12)


def test_the_report_holds_the_paired_table_and_a_second_run_is_cached(ran):
    tmp, campaign, _ = ran
    report = write_report(tmp / "out", tmp / "report", log=lambda m: None).read_text()
    section = report[report.index("## Forks"):]
    assert "| instant (day) | jobs | easy | easy-again | fcfs |" in section
    assert "| 2 |" in section and "| 5 |" in section and "| mean over 2 |" in section
    before = (tmp / "out" / "forks.csv").read_bytes()
    again = run_campaign(campaign, tmp / "out", workers=0, progress=False, log=lambda m: None)
    assert again.computed == 0 and (tmp / "out" / "forks.csv").read_bytes() == before
    subset = run_campaign(campaign, tmp / "out", workers=0, progress=False, log=lambda m: None, configs=["fcfs"])
    assert subset.computed == 0 and (tmp / "out" / "forks.csv").read_bytes() == before  # its lines are kept


def test_a_fork_task_past_its_time_limit_stops_and_says_so(tmp_path):
    campaign = _campaign(tmp_path, FORKS.replace('at = ["2d", "5d"]', 'at = ["5d"]'),
                         HEAD.replace('baseline = "easy"', 'baseline = "easy"\ntask_timeout = 1e-9'))
    outcome = run_campaign(campaign, tmp_path / "out", workers=0, progress=False, log=lambda m: None,
                           configs=["easy", "easy-again", "fcfs"])
    assert any(f.startswith("KTH1k/w0/whatif/s0") and "task_timeout" in f for f in outcome.failed), outcome.failed
    assert not (tmp_path / "out" / "forks.csv").exists()


def test_a_changed_branch_is_a_new_task(tmp_path):
    from batsched_ml.campaign.run import build_tasks

    def fork_keys(text, head=HEAD):
        return [t.key for t in build_tasks(_campaign(tmp_path, text, head), tmp_path / "out") if t.kind == "fork"]

    keys = fork_keys(FORKS)
    assert len(keys) == 2 and len(set(keys)) == 2  # one per instant
    assert fork_keys(FORKS.replace('"1d"', '"2d"')) != keys
    assert fork_keys(FORKS) == keys  # the same campaign again: the same keys
    assert set(fork_keys(FORKS.replace('"easy-again", "fcfs"]', '"easy-again"]'))).isdisjoint(keys)
    sjbf = HEAD.replace('[configs.easy-again]\nscheduler = "easy"', '[configs.easy-again]\nscheduler = "easy"\n'
                                                                       'backfill_order = "sjbf"')
    assert set(fork_keys(FORKS, sjbf)).isdisjoint(keys)  # a branch's settings changed


def test_bad_fork_tables_are_each_named(tmp_path):
    bad = """
[[forks]]
base = "nope"
at = ["1d"]
window = "0"
branches = ["easy", "fcfs"]

[[forks]]
base = "easy"
every = "-1d"
window = "1d"
branches = ["easy", "missing"]
"""
    with pytest.raises(CampaignError) as info:
        _campaign(tmp_path, bad)
    text = str(info.value)
    assert "4 problems" in text
    assert "[[forks]] #1: base 'nope' is not a config" in text
    assert "[[forks]] #1 window must be a number > 0, got 0.0" in text
    assert "[[forks]] #2: branch 'missing' is not a config" in text
    assert "[[forks]] #2 every must be a number > 0, got -86400.0" in text


def test_an_instant_past_the_trace_is_refused(tmp_path):
    from batsched_ml.campaign.run import build_tasks

    campaign = _campaign(tmp_path, FORKS.replace('"5d"]', '"5d", "30d", "40d"]'))
    with pytest.raises(CampaignError, match=r"instant 30 d \(2592000 s\) is not before the trace's last submission "
                                            r"\(9\.23 d\); .*instant 40 d \(3456000 s\)"):
        build_tasks(campaign, tmp_path / "out")


def test_forks_refuse_batsim_5(tmp_path):
    with pytest.raises(CampaignError, match=r"base 'easy5' runs on batsim = 5, whose kernel cannot pause"):
        _campaign(tmp_path, '[configs.easy5]\nscheduler = "easy"\nbatsim = 5\n'
                  + FORKS.replace('base = "easy"', 'base = "easy5"'))


def test_linking_a_run_file_again_leaves_no_temporary_link(tmp_path):
    from batsched_ml.campaign.trainings import link_file

    src, dst = tmp_path / "cache.gz", tmp_path / "runs" / "run.gz"
    src.write_bytes(b"x")
    for _ in range(3):  # (a campaign run three times in one process: the third used to fail)
        link_file(src, dst)
    assert sorted(p.name for p in dst.parent.iterdir()) == ["run.gz"] and dst.read_bytes() == b"x"
