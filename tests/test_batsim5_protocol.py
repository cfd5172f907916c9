"""Batsim 5 (batprotocol, JSON) beside Batsim 4.2.1, without Batsim 5: the recorded exchanges of the
real rc2 replayed against ``serve`` over real sockets, the hello, the protocol probes (one line,
exit 2), and our Batsim 5 peer (``simulate --connect --batsim 5``) driving ``serve --batsim 5``.
The same runs against the real rc2 are in ``test_real_batsim5.py`` (``BATSIM5_BIN``)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields

import pytest

from batsim5_replay import (TRANSCRIPTS, WORKLOADS, KillAtTime, PreemptOnce, frames, play, replay)
from batsched_ml.protocol.codec import ProtocolError
from batsched_ml.protocol.v5.handshake import (EDCHello, SimulationFeatures, features_for, hello_frame,
                                               init_frame, is_init_frame, read_hello_frame)
from batsched_ml.protocol.v5.sessions import BatsimSession, EDCSession
from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.server.peer import run_connected
from test_serve_cli import ROOT, TINY, serve_fails_cleanly
from test_server import KillRequeue, ServerThread, tcp_endpoint

TIMEOUT = 20.0


# ------------------------------------------------------------------ replay of rc2's frames


@pytest.mark.parametrize("name, replies", [("ref-process-edc-fcfs-json", 118), ("py-json-fcfs", 118)])
def test_fcfs_replays_decision_for_decision(tmp_path, name, replies):
    """rc2's own C++ FCFS and a Python FCFS, each with rc2 on tiny: our fcfs answers every one of
    Batsim's 118 messages with the same decisions, at the same ``now``."""
    result = replay(name, build_scheduler("fcfs"), f"ipc://{tmp_path}/s.ipc", workload=WORKLOADS / "tiny.v5.json",
                    log_path=tmp_path / "serve.log")
    assert result.mismatches == []
    assert result.compared == replies and result.serve_code == 0, result.serve_errors
    assert result.stats.messages == replies
    features = result.hello.requested_simulation_features
    assert not features.dynamic_registration and features.forward_profiles_on_simulation_begins
    log = (tmp_path / "serve.log").read_text().splitlines()
    assert log[0] == "BATSIM INIT b'" + frames(name)[0][0][4:].decode() + "'" and log[1].startswith("SCHED  INIT-REPLY")
    assert len(log) == 2 + 2 * replies and "\0" not in "".join(log)


def test_kill_requeue_scenario_of_batsim_4_replays_with_our_requeue(tmp_path):
    """4.2.1's kill-requeue scenario redone with rc2: the job is killed at 5 s through a call,
    requeued as ``w0!0#1`` with a copy of its profile ``w0!p0#1``, and registration ends when it
    completes: the recorded decisions, ours through ``ctx.requeue`` (only the call's id is ours)."""
    result = replay("py-json-kill-requeue-v4scenario", KillAtTime(), f"ipc://{tmp_path}/s.ipc",
                    workload=WORKLOADS / "kill-requeue.v5.json")
    assert result.mismatches == [] and result.compared == 11 and result.serve_code == 0, result.serve_errors
    assert result.names.ours == {"kill-w0!0": "c1", "w0!0#1": "w0!0#1"}
    features = result.hello.requested_simulation_features
    assert features.dynamic_registration and features.acknowledge_dynamic_jobs and not features.profile_reuse


def test_preempting_kill_requeue_replays_with_a_copied_profile(tmp_path):
    """A Python EDC killing w0!15 when a whole-machine job arrives, requeueing it as
    ``dyn!15-requeued`` on the same profile (profile_reuse), and rc2 acknowledging it: ours requeues
    ``w0!15#1`` with a copy ``w0!d3477#1`` of that profile, and rc2's acknowledgement is consumed."""
    result = replay("py-json-kill-requeue", PreemptOnce(), f"ipc://{tmp_path}/s.ipc",
                    workload=WORKLOADS / "tiny6.v5.json")
    assert result.mismatches == [] and result.compared == 17 and result.serve_code == 0, result.serve_errors
    assert result.names.ours == {"dyn!15-requeued": "w0!15#1"}
    assert result.copies == [{"id": "w0!d3477#1", "profile_type": "DelayProfile", "profile": {"delay": 3477.0}}]


