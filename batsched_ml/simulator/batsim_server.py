"""Batsim's server actor during one run, and the state of that run.

The server receives the actors' messages one at a time (``actors.Network``) and gathers the
events they bring; it sends them to the scheduler only when the scheduler is ready (its
previous reply fully applied) and the mailbox is empty, so events that reach Batsim together
share one message. A reply's decisions come back one by one through a ``Reply`` actor and are
applied with Batsim's rules (checked by ``checks``): ``JOB_COMPLETED`` at the end of a delay job
or at its walltime (``COMPLETED_WALLTIME_REACHED``, also when delay == walltime); ``KILL_JOB``
answered by ``JOB_COMPLETED(COMPLETED_KILLED)`` then ``JOB_KILLED`` (a job that had already
ended is listed without progress); ``CALL_ME_LATER`` strictly in the future, answered by
``REQUESTED_CALL``; dynamic jobs (``REGISTER_PROFILE`` / ``REGISTER_JOB``) when enabled, the
simulation then lasting until ``NOTIFY registration_finished``; ``NOTIFY
no_more_static_job_to_submit`` after the last static submission; ``SIMULATION_ENDS`` once
nothing is left.
"""

from __future__ import annotations

import time
from functools import partial

from ..protocol import events as ev
from ..protocol.coreset import format_mask
from . import checks
from .actors import (BYE, COMPLETED, DECISION, KILLING_DONE, READY, SUBMITTED, WAITING_DONE, Network, Reply, ns,
                     ns_of, stamp)
from .records import SimJob, SimStatus

PROGRESS_EVERY = 500  # messages between two progress reports


