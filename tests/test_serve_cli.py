"""``batsched-ml serve`` and ``simulate --connect`` from the command line, over real sockets:
Batsim's dynamic-jobs flag, what the commands say, and a strict server that answers every
protocol violation with one line and exit 2 (never a traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from batsched_ml.cli import main as cli_main
from batsched_ml.protocol import events as ev
from batsched_ml.protocol.codec import encode
from batsched_ml.server.transport import ERROR_PREFIX
from test_server import FakeBatsim, KillRequeue, tcp_endpoint  # tests/ is on sys.path (pytest's rootdir conftest)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
TINY = (DATA / "platform-16.xml", DATA / "tiny.json.gz")
TIMEOUT = 20.0


def start_serve(endpoint, *extra, env=None) -> subprocess.Popen:
    """``batsched-ml serve`` as its own process, the way a user starts it next to Batsim."""
    return subprocess.Popen([sys.executable, "-m", "batsched_ml.cli", "serve", "-s", endpoint, "--timeout", "20",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=env)


def simulate_cli(prefix, *extra) -> int:
    return cli_main(["simulate", "-p", str(TINY[0]), "-w", str(TINY[1]), "-e", str(prefix), *extra])


# ------------------------------------------------------------------ dynamic jobs (Batsim's flag)


@pytest.mark.parametrize("flags", [(), ("--enable-dynamic-jobs",)], ids=["default-off", "enabled"])
def test_serve_plus_connect_equals_in_process_byte_for_byte(tmp_path, capsys, flags):
    """The README's claim, with real processes and sockets, with dynamic jobs off (Batsim's default)
    and on (``--enable-dynamic-jobs`` in both commands)."""
    endpoint = tcp_endpoint()
    serve = start_serve(endpoint, "--scheduler", "easy")
    code = simulate_cli(tmp_path / "remote", "--connect", endpoint, "--timeout", "20", *flags)
    _, err = serve.communicate(timeout=TIMEOUT)
    assert code == 0 and serve.returncode == 0, err
    assert simulate_cli(tmp_path / "inproc", *flags) == 0
    remote = (tmp_path / "remote_jobs.csv").read_bytes()
    assert remote == (tmp_path / "inproc_jobs.csv").read_bytes()
    # The flag does something: with dynamic jobs, serve's NOTIFY registration_finished is one more
    # message for Batsim, which shifts its timing (the CSV differs from the other setting's).
    other = () if flags else ("--enable-dynamic-jobs",)
    assert simulate_cli(tmp_path / "other", *other) == 0
    assert (tmp_path / "other_jobs.csv").read_bytes() != remote
    capsys.readouterr()


def test_connect_writes_its_run_description(tmp_path, capsys):
    """``simulate --connect`` wrote no PREFIX_run.json: now one saying whom it drove, complete at the end
    (plot labels and the partial-run warnings read it), with a trailing newline."""
    endpoint = tcp_endpoint()
    serve = start_serve(endpoint, "--scheduler", "easy")
    code = simulate_cli(tmp_path / "remote", "--connect", endpoint, "--timeout", "20", "--quiet")
    _, err = serve.communicate(timeout=TIMEOUT)
    assert code == 0 and serve.returncode == 0, err
    text = (tmp_path / "remote_run.json").read_text()
    assert text.endswith("}\n")
    description = json.loads(text)
    assert description["status"] == "complete" and description["connect"] == endpoint
    assert description["label"] == f"scheduler at {endpoint}" and description["dynamic_jobs"] is False
    assert description["workloads"] == [str(TINY[1])]
    capsys.readouterr()


def test_connect_default_is_off_like_batsim(tmp_path, capsys):
    """A requeueing scheduler behind serve needs Batsim's --enable-dynamic-jobs; without it both
    sides say so, naming the flag (a scheduler that never registers jobs works as with Batsim)."""
    endpoint = tcp_endpoint()
    serve = start_serve(endpoint, "--classifier", "clairvoyant", "--kill-false-small")
    code = simulate_cli(tmp_path / "remote", "--connect", endpoint, "--timeout", "20")
    _, err = serve.communicate(timeout=TIMEOUT)
    assert code == 2 and serve.returncode == 2
    assert "--enable-dynamic-jobs" in err and "Traceback" not in err
    assert "--enable-dynamic-jobs" in capsys.readouterr().err


def test_no_dynamic_jobs_is_a_deprecated_alias(tmp_path, capsys):
    assert simulate_cli(tmp_path / "a", "--no-dynamic-jobs") == 0
    assert "--no-dynamic-jobs is deprecated" in capsys.readouterr().err
    assert simulate_cli(tmp_path / "b") == 0
    assert (tmp_path / "a_jobs.csv").read_bytes() == (tmp_path / "b_jobs.csv").read_bytes()


# ------------------------------------------------------------------ what the commands say


def test_serve_says_where_it_listens_and_hints_when_nobody_comes():
    from batsched_ml.runner import build_scheduler
    from batsched_ml.server.serve import run_server
    import io

    err = io.StringIO()
    endpoint = tcp_endpoint()
    code = run_server(build_scheduler("easy"), endpoint, timeout=1.5, err=err, label="easy/spf", hint_after=0.3)
    lines = err.getvalue().splitlines()
    assert code == 2
    assert lines[0] == f"batsched-ml serve: listening on {endpoint} (scheduler easy/spf); Batsim connects with -s {endpoint}"
    hint = next(line for line in lines if "no Batsim has connected" in line)
    assert f"batsim -p PLATFORM.xml -w WORKLOAD.json -e out/run -s {endpoint}" in hint
    assert f"batsched-ml simulate -p PLATFORM.xml -w WORKLOAD.json --connect {endpoint}" in hint
    assert sum("no Batsim has connected" in line for line in lines) == 1  # said once, not every second


def test_serve_starts_without_numpy_or_asyncio():
    """Batsim waits for ``serve`` to listen, so its start-up counts in every run (issue 13 §5):
    an EASY server imports neither numpy (the trace conversion, the classifiers, the
    analysis) nor asyncio (pyzmq's monitor helper). Read from ``-X importtime`` of the real
    command up to its "listening" line."""
    endpoint = tcp_endpoint()
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "batsched_ml.cli", "serve", "-s", endpoint,
                             "--timeout", "20", "--scheduler", "easy", "--reservations", "cores"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        lines = []
        for line in proc.stderr:
            if "listening on" in line:
                break
            lines.append(line)
        else:
            pytest.fail("serve never listened:\n" + "".join(lines[-20:]))
    finally:
        proc.kill()
        proc.wait()
    imported = {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}
    assert "batsched_ml.server.serve" in imported and "zmq" in imported  # the trace is real
    assert "numpy" not in imported and "asyncio" not in imported


def test_serve_cli_names_the_scheduler_and_wildcards_become_localhost(tmp_path, capsys):
    endpoint = tcp_endpoint()
    port = endpoint.rsplit(":", 1)[1]
    serve = start_serve(f"tcp://*:{port}", "--scheduler", "conservative", "--policy", "spf")
    code = simulate_cli(tmp_path / "r", "--connect", f"tcp://localhost:{port}", "--timeout", "20")
    _, err = serve.communicate(timeout=TIMEOUT)
    assert code == 0 and serve.returncode == 0
    assert (f"listening on tcp://*:{port} (scheduler conservative spf); Batsim connects with "
            f"-s tcp://localhost:{port}") in err
    assert "simulation ended at t=" in err and "messages answered" in err
    said = capsys.readouterr().err
    assert f"connecting to the scheduler at tcp://localhost:{port} as Batsim would (dynamic jobs off)" in said


def test_connect_hints_when_no_scheduler_answers(tmp_path):
    import io

    from batsched_ml.server.peer import run_connected

    err = io.StringIO()
    endpoint = tcp_endpoint()  # nobody there
    with pytest.raises(OSError, match="no message from the scheduler"):
        run_connected(TINY[0], TINY[1], endpoint, tmp_path / "r", timeout=1.5, err=err, hint_after=0.3)
    assert f"no scheduler has answered on {endpoint}" in err.getvalue()
    assert f"batsched-ml serve -s {endpoint}" in err.getvalue()


def test_progress_line_on_a_terminal_only():
    import io

    from batsched_ml.server.console import ProgressLine

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        line = ProgressLine(stream, every=0.0)
        line.update("serve: 10 messages")
        line.update("serve: 9")
        line.close()
    assert tty.getvalue() == "\rserve: 10 messages\rserve: 9" + " " * 10 + "\n"  # the longer text is wiped
    assert pipe.getvalue() == ""


# ------------------------------------------------------------------ a strict server (issue 13, section 3)


class Batsim(FakeBatsim):
    """test_server's bare REQ socket; ``send`` takes raw bytes or ``(now, events)`` and returns raw bytes."""

    def send(self, payload) -> bytes:
        if not isinstance(payload, bytes):
            payload = encode(ev.Message(payload[0], payload[1]))
        return self.raw(payload)


def begins(nb=4, dynamic=False, ts=0.0) -> ev.SimulationBegins:
    return ev.SimulationBegins(ts, nb, nb, config={"dynamic-jobs-enabled": dynamic},
                               compute_resources=[{"id": i, "name": f"node{i}", "state": "idle", "properties": {}}
                                                  for i in range(nb)],
                               profiles={"w0": {"p100": {"type": "delay", "delay": 100}}})


def submitted(job_id, ts, res=1) -> ev.JobSubmitted:
    return ev.JobSubmitted(ts, job_id, {"id": job_id, "subtime": ts, "walltime": 200, "res": res, "profile": "p100"})


def serve_fails_cleanly(endpoint, messages, *, stdlib_json=False, extra=()) -> tuple[bytes, str]:
    """Run ``serve`` in its own process, send ``messages`` (the last one must be refused), and
    check what every protocol violation must give: exit 2, the error on one line of stderr
    (printable, no traceback), and a non-JSON error reply so that Batsim aborts."""
    prelude = "import batsched_ml.protocol.decoding as d; d._fast_loads = None; " if stdlib_json else ""
    code = (f"{prelude}import sys; from batsched_ml.cli import main; "
            f"sys.exit(main(['serve', '-s', {endpoint!r}, '--timeout', '20', *{list(extra)!r}]))")
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            errors="backslashreplace")
    batsim = Batsim(endpoint)
    try:
        for message in messages[:-1]:
            assert not batsim.send(message).startswith(ERROR_PREFIX)
        reply = batsim.send(messages[-1])
    finally:
        batsim.close()
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 1, err
    assert all(ch.isprintable() for line in err.splitlines() for ch in line), repr(err)
    assert reply.startswith(ERROR_PREFIX) and b"\n" not in reply and len(reply) < 2000
    return reply, errors[0]


