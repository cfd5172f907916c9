"""EASY backfilling (Lifka; Mu'alem & Feitelson), structured as batsched's ``easy_bf``.

The head of the queue (the *priority job*) holds a reservation at the earliest
time it fits; any other job may start now if it fits in the profile for its
whole estimated duration, i.e. without delaying that reservation.

Which jobs a pass tries depends on the reservation model:

* ``count`` (textbook EASY, Mu'alem & Feitelson): every waiting job, in the
  pass's order (queue order, or SJBF), against the current head's reservation,
  at every scheduling point. A new arrival may become the head (SPF) and leave
  room for an older job; jobs arriving together are tried in queue order. When
  nothing ended and the head keeps the same reservation, no job that did not fit
  at the previous pass fits now (the profile only moved on in time), so only the
  new arrivals are tried, in the pass's order: the same schedule, for less.
* ``cores`` (batsched's ``easy_bf``, checked on the golden real-Batsim runs):
  when nothing ended since the previous pass only the new arrivals are tried,
  in arrival order; otherwise the whole queue is traversed.

Traversing the queue is a search, not a scan: starting a job only takes cores
away, so a job that does not fit cannot fit later in the pass, and a job of
``n`` cores fits now exactly when its planned end is by the profile's horizon
for ``n`` cores (``Profile.horizons``). The pass therefore asks the queue's
per-size indexes for "the first job, in the pass's order, that ends by the
horizon of its size" (``JobQueue.fit_search``), starts it, and asks again:
O(sizes x log n) per job started instead of reading the queue.
"""

from __future__ import annotations

from ..core.scheduler import Context
from .reserving import ProfileScheduler


