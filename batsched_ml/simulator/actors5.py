"""Batsim 5.0.0-rc2's actors on SimGrid 4.0's kernel: the SimGrid side of a run under Batsim 5.

Each actor is rc2's (``src/``, checked against its recorded exchanges), written as a generator
over the kernel's simcalls (``kernel``); Batsim's rules stay in the server (``batsim_server``),
which this platform hands the messages the server actor receives:

* a **job submitter** per workload (``static_job_submitter_process``): a hello, then each batch of
  jobs whose submission time has come, sleeping from one to the next (the time to sleep is a
  long double difference, cast to a double), then a bye. rc2 creates the submitters before its
  server, so their hellos are in the mailbox when the server starts;
* the **server** (``server_process``): it starts the periodic actor, then loops: when the
  scheduler is ready and the mailbox empty, it calls the scheduler (and starts a request-reply
  actor with the reply) or, once the simulation is over, stops the periodic actor (a message)
  and sends SimulationEndsEvent; then it receives one message and handles it, starting the
  actor a decision needs (a job, a killer, a call-me-later);
* the **request-reply** actor (``edc_decisions_injector``): each decision, then "ready", sent to
  the server (after a sleep if one is dated later than the clock);
* a **job** (``execute_job_process``, delay profile): it sleeps for its delay (or its walltime,
  when that comes first), then tells the server from its first host;
* a **killer** (``killer_process``): it kills the jobs still running, then tells the server;
* a **call-me-later** actor (``oneshot_call_me_later_actor``): it sleeps until the date asked (at
  least 10 us; not at all when the date has come), then tells the server.

Dates are SimGrid's clock, a double (seconds); the scheduler reads it as it is. A job's run time
is a long double (``numpy.longdouble``, x87's 80 bits as in rc2's C++).
"""

from __future__ import annotations

import numpy as np

from .actors import BYE, COMPLETED, DECISION, ENDS, HELLO, KILLING_DONE, READY, SEND, SUBMITTED, WAITING_DONE, Latency
from .kernel import Kernel, Route, kill, receive, send, sleep, spawn

__all__ = ["KernelPlatform"]

SERVER, PERIODIC = "server", "periodic"  # rc2's mailboxes
DIE = "DIE"
_MIN_WAIT = 1e-5  # a call-me-later actor sleeps at least this long


def _ld(x) -> np.longdouble:
    return np.longdouble(x)


class KernelPlatform:
    """rc2's SimGrid side for a ``BatsimServer`` (see the module's docstring)."""

    EPSILON_RUNTIME = np.longdouble("1e-5")  # the run time rc2 gives a job that ran for no time

    def __init__(self, latency: Latency):
        self.loopback = Route(latency.loopback, latency.loopback_transfer)
        self.node_to_master = Route(latency.node_to_master, latency.node_transfer)
        self.node_routes = None if latency.node_routes is None else [Route(lat, tr) for lat, tr in latency.node_routes]
        self.kernel = None
        self.server = None
        self._pending = None  # the actor the message being handled needs (rc2 creates at most one)
        self._job_actors: dict = {}

    # ------------------------------------------------------------------ dates
    @staticmethod
    def stamp(t: float) -> float:
        """rc2 sends SimGrid's clock as it is."""
        return t

    seconds = read_date = stamp

    @staticmethod
    def elapsed(t: float, job):
        """How long a job ran, as rc2 computes it (a long double)."""
        return _ld(t) - _ld(job.start_t)

    # ------------------------------------------------------------------ a run
    def run(self, server, begins, static_jobs) -> float:
        """Create rc2's first actors (the submitters, then the server) and run the kernel to the
        end; returns the clock."""
        self.server = server
        self.kernel = kernel = Kernel()
        for jobs in static_jobs:
            kernel.start(self._submitter(jobs), "workload_submitter")
        kernel.start(self._server(begins), "server")
        kernel.run()
        return kernel.now

    def _route_from(self, mask: int) -> Route:
        """From the first host of a job's allocation, where its actor runs, to the server."""
        if self.node_routes is None:
            return self.node_to_master
        return self.node_routes[(mask & -mask).bit_length() - 1]

    # ------------------------------------------------------------------ actors
    def _submitter(self, jobs):
        kernel = self.kernel
        yield from send(SERVER, (HELLO, None), self.loopback)
        current = kernel.now
        batch = []
        for job in jobs:
            if job.subtime > current:
                if batch:
                    yield from send(SERVER, (SUBMITTED, batch), self.loopback)
                    batch = []
                yield from sleep(float(_ld(job.subtime) - _ld(current)))
                current = kernel.now
            batch.append(job)
        if batch:
            yield from send(SERVER, (SUBMITTED, batch), self.loopback)
        yield from send(SERVER, (BYE, None), self.loopback)

    def _server(self, begins):
        kernel, server = self.kernel, self.server
        server.events.append(begins)
        server.sched_ready = True
        yield from spawn(self._periodic(), "periodic")
        while not server.ends_acknowledged:
            call = server.next_call(kernel.mailbox_empty(SERVER))
            if call == SEND:
                yield from self._call_scheduler()
            elif call == ENDS:
                yield from send(PERIODIC, DIE, self.loopback)
                server.ends(kernel.now)
                yield from self._call_scheduler()
            kind, payload = yield from receive(SERVER)
            server.now = kernel.now
            server.handle(kernel.now, kind, payload)
            if self._pending is not None:
                code, job = self._pending
                self._pending = None
                actor = yield from spawn(code)
                if job is not None:
                    self._job_actors[job.id] = actor

    def _call_scheduler(self):
        sent, reply_now, decisions = self.server.call(self.kernel.now)
        yield from spawn(self._request_reply(decisions, reply_now), "Scheduler REQ-REP")

    def _request_reply(self, decisions, now):
        for decision in decisions:
            yield from self._send_at((DECISION, decision), decision.timestamp)
        yield from self._send_at((READY, None), now)

    def _send_at(self, message, when: float):
        clock = self.kernel.now
        if when > clock:
            yield from sleep(when - clock)
        yield from send(SERVER, message, self.loopback)

    def _periodic(self):
        yield from receive(PERIODIC)  # its DIE: rc2's periodic actor has nothing else to do here

    def _job(self, job):
        kernel = self.kernel
        yield from sleep(job.runtime)  # the delay, or the walltime when it comes first
        self._job_actors.pop(job.id, None)
        if self.server.job_done(job):
            runtime = self.elapsed(kernel.now, job)
            job.runtime = runtime if runtime != 0 else self.EPSILON_RUNTIME
            yield from send(SERVER, (COMPLETED, job), self._route_from(job.alloc))

    def _killer(self, jobs, job_ids):
        killed, progress = self.server.kill_now(jobs, self.kernel.now)
        for job in killed:
            actor = self._job_actors.pop(job.id, None)
            if actor is not None:
                yield from kill(actor)
        yield from send(SERVER, (KILLING_DONE, (job_ids, killed, progress)), self.loopback)

    def _waiter(self, at: float):
        clock = self.kernel.now
        if clock < at:
            yield from sleep(max(at - clock, _MIN_WAIT))
        server = self.server
        if not (server.ends_sent or server.ends_acknowledged):
            yield from send(SERVER, (WAITING_DONE, None), self.loopback)

    # ------------------------------------------------------- the server's decisions
    def start_job(self, job, t: float) -> None:
        self._pending = (self._job(job), job)

    def start_waiter(self, at: float, t: float) -> None:
        self._pending = (self._waiter(at), None)

    def start_killer(self, jobs, job_ids) -> None:
        self._pending = (self._killer(jobs, job_ids), None)