@pytest.mark.parametrize("stdlib_json", [False, True], ids=["orjson-or-stdlib", "stdlib-json"])
@pytest.mark.parametrize("where", ["envelope", "event"])
def test_deeply_nested_json(tmp_path, stdlib_json, where):
    deep = b"[" * 100_000 + b"]" * 100_000
    payload = deep if where == "envelope" else b'{"now":0,"events":[' + deep + b"]}"
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [payload], stdlib_json=stdlib_json)
    assert "malformed message from Batsim" in error or "cannot handle a message" in error


def test_second_simulation_begins(tmp_path):
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [
        (0.0, [begins()]), (1.0, [submitted("w0!1", 1.0, res=4)]), (2.0, [begins(ts=2.0)])])
    assert "broke the protocol" in error and "a second SIMULATION_BEGINS" in error


def test_second_simulation_begins_in_one_message_names_the_second_event(tmp_path):
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [(0.0, [begins(), begins()])])
    assert "event #1 (SIMULATION_BEGINS): a second SIMULATION_BEGINS" in error


def test_simulation_ends_twice_in_one_message(tmp_path):
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [
        (0.0, [begins()]), (5.0, [ev.SimulationEnds(5.0), ev.SimulationEnds(5.0)])])
    assert "broke the protocol" in error
    assert "event #1 (SIMULATION_ENDS): a second SIMULATION_ENDS (event #0)" in error


