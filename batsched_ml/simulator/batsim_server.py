"""Batsim's server during one run: its rules and its state, whichever SimGrid runs it.

The server receives the actors' messages one at a time and gathers the events they bring; it
sends them to the scheduler only when the scheduler is ready (its previous reply fully applied)
and no other message waits, so events that reach Batsim together share one message. A reply's
decisions come back one by one and are applied with Batsim's rules (checked by ``checks``):
``JOB_COMPLETED`` at the end of a delay job or at its walltime (``COMPLETED_WALLTIME_REACHED``,
also when delay == walltime); ``KILL_JOB`` answered by ``JOB_COMPLETED(COMPLETED_KILLED)`` then
``JOB_KILLED`` (a job that had already ended is listed without progress); ``CALL_ME_LATER``
answered by ``REQUESTED_CALL``; dynamic jobs (``REGISTER_PROFILE`` / ``REGISTER_JOB``) when
enabled, the simulation then lasting until ``NOTIFY registration_finished``; ``NOTIFY
no_more_static_job_to_submit`` after the last static submission; ``SIMULATION_ENDS`` once
nothing is left. Where Batsim 4.2.1 and 5.0.0-rc2 differ in a rule (calls, registered jobs),
the run's ``lines.BatsimLine`` says.

*When* things happen is the platform's business (the SimGrid side): it runs Batsim's actors,
hands the server their messages (``handle``), asks it whether to call the scheduler
(``next_call``) and starts the actors a decision needs (a job, a waiter, a killer):
``actors.EventPlatform`` for Batsim 4.2.1, ``actors5.KernelPlatform`` for rc2. Dates ``t`` are
in the platform's unit (``platform.seconds(t)`` converts).
"""

from __future__ import annotations

import time

from ..protocol import events as ev
from ..protocol.coreset import format_mask
from . import checks
from .actors import BYE, COMPLETED, DECISION, ENDS, KILLING_DONE, READY, SEND, SUBMITTED, WAITING_DONE
from .records import SimJob, SimStatus

PROGRESS_EVERY = 500  # messages between two progress reports


