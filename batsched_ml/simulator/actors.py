"""Batsim 4.2.1's timing: its actors and the messages they send its server.

Batsim is a SimGrid program whose actors talk to one *server* actor through a
mailbox, and the timing of everything the scheduler sees comes from that:

* every internal message (a submission, a job's end, each decision of a reply,
  the "scheduler ready" that closes a reply, a kill or call-me-later
  acknowledgement) is a SimGrid communication that takes the route's latency:
  ``loopback`` between actors on the master host, ``node_to_master`` from the
  compute host where a job ran;
* the server receives one message at a time, in the order they were posted, and
  a message waits in the mailbox while another is in transit;
* the job submitter sleeps from one submission date to the next *after* its
  previous send, so submissions drift by a few latencies.

``Network`` is that machinery (sleeping actors and the server's mailbox);
``Submitter`` and ``Reply`` are the two actors whose timing the scheduler sees most;
``EventPlatform`` runs a ``BatsimServer`` on them. Dates are integer nanoseconds, and
simultaneous events are handled in a fixed order (a sleeper first, then the message in
transit): SimGrid's float clock and actor order decide that in the real Batsim, which
is why about 1% of KTH-5k's starts differ from Batsim 4.2.1's by a latency (Batsim 5's
timing is ``actors5``, on a re-creation of SimGrid's kernel). ``stamp`` turns a date
into the microsecond date Batsim 4.2.1 writes in its messages.

Every action the network holds (a sleeper's wake-up, a message's ``on_sent``) is a bound method
or a ``functools.partial`` of one, never a closure: a paused run pickles whole (snapshots).
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass
from functools import partial


@dataclass(frozen=True)
class Latency:
    """Durations of Batsim's internal messages (seconds of simulated time).

    A message takes its route's latency plus the time to move its one byte. The
    defaults are the golden platforms' (``platforms/``): 50 us host links and a
    500 us backbone, 125 MBps. Checked against the real transcripts and outputs
    (``tests/test_simulator.py``). On a platform whose hosts reach the master by
    different routes, ``node_routes`` gives each compute host's (latency and
    transfer, in host order); a job's end then takes the route of its first host,
    where Batsim runs the job's actor. A route's latency is the double SimGrid makes of
    it (``"50us"`` is ``50 * 1e-6``; a route adds its links' in order): Batsim 5's clock
    shows it to the last bit (``actors5``); Batsim 4.2.1's model works in nanoseconds.
    """

    loopback: float = 50 * 1e-6 + 50 * 1e-6  # between two actors of the master host (its link, up and down)
    node_to_master: float = (50 * 1e-6 + 500 * 1e-6) + 50 * 1e-6  # from a compute host, where a job's actor runs
    loopback_transfer: float = 8e-9  # one byte at 125 MBps
    node_transfer: float = 8e-9
    node_routes: tuple | None = None  # per compute host: (its latency to the master, its transfer)


BATSIM_LATENCY = Latency()
NO_LATENCY = Latency(0.0, 0.0, 0.0, 0.0)


def stamp(t: int) -> float:
    """A date as Batsim writes it in its messages: ``%f``, to the microsecond. A scheduler
    echoing it as its ``now`` may be a fraction of a microsecond ahead, and Batsim waits."""
    return (t + 500) // 1000 / 1e6


def ns_of(stamp: float) -> int:
    """A scheduler's date in nanoseconds; exact for the microsecond dates Batsim sends."""
    ns = round(stamp * 1e9)
    us = round(stamp * 1e6)
    return us * 1000 if abs(ns - us * 1000) < 50 else ns


def ns(seconds: float) -> int:
    """Simulated dates are kept in integer nanoseconds: a date reached along two paths
    (a job's end, another's notice) coincides exactly when it does in decimal, and a 8 ns
    transfer time still separates two events, as in SimGrid."""
    return round(seconds * 1e9)


# The kinds of message the server receives.
HELLO, SUBMITTED, BYE, COMPLETED, DECISION, READY, WAITING_DONE, KILLING_DONE = range(8)
SEND, ENDS = 1, 2  # what BatsimServer.next_call asks of a platform: a message, or SIMULATION_ENDS


class Network:
    """The SimGrid side of a run: actors sleeping until a date (a heap), and the server's mailbox,
    where one message is in transit at a time and the others wait in the order they were posted.
    Actors created while the server handles a message start once it is done (``spawn``)."""

    __slots__ = ("sleeping", "_seq", "mailbox", "in_transit", "loopback", "node_to_master", "node_routes",
                 "spawned")

    def __init__(self, latency: Latency):
        self.sleeping: list = []  # (date, sequence, action): the earliest first, then in order
        self._seq = 0
        self.mailbox: deque = deque()  # (latency, kind, payload, on_sent) waiting to be sent
        self.in_transit = None  # (arrival date, kind, payload, on_sent)
        self.loopback = ns(latency.loopback + latency.loopback_transfer)
        self.node_to_master = ns(latency.node_to_master + latency.node_transfer)
        routes = latency.node_routes
        self.node_routes = None if routes is None else [ns(lat + transfer) for lat, transfer in routes]
        self.spawned: list = []  # actors to start once the server is done with its message

    def wake(self, t: int, action) -> None:
        """An actor sleeping until ``t`` (SimGrid runs sleepers before message receivers)."""
        self._seq += 1
        heapq.heappush(self.sleeping, (t, self._seq, action))

    def post(self, t: int, latency: int, kind: int, payload, on_sent) -> None:
        """An actor sends the server a message; ``on_sent(t)`` runs once it is received."""
        if self.in_transit is None:
            self.in_transit = (t + latency, kind, payload, on_sent)
        else:
            self.mailbox.append((latency, kind, payload, on_sent))

    def received(self, t: int) -> None:
        """The message in transit arrived at ``t``: the next one in the mailbox leaves."""
        if self.mailbox:
            latency, kind, payload, on_sent = self.mailbox.popleft()
            self.in_transit = (t + latency, kind, payload, on_sent)
        else:
            self.in_transit = None

    def from_node(self, mask: int) -> int:
        """The latency of a message from the actor of a job running on ``mask`` (its first host)."""
        if self.node_routes is None:
            return self.node_to_master
        return self.node_routes[(mask & -mask).bit_length() - 1]

    def spawn(self, actor) -> None:
        self.spawned.append(actor)

    def start_spawned(self, t: int) -> None:
        if self.spawned:
            spawned, self.spawned = self.spawned, []
            for actor in spawned:
                actor(t)


class EventPlatform:
    """Batsim 4.2.1's SimGrid side for a ``BatsimServer``: the event loop over ``Network``, the
    server's receive loop and the actors a decision starts. Dates are integer nanoseconds."""

    EPSILON_RUNTIME = 1e-5  # the run time Batsim gives a job killed as it starts
    stamp = staticmethod(stamp)
    read_date = staticmethod(ns_of)

    def __init__(self, latency: Latency):
        self.net = Network(latency)
        self.server = None

    @staticmethod
    def seconds(t: int) -> float:
        return t / 1e9

    @staticmethod
    def elapsed(t: int, job) -> float:
        return (t - job.start_t) / 1e9

    def run(self, server, begins, static_jobs) -> int:
        """Simulate to the end (``begin``, then ``advance``). Returns the date reached."""
        self.begin(server, begins, static_jobs)
        self.advance()
        return server.now

    def begin(self, server, begins, static_jobs) -> None:
        """The submitters start, SIMULATION_BEGINS goes out at 0 (4.2.1's server starts first)."""
        self.server = server
        net = self.net
        for jobs in static_jobs:
            Submitter(net, jobs).start(0)
        server.events.append(begins)
        self._send(0)
        net.start_spawned(0)

    def advance(self, watch=None, look=None) -> bool:
        """The earliest of the sleeping actors and the message in transit (a sleeper first at
        equal dates, as in SimGrid) until nothing is left (False), or until ``look(watch, t)``,
        asked before an event of a date ``t >= watch.at``, says to pause there (True). Between
        two events the whole run is in its objects (a snapshot of it is whole)."""
        server, net = self.server, self.net
        sleeping = net.sleeping
        at = float("inf") if watch is None else None
        while True:
            transit = net.in_transit
            if sleeping and (transit is None or sleeping[0][0] <= transit[0]):
                t = sleeping[0][0]
                if t >= (at or watch.at) and look(watch, t):
                    return True
                now, _, action = heapq.heappop(sleeping)
                server.now = now
                action(now)
            elif transit is not None:
                t = transit[0]
                if t >= (at or watch.at) and look(watch, t):
                    return True
                server.now = t
                self._receive(t, transit)
            else:
                return False

    def _receive(self, t: int, transit) -> None:
        """The server gets one message: handle it, maybe call the scheduler, wait for the next."""
        _, kind, payload, on_sent = transit
        server, net = self.server, self.net
        server.handle(t, kind, payload)
        call = server.next_call(not net.mailbox)
        if call is not None:
            if call == ENDS:
                server.ends(t)
            self._send(t)
        net.received(t)
        if on_sent is not None:
            on_sent(t)
        net.start_spawned(t)

    def _send(self, t: int) -> None:
        """One message to the scheduler; its reply is applied by a request-reply actor."""
        sent, reply_now, decisions = self.server.call(t)
        self.net.spawn(Reply(self.net, decisions, reply_now, sent, (t + 500) // 1000 * 1000).step)

    def start_job(self, job, t: int) -> None:
        """The job's actor sleeps for its run time, then tells the server from its first host."""
        self.net.wake(t + ns(job.runtime), partial(self._job_ends, job))

    def _job_ends(self, job, t: int) -> None:
        if self.server.job_done(job):
            self.net.post(t, self.net.from_node(job.alloc), COMPLETED, job, None)

    def start_waiter(self, at: int, t: int) -> None:
        """A call-me-later actor: it sleeps until ``at`` (at least 10 us), then tells the server."""
        self.net.wake(t + max(at - t, 10_000), self._waited)

    def _waited(self, t: int) -> None:
        self.net.post(t, self.net.loopback, WAITING_DONE, None, None)

    def start_killer(self, jobs, job_ids) -> None:
        """A killer actor ends the running jobs once the server is done, then acknowledges."""
        self.net.spawn(partial(self._kill, jobs, job_ids))

    def _kill(self, jobs, job_ids, t: int) -> None:
        killed, progress = self.server.kill_now(jobs, t)
        self.net.post(t, self.net.loopback, KILLING_DONE, (job_ids, killed, progress), None)


class Submitter:
    """Batsim's static job submitter: it sends every job whose subtime has come in one
    message, then sleeps for (next subtime - the date it last woke up) *after* that send,
    so each submission lands a few latencies after its subtime."""

    __slots__ = ("net", "jobs", "next")

    def __init__(self, net: Network, jobs):
        self.net, self.jobs, self.next = net, jobs, 0

    def start(self, t: int) -> None:
        self.net.post(t, self.net.loopback, HELLO, None, self._started)

    def _started(self, t: int) -> None:
        self._advance(t, False)

    def _woken(self, t: int) -> None:
        self._advance(t, True)

    def _advance(self, t, woken):
        net, jobs = self.net, self.jobs
        i, n = self.next, len(jobs)
        batch = []
        if woken:  # the job it slept for is due, whatever the rounding
            batch.append(jobs[i])
            i += 1
        while i < n and jobs[i].subtime_ns <= t:
            batch.append(jobs[i])
            i += 1
        self.next = i
        after = self._bye if i == n else partial(self._sleep, jobs[i].subtime_ns - t)
        if batch:
            net.post(t, net.loopback, SUBMITTED, batch, after)
        else:
            after(t)

    def _bye(self, t: int) -> None:
        self.net.post(t, self.net.loopback, BYE, None, None)

    def _sleep(self, delay: int, t: int) -> None:
        self.net.wake(t + delay, self._woken)


class Reply:
    """Batsim's request-reply actor: forwards the decisions of one reply to the server one by
    one (each send waits for the previous one), then says the scheduler is ready."""

    __slots__ = ("net", "decisions", "next", "now", "sent", "sent_ns", "read_date")

    def __init__(self, net: Network, decisions, now: float, sent: float, sent_ns: int, read_date=ns_of):
        """``now``: the reply's; ``sent``: the message's ``now`` and ``sent_ns`` its date in ns;
        ``read_date``: how Batsim reads another date of the reply (``lines.BatsimLine.read_date``)."""
        self.net, self.decisions, self.next, self.now = net, decisions, 0, now
        self.sent, self.sent_ns, self.read_date = sent, sent_ns, read_date

    def _ns(self, date: float) -> int:
        return self.sent_ns if date == self.sent else self.read_date(date)

    def step(self, t: int) -> None:
        net = self.net
        if self.next < len(self.decisions):
            d = self.decisions[self.next]
            self.next += 1
            at = self._ns(d.timestamp)
            if at > t:
                net.wake(at, partial(self._send, d))
            else:
                self._send(d, t)
        else:
            at = self._ns(self.now)
            if at > t:
                net.wake(at, self._ready)
            else:
                self._ready(t)

    def _send(self, decision, t: int) -> None:
        self.net.post(t, self.net.loopback, DECISION, decision, self.step)

    def _ready(self, t: int) -> None:
        self.net.post(t, self.net.loopback, READY, None, None)
