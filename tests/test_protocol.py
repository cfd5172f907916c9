"""The protocol layer: JSON codec on real Batsim 4.2.1 transcripts, validation, CoreSet."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from procset import ProcSet

from conftest import shared_dir  # tests/ is on sys.path (pytest's rootdir conftest)
from batsched_ml.protocol import codec
from batsched_ml.protocol import decoding as protocol_decode
from batsched_ml.protocol import encoding as protocol_encode
from batsched_ml.protocol.codec import ProtocolError, decode, encode, parse_alloc, read_transcript
from batsched_ml.protocol import coreset
from batsched_ml.protocol.coreset import WIDE_MASK, CoreSet, format_mask, lowest_bits, mask_intervals
from batsched_ml.protocol.events import (
    CallMeLater,
    ExecuteJob,
    JobCompleted,
    JobKilled,
    JobSubmitted,
    KillJob,
    Message,
    Notify,
    OtherEvent,
    RegisterJob,
    RegisterProfile,
    RejectJob,
    RequestedCall,
    SetJobMetadata,
    SimulationBegins,
    SimulationEnds,
)

TRANSCRIPT_NAMES = ("kill-requeue.log", "tiny-easy_bf.log")


def _transcript_dir() -> Path | None:
    """The bundled copies first (offline), then the team's shared golden directory."""
    candidates = [Path(__file__).resolve().parent / "data" / "transcripts"]
    if shared_dir() is not None:
        candidates.append(shared_dir() / "golden" / "transcripts")
    for folder in candidates:
        if all((folder / name).is_file() for name in TRANSCRIPT_NAMES):
            return folder
    return None


TRANSCRIPTS = _transcript_dir()
needs_transcripts = pytest.mark.skipif(TRANSCRIPTS is None, reason="golden transcripts not found")


def _lines(name: str) -> list[tuple[str, str]]:
    out = []
    for line in (TRANSCRIPTS / name).read_text(encoding="utf-8").splitlines():
        tag, _, body = line.partition(" ")
        out.append((tag, body.strip()))
    return out


def _direction(tag: str) -> str:
    return codec.TRANSCRIPT_TAGS[tag]


def _msg(events, now=10.0) -> str:
    return json.dumps({"now": now, "events": events})


def _ev(etype, data, ts=10.0) -> dict:
    return {"timestamp": ts, "type": etype, "data": data}


def _job(job_id="w0!1", **changes) -> dict:
    job = {"id": job_id, "subtime": 1.0, "walltime": 100.0, "res": 2, "profile": "d10"}
    job.update(changes)
    return {key: value for key, value in job.items() if value is not None}


# ------------------------------------------------------------------- transcripts


