"""Batsim's timing: its actors and the messages they send its server.

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
``Submitter`` and ``Reply`` are the two actors whose timing the scheduler sees most.
Dates are integer nanoseconds; ``stamp`` turns one into the microsecond date
Batsim writes in its messages.

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
    (``tests/test_simulator.py``).
    """

    loopback: float = 0.0001  # between two actors of the master host (its link, up and down)
    node_to_master: float = 0.0006  # from a compute host, where a job's actor runs, to the server
    loopback_transfer: float = 8e-9  # one byte at 125 MBps
    node_transfer: float = 8e-9


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


class Network:
    """The SimGrid side of a run: actors sleeping until a date (a heap), and the server's mailbox,
    where one message is in transit at a time and the others wait in the order they were posted.
    Actors created while the server handles a message start once it is done (``spawn``)."""

    __slots__ = ("sleeping", "_seq", "mailbox", "in_transit", "loopback", "node_to_master", "spawned")

    def __init__(self, latency: Latency):
        self.sleeping: list = []  # (date, sequence, action): the earliest first, then in order
        self._seq = 0
        self.mailbox: deque = deque()  # (latency, kind, payload, on_sent) waiting to be sent
        self.in_transit = None  # (arrival date, kind, payload, on_sent)
        self.loopback = ns(latency.loopback + latency.loopback_transfer)
        self.node_to_master = ns(latency.node_to_master + latency.node_transfer)
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

    def spawn(self, actor) -> None:
        self.spawned.append(actor)

    def start_spawned(self, t: int) -> None:
        if self.spawned:
            spawned, self.spawned = self.spawned, []
            for actor in spawned:
                actor(t)


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

    __slots__ = ("net", "decisions", "next", "now", "sent", "sent_ns")

    def __init__(self, net: Network, decisions, now: float, sent: float, sent_ns: int):
        """``now``: the reply's; ``sent``: the message's ``now`` and ``sent_ns`` its date in ns."""
        self.net, self.decisions, self.next, self.now = net, decisions, 0, now
        self.sent, self.sent_ns = sent, sent_ns

    def _ns(self, date: float) -> int:
        return self.sent_ns if date == self.sent else ns_of(date)

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
