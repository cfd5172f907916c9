"""SimGrid 4.0's kernel, as Batsim 5.0.0-rc2 runs its actors on it.

Batsim 5's instants are SimGrid 4.0's: its clock is a double, advanced step by step, and which of
two simultaneous messages the server sees first depends on how SimGrid orders its actors. So the
Batsim 5 line runs rc2's actors (``actors5``) on this small re-creation of the parts of SimGrid
they use, checked frame by frame against the real rc2 (every date of every frame the same double,
to the last bit):

* **actors** are generators that yield *simcalls* (sleep, send, receive, wait, create an actor,
  kill one). Like SimGrid's maestro, the kernel runs every ready actor in a *sub-round* (in the
  order they became ready), then handles the simcalls they issued in that same order, which
  makes the actors they answer ready for the next sub-round; a message sent in a sub-round is in
  the mailbox only once that sub-round's simcalls are handled;
* **actions** (a sleep, a message in flight) follow the ``ptask_L07`` host model rc2 selects, with
  SimGrid's FULL update: each step advances the clock (``now += delta``, in doubles) by the
  shortest time any action still needs, subtracts it from every action, and ends the actions
  left within ``PRECISION`` (1 ns) of their end, in the order they were created. A message takes
  its route's latency, then its one byte at the route's bandwidth;
* **mailboxes** match a send with a receive (first come, first served); the transfer starts when
  both sides are there.

Only what Batsim's actors need is here: no CPU sharing, one message per link at a time (rc2's
server receives one message at a time).
"""

from __future__ import annotations

from collections import deque

__all__ = ["Comm", "Kernel", "PRECISION", "Route", "kill", "receive", "send", "sleep", "spawn"]

PRECISION = 1e-9  # SimGrid's precision/timing (s): a remaining time below it is over
WORK_PRECISION = 1e-5 * PRECISION  # precision/work-amount x precision/timing, for a message's byte


class Route:
    """A message's route: its latency (the sum of its links', in route order, as SimGrid adds them)
    and the time its one byte takes at the route's bandwidth (0: instant)."""

    __slots__ = ("latency", "rate")

    def __init__(self, latency: float, transfer: float):
        self.latency = latency
        self.rate = float("inf") if transfer <= 0 else _bandwidth(transfer)


def _bandwidth(transfer: float) -> float:
    """The bandwidth (bytes/s) whose one byte takes ``transfer`` s: platforms give whole bytes/s."""
    rate = 1.0 / transfer
    return float(round(rate)) if abs(rate - round(rate)) <= 1e-6 * rate else rate


class _Message:
    """An L07 action moving one message: its route's ``latency``, then its byte at ``bandwidth``.
    ``rate`` is the share the last solve gave it (0 while it pays its latency); ``on_done`` wakes
    whoever waits for it."""

    __slots__ = ("seq", "latency", "remains", "bandwidth", "sending", "rate", "on_done")

    def __init__(self, seq, latency, bandwidth, on_done):
        self.seq = seq
        self.latency = latency
        self.remains = 1.0
        self.bandwidth = bandwidth
        self.sending = latency <= 0  # SimGrid's penalty > 0: the byte is moving
        self.rate = bandwidth if self.sending else 0.0
        self.on_done = on_done