@needs_transcripts
@pytest.mark.parametrize("name", TRANSCRIPT_NAMES)
def test_every_transcript_line_decodes(name):
    lines = _lines(name)
    decoded = read_transcript(TRANSCRIPTS / name)
    assert len(decoded) == len(lines)
    # Strict alternation: Batsim speaks, the scheduler answers, ending with the answer to SIMULATION_ENDS.
    assert [tag for tag, _ in decoded] == ["BATSIM", "SCHED"] * (len(lines) // 2)
    assert isinstance(decoded[0][1].events[0], SimulationBegins)
    assert isinstance(decoded[-2][1].events[-1], SimulationEnds)
    assert decoded[-1][1].events == []
    for (tag, body), (_, message) in zip(lines, decoded):
        assert message.now == json.loads(body)["now"]
        assert len(message.events) == len(json.loads(body)["events"])


@needs_transcripts
def test_tiny_transcript_event_counts():
    counts = Counter(type(ev).__name__ for _, message in read_transcript(TRANSCRIPTS / "tiny-easy_bf.log")
                     for ev in message.events)
    assert counts == Counter(JobSubmitted=60, ExecuteJob=60, JobCompleted=60, SimulationBegins=1,
                             Notify=1, SimulationEnds=1)


@needs_transcripts
@pytest.mark.parametrize("name", TRANSCRIPT_NAMES)
def test_transcript_round_trip(name):
    for tag, body in _lines(name):
        message = decode(body, direction=_direction(tag))
        wire = encode(message)
        assert isinstance(wire, bytes)
        assert decode(wire, direction=_direction(tag)) == message
        # Nothing is lost or reordered: the encoding is the compact form of the original.
        assert wire.decode("utf-8") == json.dumps(json.loads(body), separators=(",", ":"), ensure_ascii=False)
        assert encode(decode(wire, direction=_direction(tag))) == wire  # deterministic


@needs_transcripts
def test_encoding_matches_batsched_bytes():
    """batsched (rapidjson, compact) wrote the SCHED lines of the tiny transcript: same bytes."""
    sched = [body for tag, body in _lines("tiny-easy_bf.log") if tag == "SCHED"]
    assert len(sched) == 122
    for body in sched:
        assert encode(decode(body, direction="decisions")) == body.encode("utf-8")


@needs_transcripts
def test_json_backends_agree(monkeypatch):
    """orjson (when installed) and the standard library must give the same typed messages."""
    for name in TRANSCRIPT_NAMES:
        default = read_transcript(TRANSCRIPTS / name)
        monkeypatch.setattr(protocol_decode, "_fast_loads", None)
        stdlib = read_transcript(TRANSCRIPTS / name)
        monkeypatch.undo()
        assert default == stdlib


@needs_transcripts
def test_kill_requeue_facts():
    messages = read_transcript(TRANSCRIPTS / "kill-requeue.log")
    # JOB_COMPLETED(COMPLETED_KILLED) then JOB_KILLED in the same Batsim message.
    both = [m for tag, m in messages if tag == "BATSIM" and any(isinstance(e, JobKilled) for e in m.events)]
    assert len(both) == 1
    completed, killed = both[0].events
    assert completed == JobCompleted(5.000105, "w0!0", "COMPLETED_KILLED", -1, "0")
    assert killed.job_ids == ["w0!0"]
    assert killed.job_progress == {"w0!0": {"profile_name": "p0", "progress": 0.500001}}

    requeue = next(m for tag, m in messages if tag == "SCHED" and any(isinstance(e, RegisterJob) for e in m.events))
    profile, job, execute = requeue.events
    assert profile == RegisterProfile(5.000105, "w0", "p0#1", {"type": "delay", "delay": 10})
    assert job == RegisterJob(5.000105, "w0!0#1", {"id": "w0!0#1", "subtime": 5.000105, "walltime": 100,
                                                    "res": 1, "profile": "p0#1"})
    assert execute == ExecuteJob(5.000105, "w0!0#1", CoreSet.from_ids([0]))

    first_reply = messages[3][1]
    assert first_reply.events[1] == CallMeLater(4.5e-05, 5.000045)
    kill = next(e for _, m in messages for e in m.events if isinstance(e, KillJob))
    assert kill.job_ids == ["w0!0"]

    tag, last_decision = messages[-3]
    assert tag == "SCHED"
    assert last_decision.events == [Notify(15.002105, "registration_finished")]

    begins = messages[0][1].events[0]
    assert begins.dynamic_jobs_enabled
    assert begins.nb_resources == 4 and begins.nb_compute_resources == 4
    assert begins.extra == {"nb_storage_resources": 0, "allow_storage_sharing": True, "storage_resources": []}
    assert begins.profiles["w0"]["p0"] == {"type": "delay", "delay": 10}


@needs_transcripts
def test_job_submitted_keeps_workload_fields():
    messages = read_transcript(TRANSCRIPTS / "tiny-easy_bf.log")
    first = messages[2][1].events[0]
    assert first == JobSubmitted(0.0003, "w0!15", {"id": "w0!15", "subtime": 0.0, "walltime": 53940.0, "res": 4,
                                                   "profile": "d3477", "user": 12})
    assert messages[3][1].events == [ExecuteJob(0.0003, "w0!15", CoreSet.from_ids(range(4)))]


# --------------------------------------------------------------- decode / encode


def test_execute_job_alloc_round_trip():
    raw = _msg([_ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "1-2"})])
    message = decode(raw, direction="decisions")
    (execute,) = message.events
    assert execute.alloc == CoreSet(0b110)
    assert list(execute.alloc) == [1, 2]
    assert execute.mapping is None
    assert json.loads(encode(message))["events"][0]["data"] == {"job_id": "w0!1", "alloc": "1-2"}


