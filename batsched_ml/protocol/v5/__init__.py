"""Batsim 5 (batprotocol, JSON mode) beside the Batsim 4.2.1 codec.

Batsim 5.0.0-rc2 speaks a new protocol: a binary handshake (:mod:`.handshake`), then one JSON
message per ZeroMQ frame whose events are named ``JobSubmittedEvent``, ``ExecuteJobEvent``...
This package turns those frames into the SAME typed events of :mod:`batsched_ml.protocol.events`
that the 4.2.1 codec produces, and typed decisions back into frames, so the decision core, the
schedulers and the embedded simulator never know which Batsim line is on the other side.

* :mod:`.forms`: the members both directions share (ids, profiles, jobs, allocations, times);
* :mod:`.batsim_events`: what Batsim sends (read by ``serve``, written by our Batsim peer);
* :mod:`.edc_decisions`: what the decision component sends (written by ``serve``, read by the peer);
* :mod:`.envelope`: the message ``{"now", "events": [{"timestamp", "event_type", "event"}]}``
  with its timestamp rules and Batsim's trailing NUL byte;
* :mod:`.sessions`: one connection's state on each side (:class:`~.sessions.EDCSession` for
  ``serve``, :class:`~.sessions.BatsimSession` for ``simulate --connect``).

The facts come from Batsim's ``docs/protocol.rst``, the batprotocol schema and the exchanges
recorded with the real rc2 (``golden-v5/transcripts``).
"""
