"""Tests of the workloads layer: SWF reading, cleaning rules, JSON and platforms.

Golden checks use /work/shared (``../shared`` beside the repo, or the
BATSCHED_ML_SHARED variable) and are skipped when it is absent; everything
else runs offline from ``tests/data``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from conftest import shared_dir  # tests/ is on sys.path (pytest's rootdir conftest)
from batsched_ml.workloads import (
    SWF_FIELDS,
    PlatformError,
    SwfFormatError,
    WorkloadError,
    convert_swf,
    load_workload,
    parse_radical,
    read_platform,
    read_swf,
    swf_to_workload,
    write_platform,
    write_workload,
)

DATA = Path(__file__).resolve().parent / "data"
REPO = Path(__file__).resolve().parents[1]
EXCERPT = DATA / "kth-excerpt.swf"


def _need_shared(relative: str) -> Path:
    """A file or folder of the shared data, or a skip when it (or the whole data) is absent."""
    shared = shared_dir()
    if shared is None or not (shared / relative).exists():
        pytest.skip(f"shared material absent: ../shared/{relative}")
    return shared / relative


KTH_SWF = "traces/KTH-SP2-1996-2.1-cln.swf.gz"


def _read_json(path: Path):
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def assert_matches_golden(workload: dict, golden: dict) -> None:
    """Equal on every field golden has, with the same JSON types and key order."""
    assert workload["nb_res"] == golden["nb_res"]
    assert len(workload["jobs"]) == len(golden["jobs"])
    for ours, ref in zip(workload["jobs"], golden["jobs"]):
        assert list(ours)[: len(ref)] == list(ref), (ours, ref)
        for key, value in ref.items():
            assert ours[key] == value and type(ours[key]) is type(value), (key, ours, ref)
    assert list(workload["profiles"]) == list(golden["profiles"])  # same order
    for name, prof in golden["profiles"].items():
        assert workload["profiles"][name] == prof
        assert type(workload["profiles"][name]["delay"]) is type(prof["delay"])


def _swf(tmp_path: Path, body: str, header: str = "; MaxProcs: 8\n", name="t.swf") -> Path:
    path = tmp_path / name
    path.write_text(header + body)
    return path


def _line(job, submit, run, alloc, req_procs, req_time, user=1, extra="-1 -1 -1"):
    # 18 fields: id submit wait run alloc cpu mem req_procs req_time req_mem
    #            status user group exe queue partition prev think
    return (f"{job} {submit} 0 {run} {alloc} -1 -1 {req_procs} {req_time} -1 1 {user} 7 "
            f"{extra} -1 -1\n")


# ------------------------------------------------------------------ golden (shared)


def test_golden_kth_full_and_5k():
    trace = read_swf(_need_shared(KTH_SWF))
    golden_dir = _need_shared("golden")
    full, report = swf_to_workload(trace)
    assert_matches_golden(full, _read_json(golden_dir / "KTH-SP2-1996-2.1-cln.json.gz"))
    assert (report.read, report.kept) == (28476, 28467)
    assert report.skipped == {"run_time<=0": 8, "procs<=0": 1}
    five_k, report = swf_to_workload(trace, max_jobs=5000)
    assert_matches_golden(five_k, _read_json(golden_dir / "KTH-5k.json.gz"))
    assert report.read == report.kept + sum(report.skipped.values()) + report.beyond_max_jobs


def test_bundled_1k_sample_is_the_conversion_of_kth():
    trace = read_swf(_need_shared(KTH_SWF))
    workload, _ = swf_to_workload(trace, max_jobs=1000)
    assert load_workload(REPO / "workloads" / "KTH-SP2-1k.json") == workload


def test_swf_calendar_metadata():
    workload, _ = swf_to_workload(read_swf(EXCERPT))
    swf = workload["swf"]
    assert swf["UnixStartTime"] == 843480031 and type(swf["UnixStartTime"]) is int
    assert swf["TimeZone"] == 3600 and swf["TimeZoneString"] == "Europe/Stockholm"
    assert swf["source"] == "kth-excerpt.swf"
    assert swf["subtime_offset"] == 599850.0  # submit time of job 15, the first job


# ------------------------------------------------------------------ SWF reader (offline)


def test_excerpt_header_and_fields():
    trace = read_swf(EXCERPT)
    assert len(trace) == 200
    assert trace.header["MaxProcs"] == "100"
    assert trace.header["TimeZoneString"] == "Europe/Stockholm"
    # a continuation line is joined, and the URL in it is not taken as a key
    assert trace.header["Information"].endswith("http://www.cs.huji.ac.il/labs/parallel/workload/")
    assert "http" not in trace.header
    assert trace.jobs.dtype.names == SWF_FIELDS
    first = trace.jobs[0]
    assert (first["job_id"], first["submit_time"], first["run_time"], first["requested_time"]) == (
        15, 599850, 3477, 53940)


def test_gzip_and_plain_read_the_same(tmp_path):
    gz = tmp_path / "no-suffix"  # gzip is found by magic bytes, not by the name
    gz.write_bytes(gzip.compress(EXCERPT.read_bytes()))
    a, b = read_swf(EXCERPT), read_swf(gz)
    assert (a.jobs == b.jobs).all() and a.header == b.header and len(a) == len(b) == 200


def test_malformed_line_names_file_and_line(tmp_path):
    lines = EXCERPT.read_text().splitlines(keepends=True)
    lines[30] = "  999 12 0 5 1 -1 -1 1 60 -1 1 1\n"  # 12 fields
    path = tmp_path / "broken.swf"
    path.write_text("".join(lines))
    with pytest.raises(SwfFormatError) as info:
        read_swf(path)
    msg = str(info.value)
    assert "broken.swf:31:" in msg and "expected 18 fields, found 12" in msg and "999 12" in msg


def test_non_numeric_field_is_an_error(tmp_path):
    path = _swf(tmp_path, _line(1, 0, 10, 1, 1, 60) + _line(2, 5, "ten", 1, 1, 60))
    with pytest.raises(SwfFormatError, match=r"t\.swf:3: non-numeric field 'ten'"):
        read_swf(path)


def test_non_strict_collects_bad_lines(tmp_path):
    body = (_line(1, 0, 10, 1, 1, 60) + "garbage\n" + _line(2, 5, 10, 1, 1, 60)
            + "1 2 3 nan 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n")
    trace = read_swf(_swf(tmp_path, body), strict=False)
    assert list(trace.jobs["job_id"]) == [1, 2]
    assert [(n, t) for n, t, _ in trace.bad_lines] == [
        (3, "garbage"), (5, "1 2 3 nan 5 6 7 8 9 10 11 12 13 14 15 16 17 18")]
    _, report = swf_to_workload(trace)
    assert report.bad_lines == 2


def test_header_only_trace(tmp_path):
    trace = read_swf(_swf(tmp_path, ""))
    assert len(trace) == 0 and trace.header == {"MaxProcs": "8"}


# ------------------------------------------------------------------ cleaning rules (offline)


def test_excerpt_matches_tiny_golden_and_bundled_sample():
    trace = read_swf(EXCERPT)
    tiny, report = swf_to_workload(trace, max_jobs=60, nodes=16)
    assert_matches_golden(tiny, _read_json(DATA / "tiny.json.gz"))
    assert report.capped == 11 and report.nb_res_source == "nodes"
    # the 200-job excerpt converts to a prefix of the bundled 1k workload
    full, _ = swf_to_workload(trace)
    sample = _read_json(REPO / "workloads" / "KTH-SP2-1k.json")
    assert full["jobs"] == sample["jobs"][:200]
    assert all(sample["profiles"][j["profile"]] == full["profiles"][j["profile"]]
               for j in full["jobs"])


def test_cleaning_rules(tmp_path):
    body = (
        _line(10, 100, 50, 2, -1, -1)       # req procs unknown -> allocated; walltime -> run
        + _line(11, 110, 0, 4, 4, 60)       # run time 0: skipped
        + _line(12, 120, 30, -1, -1, 60)    # no processor count: skipped
        + _line(13, 130, 500, 2, 32, 300)   # capped at 8; run clipped to walltime 300
        + _line(14, 140, 30.5, 3, 3, 60, user=9, extra="5 6 7")  # non-integral run time
    )
    workload, report = swf_to_workload(read_swf(_swf(tmp_path, body)))
    jobs = {j["id"]: j for j in workload["jobs"]}
    assert list(jobs) == [10, 13, 14]
    assert jobs[10] == {"id": 10, "subtime": 0.0, "walltime": 50.0, "res": 2, "profile": "d50",
                        "user": 1, "group": 7, "executable": -1, "queue": -1, "partition": -1}
    assert (jobs[13]["res"], jobs[13]["walltime"], jobs[13]["profile"]) == (8, 300.0, "d300")
    assert jobs[13]["subtime"] == 30.0
    assert [jobs[14][k] for k in ("profile", "user", "group", "executable", "queue", "partition")] == [
        "d30.5", 9, 7, 5, 6, 7]
    assert workload["profiles"] == {"d50": {"type": "delay", "delay": 50.0},
                                    "d300": {"type": "delay", "delay": 300.0},
                                    "d30.5": {"type": "delay", "delay": 30.5}}
    assert workload["nb_res"] == 8
    assert report.skipped == {"run_time<=0": 1, "procs<=0": 1}
    assert (report.capped, report.run_time_clipped, report.kept) == (1, 1, 3)


def test_nodes_overrides_header_and_machine_size_fallbacks(tmp_path):
    body = _line(1, 0, 10, 6, 6, 60) + _line(2, 1, 10, 3, 3, 60)
    w, r = swf_to_workload(read_swf(_swf(tmp_path, body)), nodes=4)
    assert w["nb_res"] == 4 and [j["res"] for j in w["jobs"]] == [4, 3] and r.capped == 1
    w, r = swf_to_workload(read_swf(_swf(tmp_path, body, header="; MaxNodes: 5  (dual)\n")))
    assert (w["nb_res"], r.nb_res_source) == (5, "MaxNodes")
    w, r = swf_to_workload(read_swf(_swf(tmp_path, body, header="")))
    assert (w["nb_res"], r.nb_res_source, r.capped) == (6, "largest job", 0)
    assert w["swf"]["UnixStartTime"] is None


def test_max_jobs_counts_add_up(tmp_path):
    body = "".join(_line(i, i, 0 if i % 3 == 0 else 10, 1, 1, 60) for i in range(1, 11))
    w, r = swf_to_workload(read_swf(_swf(tmp_path, body)), max_jobs=4)
    assert [j["id"] for j in w["jobs"]] == [1, 2, 4, 5]
    assert r.skipped["run_time<=0"] == 1 and r.beyond_max_jobs == 5
    assert r.read == r.kept + sum(r.skipped.values()) + r.beyond_max_jobs


def test_convert_swf_writes_workload_and_platform(tmp_path):
    report = convert_swf(EXCERPT, tmp_path / "out" / "w.json.gz", tmp_path / "p.xml",
                         max_jobs=60, nodes=16)
    assert report.kept == 60
    assert_matches_golden(load_workload(tmp_path / "out" / "w.json.gz"),
                          _read_json(DATA / "tiny.json.gz"))
    assert (tmp_path / "p.xml").read_bytes() == (DATA / "platform-16.xml").read_bytes()


# ------------------------------------------------------------------ JSON loader (offline)


def test_load_fixtures():
    tiny = load_workload(DATA / "tiny.json.gz")
    assert len(tiny["jobs"]) == 60 and tiny["nb_res"] == 16
    kr = load_workload(DATA / "kill-requeue.workload.json")
    assert [j["id"] for j in kr["jobs"]] == [0, 1, 2]


def test_write_read_round_trip_is_deterministic(tmp_path):
    workload, _ = swf_to_workload(read_swf(EXCERPT))
    for name in ("w.json", "w.json.gz"):
        write_workload(workload, tmp_path / name)
        first = (tmp_path / name).read_bytes()
        assert load_workload(tmp_path / name) == workload
        write_workload(load_workload(tmp_path / name), tmp_path / name)
        assert (tmp_path / name).read_bytes() == first
    text = (tmp_path / "w.json").read_text()
    assert text.endswith("}\n") and ", " not in text and text.startswith('{"nb_res":100,"jobs":')
    assert gzip.decompress((tmp_path / "w.json.gz").read_bytes()).decode() == text


def _bad(tmp_path, mutate):
    workload = json.loads((DATA / "kill-requeue.workload.json").read_text())
    mutate(workload)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(workload))
    return path


@pytest.mark.parametrize("mutate, message", [
    (lambda w: w["jobs"][1].update(profile="nope"), r"job 1 \(#1\): profile 'nope' is not defined"),
    (lambda w: w.pop("profiles"), r"missing 'profiles'"),
    (lambda w: w.pop("jobs"), r"missing 'jobs'"),
    (lambda w: w["jobs"][2].pop("res"), r"job 2 \(#2\): missing 'res'"),
    (lambda w: w["jobs"][0].pop("subtime"), r"missing 'subtime'"),
    (lambda w: w["jobs"][2].update(id="1"), r"job '1' \(#2\): duplicate id"),
    (lambda w: w["jobs"][0].update(subtime="soon"), r"'subtime' must be a number, got 'soon'"),
    (lambda w: w["jobs"][0].update(res=1.5), r"'res' must be a positive integer"),
    (lambda w: w["jobs"][0].update(walltime=None), r"'walltime' is None: it must be -1 \(no walltime\) or a strictly positive number"),
    (lambda w: w["profiles"]["p0"].update(delay="x"), r"profile 'p0': 'delay' must be a strictly positive number"),
])
def test_load_workload_errors(tmp_path, mutate, message):
    with pytest.raises(WorkloadError, match=r"bad\.json: .*" + message):
        load_workload(_bad(tmp_path, mutate))


def test_load_workload_bad_json(tmp_path):
    path = tmp_path / "broken.json.gz"
    path.write_bytes(gzip.compress(b'{"jobs": [}'))
    with pytest.raises(WorkloadError, match=r"broken\.json\.gz: malformed JSON at line 1"):
        load_workload(path)
    with pytest.raises(WorkloadError, match="missing.json"):
        load_workload(tmp_path / "missing.json")


# ------------------------------------------------------------------ platforms (offline)


@pytest.mark.parametrize("name, count", [("platform-16.xml", 16), ("platform-100.xml", 100)])
def test_golden_platform_counts_and_lexicographic_names(name, count):
    platform = read_platform(DATA / name)
    assert platform.nb_hosts == count == len(platform.host_names)
    assert "master_host0" not in platform.host_names
    assert platform.host_names == sorted(f"node{i}" for i in range(count))
    assert platform.host_names[:3] == ["node0", "node1", "node10"]  # id 2 is node10 (Batsim)


def test_shipped_platforms_equal_golden():
    for n in (16, 100):
        assert (REPO / "platforms" / f"cluster-{n}.xml").read_bytes() == (
            DATA / f"platform-{n}.xml").read_bytes()


def test_write_read_platform_round_trip(tmp_path):
    write_platform(37, tmp_path / "p.xml")
    platform = read_platform(tmp_path / "p.xml")
    assert platform.nb_hosts == 37 and platform.host_names[-1] == "node9"
    with pytest.raises(ValueError):
        write_platform(0, tmp_path / "q.xml")


def test_radicals_hosts_and_masters(tmp_path):
    assert parse_radical("0-3,8,10-12") == [0, 1, 2, 3, 8, 10, 11, 12]
    xml = """<?xml version='1.0'?>