class BatsimServer:
    """One run's server: what is running and on which cores, what was submitted and ended,
    the events gathered for the next message, and the scheduler's time. ``simulator`` gives
    the machine, the workloads' jobs and profiles, and registers dynamic jobs."""

    __slots__ = ("simulator", "scheduler", "line", "platform", "stamp", "tracer", "now", "busy", "events",
                 "sched_ready", "registration_open", "ends_sent", "ends_acknowledged", "submitters_left",
                 "nb_submitted", "nb_ended", "nb_running", "nb_registered", "waiters", "killers", "kill_requested",
                 "scheduling_time", "messages", "_progress_at")

    def __init__(self, simulator, scheduler, platform):
        """``scheduler``: any callable ``(now, events) -> (reply_now, decisions)``."""
        self.simulator = simulator
        self.scheduler = scheduler
        self.line = simulator.line
        self.platform = platform
        self.stamp = platform.stamp  # a date as the scheduler reads it
        self.tracer = None  # the jobs file, opened by Simulator.run
        self.now = 0  # the date reached (the platform's unit)
        self.busy = 0  # bitmask of the busy cores
        self.events: list = []  # gathered for the next message
        self.sched_ready = False
        self.registration_open = simulator.dynamic_jobs
        self.ends_sent = self.ends_acknowledged = False
        self.submitters_left = len(simulator.static)
        self.nb_submitted = self.nb_ended = self.nb_running = 0
        self.nb_registered = 0  # dynamic jobs (requeued attempts)
        self.waiters = self.killers = 0  # call-me-later and kill actors not done yet
        self.kill_requested: set = set()
        self.scheduling_time = 0.0  # wall seconds spent in the scheduler
        self.messages = 0  # sent to the scheduler
        self._progress_at = 0

    # ------------------------------------------------------------ messages
    def handle(self, t, kind: int, payload) -> None:
        """One message from an actor (``actors``' message kinds), received at ``t``."""
        if kind == COMPLETED:
            self._on_completed(t, payload)
        elif kind == DECISION:
            self._on_decision(t, payload)
        elif kind == READY:
            self.sched_ready = True
            if self.ends_sent:
                self.ends_acknowledged = True
        elif kind == SUBMITTED:
            seconds = self.stamp(t)
            for job in payload:
                job.state = "SUBMITTED"
                job.subtime_actual = job.subtime
                self.events.append(ev.JobSubmitted(seconds, job.id, job.data))
            self.nb_submitted += len(payload)
        elif kind == WAITING_DONE:
            self.waiters -= 1
            self.events.append(ev.RequestedCall(self.stamp(t)))
        elif kind == KILLING_DONE:
            self._on_killing_done(t, payload)
        elif kind == BYE:
            self.submitters_left -= 1
            if self.submitters_left == 0:
                self.events.append(ev.Notify(self.stamp(t), ev.NO_MORE_STATIC_JOB_TO_SUBMIT))
        # HELLO: nothing to do

    def next_call(self, mailbox_empty: bool):
        """What the server does between two messages: ``SEND`` the events gathered, ``ENDS`` (the
        simulation is over: SIMULATION_ENDS), or None (wait for the next message). Only when the
        scheduler is ready and no message waits in the mailbox."""
        if self.sched_ready and mailbox_empty and not self.ends_acknowledged:
            if self.events:
                return SEND
            if not self.ends_sent and self._finished():
                return ENDS
        return None

    def call(self, t):
        """One message to the scheduler (the events gathered): returns ``(now sent, reply now,
        decisions)``, which the platform's request-reply actor brings back one by one."""
        self.sched_ready = False
        sent, reply_now, decisions = self._call(t)
        if self.simulator.progress is not None and self.messages - self._progress_at >= PROGRESS_EVERY:
            self._progress_at = self.messages
            self.report_progress()
        return sent, reply_now, decisions

    def ends(self, t):
        """The simulation is over: SIMULATION_ENDS goes out (``call`` it)."""
        self.ends_sent = True
        self.events.append(ev.SimulationEnds(self.stamp(t)))

    def end(self, t) -> str | None:
        """After the last message: if SIMULATION_ENDS was never sent, Batsim would wait forever;
        send it now and return why the run could not end (None: it did)."""
        if self.ends_sent:
            return None
        error = None
        if self.registration_open:
            error = ("the scheduler never sent NOTIFY registration_finished although dynamic jobs are "
                     "enabled: Batsim would wait forever (a scheduler that does not use dynamic jobs, "
                     "like batsched, runs without --enable-dynamic-jobs)")
        self.events = [ev.SimulationEnds(self.platform.seconds(t))]
        self._call(t)
        return error

    def _finished(self) -> bool:
        return (self.submitters_left == 0 and not self.registration_open
                and self.nb_ended == self.nb_submitted and self.nb_running == 0
                and self.waiters == 0 and self.killers == 0)

    def _call(self, t):
        events, self.events = self.events, []
        t0 = time.perf_counter()
        now = self.stamp(t)
        reply_now, decisions = self.scheduler(now, events)
        self.scheduling_time += time.perf_counter() - t0
        self.messages += 1
        checks.check_reply(now, reply_now, decisions, past_allowed=self.line.reply_may_be_earlier)
        return now, reply_now, decisions

    def report_progress(self, final: bool = False) -> None:
        """``progress.simulation_status(SimStatus)`` when it has that method (see ``batsched_ml.progress``),
        else ``progress(finished jobs, total jobs)``."""
        progress = self.simulator.progress
        if progress is None:
            return
        total = self.simulator.nb_static
        finished = self.nb_ended - self.nb_registered  # a requeued attempt ends its killed one
        if final:
            finished = total
        status = getattr(progress, "simulation_status", None)
        if status is None:
            progress(finished, total)
            return
        status(SimStatus(self.platform.seconds(self.now), finished, total,
                         self.nb_submitted - self.nb_ended - self.nb_running, self.nb_running, self.messages, final))

    # ------------------------------------------------------------ jobs
    def _on_completed(self, t: int, job: SimJob) -> None:
        # Batsim's return codes: 0 on success, -1 at the walltime.
        code = 0 if job.final_state == ev.COMPLETED_SUCCESSFULLY else -1
        self.events.append(self.record_end(t, job, job.final_state, code))

    def record_end(self, t: int, job: SimJob, state: str, code: int) -> ev.JobCompleted:
        """Write a job that ran and ended, and return its JOB_COMPLETED. The job then keeps
        neither its bitmask (up to a bit per core of the machine) nor its allocation's text: its
        row is written, and nothing reads them again (an ended job costs no more per core)."""
        self.nb_running -= 1
        self.nb_ended += 1
        job.alloc_text = format_mask(job.alloc)
        self.tracer.job_ended(job)
        event = ev.JobCompleted(self.stamp(t), job.id, state, code, job.alloc_text, job.alloc)
        job.alloc = 0
        job.alloc_text = ""
        return event

    def job_done(self, job: SimJob) -> bool:
        """The job's actor wakes up at the job's end: False when it was killed first (nothing to
        tell), else the job has ended and its cores are free."""
        if job.state != "RUNNING":
            return False
        job.state = job.final_state
        self.busy &= ~job.alloc
        return True

    def _execute(self, d: ev.ExecuteJob, t) -> None:
        job = checks.known_job(self.simulator.jobs, d.job_id, "EXECUTE_JOB")
        checks.check_waiting(job, "EXECUTE_JOB")
        mask = d.alloc.mask
        checks.check_execution(job, mask, self.simulator.nb_hosts, self.busy)
        self.busy |= mask
        self.nb_running += 1
        job.state = "RUNNING"
        job.start = self.platform.seconds(t)
        job.start_t = t
        job.alloc = mask
        delay = float(job.profile["delay"])
        if 0 <= job.walltime <= delay:
            job.runtime = job.walltime
            job.final_state = ev.COMPLETED_WALLTIME_REACHED
        else:
            job.runtime = delay
            job.final_state = ev.COMPLETED_SUCCESSFULLY
        self.platform.start_job(job, t)

    def _on_decision(self, t: int, d) -> None:
        kind = type(d)
        sim = self.simulator
        if kind is ev.ExecuteJob:
            self._execute(d, t)
        elif kind is ev.CallMeLater:
            self._on_call(d, t)
        elif kind is ev.RejectJob:
            job = checks.known_job(sim.jobs, d.job_id, "REJECT_JOB")
            checks.check_waiting(job, "REJECT_JOB")
            job.state = job.final_state = "REJECTED"
            if d.reason and not job.metadata:
                # the reason travels only in-process (REJECT_JOB has no reason on the wire); it goes
                # where Batsim puts a scheduler's words about a job, the metadata column
                job.metadata = d.reason.replace('"', "'")
            self.nb_ended += 1
            self.tracer.job_ended(job)
        elif kind is ev.KillJob:
            self._on_kill(d)
        elif kind is ev.RegisterProfile:
            checks.require_registration(sim.dynamic_jobs, self.registration_open, "REGISTER_PROFILE")
            profiles = sim.profiles.setdefault(d.workload_name, {})
            checks.check_new_profile(profiles, d.profile_name, sim.profile_reuse)
            profiles[d.profile_name] = d.profile
            sim.registered_profiles.append((d.workload_name, d.profile_name, d.profile))
        elif kind is ev.RegisterJob:
            self._on_register_job(d, t)
        elif kind is ev.SetJobMetadata:
            checks.require_line(self.line, 4, "SET_JOB_METADATA")
            checks.known_job(sim.jobs, d.job_id, "SET_JOB_METADATA").metadata = d.metadata
        elif kind is ev.Notify:
            if d.kind == ev.REGISTRATION_FINISHED:
                self.registration_open = False
            elif d.kind == ev.CONTINUE_REGISTRATION:
                checks.require_line(self.line, 4, "NOTIFY continue_registration")
                checks.require_dynamic(sim.dynamic_jobs, "NOTIFY continue_registration")
                self.registration_open = True
        else:
            raise checks.SimulationError(f"unsupported decision {d!r}")

    def _on_call(self, d: ev.CallMeLater, t: int) -> None:
        """A waiter actor sleeps until the call's date (at least 10 us), then tells the server.
        4.2.1 aborts on a date not in the future; rc2, asked a date already reached, answers at once."""
        line = self.line
        at = self.platform.read_date(checks.call_date(line, d.at))
        if not line.whole_call_dates:
            checks.check_call_later(at, t, d.at)
        self.waiters += 1
        self.platform.start_waiter(at, t)

    def _on_register_job(self, d: ev.RegisterJob, t: int) -> None:
        """A job the scheduler adds (a requeued attempt). 4.2.1 submits it at its ``subtime`` and
        says nothing; rc2 submits it now and, when the scheduler asked for acknowledgements,
        answers with its JOB_SUBMITTED."""
        sim = self.simulator
        checks.require_registration(sim.dynamic_jobs, self.registration_open, "REGISTER_JOB")
        workload, _, name = d.job_id.partition("!")
        data = dict(d.job)
        data["id"] = name
        if self.line.registers_at_clock:
            data["subtime"] = self.stamp(t)
        else:
            checks.check_registered_job(d.job_id, d.job)
        sim.profiles.setdefault(workload, {})
        job = sim.make_job(workload, data)
        job.state = "SUBMITTED"
        job.subtime_actual = job.subtime
        job.registered = True
        self.nb_submitted += 1
        self.nb_registered += 1
        if sim.acknowledge_dynamic_jobs:
            self.events.append(ev.JobSubmitted(self.stamp(t), job.id, job.data))

    def _on_kill(self, d: ev.KillJob) -> None:
        """A killer actor ends the running jobs now and acknowledges once the server is free."""
        jobs = []
        for job_id in d.job_ids:
            job = checks.known_job(self.simulator.jobs, job_id, "KILL_JOB")
            checks.check_killable(job, job_id)
            if job_id not in self.kill_requested:  # Batsim ignores a repeated kill
                self.kill_requested.add(job_id)
                jobs.append(job)
        if not jobs:
            return
        self.killers += 1
        self.platform.start_killer(jobs, [job.id for job in jobs])

    def kill_now(self, jobs, t):
        """The killer actor at ``t``: the jobs still running end (``COMPLETED_KILLED``), their
        cores are free; returns them and their progress (a job that had ended is left out)."""
        progress, killed = {}, []
        for job in jobs:
            if job.state != "RUNNING":
                continue  # it ended first: listed without progress
            elapsed = self.platform.elapsed(t, job)
            delay = float(job.profile["delay"])
            job.runtime = elapsed if elapsed > 0 else self.platform.EPSILON_RUNTIME
            job.state = job.final_state = ev.COMPLETED_KILLED
            self.busy &= ~job.alloc
            killed.append(job)
            progress[job.id] = {"profile_name": job.profile_name,
                                "progress": float(elapsed) / delay if delay > 0 else 1.0}
        return killed, progress

    def _on_killing_done(self, t: int, payload) -> None:
        job_ids, killed, progress = payload
        self.killers -= 1
        for job in killed:
            self.events.append(self.record_end(t, job, ev.COMPLETED_KILLED, -1))
        self.events.append(ev.JobKilled(self.stamp(t), job_ids, progress))
