"""The Batsim lines the simulator follows: 4.2.1 (the default) and 5.0.0-rc2.

Both lines run the same server (``batsim_server``: Batsim's rules) and the same actors with the
same latencies; rc2's job submitter, request-reply actor, killer and call-me-later actors are
4.2.1's. What differs is gathered in one ``BatsimLine`` per release (checked against the frames
recorded with the real rc2, ``golden-v5/transcripts``, and rc2's ``src/``):

* **the SimGrid side** (``platform``): Batsim 4.2.1's runs on exact nanosecond events
  (``actors.EventPlatform``, its dates printed to the microsecond); rc2's on a re-creation of
  SimGrid 4.0's kernel (``actors5.KernelPlatform``): a double clock, SimGrid's actor order, a
  SimulationBeginsEvent sent after the submitters' hellos (rc2 creates them before its server),
  a SimulationEndsEvent one loopback after the end (rc2 first stops its periodic actor);
* **calls**: 4.2.1 takes CALL_ME_LATER's date as sent and aborts unless it is in the future; rc2
  takes a whole number of seconds or milliseconds (the v5 codec asks whole seconds when the date
  is one, else milliseconds rounded up) and answers a date already reached at once;
* **replies**: 4.2.1 aborts on a reply dated before its message; rc2 checks only that each
  decision is dated at most the reply's ``now`` and at least the first decision's (a JSON
  scheduler echoing the 12 decimals rc2 printed is often a sliver early; a sliver late, rc2 waits
  for it: ``simulate --connect --batsim 5`` prints its dates as rc2 does, the in-process run
  passes the exact doubles, as rc2 does to a library scheduler);
* **registered jobs**: 4.2.1 submits them at their ``subtime``; rc2 at the date it reads the
  registration, and answers with a JobSubmittedEvent when the scheduler asked for
  ``acknowledge_dynamic_jobs``; a profile may be named ``workload!name``;
* **outputs**: 4.2.1 writes ``PREFIX_jobs.csv`` and ``PREFIX_schedule.csv``; rc2 adds nothing to
  its prefix (``PREFIXjobs.csv``, ``PREFIXschedule.json``, ``PREFIXreal_exec_info.json``) and
  writes them its way (``outputs.JobsTracer5``).

The decision core sees the same typed events under both lines (what the v5 codec decodes): a
killed or timed-out job's return code is -1 (rc2 writes it as the uint32 4294967295), jobs and
profiles keep their 4.2.1 form (``{"type": "delay"}`` for a DelayProfile).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol.v5.forms import at_of_call, call_time

__all__ = ["BATSIM_4", "BATSIM_5", "LINES", "BatsimLine", "line_of"]


@dataclass(frozen=True)
class BatsimLine:
    """How one Batsim release behaves towards its scheduler, where the two lines differ."""

    name: str  # the release: "4.2.1", "5.0.0-rc2"
    major: int  # what ``--batsim`` takes: 4 or 5
    whole_call_dates: bool  # 5: calls at whole seconds or milliseconds, a date reached answered at once
    reply_may_be_earlier: bool  # 5: a reply's now before the message's is taken (rc2 checks the decisions only)
    registers_at_clock: bool  # 5: a registered job is submitted when Batsim reads it (may be acknowledged)
    file_separator: str  # between the export prefix and a file name: "_" (4) or "" (5)

    def platform(self, latency):
        """The SimGrid side of a run (see the module's docstring)."""
        if self.major == 5:
            from .actors5 import KernelPlatform

            return KernelPlatform(latency)
        from .actors import EventPlatform

        return EventPlatform(latency)

    def call_date(self, at: float) -> float:
        """The date a CALL_ME_LATER at ``at`` asks this Batsim for: under rc2, the OneShot the v5
        codec writes for it (``forms.call_time``), as rc2 reads it back (``forms.at_of_call``)."""
        return at_of_call(*call_time(at)) if self.whole_call_dates else at

    def output(self, prefix: str, name: str) -> str:
        """The path of one output file (``jobs.csv``, ``schedule.csv``...) for an export prefix."""
        return f"{prefix}{self.file_separator}{name}"


BATSIM_4 = BatsimLine("4.2.1", 4, whole_call_dates=False, reply_may_be_earlier=False, registers_at_clock=False,
                      file_separator="_")
BATSIM_5 = BatsimLine("5.0.0-rc2", 5, whole_call_dates=True, reply_may_be_earlier=True, registers_at_clock=True,
                      file_separator="")
LINES = {4: BATSIM_4, 5: BATSIM_5}


def line_of(major) -> BatsimLine:
    """The line ``--batsim`` names (4 or 5; a BatsimLine is returned as it is)."""
    if isinstance(major, BatsimLine):
        return major
    try:
        return LINES[int(major)]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"unknown Batsim line {major!r}: 4 (4.2.1) or 5 (5.0.0-rc2)") from None
