"""Conservative backfilling: every queued job holds a reservation (batsched ``conservative_bf``).

When nothing ended, new arrivals are inserted at their earliest fit and
existing reservations stay. When cores were released (or estimates changed, or
a reservation's start has come), the schedule is compressed by re-inserting
every queued job, one at a time in queue order, at its earliest fit, as
batsched does.

Two rules keep that from stalling. A job whose reservation has begun starts
now on its reservation even when its earliest fit is later: re-placed for its
whole estimate from a slightly later ``now`` (a job that ended a few
microseconds late, a clock stamped to the microsecond), it would overlap the
next reservation by that much and fall behind it, while jobs re-planned
before it were anchored on its old reservation. And when no running job is
planned to end before the earliest reservation, the scheduler asks to be
called then (``wake_at_next_reservation``), so a quiet machine is revisited.

Compressing costs a first-fit search per queued job, and a burst of n jobs
makes n compressions of up to n jobs over O(n) slices (issue 13 section 2).
With the counting model, re-inserting a job changes nothing unless it fits
earlier than its reservation: ``CountProfile.earlier_fit`` answers that without
touching the profile, and each search starts where the pass's earlier searches
proved that nothing fits (``NoFitBefore``). With batsched's model the job must
also keep its cores (``CoreProfile.reinsertion``). The result is exactly the
re-insertion's (tests/test_profile_search.py). Even so a burst needs about
0.4 n^2 moves, so with the counting model a long queue is planned by a compiled
pass (``compression/``, numba), with the same schedules: from ``COMPILED_FROM``
queued jobs on, back to Python below ``COMPILED_UNTIL`` (short queues, the common
case, never pay numba's import). With batsched's model, from ``CORES_COMPILED_FROM``
queued jobs on a machine of ``CORES_COMPILED_MACHINE`` cores or more, the profile's masks
become rows of machine words searched by compiled kernels (``ArrayCoreProfile``) and one
compiled call passes over the reservations that stay and moves those that fit earlier in the
future (``_scanned_pass``), with the same schedules: it searches a reservation again only when
the cores freed since it was last found to be its own first fit could move it
(``core_kernels.scan``, ``scan_moving``). Option ``compiled``: true/false
forces either, in both models.
"""

from __future__ import annotations

import math
from operator import attrgetter

import numpy as np

from ..core.scheduler import Context
from . import compression
from .array_profile import ArrayCountProfile
from .core_arrays import ArrayCoreProfile
from .kept_order import KeptOrder
from .profile import Placement
from .reserving import ProfileScheduler


COMPILED_FROM = 256  # queued jobs from which the counting model's pass runs compiled
COMPILED_UNTIL = 64  # ... and below which it goes back to Python
CORES_COMPILED_FROM = 16  # the same for batsched's model (``ArrayCoreProfile``) ...
CORES_COMPILED_UNTIL = 4
CORES_COMPILED_MACHINE = 512  # ... on machines of this many cores or more (on smaller ones a mask is a
# few words, which Python's ints handle faster than numba's calls, and numba's loading is not paid back)