class _Sleeps:
    """The sleeping actions (their ``max_duration`` left), in numpy arrays: a step subtracts from
    all of them at once (IEEE doubles, as SimGrid's loop). A free slot holds +inf. The least time
    left is kept as it changes: a subtraction keeps the order (``fl(min - d) = min(fl(x - d))``),
    so it is recomputed only when a sleep ends or is cancelled."""

    def __init__(self):
        import numpy as np

        self.np = np
        self.left = np.full(16, np.inf)
        self.seq = np.zeros(16, dtype=np.int64)
        self.on_done: list = [None] * 16
        self.free = list(range(15, -1, -1))
        self.count = 0
        self.least = np.inf  # the least time left (None: to recompute)

    def add(self, seq: int, duration: float, on_done) -> int:
        if not self.free:
            self._grow()
        slot = self.free.pop()
        self.left[slot], self.seq[slot], self.on_done[slot] = duration, seq, on_done
        self.count += 1
        if self.least is not None and duration < self.least:
            self.least = duration
        return slot

    def cancel(self, slot: int) -> None:
        if self.left[slot] == self.least:
            self.least = None
        self.left[slot] = self.np.inf
        self.on_done[slot] = None
        self.free.append(slot)
        self.count -= 1

    def _grow(self) -> None:
        np, size = self.np, len(self.left)
        self.left = np.concatenate([self.left, np.full(size, np.inf)])
        self.seq = np.concatenate([self.seq, np.zeros(size, dtype=np.int64)])
        self.on_done.extend([None] * size)
        self.free.extend(range(2 * size - 1, size - 1, -1))

    def smallest(self) -> float:
        if self.least is None:
            self.least = float(self.left.min())
        return self.least

    def advance(self, delta: float) -> list:
        """Subtract ``delta`` (``double_update``: below ``PRECISION`` is over); the ended ones as
        (creation number, on_done), their slots freed."""
        left = self.left
        left -= delta
        least = self.least - delta
        if least >= PRECISION:
            self.least = least
            return []
        left[left < PRECISION] = 0.0
        out = []
        for slot in self.np.flatnonzero(left <= 0).tolist():
            out.append((int(self.seq[slot]), self.on_done[slot]))
            self.cancel(slot)
        self.least = None
        return out


class Comm:
    """One message: sent into a mailbox, matched with a receive, then in flight."""

    __slots__ = ("payload", "route", "waiters", "done")

    def __init__(self, payload, route):
        self.payload, self.route = payload, route
        self.waiters: list = []  # the actors waiting for it, in the order they asked
        self.done = False


class _Actor:
    __slots__ = ("code", "simcall", "answer", "name", "alive", "sleeping")

    def __init__(self, code, name):
        self.code, self.name = code, name
        self.simcall = None
        self.answer = None
        self.alive = True
        self.sleeping = None  # its sleep action, while it sleeps (a kill cancels it)


# --------------------------------------------------------------------------- simcalls
# An actor yields one of these tuples; ``yield from send(...)`` etc. read like Batsim's C++.

_SLEEP, _ISEND, _IRECV, _WAIT, _SPAWN, _KILL = range(6)


def sleep(duration: float):
    """``this_actor::sleep_for``: nothing when ``duration <= 0``."""
    if duration > 0:
        yield (_SLEEP, duration)


def send(mailbox: str, payload, route: Route):
    """``Mailbox::put``: an asynchronous send, then a wait until the message arrived."""
    comm = yield (_ISEND, mailbox, payload, route)
    yield (_WAIT, comm)


def receive(mailbox: str):
    """``Mailbox::get``: an asynchronous receive, then a wait; returns the payload."""
    comm = yield (_IRECV, mailbox)
    yield (_WAIT, comm)
    return comm.payload


def spawn(code, name: str = ""):
    """``Engine::add_actor``: the new actor runs in the next sub-round; returns its handle."""
    return (yield (_SPAWN, code, name))


def kill(actor):
    """``Actor::kill``: its sleep is cancelled, it never runs again."""
    yield (_KILL, actor)