def test_replay_fails_when_a_decision_differs(tmp_path):
    """The comparison is real: where rc2's FCFS starts w0!17 only, easy also backfills w0!19-22;
    Batsim's later frames then complete a job easy has not started, and serve stops there."""
    result = replay("py-json-fcfs", build_scheduler("easy"), f"ipc://{tmp_path}/s.ipc",
                    workload=WORKLOADS / "tiny.v5.json")
    index, expected, got = result.mismatches[0]
    assert index == 12 and got[1][:1] == expected[1] and [d[2][0] for d in got[1][1:]] == [
        "w0!19", "w0!20", "w0!21", "w0!22"]
    assert result.mismatches[-1][1] == "serve refused the frame" and result.serve_code == 2


def test_cli_serve_recognises_batsim_5_by_its_first_frame(tmp_path):
    """``batsched-ml serve`` without --batsim, as its own process: rc2's frames make it speak Batsim 5."""
    endpoint = tcp_endpoint()
    serve = subprocess.Popen([sys.executable, "-m", "batsched_ml.cli", "serve", "-s", endpoint, "--timeout", "20",
                              "--scheduler", "fcfs"], stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        for line in serve.stderr:
            if "speaks Batsim 4.2.1 and Batsim 5" in line:
                break
        result = play("ref-process-edc-fcfs-json", endpoint, workload=WORKLOADS / "tiny.v5.json")
        _, err = serve.communicate(timeout=TIMEOUT)
    finally:
        serve.kill()
    assert result.mismatches == [] and result.compared == 118 and serve.returncode == 0, err
    assert "Batsim 5 connected (init string b'{\"format_json\": true}'); speaking batprotocol JSON" in err


# ------------------------------------------------------------------ the handshake


def test_hello_has_every_field_rc2_reads_by_construction():
    """rc2 dereferences decision_component_commit and requested_simulation_features unchecked
    (segfault without them): neither can be left out of an EDCHello, and every feature is written."""
    with pytest.raises(TypeError):
        EDCHello("batsched-ml", "0.1.0", features_for(False))  # no commit
    with pytest.raises(TypeError):
        SimulationFeatures(dynamic_registration=True)  # every feature is required
    with pytest.raises(ValueError):
        EDCHello("batsched-ml", "0.1.0", None, features_for(False))
    raw = hello_frame(EDCHello("batsched-ml", "0.1.0", "", features_for(True)))
    assert raw[:4] == b"\x02\x00\x00\x00" and raw.endswith(b"\0")
    (event,) = json.loads(raw[4:-1])["events"]
    assert list(event) == ["timestamp", "event_type", "event"] and event["event_type"] == "EDCHelloEvent"
    body = event["event"]
    assert body["decision_component_commit"] == ""
    assert set(body["requested_simulation_features"]) == {f.name for f in fields(SimulationFeatures)}
    assert read_hello_frame(raw).requested_simulation_features == features_for(True)


def test_a_hello_without_the_commit_is_refused_as_rc2_would_crash_on_it():
    """The first recorded try: rc2 segfaulted on this hello; our Batsim 5 peer refuses it in one line."""
    hello = (TRANSCRIPTS / "py-json-fcfs-SEGFAULT-no-commit-field" / "0001-e2b.bin").read_bytes()
    with pytest.raises(ProtocolError, match="missing EDCHelloEvent member 'decision_component_commit': "
                                            "Batsim 5.0.0-rc2 reads it without a check and crashes"):
        read_hello_frame(hello)
    for name in ("ref-process-edc-fcfs-json", "py-json-fcfs", "py-json-kill-requeue"):  # rc2 took these
        read_hello_frame(frames(name)[0][1])


def test_requested_features_follow_the_configuration():
    assert features_for(False).dynamic_registration is False
    kill = features_for(True)
    assert kill.dynamic_registration and kill.acknowledge_dynamic_jobs and not kill.profile_reuse
    from batsched_ml.server.serve import edc_hello

    assert edc_hello(KillRequeue()).requested_simulation_features == kill
    assert edc_hello(build_scheduler("easy")).requested_simulation_features == features_for(False)


def test_init_frames_are_told_from_batsim_4_messages():
    for name in ("ref-process-edc-fcfs-json", "py-json-fcfs", "py-json-kill-requeue-v4scenario"):
        assert is_init_frame(frames(name)[0][0])  # '{"format_json": true}', 'hello-from-cli', ''
    assert is_init_frame(init_frame(b"")) and is_init_frame(init_frame(b"{}"))
    assert not is_init_frame(b'{"now":0.0,"events":[]}') and not is_init_frame(b"\x05\x00\x00")


# ------------------------------------------------------------------ protocol probes: one line, exit 2

INIT = init_frame(b"{}")
BEGINS = frames("py-json-fcfs")[1][0]  # rc2's SimulationBeginsEvent on 16 hosts, NUL-terminated


def frame(now, *events) -> bytes:
    return json.dumps({"now": now, "events": [
        {"timestamp": ts, "event_type": etype, "event": body} for ts, etype, body in events]}).encode() + b"\0"


def submitted(ts, job_id="w0!1", res=2):
    return (ts, "JobSubmittedEvent", {"job_id": job_id, "job": {"resource_request": res, "walltime": 100.0,
                                                                "extra_data": "", "rigid": True,
                                                                "profile_id": "w0!d1"}, "submission_time": ts})


def probe(tmp_path, *messages, batsim="5"):
    extra = ("--batsim", batsim) if batsim else ()
    return serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", list(messages), extra=extra)[1]


def test_probe_malformed_frame(tmp_path):
    error = probe(tmp_path, INIT, BEGINS, b'{"now": 1.0, "events": [}\0')
    assert "malformed message from Batsim" in error and "not valid JSON" in error


def test_probe_frame_without_batsims_nul_byte(tmp_path):
    error = probe(tmp_path, INIT, BEGINS, frame(1.0)[:-1])
    assert "does not end with the NUL byte Batsim 5 writes after every message" in error


def test_probe_unknown_event_type(tmp_path):
    error = probe(tmp_path, INIT, BEGINS, frame(1.0, (1.0, "JOB_SUBMITTED", {})))
    assert "event #0 (JOB_SUBMITTED): unknown event type for the events direction (Batsim->EDC); known types: " \
           "SimulationBeginsEvent" in error


def test_probe_second_simulation_begins(tmp_path):
    again = BEGINS.replace(b'"now": 0.000100008', b'"now": 5.0')
    error = probe(tmp_path, INIT, BEGINS, frame(1.0, submitted(1.0)), again)
    assert "broke the protocol" in error and "event #0 (SimulationBeginsEvent): a second SimulationBeginsEvent" in error


def test_probe_event_after_simulation_ends(tmp_path):
    error = probe(tmp_path, INIT, BEGINS, frame(5.0, (5.0, "SimulationEndsEvent", {}), submitted(5.0)))
    assert "event #1 (JobSubmittedEvent): JobSubmittedEvent after SimulationEndsEvent" in error


def test_probe_now_going_backwards(tmp_path):
    error = probe(tmp_path, INIT, BEGINS, frame(10.0), frame(9.0))
    assert "now=9.0 is earlier than the previous message's now=10.0" in error


def test_probe_event_before_the_previous_now(tmp_path):
    error = probe(tmp_path, INIT, BEGINS, frame(10.0), frame(20.0, submitted(5.0)))
    assert "event #0 (JOB_SUBMITTED) has timestamp 5.0, earlier than the previous message's now=10.0" in error


def test_probe_timestamp_after_now_and_unsorted_events(tmp_path):
    error = probe(tmp_path, INIT, BEGINS, frame(1.0, submitted(2.0)))
    assert "event #0 (JobSubmittedEvent): event timestamp 2.0 is later than the message now=1.0" in error
    error = probe(tmp_path, INIT, BEGINS, frame(3.0, submitted(2.0), submitted(1.0, "w0!2")))
    assert "event #1 (JobSubmittedEvent): events are not sorted by timestamp: 1.0 comes after 2.0" in error


def test_probe_first_event_must_be_simulation_begins(tmp_path):
    error = probe(tmp_path, INIT, frame(1.0, submitted(1.0)))
    assert "the first event must be SimulationBeginsEvent, got JobSubmittedEvent" in error


def test_probe_completion_of_a_job_never_started(tmp_path):
    done = (2.0, "JobCompletedEvent", {"job_id": "w0!7", "state": "COMPLETED_SUCCESSFULLY", "return_code": 0})
    error = probe(tmp_path, INIT, BEGINS, frame(2.0, done))
    assert "JobCompletedEvent for w0!7, which batsched-ml never started" in error


def test_probe_call_never_asked_for(tmp_path):
    call = (2.0, "RequestedCallEvent", {"call_me_later_id": "c9", "last_periodic_call": False})
    error = probe(tmp_path, INIT, BEGINS, frame(2.0, call))
    assert "calls back 'c9', which batsched-ml never asked for" in error


def test_probe_bad_members(tmp_path):
    job = submitted(1.0, res=0)
    error = probe(tmp_path, INIT, BEGINS, frame(1.0, job))
    assert "member 'resource_request' must be a positive integer, got 0" in error
    bad_id = submitted(1.0, job_id="17")
    error = probe(tmp_path, INIT, BEGINS, frame(1.0, bad_id))
    assert "member 'job_id' '17' is not a job id 'workload!name'" in error


def test_probe_init_frame_of_the_wrong_length(tmp_path):
    error = probe(tmp_path, b"\x09\x00\x00\x00{}")
    assert "init frame: its length prefix says 9 bytes of init string, the frame holds 2" in error


def test_probe_batsim_lines_that_do_not_match_the_flag(tmp_path):
    error = probe(tmp_path, b'{"now":0.0,"events":[]}')
    assert "is JSON (a Batsim 4.2.1 message), but serve speaks Batsim 5 (--batsim 5)" in error
    error = probe(tmp_path, INIT, batsim="4")
    assert "is a Batsim 5 init frame (u32 length + init string), but serve speaks Batsim 4.2.1" in error


def test_probe_a_second_init_frame(tmp_path):
    error = probe(tmp_path, INIT, BEGINS, INIT)
    assert "malformed message from Batsim" in error


# ------------------------------------------------------------------ our Batsim 5 peer


@pytest.mark.parametrize("name", ["fcfs", "easy", "conservative"])
def test_peer_drives_serve_batsim_5_like_the_in_process_run(tmp_path, name):
    """``simulate --connect --batsim 5`` is the embedded simulator's Batsim 5 line (rc2's timing)
    speaking batprotocol: driving ``serve --batsim 5`` (a JSON scheduler: it reads the 12 decimals
    rc2 prints and echoes them), it writes the jobs file of the in-process ``--batsim 5`` run, byte
    for byte, and not that of Batsim 4.2.1's timing."""
    endpoint = f"ipc://{tmp_path}/s.ipc"
    server = ServerThread(build_scheduler(name), endpoint, timeout=TIMEOUT, batsim="5")
    result = run_connected(*TINY, endpoint, f"{tmp_path}/v5-", timeout=TIMEOUT, batsim=5)
    assert server.join() == 0, server.errors
    simulate(*TINY, build_scheduler(name), prefix=f"{tmp_path}/inproc-", batsim=5)
    connected = (tmp_path / "v5-jobs.csv").read_bytes()
    assert connected == (tmp_path / "inproc-jobs.csv").read_bytes()
    simulate(*TINY, build_scheduler(name), prefix=tmp_path / "v4")
    assert connected != (tmp_path / "v4_jobs.csv").read_bytes()  # rc2's instants are not 4.2.1's
    assert result.messages == server.stats.messages


def test_peer_sends_the_frames_rc2_sent(tmp_path):
    """Driving ``serve --batsim 5`` (fcfs, tiny), the peer sends the messages rc2 sent its own process
    scheduler in JSON mode (``golden-v5/frames``): same events, every date the number rc2 printed."""
    endpoint = f"ipc://{tmp_path}/s.ipc"
    server = ServerThread(build_scheduler("fcfs"), endpoint, timeout=TIMEOUT, batsim="5",
                          log_path=tmp_path / "serve.log")
    run_connected(ROOT / "tests" / "data" / "platform-16.xml", WORKLOADS / "tiny.v5.json", endpoint, None,
                  timeout=TIMEOUT, batsim=5)
    assert server.join() == 0, server.errors
    sent = []
    for line in (tmp_path / "serve.log").read_text().splitlines():
        if line.startswith("BATSIM {"):
            message = json.loads(line[7:])
            sent.append({"now": message["now"], "events": [
                [e["timestamp"], e["event_type"], e["event"].get("job_id", "")] for e in message["events"]]})
    gold = [json.loads(line) for line in (WORKLOADS.parent / "frames" / "ref-process-edc-fcfs-json.frames.jsonl")
            .read_text().splitlines()]
    assert sent == gold


def test_peer_kill_and_requeue_through_batsim_5(tmp_path):
    """A killing, requeueing scheduler: its hello asks for dynamic registration and acknowledgements,
    the peer acknowledges each registered job, serve consumes the acknowledgements; every job ends
    once and every requeued copy completes."""
    endpoint = f"ipc://{tmp_path}/s.ipc"
    scheduler = KillRequeue()
    server = ServerThread(scheduler, endpoint, timeout=TIMEOUT, batsim="5", log_path=tmp_path / "serve.log")
    result = run_connected(*TINY, endpoint, tmp_path / "v5", timeout=TIMEOUT, batsim="5")
    assert server.join() == 0, server.errors
    assert scheduler.requeued and not result.unfinished
    rows = (tmp_path / "v5jobs.csv").read_text().splitlines()[1:]
    ids = [row.split(",")[0] for row in rows]
    assert len(ids) == len(set(ids)) == 60 + len(scheduler.requeued)
    killed = {row.split(",")[0] for row in rows if "COMPLETED_KILLED" in row}
    assert {f"{job}#1" for job in killed} == {job.partition("!")[2] for job in scheduler.requeued}
    log = (tmp_path / "serve.log").read_text()
    acknowledged = [job for job in scheduler.requeued if f'"JobSubmittedEvent","event":{{"job_id":"{job}"' in log]
    assert acknowledged == scheduler.requeued
    assert log.count("FinishRegistrationEvent") == 1


def test_peer_writes_every_member_rc2_writes(tmp_path):
    """The peer's events have the members of rc2's (recorded, same workload) and serve reads them."""
    recorded = {}
    for sent, _ in frames("ref-process-edc-fcfs-json")[1:]:
        for event in json.loads(sent.rstrip(b"\0"))["events"]:
            recorded.setdefault(event["event_type"], set(event["event"]))
    session = BatsimSession(b"{}")
    session.read_hello(hello_frame(EDCHello("x", "1", "", features_for(False))))
    written = {}
    endpoint = f"ipc://{tmp_path}/s.ipc"
    server = ServerThread(build_scheduler("fcfs"), endpoint, timeout=TIMEOUT, batsim="5",
                          log_path=tmp_path / "serve.log")
    run_connected(*TINY, endpoint, None, timeout=TIMEOUT, batsim="5")
    assert server.join() == 0, server.errors
    for line in (tmp_path / "serve.log").read_text().splitlines()[2:]:
        if line.startswith("BATSIM "):
            for event in json.loads(line[7:])["events"]:
                written.setdefault(event["event_type"], set(event["event"]))
    assert set(written) == set(recorded)
    for etype, members in recorded.items():
        assert written[etype] == members, etype
    assert session.features == features_for(False)


def test_peer_reads_what_rc2s_process_scheduler_answers():
    """Every reply of rc2's own C++ process scheduler reads as typed decisions (as rc2 reads them)."""
    session = BatsimSession(b'{"format_json": true}')
    (init, hello), *exchange = frames("ref-process-edc-fcfs-json")
    assert session.read_hello(hello).decision_component_name == "fcfs"
    started = sum(len([d for d in session.decode(reply).events if d.type == "EXECUTE_JOB"]) for _, reply in exchange)
    assert started == 60


def test_peer_reads_replies_by_rc2s_rule():
    """rc2's reader (src/protocol.cpp, ``parse_batprotocol_message``) never compares a reply's ``now``
    with its message's, and wants each decision at most the reply's ``now`` and at least the FIRST
    decision's date: so does our peer, and the simulator's Batsim 5 line takes such a reply."""
    from batsched_ml.simulator.checks import SimulationError, check_reply

    peer = BatsimSession()
    peer.read_hello(hello_frame(EDCHello("x", "1", "", features_for(False))))

    def reject(ts, job_id):
        return (ts, "RejectJobEvent", {"job_id": job_id})

    early = peer.decode(frame(4.999999999999, reject(4.999999999999, "w0!1"))[:-1])  # a sliver before 5.0
    check_reply(5.0, early.now, early.events, past_allowed=True)
    with pytest.raises(SimulationError, match="now=4.999999999999 < 5.0"):
        check_reply(5.0, early.now, early.events)  # Batsim 4.2.1 aborts
    unsorted = peer.decode(frame(7.0, reject(5.0, "w0!1"), reject(7.0, "w0!2"), reject(6.0, "w0!3")))
    assert [d.timestamp for d in unsorted.events] == [5.0, 7.0, 6.0]
    check_reply(5.0, unsorted.now, unsorted.events, past_allowed=True)
    with pytest.raises(ProtocolError, match="before the first event's 6.0"):
        peer.decode(frame(7.0, reject(6.0, "w0!1"), reject(5.0, "w0!2")))
    with pytest.raises(ProtocolError, match="later than the message now"):
        peer.decode(frame(7.0, reject(8.0, "w0!1")))


def test_a_call_read_back_is_asked_again_for_the_same_millisecond():
    """``at_of_call`` then ``call_time`` keeps the millisecond: 4270764.002 * 1000 is 4270764002.0000005
    in doubles, and rounding it up again would make our peer fire a kill of the recommended
    classification (KTH-5k, job 3622) 1 ms after the in-process run and rc2."""
    from batsched_ml.protocol.v5.forms import MILLISECOND, at_of_call, call_time
    from batsched_ml.simulator.lines import BATSIM_5

    assert 4270764.002 * 1000 > 4270764002
    assert call_time(at_of_call(4270764002, MILLISECOND)) == (4270764002, MILLISECOND)
    assert BATSIM_5.call_date(at_of_call(4270764002, MILLISECOND)) == 4270764.002
    assert call_time(4270764.0017) == (4270764002, MILLISECOND)  # a date between two: rounded up


def test_session_encodes_our_decisions_as_rc2_reads_them():
    """serve's replies read back through the peer's reader: same decisions (ids, dates, profiles)."""
    from batsched_ml.protocol import events as ev
    from batsched_ml.protocol.coreset import CoreSet

    edc = EDCSession(EDCHello("batsched-ml", "0", "", features_for(True)))
    edc.handshake(INIT)
    decisions = [ev.ExecuteJob(1.0, "w0!1", CoreSet(0b1101)), ev.ExecuteJob(1.0, "w0!2", CoreSet(0b10000),
                                                                             {"0": 0}),
                 ev.CallMeLater(1.0, 5.0), ev.CallMeLater(1.0, 7.0000101),
                 ev.RegisterProfile(1.0, "w0", "p#1", {"type": "delay", "delay": 10.0}),
                 ev.RegisterJob(1.0, "w0!3#1", {"id": "w0!3#1", "subtime": 1.0, "walltime": 100.0, "res": 1,
                                                "profile": "p#1"}),
                 ev.KillJob(1.0, ["w0!1"]), ev.RejectJob(1.0, "w0!4"), ev.Notify(1.0, ev.REGISTRATION_FINISHED)]
    raw = edc.encode(ev.Message(1.0, decisions))
    peer = BatsimSession()
    peer.read_hello(hello_frame(edc.hello))
    back = peer.decode(raw).events
    assert [d.type for d in back] == [d.type for d in decisions]
    assert back[0].alloc == CoreSet(0b1101) and back[1].mapping == {"0": 0}
    assert back[2].at == 5.0 and back[3].at == 7.001  # whole seconds, else milliseconds rounded up
    assert back[4].profile == {"type": "delay", "delay": 10.0} and back[5].job["profile"] == "p#1"
    assert edc.allocations == {"w0!1": ("0 2-3", 0b1101), "w0!2": ("4", 0b10000)}
    assert edc.calls == {"c1": 5.0, "c2": 7.0000101} and list(edc.unacknowledged) == ["w0!3#1"]
    with pytest.raises(ProtocolError, match="SET_JOB_METADATA has no Batsim 5 form"):
        edc.encode(ev.Message(1.0, [ev.SetJobMetadata(1.0, "w0!1", "x")]))


# ------------------------------------------------------------------ deployment


def test_batsim5_deployment_runs_batsims_own_flake_at_rc2():
    """docker-compose's ``batsim5`` service (profile ``batsim5``) and ``nix/batsim5.nix`` build Batsim
    5.0.0-rc2 from Batsim's flake at ba7ea85f and connect it to the same ``scheduler`` service."""
    import re
    import shutil

    yaml = pytest.importorskip("yaml")
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    batsim5 = services["batsim5"]
    assert batsim5["profiles"] == ["batsim5"] and "scheduler" in batsim5["depends_on"]
    script = batsim5["command"][-1].replace("$$", "$")
    assert "nix-build --no-out-link /data/nix/batsim5.nix -A batsim" in script and "flakes" in script
    assert "--edc-socket-str tcp://scheduler:28000 '{}'" in script and '"DelayProfile"' in script
    assert script.rstrip().splitlines()[-1].strip() == "exit $status"
    assert "--batsim" not in " ".join(services["scheduler"]["command"])  # serve recognises either Batsim
    nix = (ROOT / "nix" / "batsim5.nix").read_text()
    assert re.search(r'rev = "ba7ea85fa20e81415e2f52290b56120192504553"', nix)
    assert "github:oar-team/batsim/${rev}" in nix
    exe = shutil.which("nix-instantiate")
    if exe is not None:
        done = subprocess.run([exe, "--parse", str(ROOT / "nix" / "batsim5.nix")], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr


def test_extra_data_members_become_the_jobs_fields():
    """Batsim 5 forwards a workload job's ``extra_data`` (an object becomes its JSON text, as rc2 wrote
    ``"{\\"user\\":12}"`` here): its members are the job's fields, as a 4.2.1 workload's ``user`` was, so
    the classifiers and user-based predictors read ``job.data["user"]`` under both Batsim lines."""
    session = EDCSession(EDCHello("batsched-ml", "0", "", features_for(False)))
    session.handshake(INIT)
    session.decode(BEGINS)
    job = submitted(1.0)
    job[2]["job"]["extra_data"] = '{"user":12,"res":99}'
    other = submitted(1.0, job_id="w0!2")
    other[2]["job"]["extra_data"] = "queue=long"
    message = session.decode(frame(1.0, job, other))
    first, second = (event.job for event in message.events)
    assert first["user"] == 12 and first["res"] == 2  # the protocol's own members win
    assert first["subtime"] == 1.0 and first["walltime"] == 100.0 and first["profile"] == "d1"
    assert second["extra_data"] == "queue=long" and "user" not in second