def test_encode_decisions_wire_form():
    message = Message(12.5, [
        ExecuteJob(12.5, "w0!1", CoreSet.from_ids([0, 1, 2, 3, 5, 7, 8, 9])),
        ExecuteJob(12.5, "w0!2", CoreSet.from_ids([4, 6]), mapping={"0": "0", "1": "1"}),
        RejectJob(12.5, "w0!3", reason="asks 200 cores on a 16-core machine"),
        KillJob(12.5, ["w0!4", "w0!5"]),
        SetJobMetadata(12.5, "w0!1", "small"),
        CallMeLater(12.5, 60.0),
    ])
    wire = encode(message)
    assert wire == (
        b'{"now":12.5,"events":['
        b'{"timestamp":12.5,"type":"EXECUTE_JOB","data":{"job_id":"w0!1","alloc":"0-3 5 7-9"}},'
        b'{"timestamp":12.5,"type":"EXECUTE_JOB","data":{"job_id":"w0!2","alloc":"4 6","mapping":{"0":"0","1":"1"}}},'
        b'{"timestamp":12.5,"type":"REJECT_JOB","data":{"job_id":"w0!3"}},'
        b'{"timestamp":12.5,"type":"KILL_JOB","data":{"job_ids":["w0!4","w0!5"]}},'
        b'{"timestamp":12.5,"type":"SET_JOB_METADATA","data":{"job_id":"w0!1","metadata":"small"}},'
        b'{"timestamp":12.5,"type":"CALL_ME_LATER","data":{"timestamp":60.0}}]}'
    )
    back = decode(wire, direction="decisions")
    assert back.events[2] == RejectJob(12.5, "w0!3")  # the reason stays local
    assert back.events[:2] + back.events[3:] == message.events[:2] + message.events[3:]


def test_encode_events_round_trip():
    message = Message(30.0, [
        JobSubmitted(20.0, "w0!7", _job("w0!7", user=3), profile={"type": "delay", "delay": 5}),
        JobCompleted(21.0, "w0!6", "COMPLETED_WALLTIME_REACHED", -1, "0-3"),
        JobKilled(22.0, ["w0!8", "w0!9"], {"w0!8": {"profile_name": "p", "progress": 0.25}}),
        RequestedCall(23.0),
        Notify(24.0, "event_machine_unavailable", "2-3"),
        Notify(24.0, "some_future_kind"),
        OtherEvent(25.0, "RESOURCE_STATE_CHANGED", {"resources": "1 2", "state": "42"}),
        SimulationEnds(30.0),
    ])
    wire = encode(message)
    assert decode(wire) == message
    assert b'"data":{"job_id":"w0!7","job":{"id":"w0!7","subtime":1.0,"walltime":100.0,"res":2,' in wire
    assert b'"profile":{"type":"delay","delay":5}}' in wire


def test_decode_accepts_bytes_str_memoryview_and_int_times():
    raw = '{"now": 5, "events": [{"timestamp": 5, "type": "REQUESTED_CALL", "data": {}}]}'
    expected = Message(5.0, [RequestedCall(5.0)])
    for form in (raw, raw.encode(), bytearray(raw.encode()), memoryview(raw.encode())):
        message = decode(form)
        assert message == expected
        assert type(message.now) is float and type(message.events[0].timestamp) is float


def test_unknown_notify_kind_is_kept():
    for direction in ("events", "decisions"):
        (notify,) = decode(_msg([_ev("NOTIFY", {"type": "brand_new_kind"})]), direction=direction).events
        assert notify == Notify(10.0, "brand_new_kind")


def test_other_events_keep_their_data():
    data = {"job_id": "w0!1", "msg": {"hello": 1}}
    (event,) = decode(_msg([_ev("FROM_JOB_MSG", data)])).events
    assert event == OtherEvent(10.0, "FROM_JOB_MSG", data)


def test_simulation_begins_extra_members_are_kept_in_batsim_order():
    data = {"nb_resources": 3, "nb_compute_resources": 2, "nb_storage_resources": 1, "allow_compute_sharing": False,
            "allow_storage_sharing": True, "config": {"dynamic-jobs-enabled": False},
            "compute_resources": [{"id": 0}, {"id": 1}], "storage_resources": [{"id": 2}],
            "workloads": {"w0": "x.json"}, "profiles": {"w0": {}}, "future_member": [1]}
    (begins,) = decode(_msg([_ev("SIMULATION_BEGINS", data, ts=0.0)], now=0.0)).events
    assert begins.extra == {"nb_storage_resources": 1, "allow_storage_sharing": True, "storage_resources": [{"id": 2}],
                            "future_member": [1]}
    assert not begins.dynamic_jobs_enabled
    assert list(json.loads(encode(Message(0.0, [begins])))["events"][0]["data"]) == list(data)


def test_execute_job_with_mapping_decodes():
    raw = _msg([_ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "4-5", "mapping": {"0": "0", "1": 1, "2": "1"}})])
    (execute,) = decode(raw, direction="decisions").events
    assert execute.mapping == {"0": "0", "1": 1, "2": "1"}
    assert execute.alloc == CoreSet.from_ids([4, 5])


