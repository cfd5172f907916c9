"""One Batsim 5 connection, on each side: what a codec must remember between messages.

Batsim 4.2.1's messages stood alone; Batsim 5's lean on the exchange: a JobCompletedEvent does
not repeat the allocation, a RequestedCallEvent names the call it answers, a registered job may
be acknowledged later, the features were settled by the hello. A session is pure (bytes in,
bytes out; no socket): ``serve`` holds an :class:`EDCSession`, ``simulate --connect --batsim 5``
a :class:`BatsimSession`.
"""

from __future__ import annotations

import heapq

from ..encoding import compact_json, number_text
from ..errors import ProtocolError, ProtocolViolation, quote as _q
from ..events import Message, SimulationBegins
from ..members import Invalid
from .batsim_events import EVENT_READERS, EVENT_WRITERS
from .edc_decisions import DECISION_READERS, write_decision
from .envelope import as_printed, bind, event_json, frame, printed, read_message
from .handshake import EDCHello, hello_frame, init_frame, read_hello_frame, read_init_frame

__all__ = ["BatsimSession", "EDCSession"]

BATSIM_TO_EDC, EDC_TO_BATSIM = "Batsim->EDC", "EDC->Batsim"


class EDCSession:
    """``serve``'s side: the handshake, Batsim's frames -> typed events, typed decisions -> replies.

    Its public state is what the readers and writers (:mod:`.batsim_events`,
    :mod:`.edc_decisions`) share: ``features`` (asked in the hello), ``allocations`` (job id ->
    (text, mask) of each job started and not completed), ``unacknowledged`` (job id -> job
    registered, until Batsim confirms it), ``calls`` (call id -> date asked), ``begun``/``ended``.
    """

    def __init__(self, hello: EDCHello):
        self.hello = hello
        self.features = hello.requested_simulation_features
        self.init_data: bytes | None = None
        self.allocations: dict = {}
        self.unacknowledged: dict = {}
        self.calls: dict = {}
        self.begun = False
        self.ended = False
        self.last_now: float | None = None
        self._calls_made = 0
        self._readers = bind(EVENT_READERS, self)

    def handshake(self, raw: bytes) -> bytes:
        """Batsim's init frame -> our hello frame."""
        if self.init_data is not None:
            raise ProtocolViolation("a second Batsim 5 init frame: the handshake is done")
        self.init_data = read_init_frame(raw)
        return hello_frame(self.hello)

    def new_call_id(self) -> str:
        self._calls_made += 1
        return f"c{self._calls_made}"

    def _check_now(self, now: float) -> None:
        last = self.last_now
        if last is not None and now < last:
            raise ProtocolViolation(f"{BATSIM_TO_EDC} message: now={now!r} is earlier than the previous message's "
                                    f"now={last!r} (time never goes back)")
        self.last_now = now

    def decode(self, raw: bytes) -> Message:
        """One Batsim frame -> a message of typed events (ProtocolError / ProtocolViolation)."""
        if self.init_data is None:
            raise ProtocolViolation("Batsim 5 sent a message before its init frame")
        previous = self.last_now
        message = read_message(raw, self._readers, sender=BATSIM_TO_EDC, direction="events", nul=True,
                               on_now=self._check_now)
        events = message.events
        if previous is not None and events and events[0].timestamp < previous:
            raise ProtocolViolation(f"{BATSIM_TO_EDC} message at now={message.now!r}: event #0 ({events[0].type}) has "
                                    f"timestamp {events[0].timestamp!r}, earlier than the previous message's "
                                    f"now={previous!r}", index=0, event_type=events[0].type)
        return message

    def encode(self, message: Message) -> bytes:
        """Typed decisions -> the reply frame (``now`` as given, Batsim's NUL at the end)."""
        decisions = message.events
        if not decisions:
            now = number_text(message.now)
            if now is not None:
                return f'{{"now":{now},"events":[]}}\0'.encode()
        parts = []
        for decision in decisions:
            try:
                etype, body = write_decision(decision, self)
            except Invalid as problem:
                raise ProtocolError(f"cannot answer Batsim 5 at now={message.now!r}: {problem}") from None
            parts.append(event_json(decision.timestamp, etype, body))
        return frame(message.now, parts)


class BatsimSession:
    """Our Batsim peer's side (``simulate --connect --batsim 5``): the init frame, the hello,
    typed events -> frames as rc2 writes them, the decision component's replies -> typed
    decisions, checked as rc2 reads them.

    rc2 writes every real of a JSON message with 12 decimals: the dates and reals of our frames
    are those values (:func:`~.envelope.printed`), so a JSON scheduler reads what it would read
    from rc2 and dates its reply accordingly. The session gives what the decisions left implicit:
    the id of each call that comes due (``call_due``), the profiles for the forwarding features.
    When things happen, the acknowledgement of a registered job included, is the embedded
    simulator's (``simulator.lines.BATSIM_5``)."""

    def __init__(self, init: bytes = b"", *, arguments=(), execution_context: dict | None = None,
                 version: str = "batsched-ml embedded simulator"):
        self.init = init
        self.arguments = list(arguments)
        self.execution_context = compact_json(execution_context or {})
        self.version = version
        self.hello: EDCHello | None = None
        self.features = None
        self.profiles: dict = {}
        self._pending: list = []  # heap of (date, order, call id)
        self._asked = 0
        self._readers = bind(DECISION_READERS, self)

    def init_frame(self) -> bytes:
        return init_frame(self.init)

    def read_hello(self, raw: bytes) -> EDCHello:
        self.hello = read_hello_frame(raw)
        self.features = self.hello.requested_simulation_features
        return self.hello

    # what the readers and writers ask of the session
    def call_asked(self, at: float, call_id: str) -> None:
        self._asked += 1
        heapq.heappush(self._pending, (at, self._asked, call_id))

    def call_due(self, timestamp: float) -> str:
        if not self._pending:
            raise Invalid(f"a call comes due at {timestamp!r} but none was asked for")
        return heapq.heappop(self._pending)[2]

    def profile(self, profile_id: str) -> dict:
        workload, _, name = profile_id.partition("!")
        profile = self.profiles.get(workload, {}).get(name)
        if profile is None:
            raise Invalid(f"profile {_q(profile_id)} is unknown: it cannot be forwarded")
        return profile

    def encode(self, message: Message) -> bytes:
        """Typed events -> one Batsim 5 frame, every real as rc2 prints it, NUL at the end."""
        if self.features is None:
            raise ProtocolError("Batsim 5 peer: no hello read yet")
        parts = []
        for event in message.events:
            if type(event) is SimulationBegins:
                self.profiles = {workload: dict(named) for workload, named in event.profiles.items()}
            writer = EVENT_WRITERS.get(type(event))
            try:
                if writer is None:
                    raise Invalid(f"{event.type} has no Batsim 5 event")
                etype, body = writer(event, self)
            except Invalid as problem:
                raise ProtocolError(f"cannot write {event.type} for a Batsim 5 decision component: {problem}") from None
            parts.append(event_json(printed(event.timestamp), etype, compact_json(as_printed(body))))
        return frame(printed(message.now), parts)

    def decode(self, raw: bytes) -> Message:
        """A reply -> typed decisions, checked as rc2 reads them (each dated at most the reply's
        ``now`` and at least the first decision's; the reply's ``now`` is not compared with the
        message's)."""
        return read_message(raw, self._readers, sender=EDC_TO_BATSIM, direction="decisions", nul=False,
                            after_first=True)