def test_job_submitted_after_simulation_ends_in_one_message(tmp_path):
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [
        (0.0, [begins()]), (5.0, [ev.SimulationEnds(5.0), submitted("w0!1", 5.0)])])
    assert "event #1 (JOB_SUBMITTED): JOB_SUBMITTED after SIMULATION_ENDS (event #0)" in error


def test_simulation_ends_while_a_job_runs(tmp_path):
    """easy starts w0!1 at once (it fits), so it runs when SIMULATION_ENDS comes at 50 s."""
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [
        (0.0, [begins()]), (1.0, [submitted("w0!1", 1.0, res=2)]), (50.0, [ev.SimulationEnds(50.0)])])
    assert "event #0 (SIMULATION_ENDS): the simulation ends while 1 job(s) still run (w0!1)" in error


def test_simulation_ends_after_the_last_completion_in_the_same_message_is_accepted():
    """The completions before SIMULATION_ENDS in its message count: nothing runs any more."""
    from batsched_ml.runner import build_scheduler
    from batsched_ml.server.serve import DecisionServer

    server = DecisionServer(build_scheduler("easy"))
    server.answer(encode(ev.Message(0.0, [begins()])))
    server.answer(encode(ev.Message(1.0, [submitted("w0!1", 1.0, res=2)])))
    reply = server.answer(encode(ev.Message(101.0, [
        ev.JobCompleted(101.0, "w0!1", ev.COMPLETED_SUCCESSFULLY, 0, "0-1"), ev.SimulationEnds(101.0)])))
    assert server.ended and json.loads(reply) == {"now": 101.0, "events": []}