<platform version="4.1"><zone id="z" routing="Full">
  <cluster id="a" prefix="c-" suffix=".x" radical="0-3,8,10-12" speed="1Gf" bw="1GBps" lat="0us"/>
  <host id="solo" speed="1Gf"><prop id="role" value="compute_node"/></host>
  <host id="boss" speed="1Gf"><prop id="role" value="master"/></host>
  <host id="disk" speed="0f"><prop id="role" value="storage"/></host>
  <cluster id="m" prefix="master" suffix="" radical="0-1" speed="1Gf" bw="1GBps" lat="0us"/>
</zone></platform>"""
    (tmp_path / "p.xml").write_text(xml)
    platform = read_platform(tmp_path / "p.xml")
    assert platform.nb_hosts == 11  # hosts named master* without the role compute, as in Batsim
    assert platform.host_names == sorted(
        [f"c-{i}.x" for i in (0, 1, 2, 3, 8, 10, 11, 12)] + ["solo", "master0", "master1"])
    assert platform.host_names[:3] == ["c-0.x", "c-1.x", "c-10.x"]


def test_platform_errors(tmp_path):
    (tmp_path / "bad.xml").write_text("<platform><zone></platform>")
    with pytest.raises(PlatformError, match=r"bad\.xml: malformed XML"):
        read_platform(tmp_path / "bad.xml")
    (tmp_path / "empty.xml").write_text(
        '<platform><zone id="z"><host id="master_host" speed="1Gf"/></zone></platform>')
    with pytest.raises(PlatformError, match=r"empty\.xml: no compute host"):
        read_platform(tmp_path / "empty.xml")
    (tmp_path / "rad.xml").write_text(
        '<platform><cluster id="c" prefix="n" suffix="" radical="0-x"/></platform>')
    with pytest.raises(PlatformError, match=r"rad\.xml: cluster 'c': bad radical"):
        read_platform(tmp_path / "rad.xml")


# ------------------------------------------------------------------ a cut trace (issue 40 §2)

_JOB = "{} {} 0 100 4 -1 -1 4 200 -1 1 1 1 1 1 -1 -1 -1\n"


def _trace_file(tmp_path, header: str, nb_jobs: int) -> Path:
    path = tmp_path / "t.swf"
    path.write_text(header + "".join(_JOB.format(i + 1, 10 * i) for i in range(nb_jobs)))
    return path


@pytest.mark.parametrize("header, nb_jobs, warned", [
    ("; MaxJobs: 1000\n; MaxProcs: 8\n", 293, True),  # a download cut at a line boundary
    ("; MaxJobs: 5\n; MaxProcs: 8\n", 5, False),
    # a cleaned log keeps its MaxJobs and says what it removed
    ("; MaxJobs: 9\n; MaxProcs: 8\n; Note: THIS IS A CLEANED VERSION OF THE LOG!\n;   user=3 (3 jobs removed)\n"
     ";   job<=1 (1 job removed)\n", 5, False),
    ("; MaxJobs: 9\n; MaxProcs: 8\n;   user=3 (3 jobs removed)\n", 5, True),
    ("; MaxProcs: 8\n", 5, False),  # no MaxJobs: nothing to compare with
])
def test_a_trace_with_fewer_jobs_than_its_header_announces_warns(tmp_path, header, nb_jobs, warned):
    _, report = swf_to_workload(read_swf(_trace_file(tmp_path, header, nb_jobs)), max_jobs=3)
    cut = [w for w in report.all_warnings() if "the header announces" in w]
    assert bool(cut) == warned, report.all_warnings()
    if warned:
        assert f"but the file holds {nb_jobs} job lines: is it cut" in cut[0]


def test_convert_says_a_cut_trace_may_be_cut(tmp_path, capsys):
    from batsched_ml.cli import main

    path = _trace_file(tmp_path, "; MaxJobs: 1000\n; MaxProcs: 8\n", 293)
    assert main(["convert", str(path), "-w", str(tmp_path / "w.json")]) == 0
    err = capsys.readouterr().err
    assert "batsched-ml: warning: the header announces 1,000 jobs" in err and "holds 293 job lines" in err


def test_the_shipped_traces_hold_what_their_headers_announce(shared):
    """Archive traces: MaxJobs less the cleaning's removals is the lines read (checked on all twelve
    when written; three here: one removal, five with MaxRecords already less them, one of 24,025)."""
    for name, jobs in (("KTH-SP2-1996-2.1-cln", 28476), ("SDSC-SP2-1998-4.2-cln", 59715),
                       ("NASA-iPSC-1993-3.1-cln", 18239)):
        trace = read_swf(shared / "traces" / f"{name}.swf.gz")
        assert trace.announced_jobs() == len(trace) == jobs, name