class BatsimServer:
    """One run's server: what is running and on which cores, what was submitted and ended,
    the events gathered for the next message, and the scheduler's time. ``simulator`` gives
    the machine, the workloads' jobs and profiles, and registers dynamic jobs."""

    __slots__ = ("simulator", "scheduler", "net", "tracer", "now", "busy", "events", "sched_ready",
                 "registration_open", "ends_sent", "ends_acknowledged", "submitters_left", "nb_submitted",
                 "nb_ended", "nb_running", "nb_registered", "waiters", "killers", "kill_requested",
                 "scheduling_time", "messages", "_progress_at")

    def __init__(self, simulator, scheduler, latency):
        """``scheduler``: any callable ``(now, events) -> (reply_now, decisions)``."""
        self.simulator = simulator
        self.scheduler = scheduler
        self.net = Network(latency)
        self.tracer = None  # the jobs file, opened by Simulator.run
        self.now = 0  # the date reached (ns)
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
    def begin(self, begins: ev.SimulationBegins) -> None:
        """SIMULATION_BEGINS, sent at once (the scheduler is not ready before it answered)."""
        self.events.append(begins)
        self._send(0)
        self.net.start_spawned(0)

    def receive(self, t: int, transit) -> None:
        """The server gets one message: handle it, maybe call the scheduler, wait for the next."""
        _, kind, payload, on_sent = transit
        net = self.net
        if kind == COMPLETED:
            self._on_completed(t, payload)
        elif kind == DECISION:
            self._on_decision(t, payload)
        elif kind == READY:
            self.sched_ready = True
            if self.ends_sent:
                self.ends_acknowledged = True
        elif kind == SUBMITTED:
            seconds = stamp(t)
            for job in payload:
                job.state = "SUBMITTED"
                job.subtime_actual = job.subtime
                self.events.append(ev.JobSubmitted(seconds, job.id, job.data))
            self.nb_submitted += len(payload)
        elif kind == WAITING_DONE:
            self.waiters -= 1
            self.events.append(ev.RequestedCall(stamp(t)))
        elif kind == KILLING_DONE:
            self._on_killing_done(t, payload)
        elif kind == BYE:
            self.submitters_left -= 1
            if self.submitters_left == 0:
                self.events.append(ev.Notify(stamp(t), ev.NO_MORE_STATIC_JOB_TO_SUBMIT))
        # HELLO: nothing to do
        if self.sched_ready and not net.mailbox and not self.ends_acknowledged:
            if self.events:
                self._send(t)
            elif self._finished():
                self.events.append(ev.SimulationEnds(stamp(t)))
                self.ends_sent = True
                self._send(t)
        net.received(t)
        if on_sent is not None:
            on_sent(t)
        net.start_spawned(t)

    def end(self, t: int) -> str | None:
        """After the last message: if SIMULATION_ENDS was never sent, Batsim would wait forever;
        send it now and return why the run could not end (None: it did)."""
        if self.ends_sent:
            return None
        error = None
        if self.registration_open:
            error = ("the scheduler never sent NOTIFY registration_finished although dynamic jobs are "
                     "enabled: Batsim would wait forever (a scheduler that does not use dynamic jobs, "
                     "like batsched, runs without --enable-dynamic-jobs)")
        self.events = [ev.SimulationEnds(t / 1e9)]
        self._call(t)
        return error

    def _finished(self) -> bool:
        return (self.submitters_left == 0 and not self.registration_open
                and self.nb_ended == self.nb_submitted and self.nb_running == 0
                and self.waiters == 0 and self.killers == 0)

    def _send(self, t: int) -> None:
        """One message to the scheduler; its reply is applied by a request-reply actor."""
        self.sched_ready = False
        sent, reply_now, decisions = self._call(t)
        self.net.spawn(Reply(self.net, decisions, reply_now, sent, (t + 500) // 1000 * 1000).step)
        if self.simulator.progress is not None and self.messages - self._progress_at >= PROGRESS_EVERY:
            self._progress_at = self.messages
            self.report_progress()

    def _call(self, t: int):
        events, self.events = self.events, []
        t0 = time.perf_counter()
        now = stamp(t)
        reply_now, decisions = self.scheduler(now, events)
        self.scheduling_time += time.perf_counter() - t0
        self.messages += 1
        checks.check_reply(now, reply_now, decisions)
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
        status(SimStatus(self.now / 1e9, finished, total, self.nb_submitted - self.nb_ended - self.nb_running,
                         self.nb_running, self.messages, final))

    # ------------------------------------------------------------ jobs
    def _on_completed(self, t: int, job: SimJob) -> None:
        # Batsim's return codes: 0 on success, -1 at the walltime.
        code = 0 if job.final_state == ev.COMPLETED_SUCCESSFULLY else -1
        self.events.append(self.record_end(t, job, job.final_state, code))

    def record_end(self, t: int, job: SimJob, state: str, code: int) -> ev.JobCompleted:
        """Write a job that ran and ended, and return its JOB_COMPLETED. The job then keeps its
        allocation as text only: a bitmask costs up to a bit per core of the machine, per job."""
        self.nb_running -= 1
        self.nb_ended += 1
        job.alloc_text = format_mask(job.alloc)
        self.tracer.job_ended(job)
        event = ev.JobCompleted(stamp(t), job.id, state, code, job.alloc_text, job.alloc)
        job.alloc = 0
        return event

    def _job_ends(self, job: SimJob, t: int) -> None:
        """The job's actor wakes up at its end (unless it was killed) and tells the server."""
        if job.state != "RUNNING":
            return
        job.state = job.final_state
        self.busy &= ~job.alloc
        self.net.post(t, self.net.node_to_master, COMPLETED, job, None)

    def _execute(self, d: ev.ExecuteJob, t: int) -> None:
        job = checks.known_job(self.simulator.jobs, d.job_id, "EXECUTE_JOB")
        checks.check_waiting(job, "EXECUTE_JOB")
        mask = d.alloc.mask
        checks.check_execution(job, mask, self.simulator.nb_hosts, self.busy)
        self.busy |= mask
        self.nb_running += 1
        job.state = "RUNNING"
        job.start = t / 1e9
        job.start_ns = t
        job.alloc = mask
        delay = float(job.profile["delay"])
        if 0 <= job.walltime <= delay:
            job.runtime = job.walltime
            job.final_state = ev.COMPLETED_WALLTIME_REACHED
        else:
            job.runtime = delay
            job.final_state = ev.COMPLETED_SUCCESSFULLY
        self.net.wake(t + ns(job.runtime), partial(self._job_ends, job))

    def _on_decision(self, t: int, d) -> None:
        kind = type(d)
        sim = self.simulator
        if kind is ev.ExecuteJob:
            self._execute(d, t)
        elif kind is ev.CallMeLater:
            at = ns_of(d.at)
            checks.check_call_later(at, t, d.at)
            self.waiters += 1
            # Batsim's waiter sleeps at least 10 us.
            self.net.wake(t + max(at - t, 10_000), self._waited)
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
            checks.require_registration(sim.dynamic_jobs, self.registration_open, "REGISTER_JOB")
            workload, _, name = d.job_id.partition("!")
            checks.check_registered_job(d.job_id, d.job)
            sim.profiles.setdefault(workload, {})
            data = dict(d.job)
            data["id"] = name
            job = sim.make_job(workload, data)
            job.state = "SUBMITTED"
            job.subtime_actual = job.subtime
            self.nb_submitted += 1  # Batsim does not echo a JOB_SUBMITTED unless acknowledged
            self.nb_registered += 1
        elif kind is ev.SetJobMetadata:
            checks.known_job(sim.jobs, d.job_id, "SET_JOB_METADATA").metadata = d.metadata
        elif kind is ev.Notify:
            if d.kind == ev.REGISTRATION_FINISHED:
                self.registration_open = False
            elif d.kind == ev.CONTINUE_REGISTRATION:
                checks.require_dynamic(sim.dynamic_jobs, "NOTIFY continue_registration")
                self.registration_open = True
        else:
            raise checks.SimulationError(f"unsupported decision {d!r}")

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
        self.net.spawn(partial(self._kill, jobs, [job.id for job in jobs]))

    def _kill(self, jobs: list, job_ids: list, t: int) -> None:
        """The killer actor: the jobs still running end at ``t``; acknowledged through the mailbox."""
        progress, killed = {}, []
        for job in jobs:
            if job.state != "RUNNING":
                continue  # it ended first: listed without progress
            elapsed = (t - job.start_ns) / 1e9
            delay = float(job.profile["delay"])
            job.runtime = elapsed if elapsed > 0 else 1e-5
            job.state = job.final_state = ev.COMPLETED_KILLED
            self.busy &= ~job.alloc
            killed.append(job)
            progress[job.id] = {"profile_name": job.profile_name,
                                "progress": elapsed / delay if delay > 0 else 1.0}
        self.net.post(t, self.net.loopback, KILLING_DONE, (job_ids, killed, progress), None)

    def _waited(self, t: int) -> None:
        """A call-me-later waiter wakes up and tells the server."""
        self.net.post(t, self.net.loopback, WAITING_DONE, None, None)

    def _on_killing_done(self, t: int, payload) -> None:
        job_ids, killed, progress = payload
        self.killers -= 1
        for job in killed:
            self.events.append(self.record_end(t, job, ev.COMPLETED_KILLED, -1))
        self.events.append(ev.JobKilled(stamp(t), job_ids, progress))