class EasyBackfilling(ProfileScheduler):
    name = "easy"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.priority = None
        self._last_plan = None  # the head and its reservation when the previous pass ended

    def _ensure_priority(self, ctx: Context) -> None:
        """Give the (possibly new) head of the queue its reservation, starting it if it fits now."""
        queue, profile, now = self.queue, self.profile, ctx.now
        head = queue.first(now)
        if head is self.priority and (head is None or head in profile):
            return
        if self.priority is not None and self.priority is not head:
            profile.remove_if_present(self.priority)
        while head is not None:
            profile.remove_if_present(head)
            placement = profile.add_first_fit(head, self.span(head))
            if not placement.started_now:
                break
            self.start(ctx, head, placement)
            head = queue.first(now)
        self.priority = head

    def reestimate_running(self, job, now: float) -> None:
        """A running job will hold its cores longer: only the priority job's reservation can
        move. If it stays put nothing else changes (a longer job frees nothing), so the
        next pass need not traverse the queue; if it moves later, more jobs may backfill."""
        profile, head = self.profile, self.priority
        old = profile.placed.get(head) if head is not None else None
        if old is not None:
            end = job.start_time + self.span(job)
            if end <= old.start or now >= old.end:
                # outside the reservation: it stays valid, and stays the first fit
                self._replace_running(job, now)
                return
            profile.remove(head)
        self._replace_running(job, now)
        if head is None:
            return
        new = profile.add_first_fit(head, self.span(head))
        if old is None or new is None or new.start != old.start or new.used != old.used:
            self._dirty = True

    def correction_window(self):
        """A correction matters only if the job's longer occupancy reaches into the priority
        job's reservation (it may then move, and more jobs backfill); with an empty queue,
        none does. Time-dependent orders or a starvation threshold may change the head at
        any pass, so there every correction gets its call."""
        if self.queue.policy.dynamic or self.starvation_threshold is not None:
            return super().correction_window()
        head = self.priority
        if head is None:
            return None
        placement = self.profile.placed.get(head)
        if placement is None:
            return super().correction_window()
        return placement.start - self.rjms_delay, placement.end

    def schedule(self, ctx: Context) -> None:
        if self._reads_whole_queue(self._begin_pass(ctx)):
            self._backfill_queue(ctx)
            self._ensure_priority(ctx)
        else:
            self._backfill(ctx, self._new_arrivals(ctx.now))
        self.end_pass(ctx)

    def end_pass(self, ctx: Context) -> None:
        super().end_pass(ctx)
        if self.reservations == "count":
            self._last_plan = self._plan()

    def _plan(self):
        """The head job and where its reservation is (None without a head)."""
        placement = self.profile.placed.get(self.priority) if self.priority is not None else None
        return None if placement is None else (self.priority, placement.start, placement.used)

    def _reads_whole_queue(self, full_pass: bool) -> bool:
        """Whether this pass must try every waiting job, not only the new arrivals: after a
        completion or a changed estimate (``full_pass``); in textbook EASY (``count``) also
        when the head or its reservation changed since the previous pass (a new head may
        leave room for older jobs), while batsched (``cores``) then still reads only the
        new arrivals."""
        return full_pass or (self.reservations == "count" and self._plan() != self._last_plan)

    def _begin_pass(self, ctx: Context) -> bool:
        """Bring the profile to now and plan the head job; True for a full pass (a job
        ended or an estimate changed), where the head's reservation is planned afresh
        (otherwise it is still its first fit: the previous pass ended by placing it so)."""
        self.refresh_profile(ctx.now)
        full_pass = bool(self._ended) or self._dirty
        if full_pass and self.priority is not None:
            self.profile.remove_if_present(self.priority)
        self._ensure_priority(ctx)
        return full_pass

    def _new_arrivals(self, now: float) -> list:
        """The jobs queued since the previous pass, but the head job: in queue order (textbook
        EASY), or in arrival order in batsched's model (its ``recently_queued_jobs``)."""
        jobs = [j for j in self._released if j in self.queue and j is not self.priority]
        return jobs if self.reservations == "cores" or len(jobs) < 2 else self.queue.in_queue_order(jobs, now)

    def _backfill(self, ctx: Context, candidates) -> None:
        """Start the ``candidates`` (read lazily, in the given order; SJBF re-sorts them) that
        fit now without delaying the priority job; stop reading as soon as no core is free."""
        profile, priority = self.profile, self.priority
        available = profile.available_now()
        # (cores, span) of the candidates that did not fit. Starting jobs only takes cores
        # away, so a job at least as wide and as long as one of them cannot fit either:
        # the profile is not searched for it (most of a long queue, on big machines).
        failed: list = []
        smallest = self.queue.smallest_request()
        for job in self.backfill_candidates(candidates, ctx.now):
            if available < smallest or available <= 0:
                break
            res = job.res
            if res > available or job is priority:
                continue
            span = self.span(job)
            if failed and _dominated(failed, res, span):
                continue
            used = profile.fits_now(job, span)
            if used is None:
                failed[:] = [(r, s) for r, s in failed if r < res or s < span]
                failed.append((res, span))
                if self._none_can_fit(available, failed, priority):
                    break
                continue
            placement = profile.place(job, ctx.now, ctx.now + span, used)
            self.start(ctx, job, placement)
            available -= res
            smallest = self.queue.smallest_request()

    def _backfill_queue(self, ctx: Context) -> None:
        """A full pass: start, in the pass's order, every queued job that fits now without
        delaying the priority job."""
        search = self.queue.fit_search(ctx.now, self.backfill_order)
        if search is None:  # an order that changes with time: read the queue, only the sizes that may fit
            sizes = set(self._sizes_that_may_fit())
            if sizes:
                self._backfill(ctx, (job for job in self.queue.iter_ordered(ctx.now) if job.res in sizes))
            return
        profile, queue, priority, delay = self.profile, self.queue, self.priority, self.rjms_delay
        while True:
            available = profile.available_now()
            if available <= 0 or available < queue.smallest_request():
                return
            # the longest estimate that may fit, by size (a hair generous: ``fits_now`` decides)
            origin = profile.origin
            limits = [(n, end - origin - delay + 1e-12 * (end + abs(origin) + delay) + 1e-9)
                      for n, end in profile.horizon_steps()]
            job = search.next(available, limits, exclude=priority)
            if job is None:
                return
            span = self.span(job)
            used = profile.fits_now(job, span)
            if used is None:  # only a job within the hair of its limit
                search.reject(job)
                continue
            self.start(ctx, job, profile.place(job, ctx.now, ctx.now + span, used))

    def sizes_fitting_for(self, duration: float) -> list:
        """The requested sizes of queued jobs that could start now and hold their cores for
        ``duration`` seconds without delaying the priority job's reservation."""
        horizon = self.profile.horizons()
        end = self.profile.origin + duration + self.rjms_delay
        sizes = []
        for res, _ in self.queue.shortest_by_size(self.profile.available_now(), exclude=self.priority):
            if end > horizon(res):  # and for every larger size: fewer cores are free longer
                break
            sizes.append(res)
        return sizes

    def start_for(self, ctx: Context, job, duration: float) -> bool:
        """Start the queued ``job`` now if it fits for ``duration`` seconds, shorter than its
        estimate, without delaying the priority job: for a caller that stops it by then (the
        classification's speculative backfilling kills it). False if it does not fit."""
        if job is self.priority or job not in self.queue:
            return False
        span = duration + self.rjms_delay
        used = self.profile.fits_now(job, span)
        if used is None:
            return False
        self.start(ctx, job, self.profile.place(job, ctx.now, ctx.now + span, used))
        return True

    def _sizes_that_may_fit(self) -> list:
        """The requested sizes whose shortest queued job (the priority job aside) may start
        now: its cores are counted free from now until it would end. Others cannot
        backfill, so the pass does not read them (in a burst, most of the queue)."""
        horizon = self.profile.horizons()
        origin, delay = self.profile.origin, self.rjms_delay
        return [res for res, estimate in self.queue.shortest_by_size(self.profile.available_now(),
                                                                     exclude=self.priority)
                if origin + (estimate + delay) <= horizon(res)]

    def _none_can_fit(self, available: int, failed: list, priority) -> bool:
        """Every queued job (but the priority job) is at least as wide and as long as one that
        did not fit: the rest of the pass would only skip jobs (a long queue of wide or long
        jobs on a busy machine)."""
        delay = self.rjms_delay
        for res, estimate in self.queue.shortest_by_size(available, exclude=priority):
            if not _dominated(failed, res, estimate + delay):
                return False
        return True


def _dominated(failed: list, res: int, span: float) -> bool:
    for r, s in failed:
        if r <= res and s <= span:
            return True
    return False
