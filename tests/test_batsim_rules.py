"""Inputs Batsim 4.2.1 refuses are refused here too (issue 40 §2): every rule it applies when it
loads a workload (workload.cpp, jobs.cpp, profiles.cpp) or a platform (machines.cpp,
permissions.cpp), in one line and exit 2 in `simulate` and `campaign run`, as a WorkloadError in
the RL environment, and as a protocol error in `serve` when a JOB_SUBMITTED breaks it.
docs/simulator.md tabulates the same rules (test_docs_table_lists_every_rule)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from batsched_ml import cli
from batsched_ml.protocol.codec import decode
from batsched_ml.protocol.errors import ProtocolError
from batsched_ml.workloads import PlatformError, WorkloadError, load_workload, read_platform

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = ROOT / "tests" / "data" / "platform-16.xml"
SIMULATOR_DOC = ROOT / "docs" / "simulator.md"


def base_workload() -> dict:
    return {"nb_res": 16,
            "jobs": [{"id": 1, "subtime": 0, "res": 2, "walltime": 100, "profile": "d10"},
                     {"id": "two", "subtime": 5.5, "res": 4, "profile": "d10"}],
            "profiles": {"d10": {"type": "delay", "delay": 10}}}


def job(**changes):
    def mutate(w):
        w["jobs"][0].update(changes)
        for key, value in changes.items():
            if value is DROP:
                del w["jobs"][0][key]
    return mutate


def profile(name="d10", **fields):
    def mutate(w):
        w["profiles"][name] = fields
    return mutate


def top(**changes):
    def mutate(w):
        w.update(changes)
        for key, value in changes.items():
            if value is DROP:
                del w[key]
    return mutate


DROP = object()

# (rule as docs/simulator.md names it, mutation of base_workload() or raw JSON text, message fragment)
WORKLOAD_RULES = [
    ("nb_res", top(nb_res=DROP), "missing 'nb_res'"),
    ("nb_res", top(nb_res=0), "'nb_res' must be a positive integer, got 0"),
    ("nb_res", top(nb_res=16.0), "'nb_res' must be a positive integer, got 16.0"),
    ("jobs", top(jobs={}), "'jobs' must be a JSON array"),
    ("profiles", top(profiles=[]), "'profiles' must be a JSON object"),
    ("NaN", '{"nb_res": 16, "jobs": [], "profiles": {"d": {"type": "delay", "delay": NaN}}}',
     "NaN is not a JSON number"),
    ("duplicate key", '{"nb_res": 16, "jobs": [], "profiles": {"d": {"type": "delay", "delay": 1}, '
     '"d": {"type": "delay", "delay": 2}}}', "the key 'd' appears twice"),
    ("profile type", profile(delay=10), "profile 'd10': missing 'type'"),
    ("profile type", profile(type="sleep", delay=10), "'type' must be one of delay, parallel"),
    ("profile ret", profile(type="delay", delay=10, ret="0"), "'ret' must be an integer"),
    ("delay", profile(type="delay"), "profile 'd10': missing 'delay'"),
    ("delay", profile(type="delay", delay=0), "'delay' must be a strictly positive number, got 0"),
    ("delay", profile(type="delay", delay=-3), "'delay' must be a strictly positive number, got -3"),
    ("parallel cpu", profile("p", type="parallel", cpu=[], com=[]), "'cpu' must be a non-empty array"),
    ("parallel cpu", profile("p", type="parallel", cpu=[1, -1], com=[0] * 4), "every element must be a non-negative"),
    ("parallel com", profile("p", type="parallel", cpu=[1, 1], com=[0] * 3),
     "'com' has 3 elements where 2 'cpu' entries need 2x2"),
    ("parallel_homogeneous", profile("p", type="parallel_homogeneous", cpu=-1, com=0),
     "'cpu' must be a non-negative number, got -1"),
    ("parallel_homogeneous", profile("p", type="parallel_homogeneous_total", cpu=1), "missing 'com'"),
    ("composed repeat", profile("c", type="composed", repeat=0, seq=["d10"]), "'repeat' must be a strictly positive"),
    ("composed seq", profile("c", type="composed", seq=[]), "'seq' must be a non-empty array"),
    ("composed seq", profile("c", type="composed", seq=["d10", "nope"]),
     "composed profile 'c' uses profile 'nope', which is not defined"),
    ("parallel_homogeneous_pfs", profile("f", type="parallel_homogeneous_pfs", storage="pfs"),
     "needs 'bytes_to_read' or 'bytes_to_write'"),
    ("data_staging", profile("s", type="data_staging", nb_bytes=1, to="b"), "missing 'from'"),
    ("send", profile("s", type="send", msg="hi"), "'msg' must be an object"),
    ("send", profile("s", type="send", msg={}, sleeptime=0), "'sleeptime' must be a strictly positive"),
    ("recv", profile("r", type="recv", polltime=-1), "'polltime' must be a strictly positive"),
    ("smpi trace", profile("m", type="smpi"), "missing 'trace'"),
    ("smpi trace", profile("m", type="usage_trace", trace="absent.txt"), "its 'trace' 'absent.txt' is not a file"),
    ("job object", top(jobs=[7]), "job #0 is not a JSON object"),
    ("id", job(id=DROP), "job #0: missing 'id'"),
    ("id", job(id=1.0), "'id' must be a string or a 32-bit integer, got 1.0"),
    ("id", job(id=2**31), "'id' must be a string or a 32-bit integer"),
    ("id", job(id="a!b"), "'id' must be a non-empty name without '!'"),
    ("id", job(id=""), "'id' must be a non-empty name without '!'"),
    ("duplicate id", job(id="two"), "job 'two' (#1): duplicate id (first used by job #0)"),
    ("duplicate id", lambda w: (w["jobs"][0].update(id=7), w["jobs"][1].update(id="7")), "job '7' (#1): duplicate id"),
    ("subtime", job(subtime=DROP), "job 1 (#0): missing 'subtime'"),
    ("subtime", job(subtime="soon"), "'subtime' must be a number, got 'soon'"),
    ("subtime", job(subtime=-1), "'subtime' is -1: it must be non-negative"),
    ("walltime", job(walltime=-100), "job 1 (#0): 'walltime' is -100: it must be -1 (no walltime) or a strictly "
     "positive number"),
    ("walltime", job(walltime=0), "job 1 (#0): 'walltime' is 0: it must be -1"),
    ("walltime", job(walltime="1h"), "'walltime' is '1h': it must be -1"),
    ("res", job(res=DROP), "job 1 (#0): missing 'res'"),
    ("res", job(res=0), "'res' must be a positive integer, got 0"),
    ("res", job(res=2.0), "'res' must be a positive integer, got 2.0"),
    ("res", job(res=True), "'res' must be a positive integer, got True"),
    ("profile", job(profile=DROP), "job 1 (#0): missing 'profile'"),
    ("profile", job(profile=3), "'profile' must be a string, got 3"),
    ("profile", job(profile="nope"), "profile 'nope' is not defined in 'profiles'"),
    ("parallel res", lambda w: (w["profiles"].update(p={"type": "parallel", "cpu": [1] * 3, "com": [0] * 9}),
                                w["jobs"][0].update(profile="p")),
     "'res' is 2 but its parallel profile 'p' has 3 'cpu' entries"),
    ("smpi_ranks_to_hosts_mapping", job(smpi_ranks_to_hosts_mapping=[0, 2]),
     "rank 1 maps to 2, not an integer in [0, 2)"),
]
IDS = [f"{i}-{rule}" for i, (rule, _, _) in enumerate(WORKLOAD_RULES)]


def write_case(tmp_path: Path, mutation) -> Path:
    path = tmp_path / "bad.json"
    if isinstance(mutation, str):
        path.write_text(mutation)
    else:
        workload = base_workload()
        mutation(workload)
        path.write_text(json.dumps(workload))
    return path


def run(capsys, *argv):
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code, err, fragment):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("batsched-ml: error: "), err
    assert fragment in lines[0], lines[0]


def test_the_base_workload_is_valid(tmp_path):
    assert len(load_workload(write_case(tmp_path, lambda w: None))["jobs"]) == 2


@pytest.mark.parametrize("rule, mutation, fragment", WORKLOAD_RULES, ids=IDS)
def test_load_workload_refuses(tmp_path, rule, mutation, fragment):
    with pytest.raises(WorkloadError) as caught:
        load_workload(write_case(tmp_path, mutation))
    assert str(caught.value).startswith(f"{tmp_path / 'bad.json'}: ")
    assert fragment in str(caught.value)


@pytest.mark.parametrize("rule, mutation, fragment", WORKLOAD_RULES, ids=IDS)
def test_simulate_refuses_in_one_line(tmp_path, capsys, rule, mutation, fragment):
    path = write_case(tmp_path, mutation)
    code, _, err = run(capsys, "simulate", "-p", PLATFORM, "-w", path, "-e", tmp_path / "out", "--quiet")
    assert_one_line(code, err, fragment)
    assert not (tmp_path / "out_jobs.csv").exists()


@pytest.mark.parametrize("rule, mutation, fragment", WORKLOAD_RULES, ids=IDS)
def test_campaign_run_refuses_in_one_line(tmp_path, capsys, rule, mutation, fragment):
    path = write_case(tmp_path, mutation)
    (tmp_path / "c.toml").write_text(f'[campaign]\nname = "c"\n[traces.t]\nworkload = "{path}"\n'
                                     f'platform = "{PLATFORM}"\n[configs.easy]\nscheduler = "easy"\n')
    code, _, err = run(capsys, "campaign", "run", tmp_path / "c.toml", "-o", tmp_path / "res", "--quiet")
    assert_one_line(code, err, fragment)


@pytest.mark.parametrize("rule, mutation, fragment", WORKLOAD_RULES, ids=IDS)
def test_rl_environment_refuses(tmp_path, rule, mutation, fragment):
    from batsched_ml.rl.env import SchedulingEnv

    with pytest.raises(WorkloadError) as caught:
        SchedulingEnv(write_case(tmp_path, mutation), sequence_length=2)
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_rl_environment_checks_a_workload_dict():
    from batsched_ml.rl.env import SchedulingEnv

    workload = base_workload()
    job(walltime=-100)(workload)
    with pytest.raises(WorkloadError, match=r"<workload>: job 1 \(#0\): 'walltime' is -100"):
        SchedulingEnv(workload, sequence_length=2)


def base_v5_workload() -> dict:
    """base_workload() as Batsim 5 reads it (``DelayProfile``; no walltime: the member left out)."""
    return {"nb_res": 16,
            "jobs": [{"id": 1, "subtime": 0, "res": 2, "walltime": 100, "profile": "d10"},
                     {"id": "two", "subtime": 5.5, "res": 4, "profile": "d10", "extra_data": {"user": 3}}],
            "profiles": {"d10": {"type": "DelayProfile", "delay": 10}}}


# Batsim 5.0.0-rc2's rules (its jobs.cpp, profiles.cpp), for a workload naming its profile types
# (same shape as WORKLOAD_RULES, mutations of base_v5_workload())
V5_WORKLOAD_RULES = [
    ("Batsim 5 profile types", profile("old", type="delay", delay=10),
     "its profiles mix Batsim 4.2.1 types (delay) and Batsim 5 types (DelayProfile)"),
    ("Batsim 5 profile types", profile("s", type="ForkJoinCompositionProfile", seq=["d10"]),
     "'type' must be one of DelayProfile, ParallelTaskProfile"),
    ("delay", profile(type="DelayProfile", delay=0), "'delay' must be a strictly positive number, got 0"),
    ("parallel com", profile("p", type="ParallelTaskProfile", cpu=[1, 1], com=[0] * 3),
     "'com' has 3 elements where 2 'cpu' entries need 2x2"),
    ("composed seq", profile("c", type="SequentialCompositionProfile", seq=["d10", "nope"]),
     "composed profile 'c' uses profile 'nope', which is not defined"),
    ("Batsim 5 trace replay", profile("t", type="TraceReplayProfile", trace_type="Paje", filename="t.txt"),
     "'trace_type' must be SMPI or FractionalComputation, got 'Paje'"),
    ("Batsim 5 trace replay", profile("t", type="TraceReplayProfile", trace_type="SMPI", filename="absent.txt"),
     "its 'filename' 'absent.txt' is not a file"),
    ("Batsim 5 walltime", job(walltime=-1), "'walltime' is -1: Batsim 5 wants a strictly positive number, or no "
     "'walltime' member"),
    ("Batsim 5 extra_data", job(extra_data=3), "'extra_data' must be a string, an object or an array, got 3"),
]
V5_IDS = [f"{i}-{rule}" for i, (rule, _, _) in enumerate(V5_WORKLOAD_RULES)]


def write_v5_case(tmp_path: Path, mutation) -> Path:
    workload = base_v5_workload()
    mutation(workload)
    path = tmp_path / "bad.v5.json"
    path.write_text(json.dumps(workload))
    return path


def test_the_base_v5_workload_is_valid(tmp_path, capsys):
    path = write_v5_case(tmp_path, lambda w: None)
    assert len(load_workload(path)["jobs"]) == 2
    code, _, err = run(capsys, "simulate", "--batsim", "5", "-p", PLATFORM, "-w", path, "-e", f"{tmp_path}/",
                       "--quiet")
    assert code == 0, err


@pytest.mark.parametrize("rule, mutation, fragment", V5_WORKLOAD_RULES, ids=V5_IDS)
def test_batsim5_workloads_follow_batsim5s_rules(tmp_path, capsys, rule, mutation, fragment):
    """The same rule set (``protocol.descriptions``) with Batsim 5's type names and job rules: the
    loader refuses, ``simulate --batsim 5`` says it in one line."""
    path = write_v5_case(tmp_path, mutation)
    with pytest.raises(WorkloadError) as caught:
        load_workload(path)
    assert fragment in str(caught.value)
    code, _, err = run(capsys, "simulate", "--batsim", "5", "-p", PLATFORM, "-w", path, "-e", f"{tmp_path}/",
                       "--quiet")
    assert_one_line(code, err, fragment)
    assert not (tmp_path / "jobs.csv").exists()


def _job_submitted(job: dict, profile: dict | None = None) -> str:
    data = {"job_id": "w0!1", "job": dict(job, id="w0!1")}
    if profile is not None:
        data["profile"] = profile
    return json.dumps({"now": 0.0, "events": [{"timestamp": 0.0, "type": "JOB_SUBMITTED", "data": data}]})


@pytest.mark.parametrize("rule, mutation, fragment", [
    case for case in WORKLOAD_RULES if case[0] in ("walltime", "res", "subtime", "profile",
                                                   "smpi_ranks_to_hosts_mapping")
    and "not defined" not in case[2] and "without '!'" not in case[2] and "non-negative" not in case[2]
    and "job #0" not in case[2]])
def test_serve_refuses_a_job_submitted_breaking_a_job_rule(rule, mutation, fragment):
    """Batsim never sends such a job: a JOB_SUBMITTED carrying one is a protocol error."""
    workload = base_workload()
    mutation(workload)
    with pytest.raises(ProtocolError) as caught:
        decode(_job_submitted(workload["jobs"][0]), direction="events")
    assert "JOB_SUBMITTED" in str(caught.value)
    assert fragment.split(": ", 1)[-1] in str(caught.value)


def test_serve_refuses_a_forwarded_profile_breaking_a_profile_rule():
    good = base_workload()["jobs"][0]
    with pytest.raises(ProtocolError, match=r"profile 'd10': 'delay' must be a strictly positive number, got 0"):
        decode(_job_submitted(good, {"type": "delay", "delay": 0}), direction="events")


@pytest.mark.parametrize("walltime", [-100, 0])
def test_serve_ends_on_a_job_submitted_with_a_bad_walltime(tmp_path, walltime):
    """End to end over a socket: `serve` answers with an error, says it in one line, exits 2."""
    from test_serve_cli import begins, serve_fails_cleanly  # tests/ is on sys.path

    bad = {"id": "w0!1", "subtime": 1.0, "walltime": walltime, "res": 1, "profile": "p100"}
    raw = json.dumps({"now": 1.0, "events": [{"timestamp": 1.0, "type": "JOB_SUBMITTED",
                                               "data": {"job_id": "w0!1", "job": bad}}]}).encode()
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [(0.0, [begins()]), raw])
    assert f"'walltime' is {walltime}: it must be -1 (no walltime) or a strictly positive number" in error


# ------------------------------------------------------------------ platforms

CLUSTER = '<cluster id="{id}" prefix="{prefix}" suffix="" radical="0-{last}" speed="{speed}" bw="1GBps" lat="0us"{end}'
MASTER_ROLE = '><prop id="role" value="master"/></cluster>'


def platform_xml(*elements) -> str:
    return ('<?xml version="1.0"?><platform version="4.1"><zone id="z" routing="Full">'
            + "".join(elements) + "</zone></platform>")


def compute(speed="1Gf", last=3):
    return CLUSTER.format(id="c", prefix="node", last=last, speed=speed, end="/>")


def master_cluster(prefix="master_host"):
    return CLUSTER.format(id="m", prefix=prefix, last=0, speed="1Gf", end=MASTER_ROLE)


PLATFORM_RULES = [
    ("master", platform_xml(compute(), '<host id="master0" speed="1Gf"/>'),
     "no master host: Batsim needs one, with role 'master' or named 'master_host'"),
    ("master", platform_xml(compute(), master_cluster(), '<host id="master_host" speed="1Gf"/>'),
     "2 master hosts (master_host0, master_host): Batsim accepts one"),
    ("master", platform_xml(compute(), '<host id="master_host" speed="1Gf"><prop id="role" value="master"/></host>'),
     "the host 'master_host' is Batsim's default master, so it cannot also carry the role 'master'"),
    ("role", platform_xml(compute(), master_cluster(), '<host id="login" speed="1Gf"><prop id="role" value="login"/>'
                          '</host>'), "host 'login' has role 'login': Batsim knows only"),
    ("speed", platform_xml(compute(speed="0f"), master_cluster()),
     "cluster 'c' is a compute host with speed '0f': Batsim requires a strictly positive computing speed"),
    ("speed", platform_xml(compute(speed="fast"), master_cluster()), "speed 'fast' is not a number with a unit"),
    ("speed", platform_xml('<host id="n0" speed="1Gf,0f" pstate="1"/>', master_cluster()),
     "host 'n0' is a compute host with speed '0f'"),
    ("speed", platform_xml('<host id="n0"/>', master_cluster()), "host 'n0' has no 'speed'"),
]


@pytest.mark.parametrize("rule, xml, fragment", PLATFORM_RULES, ids=[f"{i}-{r}" for i, (r, _, _) in
                                                                    enumerate(PLATFORM_RULES)])
def test_platform_rules(tmp_path, capsys, rule, xml, fragment):
    path = tmp_path / "p.xml"
    path.write_text(xml)
    with pytest.raises(PlatformError) as caught:
        read_platform(path)
    assert fragment in str(caught.value)
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(base_workload()))
    code, _, err = run(capsys, "simulate", "-p", path, "-w", workload, "-e", tmp_path / "out", "--quiet")
    assert_one_line(code, err, fragment)


def test_a_storage_host_needs_no_speed_and_the_master_no_compute_role(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(platform_xml(compute(last=1), master_cluster(),
                                 '<host id="disk" speed="0f"><prop id="role" value="storage"/></host>'))
    assert read_platform(path).host_names == ["node0", "node1"]


def test_docs_table_lists_every_rule():
    """docs/simulator.md's table names every rule tested here (and so what Batsim does beside ours)."""
    text = SIMULATOR_DOC.read_text()
    table = text[text.index("## What Batsim refuses"):]
    rows = {m.group(1) for m in re.finditer(r"^\| `([^`]+)`", table, re.M)}
    rules = {rule for rules in (WORKLOAD_RULES, V5_WORKLOAD_RULES, PLATFORM_RULES) for rule, _, _ in rules}
    assert rules <= rows, sorted(rules - rows)