class ConservativeBackfilling(ProfileScheduler):
    name = "conservative"

    def __init__(self, policy=None, reservations="count", starvation_threshold=None, estimator=None,
                 rjms_delay=None, compiled: bool | None = None):
        """``compiled``: None (default) runs the counting model's pass compiled for long
        queues, True always, False never (same schedules). No
        ``backfill_order``: every queued job is re-placed in queue order."""
        if not (compiled is None or isinstance(compiled, bool)):
            raise ValueError(f"compiled must be true, false or null (automatic), got {compiled!r}")
        super().__init__(policy=policy, reservations=reservations, starvation_threshold=starvation_threshold,
                         estimator=estimator, rjms_delay=rjms_delay)
        self.compiled = compiled
        self._table = compression.ReservationTable()  # queued jobs' reservations while compiled
        self._queue_seqs = QueueSeqs()
        self._first_queued_end = math.inf  # earliest end of a reservation in ``_table``
        self._in_arrays = False  # queued reservations in ``_table`` (compiled), else in the profile
        self._levels = None

    def on_simulation_begins(self, nb_cores: int, ctx: Context) -> None:
        super().on_simulation_begins(nb_cores, ctx)
        self._levels = compression.levels(nb_cores)

    def schedule(self, ctx: Context) -> None:
        if self.reservations == "cores":
            self._cores_profile_for_queue()
            if isinstance(self.profile, ArrayCoreProfile):
                self._scanned_pass(ctx)
                return
        elif self.compiled is None:
            if not self._in_arrays and len(self.queue) >= COMPILED_FROM:
                self._to_arrays()
            elif self._in_arrays and len(self.queue) < COMPILED_UNTIL:
                self._to_profile()
        elif self.compiled and not self._in_arrays:
            self._to_arrays()
        if self._in_arrays:
            self._compiled_pass(ctx)
            return
        now, profile = ctx.now, self.profile
        self.refresh_profile(now)
        candidates = self.pass_candidates(now)
        counted = self.reservations == "count"
        bounds = NoFitBefore()
        for job in candidates:
            reserved = profile.placed.get(job)
            span = self.span(job)
            # a future reservation planned for the job's current span: re-placing it may change nothing
            future = reserved is not None and reserved.start > now and reserved.end == reserved.start + span
            if future and counted:
                # re-placing it is a no-op unless it fits earlier (most of a long queue)
                lowest, shortest = bounds.lowest_start(job.res, span, reserved.start)
                start, longest = profile.earlier_fit(job, span, lowest)
                if start is None:
                    bounds.note(job.res, max(shortest, longest), reserved.start)
                    self.note_reservation(reserved)
                    continue
                profile.remove(job)
                placement = profile.place(job, start, start + span, job.res)
                vacated = max(reserved.start, placement.end)
                if vacated < reserved.end:
                    bounds.freed(vacated, profile.most_free(vacated, reserved.end))
                bounds.note(job.res, max(shortest, longest), start)
            elif future:
                # batsched's model: the same, and the job must also keep its cores (no bounds:
                # they serve the counting model's searches only)
                moved = profile.reinsertion(job, span)
                if moved is None:
                    self.note_reservation(reserved)
                    continue
                start, used = moved
                profile.remove(job)
                placement = profile.place(job, start, start + span, used)
            else:
                if reserved is not None:
                    bounds.freed(reserved.start, math.inf)
                profile.remove_if_present(job)
                placement = profile.add_first_fit(job, span)
            self.settle(ctx, job, placement, reserved)
        self.wake_at_next_reservation(ctx)
        self.end_pass(ctx)

    def pass_candidates(self, now: float) -> list:
        """The jobs this pass places, in queue order: the whole queue when ``compressing``
        (every reservation is planned again), else the new arrivals."""
        if self.compressing(now):
            self._next_reservation = math.inf
            return self.queue.ordered(now)
        return self.new_arrivals(now)

    def new_arrivals(self, now: float) -> list:
        """The jobs queued since the last pass. With the counting model (the papers'), in queue
        order, as a reservation is given to each waiting job in turn: when several arrive at
        one instant the first in the queue is placed first. batsched (``cores``) places them
        in the order they were released, and so do we there."""
        arrivals = [j for j in self._released if j in self.queue]
        return arrivals if self.reservations == "cores" else self.queue.in_queue_order(arrivals, now)

    def compressing(self, now: float) -> bool:
        """Whether this pass re-plans the whole queue: a job ended, an estimate changed or
        a reservation's start has come (else only the new arrivals are placed)."""
        return bool(self._ended) or self._dirty or self.reservation_due(now)

    def settle(self, ctx: Context, job, placement, reserved) -> None:
        """Start ``job`` if its new placement begins now, or if its previous reservation
        ``reserved`` has begun (see the module docstring); else record its reservation."""
        now, profile = ctx.now, self.profile
        if not placement.started_now and reserved is not None and reserved.start <= now < reserved.end:
            profile.remove(job)
            placement = profile.place(job, now, reserved.end, reserved.used)
        if placement.started_now:
            self.start(ctx, job, placement)
        else:
            self.note_reservation(placement)

    # ------------------------------------------------------- compiled pass
    def _cores_profile_for_queue(self) -> None:
        """batsched's model: the profile with compiled searches (``ArrayCoreProfile``) for a
        queue of ``CORES_COMPILED_FROM`` jobs or more on a machine of ``CORES_COMPILED_MACHINE``
        cores or more, back to ``CoreProfile`` below ``CORES_COMPILED_UNTIL`` (or as
        ``compiled`` forces)."""
        arrays = isinstance(self.profile, ArrayCoreProfile)
        wanted = self.compiled
        if wanted is None:
            queued = len(self.queue)
            wanted = self.profile.nb_cores >= CORES_COMPILED_MACHINE and (
                queued >= CORES_COMPILED_FROM or (arrays and queued >= CORES_COMPILED_UNTIL))
        if wanted and not arrays:
            self.profile = ArrayCoreProfile.from_lists(self.profile)
        elif arrays and not wanted:
            self.profile = self.profile.to_lists()

    def _scanned_pass(self, ctx: Context) -> None:
        """The pass above in batsched's model, with ``ArrayCoreProfile``: one compiled call
        (``scan_moving``) passes over the reservations that stay as they are (most of a long queue)
        and moves those that fit earlier in the future (as ``move`` and ``confirm`` below); it stops
        at each candidate that starts now or has no future reservation, which is placed here as
        above and ``confirm``-ed as its first fit (what lets ``scan`` skip it later)."""
        now, profile = ctx.now, self.profile
        self.refresh_profile(now)
        candidates = self.pass_candidates(now)
        spans = self.spans(candidates)
        arrays = profile.candidates(candidates, spans)
        q = 0
        while q < len(candidates):
            q, code, moved, most, earliest, _ = profile.scan_moving(q, now, candidates, spans, arrays)
            self._next_reservation = min(self._next_reservation, earliest)  # ``note_reservation``, moves included
            if q == len(candidates):
                break
            job, span = candidates[q], float(spans[q])
            reserved = profile.placed.get(job)
            if moved is not None:
                start, used = moved
                placement = profile.move(job, start, start + span, used)
            else:
                profile.remove_if_present(job)
                placement = profile.add_first_fit(job, span)
                most = None  # no bound known on the windows before it
            self.settle(ctx, job, placement, reserved)
            if not placement.started_now and profile.placed.get(job) is placement:
                profile.confirm(job, most)  # a reservation at its first fit
            q += 1
        self.wake_at_next_reservation(ctx)
        self.end_pass(ctx)

    def _compiled_pass(self, ctx: Context) -> None:
        """The pass above, run by ``compression.compress`` on arrays; the queued jobs'
        reservations stay in ``_table`` (not in ``profile.placed``)."""
        now, profile, table, order = ctx.now, self.profile, self._table, self._queue_seqs
        self.refresh_profile(now)
        queue = self.queue
        arrivals = self.new_arrivals(now)
        for job in arrivals:
            table.add(job.seq, job.res, self.span(job))
            order.add(job)
        compressing = self.compressing(now)
        if compressing:
            seqs = order.current(queue, now)
            self._next_reservation = self._first_queued_end = math.inf
        else:  # only the new arrivals, in queue order
            seqs = np.array([j.seq for j in arrivals], dtype=np.int64)
        if len(seqs):
            if self.estimator is not None:  # estimates only change while jobs run: keep in step anyway
                table.span[seqs] = [self.span(order.jobs[seq]) for seq in seqs.tolist()]
            profile.times, profile.free, started, ends, first_start, first_end = compression.compress(
                profile.times, profile.free, seqs, table, self._levels)
            for index, end in zip(started, ends):
                job = order.jobs[int(seqs[index])]
                order.started(job)
                self.start(ctx, job, profile.adopt(job, now, end, job.res))
            if compressing and started:
                order.drop_positions(started)
            self._next_reservation = min(self._next_reservation, first_start)
            self._first_queued_end = min(self._first_queued_end, first_end)
        self.wake_at_next_reservation(ctx)
        self.end_pass(ctx)

    def _to_arrays(self) -> None:
        """Move the queued jobs' reservations from the profile's placements to ``_table``
        (their cores stay taken in the slices), the slices to arrays."""
        self.profile = ArrayCountProfile.from_lists(self.profile)
        placed, table, released = self.profile.placed, self._table, set(self._released)
        self._queue_seqs = order = QueueSeqs()
        self._first_queued_end = math.inf
        for job in self.queue.ordered(self.profile.origin):
            if job in released:
                continue  # the pass registers the new arrivals
            table.add(job.seq, job.res, self.span(job))
            order.add(job)
            placement = placed.pop(job, None)
            if placement is not None:
                table.start[job.seq], table.end[job.seq] = placement.start, placement.end
                self._first_queued_end = min(self._first_queued_end, placement.end)
        self._in_arrays = True

    def _to_profile(self) -> None:
        """Move the queued jobs' reservations from ``_table`` back to profile placements,
        the slices back to lists."""
        profile = self.profile
        for job, reserved in self._take_table_reservations():
            profile.adopt(job, *reserved, job.res)
        self._in_arrays = False
        self.profile = profile.to_lists()

    def _take_table_reservations(self):
        """``(job, (start, end))`` of each queued job with a reservation in ``_table``, in queue
        order, each removed from the table as it is read."""
        table = self._table
        for job in self.queue.ordered(self.profile.origin):
            reserved = table.reserved(job.seq)
            if reserved is not None:
                table.drop(job.seq)
                yield job, reserved
        self._first_queued_end = math.inf

    def queued_overdue(self, now: float) -> bool:
        return self._first_queued_end <= now

    def _drop_reservations(self) -> None:
        super()._drop_reservations()
        if self._in_arrays:
            for job, reserved in self._take_table_reservations():
                self.profile.release(Placement(*reserved, job.res, False))