class Kernel:
    """The maestro: actors, mailboxes, actions and the clock (``now``, seconds, a double)."""

    def __init__(self):
        self.now = 0.0
        self._to_run: list = []
        self._sleeps = _Sleeps()
        self._messages: list = []  # the messages in flight, in creation order
        self._seq = 0  # actions created so far: SimGrid ends the actions of a step in this order
        self._mailboxes: dict = {}

    # ------------------------------------------------------------------ actors
    def start(self, code, name: str = "") -> _Actor:
        """Create an actor (from outside the actors: Batsim's main creates the first ones)."""
        actor = _Actor(code, name)
        self._to_run.append(actor)
        return actor

    def mailbox_empty(self, name: str) -> bool:
        """``Mailbox::empty``: no message waits there (read directly, as Batsim's server does)."""
        return not self._mailboxes.get(name)

    def run(self) -> None:
        """Run until no actor can run and no action is left (SimGrid's ``EngineImpl::run``)."""
        while True:
            while self._to_run:
                ran, self._to_run = self._to_run, []
                for actor in ran:
                    self._resume(actor)
                for actor in ran:
                    if actor.simcall is not None:
                        self._handle(actor)
            if not self._step():
                return

    def _resume(self, actor: _Actor) -> None:
        if not actor.alive:
            return
        try:
            actor.simcall = actor.code.send(actor.answer)
        except StopIteration:
            actor.simcall = None
            actor.alive = False
        actor.answer = None

    def _ready(self, actor: _Actor, answer=None) -> None:
        if actor.alive:
            actor.answer = answer
            self._to_run.append(actor)

    def _handle(self, actor: _Actor) -> None:
        """Handle one simcall, after the sub-round (SimGrid's ``simcall_handle``)."""
        call, actor.simcall = actor.simcall, None
        kind = call[0]
        if kind == _SLEEP:
            self._seq += 1
            actor.sleeping = self._sleeps.add(self._seq, call[1], lambda: self._woken(actor))
        elif kind == _ISEND:
            self._ready(actor, self._match(call[1], Comm(call[2], call[3]), sending=True))
        elif kind == _IRECV:
            self._ready(actor, self._match(call[1], None, sending=False))
        elif kind == _WAIT:
            comm = call[1]
            if comm.done:
                self._ready(actor)
            else:
                comm.waiters.append(actor)
        elif kind == _SPAWN:
            child = self.start(call[1], call[2])
            self._ready(actor, child)
        elif kind == _KILL:
            self._kill(call[1])
            self._ready(actor)

    def _woken(self, actor: _Actor) -> None:
        actor.sleeping = None
        self._ready(actor)

    def _kill(self, victim: _Actor) -> None:
        if not victim.alive:
            return
        victim.alive = False
        if victim.sleeping is not None:
            self._sleeps.cancel(victim.sleeping)
            victim.sleeping = None
        victim.code.close()

    # ---------------------------------------------------------------- mailboxes
    def _match(self, name: str, comm, *, sending: bool) -> Comm:
        """``CommImpl::isend`` / ``irecv``: take the first pending comm of the other side (and the
        message starts), or queue this one."""
        queue = self._mailboxes.setdefault(name, deque())
        if queue and queue[0][0] != sending:
            _, other = queue.popleft()
            if sending:
                other.payload, other.route = comm.payload, comm.route
            self._transfer(other)
            return other
        if comm is None:
            comm = Comm(None, None)
        queue.append((sending, comm))
        return comm

    def _transfer(self, comm: Comm) -> None:
        """Both sides are there: the message starts (its route's latency, then its byte)."""
        route = comm.route
        self._seq += 1
        self._messages.append(_Message(self._seq, route.latency, route.rate, lambda: self._arrived(comm)))

    def _arrived(self, comm: Comm) -> None:
        comm.done = True
        waiters, comm.waiters = comm.waiters, []
        for actor in waiters:
            self._ready(actor)

    # ------------------------------------------------------------------ actions
    def _step(self) -> bool:
        """One SimGrid step (``EngineImpl::solve`` with the L07 model's FULL update): the clock
        advances by the shortest time an action needs, every action is advanced by as much, and
        the ones over end in the order they were created. False when nothing is left to happen."""
        sleeps, messages = self._sleeps, self._messages
        delta = sleeps.smallest() if sleeps.count else -1.0
        for m in messages:
            value = m.latency if m.latency > 0 else (m.remains / m.rate if m.remains > 0 else 0.0)
            if delta < 0 or value < delta:
                delta = value
        if delta < 0:
            return False
        self.now += delta
        done = sleeps.advance(delta) if sleeps.count else []
        if messages:
            left = []
            for m in messages:
                if m.sending:
                    remains = 0.0 if m.rate == _INSTANT else m.remains - m.rate * delta
                    m.remains = remains = 0.0 if remains < WORK_PRECISION else remains
                    if remains <= 0:
                        done.append((m.seq, m.on_done))
                        continue
                else:  # paying its latency; its byte moves from the next step on
                    latency = m.latency - delta if m.latency > delta else 0.0
                    m.latency = latency = 0.0 if latency < PRECISION else latency
                    if latency <= 0:
                        m.sending, m.rate = True, m.bandwidth
                left.append(m)
            self._messages = left
        if len(done) > 1:
            done.sort(key=lambda item: item[0])
        for _, on_done in done:
            on_done()
        return True


_INSTANT = float("inf")  # the bandwidth of a route without latency (``NO_LATENCY``)