def test_first_message_must_be_simulation_begins(tmp_path):
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [(1.0, [submitted("w0!1", 1.0)])])
    assert "the first message must start with SIMULATION_BEGINS, got JOB_SUBMITTED" in error


def test_huge_machine_is_refused_with_a_size_message(tmp_path):
    payload = json.dumps({"now": 0, "events": [{"timestamp": 0, "type": "SIMULATION_BEGINS", "data": {
        "nb_resources": 10**12, "nb_compute_resources": 10**12}}]}).encode()
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [payload])
    assert "'nb_resources' is 1000000000000" in error and "at most 4194304 resources" in error


def test_control_bytes_are_escaped_in_error_lines(tmp_path):
    payload = b'\x1b[2J\x00{"now":\n1,\r"events":[]}\x07' + "\u2028\u200b".encode()  # + line separator
    reply, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [payload])
    assert "\\x1b[2J\\x00" in error and "\\n1," in error and "\\u2028\\u200b" in error
    assert not any(byte < 0x20 for byte in reply)


def test_50_megabytes_of_garbage_give_a_short_line(tmp_path):
    garbage = os.urandom(1 << 20) * 50
    reply, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [garbage])
    assert "(52428800 bytes)" in error and len(error) < 600


def test_error_text_for_50_megabytes_allocates_little():
    """Building the error quotes only the message's start: it was 641 MB (and 4.4 s) for 50 MB.
    Measured as allocations, not seconds, so a loaded machine cannot make it flaky."""
    import tracemalloc

    from batsched_ml.protocol.codec import ProtocolError, decode

    garbage = os.urandom(1 << 20) * 50
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError) as caught:
            decode(garbage)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "(52428800 bytes)" in str(caught.value)
    assert peak < 4 * len(garbage)  # the failed UTF-8 decode holds copies (~3x); the error text adds nothing


def test_event_before_the_previous_message_now(tmp_path):
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [
        (0.0, [begins()]), (10.0, [submitted("w0!1", 10.0)]), (20.0, [submitted("w0!2", 5.0)])])
    assert "event #0 (JOB_SUBMITTED): timestamp 5.0 is earlier than the previous message's now=10.0" in error


def test_message_now_going_back(tmp_path):
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [(0.0, [begins()]), (10.0, []), (9.0, [])])
    assert "now=9.0 is earlier than the previous message's now=10.0" in error


def test_job_completed_on_other_cores(tmp_path):
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [
        (0.0, [begins()]), (1.0, [submitted("w0!1", 1.0, res=2)]),  # easy allocates cores 0-1
        (101.0, [ev.JobCompleted(101.0, "w0!1", ev.COMPLETED_SUCCESSFULLY, 0, "2-3")])])
    assert "JOB_COMPLETED for w0!1" in error and "'2-3'" in error and "allocated '0-1'" in error


def test_job_completed_with_an_equivalent_allocation_text_is_accepted(tmp_path):
    """'0 1' is the same allocation as '0-1' (not Batsim's canonical text, but the same cores)."""
    from batsched_ml.runner import build_scheduler
    from batsched_ml.server.serve import DecisionServer

    server = DecisionServer(build_scheduler("easy"))
    server.answer(encode(ev.Message(0.0, [begins()])))
    server.answer(encode(ev.Message(1.0, [submitted("w0!1", 1.0, res=2)])))
    server.answer(encode(ev.Message(101.0, [ev.JobCompleted(101.0, "w0!1", ev.COMPLETED_SUCCESSFULLY, 0, "0 1")])))
    assert server.core.machine.nb_free == 4


def test_job_killed_without_its_job_completed(tmp_path):
    """The kill of a running job is answered by JOB_COMPLETED then JOB_KILLED: a JOB_KILLED alone
    would leave the job's cores busy forever (and requeue it while it runs)."""
    _, error = serve_fails_cleanly(f"ipc://{tmp_path}/s.ipc", [
        (0.0, [begins(dynamic=True)]), (1.0, [submitted("w0!1", 1.0)]),
        (2.0, [ev.JobKilled(2.0, ["w0!1"], {"w0!1": {"profile_name": "p100", "progress": 0.01}})])])
    assert "JOB_KILLED" in error and "w0!1" in error and "never asked" in error