class NoFitBefore:
    """What one pass has learnt from its searches: "from no start before ``x`` do ``n``
    cores stay free for ``d`` seconds or longer" (a search that reached ``x`` tried every
    earlier start, and the longest stretch it met was shorter than ``d``). That holds for
    more cores or a longer time too, and reserving cores keeps it true. Freeing cores from
    time ``a`` on, leaving at most ``m`` free there, can only lengthen stretches of ``m``
    cores or fewer that reach ``a``: the bounds of ``n <= m`` move back to ``a - d``. The
    search for a job of ``n`` cores for ``d`` seconds starts at the best bound."""

    KEPT = 16  # the latest bounds
    SLACK = 1e-6  # float slack on stretch lengths: ``a - b`` and ``b + d`` round differently

    def __init__(self):
        self._bounds: list = []  # (n, d, x)

    def freed(self, a: float, most: float) -> None:
        """Cores were freed from ``a`` on, leaving at most ``most`` free there."""
        slack = self.SLACK
        self._bounds = [(n, d, x) if n > most or x + d <= a else (n, d, a - d - slack)
                        for n, d, x in self._bounds]

    def lowest_start(self, n: int, d: float, reserved_from: float) -> tuple[float, float]:
        """``(x, dx)``: the search for a job of ``n`` cores for ``d`` seconds, reserved from
        ``reserved_from`` on (taking it out frees its cores from then on), may start at
        ``x``, a bound that holds for ``dx`` seconds or longer (-inf, 0: from the start)."""
        best, shortest = -math.inf, 0.0
        for nb, db, x in self._bounds:
            if x > best and nb <= n and db <= d and x + db <= reserved_from:
                best, shortest = x, db
        return best, shortest

    def note(self, n: int, longest: float, x: float) -> None:
        """No start before ``x`` keeps ``n`` cores free for longer than ``longest``."""
        bounds = self._bounds
        bounds.append((n, longest * (1 + 1e-12) + self.SLACK, x))
        if len(bounds) > self.KEPT:
            del bounds[0]


class QueueSeqs(KeptOrder):
    """The queue's order as an array of ``Job.seq``, for the compiled pass, kept from pass
    to pass (``KeptOrder``), and the queued jobs by seq."""

    def __init__(self):
        super().__init__(attrgetter("seq"))
        self.jobs: dict = {}  # seq -> queued job

    def add(self, job) -> None:
        self.jobs[job.seq] = job
        self.arrived(job)

    def started(self, job) -> None:
        del self.jobs[job.seq]