def test_register_job_with_bare_id_is_accepted():
    raw = _msg([_ev("REGISTER_JOB", {"job_id": "w0!3#1", "job": _job("3#1")})])
    (job,) = decode(raw, direction="decisions").events
    assert job.job_id == "w0!3#1" and job.job["id"] == "3#1"


def test_encode_rejects_what_has_no_wire_form():
    with pytest.raises(ProtocolError, match=r"EXECUTE_JOB of 'w0!1': the allocation is empty"):
        encode(Message(1.0, [ExecuteJob(1.0, "w0!1", CoreSet())]))
    with pytest.raises(ProtocolError, match=r"alloc must be a CoreSet.*got 6"):
        encode(Message(1.0, [ExecuteJob(1.0, "w0!1", 6)]))
    with pytest.raises(ProtocolError, match=r"cannot encode .*not a protocol event"):
        encode(Message(1.0, [{"type": "EXECUTE_JOB"}]))
    with pytest.raises(ProtocolError, match=r"cannot encode message at now=nan"):
        encode(Message(float("nan"), []))
    with pytest.raises(ProtocolError, match=r"set value .* cannot be written as JSON"):
        encode(Message(1.0, [SetJobMetadata(1.0, "w0!1", {"a"})]))


def test_encode_writes_utf8():
    wire = encode(Message(1.0, [SetJobMetadata(1.0, "w0!1", "été")]))
    assert "été".encode("utf-8") in wire
    assert decode(wire, direction="decisions").events[0].metadata == "été"


def test_parse_alloc():
    assert parse_alloc("0-3 5 7-9") == CoreSet.from_ids([0, 1, 2, 3, 5, 7, 8, 9])
    assert parse_alloc("7 0-1 1-2") == CoreSet.from_ids([0, 1, 2, 7])  # Batsim accepts unsorted, overlapping
    for bad in ("", "0-", "-1", "3-1", "0  1", " 0", "1,2", "a", "0-3-5", "²", f"0-{codec.MAX_CORE_ID + 1}"):
        with pytest.raises(ValueError):
            parse_alloc(bad)


# -------------------------------------------------------------------- validation

_LONG = "x" * 500