def test_job_killed_before_its_job_completed_through_a_killing_scheduler(tmp_path):
    import io

    from batsched_ml.server.serve import run_server
    import threading

    err = io.StringIO()
    endpoint = f"ipc://{tmp_path}/s.ipc"
    codes = []
    scheduler = KillRequeue(every=1)  # kills every job 5 s after its start
    thread = threading.Thread(target=lambda: codes.append(run_server(scheduler, endpoint, timeout=TIMEOUT, err=err)),
                              daemon=True)
    thread.start()
    batsim = Batsim(endpoint)
    try:
        batsim.send((0.0, [begins(dynamic=True)]))
        batsim.send((1.0, [ev.JobSubmitted(1.0, "w0!0", {"id": "w0!0", "subtime": 1.0, "walltime": 200, "res": 1,
                                                          "profile": "p100"})]))
        assert b"KILL_JOB" in batsim.send((6.0, [ev.RequestedCall(6.0)]))
        reply = batsim.send((6.0, [ev.JobKilled(6.0, ["w0!0"], {"w0!0": {"profile_name": "p100", "progress": 0.05}})]))
    finally:
        batsim.close()
    thread.join(TIMEOUT)
    assert codes == [2] and reply.startswith(ERROR_PREFIX)
    errors = [line for line in err.getvalue().splitlines() if "error" in line]
    assert len(errors) == 1 and "Traceback" not in err.getvalue()
    assert "w0!0 is still running: Batsim sends its JOB_COMPLETED (COMPLETED_KILLED) first" in errors[0]


# ------------------------------------------------------------------ CALL_ME_LATER: one rule in the core


def _sub_millisecond_workload(path) -> Path:
    import random

    rng = random.Random(3)
    jobs, profiles, t = [], {}, 0.0
    for i in range(80):
        t += rng.choice([0.0, 0.0002, 0.001, 0.5, 3.0])
        runtime = round(rng.uniform(0.0001, 0.0009), 6)
        profiles[f"d{runtime}"] = {"type": "delay", "delay": runtime}
        jobs.append({"id": i, "subtime": round(t, 6), "res": rng.randint(1, 4), "walltime": 1.0,
                     "profile": f"d{runtime}"})
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": profiles}))
    return path


def test_sub_millisecond_classification_runs_under_batsim_latencies(tmp_path, capsys):
    """The divider (median runtime) is sub-millisecond, so kills are due 0.1-0.9 ms after a start:
    Batsim would apply such a CALL_ME_LATER after 'now' has passed it, and abort."""
    workload = _sub_millisecond_workload(tmp_path / "subms.json")
    code = cli_main(["simulate", "-p", str(TINY[0]), "-w", str(workload), "-e", str(tmp_path / "r"),
                     "--classifier", "clairvoyant", "--kill-false-small", "-o", "period=2"])
    assert code == 0, capsys.readouterr().err
    rows = (tmp_path / "r_jobs.csv").read_text().splitlines()[1:]
    assert len(rows) == 80 and all(",COMPLETED_SUCCESSFULLY," in row for row in rows)


def test_the_core_never_asks_for_a_call_too_soon():
    from batsched_ml.core.decision_core import DecisionCore
    from batsched_ml.core.scheduler import CALL_MARGIN, Scheduler

    class Eager(Scheduler):
        def schedule(self, ctx):
            for job in [j for j in ctx.jobs.values() if j.state == "QUEUED"]:
                ctx.execute(job, ctx.machine.lowest_free(job.res))
            self.asked = [ctx.call_me_later(ctx.now + 1e-4), ctx.call_me_later(ctx.now),
                          ctx.call_me_later(ctx.now - 5), ctx.call_me_later(ctx.now + 30)]

    core = DecisionCore(Eager())
    core.handle(0.0, [begins()])
    decisions = core.handle(1.0, [submitted("w0!1", 1.0), submitted("w0!2", 1.0)])
    calls = [d.at for d in decisions if type(d) is ev.CallMeLater]
    assert calls == [1.0 + CALL_MARGIN, 31.0]  # "too soon" and "past" mean "as soon as allowed", once
    assert core.scheduler.asked == [1.0 + CALL_MARGIN] * 3 + [31.0]


def test_readme_pybatsim_line_installs_pyzmq():
    """pybatsim is installed with --no-deps (it pins pyzmq<23): the line must name pyzmq itself,
    or pybatsim dies with "No module named 'zmq'"."""
    lines = [line for line in (ROOT / "docs" / "deployment.md").read_text().splitlines() if "pip install --no-deps pybatsim" in line]
    assert lines and all("pyzmq" in line.split("pybatsim", 1)[1] for line in lines)
