"""batsched's model of specific cores (``CoreProfile``) against its plain definition (issue 23 §5).

``CoreProfile`` keeps each slice's number of free cores beside its mask, filters windows by
those counts, intersects masks through a two-stack window queue that skips starts known to
fail, and answers "does a reservation keep its cores?" from the cores below its highest:
all so that its cost does not grow with the machine. batsched fidelity needs the very same
cores, so a reference profile here does what the code did before (every window intersected
slice by slice, every popcount taken), and both are driven through the same random
operations on machines of hundreds to thousands of cores, with reservations enough to
fragment the free cores: every answer, every slice and every count must agree.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right

import numpy as np
import pytest

from batsched_ml.protocol.coreset import lowest_bits
from batsched_ml.scheduling import core_kernels
from batsched_ml.scheduling.core_arrays import ArrayCoreProfile, chunks_kept
from batsched_ml.scheduling.core_profile import CoreProfile


def _plain_lowest_bits(mask: int, count: int) -> int:
    """The ``count`` lowest set bits, one bit at a time."""
    out, bit = 0, 0
    while count > 0 and mask >> bit:
        if mask >> bit & 1:
            out |= 1 << bit
            count -= 1
        bit += 1
    return out


class _PlainCoreProfile(CoreProfile):
    """The searches as they were written before the counts (the definition, slice by slice)."""

    def _free_throughout(self) -> list:
        common, out = self.free[0], []
        for free in self.free:
            common &= free
            out.append(common.bit_count())
        return out

    def _find(self, n, duration, first_only=False, *, starts=None, own=0, own_size=0):
        times, free = self.times, self.free
        last = len(times)
        stop = (1 if first_only else last) if starts is None else starts
        for i in range(stop):
            avail = free[i]
            if avail.bit_count() < n:
                continue
            end = (self.origin if i == 0 else times[i]) + duration
            k = i + 1
            while k < last and times[k] < end:
                avail &= free[k] if k < stop else free[k] | own
                if avail.bit_count() < n:
                    break
                k += 1
            else:
                return i, _plain_lowest_bits(avail, n)
        return None

    def reinsertion(self, job, duration):
        placed = self.placed[job]
        start, own = placed.start, placed.used
        times, free, n = self.times, self.free, job.res
        earlier = self._find(n, duration, starts=bisect_left(times, start), own=own)
        if earlier is not None:
            i, used = earlier
            return (self.origin if i == 0 else times[i]), used
        last = len(times)
        k = bisect_right(times, start) - 1
        avail = free[k] | own
        k += 1
        while k < last and times[k] < placed.end:
            avail &= free[k] | own
            k += 1
        used = _plain_lowest_bits(avail, n)
        return None if used == own else (start, used)


class _Job:
    def __init__(self, seq, res):
        self.seq, self.res = seq, res

    def __repr__(self):
        return f"job{self.seq}x{self.res}"


def _same_state(fast: CoreProfile, plain: CoreProfile) -> None:
    arrays = isinstance(fast, ArrayCoreProfile)
    masks = fast.masks() if arrays else fast.free
    assert (fast.times.tolist() if arrays else fast.times) == plain.times
    assert masks == plain.free
    assert list(fast.counts) == [mask.bit_count() for mask in masks]
    if arrays:  # the chunk counts (kept in step by ``take``/``give_back``) are the masks' too
        chunks = fast.cpool.copy()
        core_kernels.recount(fast.pool, chunks, fast.rows)
        assert (chunks[fast.rows] == fast.cpool[fast.rows]).all()
    assert fast.available_now() == plain.free[0].bit_count()
    assert fast.horizon_steps() == plain.horizon_steps()


def _scanned_pass(fast: ArrayCoreProfile, plain: CoreProfile, jobs: dict) -> None:
    """The conservative pass as ``ConservativeBackfilling._scanned_pass`` makes it: ``scan`` passes
    over the reservations it finds unmoved (each must be unmoved by the plain re-insertion too) and
    stops at each one that moves (to where the plain re-insertion puts it)."""
    pending = [seq for seq in sorted(jobs) if fast.placed[jobs[seq][0]].start > fast.origin]
    arrays = fast.candidates([jobs[seq][0] for seq in pending], [jobs[seq][2] for seq in pending])
    q = 0
    while q < len(pending):
        stop, code, moved, most, _ = fast.scan(q, fast.origin, arrays)
        for seq in pending[q:stop]:
            assert plain.reinsertion(jobs[seq][1], jobs[seq][2]) is None
        if stop == len(pending):
            return
        assert code in (1, 2)
        a, b, duration = jobs[pending[stop]]
        start, words = moved  # the cores as words (``WordsPlacement``'s)
        used = int.from_bytes(words.tobytes(), "little")
        assert (start, used) == plain.reinsertion(b, duration)
        fast.move(a, start, start + duration, words)  # compiled in ``ArrayCoreProfile``
        plain.move(b, start, start + duration, used)
        fast.confirm(a, most)
        q = stop + 1


def _time_passes(rng, now: float, jobs: dict, first, second) -> float:
    """The present moves on in both profiles: jobs that ended leave (``jobs``: seq -> (job of
    ``first``, job of ``second``, duration)). Returns the new present."""
    now += rng.choice([0.5, 1.0, 2.5, 7.0])
    for seq in sorted(jobs):
        a, b, _ = jobs[seq]
        if first.placed[a].end <= now:
            del jobs[seq]
            first.remove(a)
            second.remove(b)
    for profile in (first, second):
        assert not profile.overdue(now)
        profile.update_first_slice(now)
    return now


def _random_run(seed: int, steps: int = 200, fast_profile=CoreProfile, scanned: bool = False) -> None:
    """Random first fits, placements now, removals, moves of reservations (as the conservative
    pass makes them) and advances of the present, applied to both profiles. ``scanned``: the
    passes by ``ArrayCoreProfile.scan`` (``_scanned_pass``), which skips the reservations that
    nothing freed since their last check can move."""
    rng = random.Random(seed)
    cores = rng.choice([64, 300, 1000, 4096] + [3000, 8192] * scanned)
    now = 0.0
    fast, plain = fast_profile(cores, now), _PlainCoreProfile(cores, now)
    jobs: dict = {}  # seq -> (fast job, plain job, duration)
    for step in range(steps):
        action = rng.random()
        if action < 0.45 or not jobs:
            res = max(1, min(cores, int(cores ** rng.random())))
            duration = rng.choice([1.0, 2.5, 5.0, 10.0, 0.5 * rng.randint(1, 80)])
            a, b = _Job(step, res), _Job(step, res)
            first_only = rng.random() < 0.2
            assert fast.fits_now(a, duration) == plain.fits_now(b, duration)
            if first_only:
                used = fast.fits_now(a, duration)
                if used is not None:
                    fast.place(a, now, now + duration, used)
                    plain.place(b, now, now + duration, used)
                    jobs[step] = (a, b, duration)
            else:
                got, expected = fast.add_first_fit(a, duration), plain.add_first_fit(b, duration)
                assert (got is None) == (expected is None)
                if got is not None:
                    assert (got.start, got.end, got.used) == (expected.start, expected.end, expected.used)
                    jobs[step] = (a, b, duration)
                    if scanned and rng.random() < 0.8:
                        fast.confirm(a)  # its first fit (else never checked: searched in full)
        elif action < 0.6:
            seq = rng.choice(sorted(jobs))
            a, b, _ = jobs.pop(seq)
            fast.remove(a)
            plain.remove(b)
        elif action < 0.85 and scanned:
            _scanned_pass(fast, plain, jobs)
        elif action < 0.85:  # the conservative pass: every future reservation, in order
            for seq in sorted(jobs):
                a, b, duration = jobs[seq]
                placed = fast.placed[a]
                if placed.start <= fast.origin or placed.end != placed.start + duration:
                    continue
                moved = fast.reinsertion(a, duration)
                assert moved == plain.reinsertion(b, duration)
                if moved is not None:
                    start, used = moved
                    for profile, job in ((fast, a), (plain, b)):
                        profile.move(job, start, start + duration, used)
        else:
            now = _time_passes(rng, now, jobs, fast, plain)
        _same_state(fast, plain)


@pytest.mark.parametrize("seed", range(50))
def test_core_profile_gives_the_cores_of_the_plain_searches(seed):
    _random_run(seed)


@pytest.mark.parametrize("seed", range(50))
def test_compiled_core_profile_gives_the_cores_of_the_plain_searches(seed):
    """``ArrayCoreProfile`` (masks as words, compiled searches: the cores model's compiled pass)
    through the same operations: same answers, slices and counts."""
    _random_run(seed, fast_profile=ArrayCoreProfile)


@pytest.mark.parametrize("seed", range(30))
def test_scanned_passes_move_what_the_plain_reinsertions_move(seed):
    """``scan`` skips the reservations that the cores freed since their last check cannot have
    moved (its log of freed intervals, its bound on the earlier windows) and folds only the
    chunks with a core free throughout: every reservation it passes over stays under the plain
    re-insertion too, and each one it stops at moves where the plain one moves it."""
    _random_run(1000 + seed, steps=250, fast_profile=ArrayCoreProfile, scanned=True)


def test_compiled_core_profile_converts_both_ways():
    profile = CoreProfile(200, 0.0)
    job = _Job(0, 70)
    profile.add_first_fit(job, 10.0)
    arrays = ArrayCoreProfile.from_lists(profile)
    assert arrays.masks() == profile.free and arrays.placed == profile.placed
    arrays.add_first_fit(_Job(1, 50), 4.0)
    back = arrays.to_lists()
    assert type(back) is CoreProfile and back.free == arrays.masks() and back.times == arrays.times.tolist()
    assert back.counts == arrays.counts.tolist() and back.placed is arrays.placed


@pytest.mark.parametrize("seed", range(40))
def test_lowest_bits_is_the_lowest_set_bits(seed):
    rng = random.Random(seed)
    for _ in range(200):
        size = rng.choice([1, 7, 64, 300, 5000])
        mask = rng.getrandbits(size) & (rng.getrandbits(size) if rng.random() < 0.5 else -1)
        count = rng.randint(0, mask.bit_count() + 2)
        assert lowest_bits(mask, count) == _plain_lowest_bits(mask, count)
        assert lowest_bits(mask, count, mask.bit_count()) == _plain_lowest_bits(mask, count)


@pytest.mark.parametrize("seed", range(20))
def test_chunk_mask_marks_the_chunks_holding_a_core(seed):
    """``core_kernels.chunk_mask`` (logged with each freed interval: ``scan`` looks for a
    reservation's lower cores only in the chunks that the frees since its last check touched)
    against its definition on Python ints: bit c set exactly when one of cores
    ``[1024 c, 1024 (c + 1))`` is in the mask, on machines of more than 64 chunks too."""
    rng = random.Random(seed)
    cores = rng.choice([64, 3000, 70_000, 93_312])
    nwords = (cores + 63) // 64
    nchunks = -(-nwords // core_kernels.CHUNK)
    span = 64 * core_kernels.CHUNK
    for _ in range(20):
        first = rng.randrange(cores)
        used = (rng.getrandbits(rng.randint(1, 3000)) | 1) << first & ((1 << cores) - 1)
        words = np.frombuffer(used.to_bytes(8 * nwords, "little"), dtype=np.uint64)
        mask = np.full(-(-nchunks // 64), np.uint64(12345), dtype=np.uint64)  # overwritten
        core_kernels.chunk_mask(words, mask)
        expected = sum(1 << c for c in range(nchunks) if (used >> (span * c)) & ((1 << span) - 1))
        assert int.from_bytes(mask.tobytes(), "little") == expected


@pytest.mark.parametrize("seed", range(20))
def test_free_around_is_where_one_of_the_freed_cores_stays_free(seed):
    """``core_kernels.free_around`` (logged at each free, it lets ``scan`` count freed cores only for
    the windows they can serve) against its definition, slice by slice on Python ints: the first
    slice after the freed interval where none of the cores is free, and the last one before."""
    rng = random.Random(seed)
    cores = rng.choice([64, 300, 3000])
    profile = ArrayCoreProfile(cores, 0.0)
    for seq in range(rng.randint(5, 60)):
        profile.add_first_fit(_Job(seq, max(1, int(cores ** rng.random()))), rng.choice([1.0, 2.5, 0.5 * rng.randint(1, 40)]))
    times, masks, reach = profile.times.tolist(), profile.masks(), core_kernels.AROUND
    nwords = (cores + 63) // 64
    for _ in range(30):
        i = rng.randrange(len(times))
        j = rng.randint(i + 1, len(times))
        used = rng.getrandbits(cores) & rng.getrandbits(cores) or 1
        words = np.frombuffer(used.to_bytes(8 * nwords, "little"), dtype=np.uint64)
        pre, ext = core_kernels.free_around(profile.times, profile.pool, profile.rows, i, j, words)
        expected_ext, common = math.inf, used
        for k in range(j, min(len(times), j + reach)):
            common &= masks[k]
            if not common:
                expected_ext = times[k]
                break
        expected_pre, common = -math.inf, used
        for k in range(i - 1, max(i - 1 - reach, -1), -1):
            common &= masks[k]
            if not common:
                expected_pre = times[k + 1]
                break
        assert (pre, ext) == (expected_pre, expected_ext)


def _twins(seed: int, core_choices: list):
    """A seeded random source and two empty ``ArrayCoreProfile``s of a machine size drawn from it."""
    rng = random.Random(seed)
    cores = rng.choice(core_choices)
    return rng, cores, ArrayCoreProfile(cores, 0.0), ArrayCoreProfile(cores, 0.0)


def _assert_same_profiles(fast, twin) -> None:
    """The twins hold the same slices, counts and placements."""
    assert fast.times.tolist() == twin.times.tolist() and fast.masks() == twin.masks()
    assert fast.counts.tolist() == twin.counts.tolist()
    assert [(p.start, p.end, p.used, p.started_now) for p in fast.placed.values()] == \
        [(p.start, p.end, p.used, p.started_now) for p in twin.placed.values()]


def _driven(rng, cores: int, fast, twin, jobs: dict, steps: int = 300):
    """A random driver of both twins: each step draws ``action``; this adds or removes a job
    (``_add_or_remove_on_twins``) and yields ``(step, action)`` for the caller's own moves."""
    for step in range(steps):
        action = rng.random()
        if not _add_or_remove_on_twins(rng, action, step, cores, fast, twin, jobs):
            yield step, action


def _add_or_remove_on_twins(rng, action: float, step: int, cores: int, fast, twin, jobs: dict) -> bool:
    """Below 0.45 (or with no job) a random job at its first fit in both twins, below 0.55 a random
    job removed from both; False (nothing done) otherwise."""
    if action < 0.45 or not jobs:
        res = max(1, min(cores, int(cores ** rng.random())))
        duration = rng.choice([1.0, 2.5, 5.0, 0.5 * rng.randint(1, 80)])
        a, b = _Job(step, res), _Job(step, res)
        if fast.add_first_fit(a, duration) is not None:
            assert twin.add_first_fit(b, duration) is not None
            jobs[step] = (a, b, duration)
            fast.confirm(a)
            twin.confirm(b)
        return True
    if action < 0.55:
        a, b, _ = jobs.pop(rng.choice(sorted(jobs)))
        fast.remove(a)
        twin.remove(b)
        return True
    return False


@pytest.mark.parametrize("seed", range(20))
def test_moves_inside_scan_are_those_of_scan_then_move(seed):
    """``ArrayCoreProfile.scan_moving`` (the moves to a future start made in the compiled call)
    against ``scan`` then ``move`` then ``confirm`` on a twin, pass after pass: the same answers
    where it stops, the same placements (in the same order), slices and counts after every pass,
    and so the same later passes (which read the bounds and log that the moves wrote)."""
    rng, cores, fast, twin = _twins(seed, [64, 600, 3000])
    now = 0.0
    jobs: dict = {}  # seq -> (fast job, twin job, duration)
    inside = 0
    for step, action in _driven(rng, cores, fast, twin, jobs):
        if action < 0.9:
            pending = [seq for seq in sorted(jobs) if fast.placed[jobs[seq][0]].start > fast.origin]
            spans = [jobs[seq][2] for seq in pending]
            fast_jobs, twin_jobs = [jobs[seq][0] for seq in pending], [jobs[seq][1] for seq in pending]
            arrays = fast.candidates(fast_jobs, spans), twin.candidates(twin_jobs, spans)
            q = r = 0
            while q < len(pending):
                q, code, moved, most, _, placements = fast.scan_moving(q, fast.origin, fast_jobs, spans, arrays[0])
                inside += len(placements)
                while True:  # the twin moves one at a time up to where ``scan_moving`` stopped
                    r, twin_code, twin_moved, twin_most, _ = twin.scan(r, twin.origin, arrays[1])
                    if r >= q:
                        break
                    start, words = twin_moved
                    twin.move(twin_jobs[r], start, start + spans[r], words)
                    twin.confirm(twin_jobs[r], twin_most)
                    r += 1
                assert r == q
                if q == len(pending):
                    break
                assert (code, most) == (twin_code, twin_most) and _with_int_cores((0, 0, moved, 0, 0)) == \
                    _with_int_cores((0, 0, twin_moved, 0, 0))
                start, words = moved
                for profile, job, m in ((fast, fast_jobs[q], most), (twin, twin_jobs[q], twin_most)):
                    profile.move(job, start, start + spans[q], words)
                    profile.confirm(job, m)
                q = r = q + 1
        else:
            now = _time_passes(rng, now, jobs, fast, twin)
        _assert_same_profiles(fast, twin)
        assert [job.seq for job in fast.placed] == [job.seq for job in twin.placed]
        assert _scan_bookkeeping(fast) == _scan_bookkeeping(twin)
    assert inside > 0


def _scan_bookkeeping(profile: ArrayCoreProfile) -> tuple:
    """What ``scan`` reads of each placement, by job seq (white box: when it was last found at
    its first fit, its bound and the bound's steps), and the log's length."""
    rows = profile._owned_rows
    return {job.seq: (int(profile._checked[r]), int(profile._bound[r]), profile._steps_t[r, :profile._nsteps[r]].tolist(),
                      profile._steps_m[r, :profile._nsteps[r]].tolist()) for job, r in rows.items()}, profile._log_count


def test_no_fit_bounds_keep_the_latest_in_order():
    """``core_kernels.note_no_fit`` (a pass's "no window of n cores for d s before x" bounds, which
    ``scan``'s searches start after): once full, each new bound drops the oldest, and every column
    (cores, seconds, x) shifts with it."""
    kept_at_most = 16
    nofit, kept = np.zeros((3, kept_at_most)), 0
    for b in range(40):
        kept = core_kernels.note_no_fit(nofit, kept, 100 + b, 10.0 + b, 1000.0 + b)
        latest = range(max(0, b + 1 - kept_at_most), b + 1)
        assert kept == len(latest)
        assert nofit[:, :kept].tolist() == [[100 + a for a in latest], [10.0 + a for a in latest],
                                            [1000.0 + a for a in latest]]


def test_a_moved_reservation_makes_its_cores_int_only_when_read(monkeypatch):
    """``ArrayCoreProfile.move`` with words keeps them (``WordsPlacement``): no int mask is made by
    the move nor by the reservation's removal (its words are given back), one when ``used`` is
    read, and it is the words' mask; the slices are those of a twin moved with the int."""
    made = []
    mask_of = ArrayCoreProfile._mask
    monkeypatch.setattr(ArrayCoreProfile, "_mask", staticmethod(lambda words: made.append(1) or mask_of(words)))
    cores = 3000
    fast, twin = ArrayCoreProfile(cores, 0.0), ArrayCoreProfile(cores, 0.0)
    for profile in (fast, twin):
        profile.place(_Job(0, 2000), 0.0, 10.0, (1 << 2000) - 1)  # running until 10
        profile.place(_Job(1, 100), 20.0, 30.0, ((1 << 100) - 1) << 2500)
    used = ((1 << 100) - 1) << 2100  # free from 0 on: the reservation moves to 5 on other cores
    words = np.frombuffer(used.to_bytes(8 * ((cores + 63) // 64), "little"), dtype=np.uint64)
    moved = fast.move(_first_job(fast, 1), 5.0, 15.0, words)
    twin.move(_first_job(twin, 1), 5.0, 15.0, used)
    assert made == []
    assert fast.masks() == twin.masks()  # (``masks`` makes ints of the slices' words)
    made.clear()
    assert moved.used == used and moved.used == used and len(made) == 1  # made once, then kept
    fast.move(_first_job(fast, 1), 6.0, 16.0, words)
    twin.move(_first_job(twin, 1), 6.0, 16.0, used)
    made.clear()
    fast.remove(_first_job(fast, 1))
    twin.remove(_first_job(twin, 1))
    assert made == []
    assert fast.masks() == twin.masks() and fast.counts.tolist() == twin.counts.tolist()


def _first_job(profile, seq: int):
    """The placed job of ``profile`` with this ``seq``."""
    return next(job for job in profile.placed if job.seq == seq)


def _with_int_cores(found: tuple) -> tuple:
    """``ArrayCoreProfile.scan``'s answer with the cores of ``moved`` as an int mask."""
    q, code, moved, most, earliest = found
    if moved is not None:
        moved = moved[0], int.from_bytes(moved[1].tobytes(), "little")
    return q, code, moved, most, earliest


def _pass_arrays(fast, twin, jobs: dict) -> tuple[list, list]:
    """The reservations a pass re-examines (those not starting now, in queue order) and the scan
    arrays of each twin for them."""
    pending = [seq for seq in sorted(jobs) if fast.placed[jobs[seq][0]].start > fast.origin]
    spans = [jobs[seq][2] for seq in pending]
    return pending, [p.candidates([jobs[seq][i] for seq in pending], spans) for i, p in ((0, fast), (1, twin))]


@pytest.mark.parametrize("seed", range(20))
def test_compiled_move_is_remove_then_place(seed):
    """``ArrayCoreProfile.move`` (one compiled call) against ``remove`` then ``place`` on a twin
    profile: after every move the same slices, counts, placements, and the same answers of every
    later ``scan`` (which read the log of freed intervals and the reservations' words that the
    move writes)."""
    rng, cores, fast, twin = _twins(seed, [64, 300, 3000])
    now = 0.0
    jobs: dict = {}  # seq -> (fast job, twin job, duration)
    moves = 0
    for step, action in _driven(rng, cores, fast, twin, jobs):
        if action < 0.9:  # a pass: every reservation ``scan`` stops at moves, by ``move`` or by remove + place
            pending, arrays = _pass_arrays(fast, twin, jobs)
            q = 0
            while q < len(pending):
                found = fast.scan(q, fast.origin, arrays[0])
                assert _with_int_cores(found) == _with_int_cores(twin.scan(q, twin.origin, arrays[1]))
                q, code, moved, most, _ = found
                if q == len(pending):
                    break
                a, b, duration = jobs[pending[q]]
                start, words = moved
                fast.move(a, start, start + duration, words)
                CoreProfile.move(twin, b, start, start + duration, int.from_bytes(words.tobytes(), "little"))
                moves += 1
                fast.confirm(a, most)
                twin.confirm(b, most)
                q += 1
        else:
            now = _time_passes(rng, now, jobs, fast, twin)
        _assert_same_profiles(fast, twin)
        assert all(type(p.start) is float for p in fast.placed.values())
    assert moves > 0


class _PythonReleaseProfile(ArrayCoreProfile):
    """``ArrayCoreProfile`` releasing as ``CoreProfile`` does: splits, ``_give_back`` (with its
    log entry) and the merge, each from Python."""

    def release(self, p) -> None:
        CoreProfile.release(self, p)


def _log(profile) -> list:
    """The log of freed intervals and the pass's "no fit before" bounds, as lists."""
    e = profile._log_count - profile._log_base
    return [profile._log_count, profile._log_a[:e].tolist(), profile._log_b[:e].tolist(), profile._log_n[:e].tolist(),
            profile._log_pre[:e].tolist(), profile._log_ext[:e].tolist(), profile._log_chunks[:e].tolist(),
            profile._nofit.tolist(), profile._kept.tolist()]


@pytest.mark.parametrize("seed", range(12))
def test_compiled_release_is_the_python_release(seed):
    """``ArrayCoreProfile.release`` (one compiled call) against ``CoreProfile.release`` on a twin,
    through random first fits, removals, passes and advances of time: after every step the same
    slices, counts, placements, log entries and "no fit before" bounds, and the same answers of
    every ``scan`` (which reads them)."""
    rng = random.Random(seed)
    cores = rng.choice([64, 300, 3000])
    fast, twin = ArrayCoreProfile(cores, 0.0), _PythonReleaseProfile(cores, 0.0)
    now = 0.0
    jobs: dict = {}  # seq -> (fast job, twin job, duration)
    released = 0
    for step, action in _driven(rng, cores, fast, twin, jobs):
        if action < 0.8:  # a pass: it notes "no fit before" bounds, which a release retreats
            pending, arrays = _pass_arrays(fast, twin, jobs)
            q = 0
            while q < len(pending):
                found = fast.scan(q, fast.origin, arrays[0])
                assert _with_int_cores(found) == _with_int_cores(twin.scan(q, twin.origin, arrays[1]))
                q = found[0] + 1
        else:
            released += sum(fast.placed[jobs[seq][0]].end <= now + 7.0 for seq in jobs)
            now = _time_passes(rng, now, jobs, fast, twin)
        _assert_same_profiles(fast, twin)
        assert _log(fast) == _log(twin)
    assert released > 0 and fast._log_count > 0


@pytest.mark.parametrize("cores, kept", [(512, 1), (4096, 4), (8192, 16), (8193, 16), (93312, 96)])
def test_padded_chunk_counts_stay_zero(cores, kept):
    """From 8 chunks on, a row keeps whole vector steps of chunk counts (``chunks_kept``); the
    extra counts hold no core and stay 0 through placements, moves, removals and passes (a
    non-zero one would loosen every chunk bound and point the folds at words that are not there)."""
    nwords = -(-cores // 64)
    assert chunks_kept(nwords, core_kernels.CHUNK) == kept
    real = -(-nwords // core_kernels.CHUNK)
    rng, profile = random.Random(cores), ArrayCoreProfile(cores, 0.0)
    jobs = []
    for step in range(40):
        job = _Job(step, max(1, int(cores ** rng.random())))
        if profile.add_first_fit(job, rng.choice([1.0, 2.5, 7.0])) is not None:
            profile.confirm(job)
            jobs.append(job)
        if step % 5 == 4:
            profile.remove(jobs.pop(rng.randrange(len(jobs))))
    assert profile.cpool.shape[1] == len(profile._scratch[4]) == profile._owned_cc.shape[1] == kept
    assert not profile.cpool[:, real:].any() and not profile._owned_cc[:, real:].any()
    assert profile.cpool[profile.rows, :real].sum(axis=1).tolist() == profile.counts.tolist()