INVALID = [
    # (raw, direction, substrings of the error, event index, event type)
    (b'{"now": 1.0, "events": [', "events", ["not valid JSON", "line 1 column", '{"now": 1.0'], None, None),
    (b'{"now": 1.0, "events": [], "x": "\xff"}', "events", ["not valid UTF-8", "0xff", "offset 33"], None, None),
    ("[1, 2]", "events", ["not a JSON object", "list", "[1, 2]"], None, None),
    ('{"now": NaN, "events": []}', "events", ["NaN is not valid JSON"], None, None),
    ('{"events": []}', "events", ["no 'now' member", '{"events": []}'], None, None),
    ('{"now": 1.0}', "decisions", ["no 'events' member"], None, None),
    ('{"now": "1.0", "events": []}', "events", ["'now' must be a finite number", "'1.0'"], None, None),
    ('{"now": true, "events": []}', "events", ["'now' must be a finite number"], None, None),
    ('{"now": 1.0, "events": {}}', "events", ["'events' must be an array"], None, None),
    (_msg([[1]]), "events", ["event #0 (?)", "must be a JSON object"], 0, None),
    (_msg([{"timestamp": 1.0, "data": {}}]), "events", ["missing event member 'type'"], 0, None),
    (_msg([{"type": "REQUESTED_CALL", "data": {}}]), "events", ["missing event member 'timestamp'"], 0,
     "REQUESTED_CALL"),
    (_msg([{"timestamp": "1", "type": "REQUESTED_CALL", "data": {}}]), "events",
     ["'timestamp' must be a finite number"], 0, "REQUESTED_CALL"),
    (_msg([{"timestamp": 1.0, "type": "REQUESTED_CALL"}]), "events", ["missing event member 'data'"], 0,
     "REQUESTED_CALL"),
    (_msg([_ev("REQUESTED_CALL", [])]), "events", ["'data' must be an object"], 0, "REQUESTED_CALL"),
    # Unknown types, per direction.
    (_msg([_ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"})]), "events",
     ["event #0 (EXECUTE_JOB)", "unknown event type for the events direction", "Batsim->scheduler"], 0,
     "EXECUTE_JOB"),
    (_msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": _job()})]), "decisions",
     ["unknown event type for the decisions direction", "scheduler->Batsim"], 0, "JOB_SUBMITTED"),
    (_msg([_ev("SET_RESOURCE_STATE", {"resources": "0", "state": "1"})]), "decisions",
     ["unknown event type"], 0, "SET_RESOURCE_STATE"),
    # Timestamps.
    (_msg([_ev("REQUESTED_CALL", {}, ts=10.5)]), "events", ["event #0 (REQUESTED_CALL)",
                                                             "timestamp 10.5 is later than the message now=10.0"],
     0, "REQUESTED_CALL"),
    (_msg([_ev("REQUESTED_CALL", {}, ts=5.0), _ev("SIMULATION_ENDS", {}, ts=4.0)]), "events",
     ["event #1 (SIMULATION_ENDS)", "not sorted by timestamp", "4.0 comes after 5.0"], 1, "SIMULATION_ENDS"),
    # JOB_SUBMITTED data.
    (_msg([_ev("JOB_SUBMITTED", {"job": _job()})]), "events",
     ["event #0 (JOB_SUBMITTED)", "missing data member 'job_id'", '"type":"JOB_SUBMITTED"'], 0, "JOB_SUBMITTED"),
    (_msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1"})]), "events", ["missing data member 'job'"], 0,
     "JOB_SUBMITTED"),
    (_msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": _job(res=0)})]), "events",
     ["'res' must be a positive integer, got 0"], 0, "JOB_SUBMITTED"),
    (_msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": _job(res="4")})]), "events",
     ["'res' must be a positive integer, got '4'"], 0, "JOB_SUBMITTED"),
    (_msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": _job(res=2.0)})]), "events",
     ["'res' must be a positive integer, got 2.0"], 0, "JOB_SUBMITTED"),
    (_msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": _job(res=None)})]), "events",
     ["job description: missing 'res'"], 0, "JOB_SUBMITTED"),
    (_msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": _job(walltime=0)})]), "events",
     ["job description: 'walltime' is 0: it must be -1 (no walltime) or a strictly positive number"], 0, "JOB_SUBMITTED"),
    (_msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": _job(profile=None)})]), "events",
     ["job description: missing 'profile'"], 0, "JOB_SUBMITTED"),
    (_msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": _job("w0!2")})]), "events",
     ["job member 'id' 'w0!2' does not match data member 'job_id' 'w0!1'"], 0, "JOB_SUBMITTED"),
    (_msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": _job(), "profile": "d10"})]), "events",
     ["data member 'profile' must be an object"], 0, "JOB_SUBMITTED"),
    # Job ids.
    (_msg([_ev("JOB_SUBMITTED", {"job_id": "17", "job": _job("17")})]), "events",
     ["'17' is not a job id", "exactly one '!'"], 0, "JOB_SUBMITTED"),
    (_msg([_ev("REJECT_JOB", {"job_id": "w0!1!2"})]), "decisions", ["'w0!1!2' is not a job id"], 0, "REJECT_JOB"),
    (_msg([_ev("REJECT_JOB", {"job_id": "!1"})]), "decisions", ["'!1' is not a job id"], 0, "REJECT_JOB"),
    (_msg([_ev("KILL_JOB", {"job_ids": ["w0!1", "w1"]})]), "decisions",
     ["an element of 'job_ids' 'w1' is not a job id"], 0, "KILL_JOB"),
    (_msg([_ev("REJECT_JOB", {"job_id": 17})]), "decisions", ["'job_id' must be a string 'workload!name', got 17"],
     0, "REJECT_JOB"),
    # Other Batsim -> scheduler data.
    (_msg([_ev("JOB_COMPLETED", {"job_id": "w0!1", "job_state": "DONE", "return_code": 0, "alloc": "0"})]),
     "events", ["'job_state' must be one of", "got 'DONE'"], 0, "JOB_COMPLETED"),
    (_msg([_ev("JOB_COMPLETED", {"job_id": "w0!1", "job_state": "COMPLETED_FAILED", "return_code": 1,
                                 "alloc": "2-"})]), "events", ["'alloc'", "malformed allocation '2-'"], 0,
     "JOB_COMPLETED"),
    (_msg([_ev("JOB_KILLED", {"job_ids": [], "job_progress": {}})]), "events",
     ["'job_ids' must be a non-empty array"], 0, "JOB_KILLED"),
    (_msg([_ev("JOB_KILLED", {"job_ids": ["w0!1"], "job_progress": {"w0!2": {"progress": 0.5}}})]), "events",
     ["job_progress has an entry for 'w0!2', which is not in job_ids"], 0, "JOB_KILLED"),
    (_msg([_ev("NOTIFY", {"type": "event_machine_unavailable"})]), "events",
     ["NOTIFY event_machine_unavailable needs a 'resources' member"], 0, "NOTIFY"),
    (_msg([_ev("NOTIFY", {"kind": "x"})]), "events", ["missing data member 'type'"], 0, "NOTIFY"),
    (_msg([_ev("SIMULATION_BEGINS", {"nb_resources": 0, "nb_compute_resources": 0})]), "events",
     ["'nb_resources' must be a positive integer, got 0"], 0, "SIMULATION_BEGINS"),
    (_msg([_ev("SIMULATION_BEGINS", {"nb_resources": 2, "nb_compute_resources": 2, "config": []})]), "events",
     ["'config' must be a dict"], 0, "SIMULATION_BEGINS"),
    (_msg([_ev("SIMULATION_BEGINS", {"nb_resources": 2, "nb_compute_resources": 2, "compute_resources": [{}]})]),
     "events", ["compute_resources lists 1 machines, nb_compute_resources says 2"], 0, "SIMULATION_BEGINS"),
    # Allocations.
    (_msg([_ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0-"})]), "decisions",
     ["event #0 (EXECUTE_JOB)", "malformed allocation '0-'", "token '0-'"], 0, "EXECUTE_JOB"),
    (_msg([_ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "3-1"})]), "decisions", ["range '3-1' is reversed"],
     0, "EXECUTE_JOB"),
    (_msg([_ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0,1"})]), "decisions", ["token '0,1'"], 0,
     "EXECUTE_JOB"),
    (_msg([_ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": ""})]), "decisions", ["the allocation is empty"], 0,
     "EXECUTE_JOB"),
    (_msg([_ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": [0, 1]})]), "decisions",
     ["allocation must be a string"], 0, "EXECUTE_JOB"),
    # Member counts that Batsim enforces on decisions.
    (_msg([_ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0", "walltime": 5})]), "decisions",
     ["may only have 'job_id', 'alloc' and an optional 'mapping'", "'walltime'"], 0, "EXECUTE_JOB"),
    (_msg([_ev("EXECUTE_JOB", {"job_id": "w0!1"})]), "decisions", ["missing data member 'alloc'"], 0,
     "EXECUTE_JOB"),
    (_msg([_ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0-1", "mapping": {"0": "2"}})]), "decisions",
     ["executor 0 to resource #2", "only 2 resources"], 0, "EXECUTE_JOB"),
    (_msg([_ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0-1", "mapping": {"1": "0"}})]), "decisions",
     ["mapping executors must be 0..0"], 0, "EXECUTE_JOB"),
    (_msg([_ev("REJECT_JOB", {"job_id": "w0!1", "reason": "too big"})]), "decisions",
     ["event #0 (REJECT_JOB)", "only 'job_id'", "'reason'"], 0, "REJECT_JOB"),
    (_msg([_ev("REJECT_JOB", {})]), "decisions", ["missing data member 'job_id'"], 0, "REJECT_JOB"),
    (_msg([_ev("KILL_JOB", {"job_ids": ["w0!1"], "job_id": "w0!1"})]), "decisions",
     ["only 'job_ids'", "'job_id'"], 0, "KILL_JOB"),
    (_msg([_ev("KILL_JOB", {"job_ids": []})]), "decisions", ["non-empty array"], 0, "KILL_JOB"),
    (_msg([_ev("CALL_ME_LATER", {"timestamp": 20.0, "at": 20.0})]), "decisions",
     ["only 'timestamp'", "'at'"], 0, "CALL_ME_LATER"),
    (_msg([_ev("CALL_ME_LATER", {"timestamp": "20"})]), "decisions", ["'timestamp' must be a number"], 0,
     "CALL_ME_LATER"),
    (_msg([_ev("CALL_ME_LATER", {"timestamp": 10.0})]), "decisions",
     ["asks to be called at 10.0", "not strictly later than now=10.0", "Batsim aborts"], 0, "CALL_ME_LATER"),
    (_msg([_ev("CALL_ME_LATER", {"timestamp": 3.0}, ts=2.0)]), "decisions", ["not strictly later"], 0,
     "CALL_ME_LATER"),
    (_msg([_ev("SET_JOB_METADATA", {"job_id": "w0!1", "metadata": 'say "hi"'})]), "decisions",
     ["must not contain double quotes"], 0, "SET_JOB_METADATA"),
    (_msg([_ev("SET_JOB_METADATA", {"job_id": "w0!1"})]), "decisions", ["missing data member 'metadata'"], 0,
     "SET_JOB_METADATA"),
    (_msg([_ev("REGISTER_JOB", {"job_id": "w0!1#1", "job": _job("w0!1#1", subtime=None)})]), "decisions",
     ["job description: missing 'subtime'"], 0, "REGISTER_JOB"),
    (_msg([_ev("REGISTER_PROFILE", {"workload_name": "w0", "profile_name": "p#1"})]), "decisions",
     ["missing data member 'profile'"], 0, "REGISTER_PROFILE"),
    (_msg([_ev("REGISTER_PROFILE", {"workload_name": "w0", "profile_name": "p#1", "profile": {"delay": 1}})]),
     "decisions", ["profile 'p#1': missing 'type'"], 0, "REGISTER_PROFILE"),
    (_msg([_ev("NOTIFY", {"type": 3})]), "decisions", ["'type' must be a string, got 3"], 0, "NOTIFY"),
]


@pytest.mark.parametrize(("raw", "direction", "expected", "index", "event_type"), INVALID,
                         ids=[f"{i}-{case[-1] or 'envelope'}" for i, case in enumerate(INVALID)])
def test_invalid_messages_are_reported(raw, direction, expected, index, event_type):
    with pytest.raises(ProtocolError) as caught:
        decode(raw, direction=direction)
    text = str(caught.value)
    for part in expected:
        assert part in text, f"{part!r} not in {text!r}"
    assert caught.value.index == index
    assert caught.value.event_type == event_type
    if index is not None:
        assert f"event #{index} (" in text
        head = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
        assert f"message: {head[:60]}" in text  # an excerpt of the raw message


def test_valid_messages_next_to_the_invalid_ones_decode():
    """The invalid cases above differ from these accepted messages only by the defect."""
    (submitted,) = decode(_msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": _job(walltime=-1)})])).events
    assert submitted.job["walltime"] == -1
    (submitted,) = decode(_msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": _job(walltime=None)})])).events
    assert "walltime" not in submitted.job and submitted.profile is None
    (call,) = decode(_msg([_ev("CALL_ME_LATER", {"timestamp": 10.000001})]), direction="decisions").events
    assert call == CallMeLater(10.0, 10.000001)
    same_time = decode(_msg([_ev("REQUESTED_CALL", {}, ts=10.0), _ev("SIMULATION_ENDS", {}, ts=10.0)]))
    assert same_time.events == [RequestedCall(10.0), SimulationEnds(10.0)]
    (killed,) = decode(_msg([_ev("JOB_KILLED", {"job_ids": ["w0!1"]})])).events  # ended before the kill
    assert killed == JobKilled(10.0, ["w0!1"], {})
    (notify,) = decode(_msg([_ev("NOTIFY", {"type": "event_machine_available", "resources": "0-1"})])).events
    assert notify == Notify(10.0, "event_machine_available", "0-1")


def test_long_messages_are_excerpted():
    raw = _msg([_ev("JOB_SUBMITTED", {"job_id": "w0!1", "job": _job(res=0, comment=_LONG)})])
    with pytest.raises(ProtocolError) as caught:
        decode(raw)
    text = str(caught.value)
    assert f"({len(raw)} chars)" in text
    assert len(text) < 600


def test_bad_direction_and_input_type():
    with pytest.raises(ValueError, match="direction must be 'events' or 'decisions'"):
        decode("{}", direction="sideways")
    with pytest.raises(ProtocolError, match="must be bytes or str, not int"):
        decode(42)


def test_read_transcript_reports_file_and_line(tmp_path):
    path = tmp_path / "bad.log"
    path.write_text('BATSIM {"now":0.0,"events":[]}\nSCHED  {"now":0.0,"events":[]}\n'
                    'BATSIM {"now":1.0,"events":[{"timestamp":2.0,"type":"REQUESTED_CALL","data":{}}]}\n')
    with pytest.raises(ProtocolError, match=r"bad\.log:3: Batsim->scheduler message, event #0 \(REQUESTED_CALL\)"):
        read_transcript(path)
    path.write_text('OTHER {"now":0.0,"events":[]}\n')
    with pytest.raises(ProtocolError, match=r"bad\.log:1: unknown tag 'OTHER'"):
        read_transcript(path)


# ----------------------------------------------------------------------- CoreSet


def _random_mask(rng: random.Random, width: int) -> int:
    density = rng.random()
    return sum(1 << i for i in range(width) if rng.random() < density)


def test_lowest_bits_takes_the_lowest_ids():
    rng = random.Random(4242)
    for _ in range(500):
        mask = _random_mask(rng, rng.randint(1, 300))
        ids = [i for i in range(mask.bit_length()) if mask >> i & 1]
        for count in {0, 1, rng.randint(0, len(ids) + 2), len(ids), len(ids) + 1}:
            expected = sum(1 << i for i in ids[:count])
            assert lowest_bits(mask, count) == expected, (bin(mask), count)
    assert lowest_bits(0b1011_0100, 2) == 0b0001_0100
    assert lowest_bits(0b1011_0100, -1) == 0


def test_format_mask_matches_procset():
    rng = random.Random(20240601)
    for _ in range(500):
        mask = _random_mask(rng, rng.randint(0, 200))
        ids = [i for i in range(mask.bit_length()) if mask >> i & 1]
        text = format_mask(mask)
        assert text == str(ProcSet(*ids))
        assert CoreSet.from_str(text) == CoreSet(mask)
        if mask:
            assert parse_alloc(text) == CoreSet(mask)
        else:
            assert text == ""
        assert str(CoreSet(mask)) == text
        assert CoreSet(mask).to_procset() == ProcSet(*ids)
        assert mask_intervals(mask) == [(iv.inf, iv.sup) for iv in ProcSet(*ids).intervals()]
    assert format_mask(0b1110_1111) == "0-3 5-7"


def test_wide_masks_give_the_bit_loops_intervals():
    # past WIDE_MASK bits the intervals come from the mask's words (numpy): the same as the loop,
    # with runs across word boundaries, at bit 0 and at the top bit
    rng = random.Random(93312)
    for _ in range(60):
        width = rng.choice([WIDE_MASK + 1, 8192, 93312])
        mask = 0
        for _ in range(rng.randint(0, 400)):
            mask |= ((1 << rng.randint(1, 200)) - 1) << rng.randrange(width)
        mask &= (1 << width) - 1
        mask |= rng.choice([0, 1, 1 << (width - 1), (1 << 64) - 1])
        expected = [(iv.inf, iv.sup) for iv in ProcSet.from_str(format_mask_by_loop(mask)).intervals()] if mask else []
        assert mask_intervals(mask) == expected


def format_mask_by_loop(mask: int) -> str:
    """The bit loop's text, whatever the mask's width (WIDE_MASK raised past it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(coreset, "WIDE_MASK", mask.bit_length() + 1)
        return format_mask(mask)


def test_parse_alloc_agrees_with_procset_on_non_canonical_text():
    rng = random.Random(7)
    for _ in range(200):
        ranges = []
        for _ in range(rng.randint(1, 6)):
            lo = rng.randint(0, 60)
            hi = lo + rng.choice([0, 0, 1, 5])
            ranges.append(str(lo) if lo == hi else f"{lo}-{hi}")
        rng.shuffle(ranges)
        text = " ".join(ranges)
        assert parse_alloc(text) == CoreSet.from_str(text), text


def test_coreset_basics():
    cores = CoreSet.from_str("1-2 5")
    assert len(cores) == 3 and list(cores) == [1, 2, 5]
    assert 5 in cores and 3 not in cores
    assert cores == CoreSet.from_ids([5, 2, 1]) and hash(cores) == hash(CoreSet(0b100110))
    assert repr(cores) == "CoreSet('1-2 5')"


def test_fast_encoding_writes_the_bytes_of_the_general_one():
    """``encode`` writes the common decisions without building dicts: byte for byte what one
    ``json.dumps`` of the whole message writes (``encoding._encode_general``)."""
    import random

    rng = random.Random(7)
    ids = ["w0!1", 'w0!"quoted"', "w0!été", "w0!tab\tnew\nline", "w12!123456#2"]
    for _ in range(300):
        now = rng.choice([0.0, 1.5, 57.000308, 1e16, 3, 1234567.123456789, 4.5e-05])
        events = []
        for _ in range(rng.randint(0, 5)):
            kind = rng.randrange(4)
            if kind == 0:
                mask = rng.getrandbits(40) or 1
                events.append(ExecuteJob(now, rng.choice(ids), CoreSet(mask)))
            elif kind == 1:
                events.append(CallMeLater(now, rng.choice([now + 1, 10, 1e300, 0.1 + 0.2])))
            elif kind == 2:
                events.append(ExecuteJob(now, "w0!m", CoreSet(0b11), mapping={"0": 0, "1": 1}))
            else:
                events.append(SetJobMetadata(now, rng.choice(ids), "meta"))
        message = Message(now, events)
        assert encode(message) == protocol_encode._encode_general(message)
