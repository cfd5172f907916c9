"""``CoreProfile`` with its masks as rows of 64-bit words, searched by compiled kernels
(``core_kernels``): the profile of conservative backfilling's compiled pass in batsched's model
(``--reservations cores``) for long queues.

On a big machine a Python mask is thousands of digits (93,312 cores: 3,110), and the searches
of a conservative pass make a new one at every intersection: a run of 1,000 jobs spent 18 CPU s
there. Here each slice's free cores are a row of ``pool`` (``rows[k]``: slice ``k``'s row, its
own: a split copies it), changed in place by the kernels, and only a placement's cores cross
between the two forms (a Python int mask in ``Placement.used``, as ``CoreProfile`` keeps it; a
reservation that a pass moves keeps its words, ``WordsPlacement``, and makes the int only when read).
Same slices, same counts, same answers as ``CoreProfile``, operation for operation
(``tests/test_core_profile_counts.py``).

It also logs where and how many cores it frees (``_give_back``), and keeps for each reservation
when it was last found to be its own first fit and a bound on the cores free in the windows
before it then: ``scan`` passes over a reservation that what was freed since cannot have moved
without searching (see ``core_kernels.scan``).
"""

from __future__ import annotations

from itertools import repeat

import numpy as np

from .core_profile import CoreProfile
from .profile import INF, Placement


def _kernels():
    """``core_kernels``, imported on first use: numba's import and cache loading (about a
    second) are paid only by runs that switch to this profile; numba loads without its BLAS
    probe (``numba_loading``), as before any first compiled call."""
    from .numba_loading import load_numba_without_blas

    load_numba_without_blas()
    from . import core_kernels

    return core_kernels


def _inserted(array: np.ndarray, i: int, value) -> np.ndarray:
    """``np.insert(array, i, value)`` for one value, without its generic argument handling
    (a fifth of the pass's Python time went there)."""
    out = np.empty(len(array) + 1, dtype=array.dtype)
    out[:i] = array[:i]
    out[i] = value
    out[i + 1:] = array[i:]
    return out


_ARRAYS = ("_k", "_nwords", "pool", "cpool", "rows", "_spare", "_nspare", "_scratch", "_owned", "_owned_spare",
           "_owned_rows", "_recent", "_owned_cc", "_checked", "_bound", "_steps_t", "_steps_m", "_nsteps", "_log_a", "_log_b", "_log_n", "_log_pre", "_log_ext", "_log_chunks", "_log_base",
           "_log_count", "_nofit", "_kept", "_res_starts", "_res_ends", "_res_cores", "_moved_q", "_moved_start")  # what ``ArrayCoreProfile`` adds to ``CoreProfile``

# a chunk's free cores (at most ``CHUNK`` * 64 = 1,024, 2,048 with a reservation's own): int16
# halves the memory the chunk counts' folds read, and doubles the lanes per vector step
CHUNK_COUNT = np.int16
VECTOR_CHUNKS = 16  # int16 chunk counts per vector step (32 bytes)


def chunks_kept(nwords: int, chunk: int) -> int:
    """How many chunk counts a row keeps for ``nwords`` words: one per ``chunk`` words, rounded up
    to whole vector steps from 8 chunks on (8,192 cores: 16 counts, 93,312: 96), the extra ones
    always 0 (no core: they change no bound). A fold of 8 counts left entirely to the scalar
    remainder of the vectorized loop cost 40% more than the padded 16 (micro-benchmark)."""
    nchunks = -(-nwords // chunk)
    return nchunks if nchunks < 8 else -(-nchunks // VECTOR_CHUNKS) * VECTOR_CHUNKS
RECENT_MASKS = 8  # masks whose words ``_words`` remembers
# the arrays with a row per placement (``_owned_rows``), with what a new row holds until it is set
OWNED_ROWS = (("_owned", 0), ("_owned_cc", 0), ("_checked", -1), ("_bound", 0), ("_steps_t", 0),
              ("_steps_m", 0), ("_nsteps", 0), ("_res_starts", np.nan), ("_res_ends", np.nan), ("_res_cores", 0))
FREED_LOG = 1024  # freed intervals kept; when full the log starts again (every reservation is then searched once)
NO_FIT_KEPT = 16  # the latest "no fit before" bounds kept for ``scan``


class WordsPlacement(Placement):
    """A placement whose cores are words (read-only), the Python int mask (``used``) made only
    when read: a pass moves a reservation many times (115k moves in a 10,000-job run on 93,312
    cores) and its cores as an int of 93,312 bits are read only when it starts or leaves the
    arrays (a conversion of about 10 us each)."""

    __slots__ = ("words", "_used")

    def __init__(self, start, end, words: np.ndarray, started_now):
        self.start, self.end, self.started_now = start, end, started_now
        self.words, self._used = words, None

    @property
    def used(self) -> int:
        if self._used is None:
            self._used = ArrayCoreProfile._mask(self.words)
        return self._used


class ArrayCoreProfile(CoreProfile):
    """``CoreProfile`` whose slices are arrays (``times``, ``counts``, ``rows`` into ``pool``)."""

    def __init__(self, nb_cores: int, now: float = 0.0):
        self.__dict__.update(self.from_lists(CoreProfile(nb_cores, now)).__dict__)

    @classmethod
    def from_lists(cls, profile: CoreProfile) -> "ArrayCoreProfile":
        """The same profile (placements, end heap, present) with its masks as words."""
        copy = cls.__new__(cls)
        copy.__dict__.update(profile.__dict__)
        copy._k = _kernels()
        copy._nwords = nwords = max(1, (profile.nb_cores + 63) // 64)
        copy._recent = {}
        length = len(profile.times)
        copy.times = np.array(profile.times, dtype=np.float64)
        copy.counts = np.array(profile.counts, dtype=np.int64)
        copy.pool = np.zeros((max(64, 2 * length), nwords), dtype=np.uint64)
        for k, mask in enumerate(profile.free):
            copy.pool[k] = copy._words(mask)
        copy.rows = np.arange(length, dtype=np.int64)
        copy._spare = np.empty(len(copy.pool), dtype=np.int64)  # free rows of ``pool``, a stack
        copy._nspare = len(copy.pool) - length
        copy._spare[:copy._nspare] = np.arange(len(copy.pool) - 1, length - 1, -1)
        nchunks = chunks_kept(nwords, copy._k.CHUNK)
        copy.cpool = np.zeros((len(copy.pool), nchunks), dtype=CHUNK_COUNT)
        copy._k.recount(copy.pool, copy.cpool, copy.rows)
        copy._scratch = (np.empty((len(copy.pool), nwords), dtype=np.uint64), np.empty(nwords, dtype=np.uint64),
                         np.empty(nwords, dtype=np.uint64), np.empty((len(copy.pool), nchunks), dtype=CHUNK_COUNT),
                         np.empty(nchunks, dtype=CHUNK_COUNT), np.zeros(nchunks, dtype=CHUNK_COUNT),
                         np.empty(copy._k.STEPS), np.empty(copy._k.STEPS, dtype=np.int64), np.zeros(1, dtype=np.int64),
                         np.empty(nchunks, dtype=np.int64), np.zeros(nchunks, dtype=np.bool_))  # ``find``'s
        del copy.free
        copy._log_a, copy._log_b = np.empty(FREED_LOG), np.empty(FREED_LOG)
        copy._log_pre, copy._log_ext = np.empty(FREED_LOG), np.empty(FREED_LOG)
        copy._log_n = np.empty(FREED_LOG, dtype=np.int64)
        copy._log_chunks = np.empty((FREED_LOG, -(-nchunks // 64)), dtype=np.uint64)  # a bit per chunk freed in
        copy._nofit = np.zeros((3, NO_FIT_KEPT))  # ``scan``'s bounds "no window of n cores for d s before x"
        copy._kept = np.zeros(1, dtype=np.int64)  # how many
        copy._log_base = copy._log_count = 0  # entry e of the log at e - _log_base
        copy._moved_q, copy._moved_start = np.empty(64, dtype=np.int64), np.empty(64)  # ``scan_moving``'s moves
        copy._owned = np.zeros((max(64, 2 * len(copy.placed)), nwords), dtype=np.uint64)
        copy._owned_cc = np.zeros((len(copy._owned), nchunks), dtype=CHUNK_COUNT)
        copy._checked = np.full(len(copy._owned), -1, dtype=np.int64)
        copy._bound = np.zeros(len(copy._owned), dtype=np.int64)
        copy._steps_t = np.empty((len(copy._owned), copy._k.STEPS))
        copy._steps_m = np.empty((len(copy._owned), copy._k.STEPS), dtype=np.int64)
        copy._nsteps = np.zeros(len(copy._owned), dtype=np.int64)
        copy._res_starts, copy._res_ends = np.full(len(copy._owned), np.nan), np.full(len(copy._owned), np.nan)
        copy._res_cores = np.zeros(len(copy._owned), dtype=np.int64)  # the job's ``res``, for ``candidates``
        copy._owned_spare = list(range(len(copy._owned) - 1, -1, -1))
        copy._owned_rows = {}
        for job, placement in copy.placed.items():
            copy._keep_owned(job, placement.used)
        return copy

    def to_lists(self) -> CoreProfile:
        """The same profile with its masks as Python ints (``CoreProfile``)."""
        copy = CoreProfile.__new__(CoreProfile)
        copy.__dict__.update({k: v for k, v in self.__dict__.items()
                              if k not in _ARRAYS})
        copy.times, copy.counts, copy.free = self.times.tolist(), self.counts.tolist(), self.masks()
        return copy

    # -- the two forms of a set of cores
    def _words(self, mask) -> np.ndarray:
        """``mask`` as words (read-only; words are returned as they are). A move converts the same
        cores three times (given back, taken, kept), each a copy of a machine-wide integer: the
        latest few are remembered, by the identity of the (immutable) int, which the memo holds so
        it cannot be reused."""
        if isinstance(mask, np.ndarray):
            return mask
        known = self._recent.get(id(mask))
        if known is not None and known[0] is mask:
            return known[1]
        return self._remember(mask, np.frombuffer(mask.to_bytes(8 * self._nwords, "little"), dtype=np.uint64))

    def _remember(self, mask: int, words: np.ndarray) -> np.ndarray:
        words.flags.writeable = False
        recent = self._recent
        recent[id(mask)] = (mask, words)
        if len(recent) > RECENT_MASKS:
            del recent[next(iter(recent))]
        return words

    @staticmethod
    def _mask(words: np.ndarray) -> int:
        return int.from_bytes(words.tobytes(), "little")

    def masks(self) -> list:
        """Each slice's free cores as a Python int mask (``CoreProfile.free``)."""
        return [self._mask(self.pool[r]) for r in self.rows.tolist()]

    # -- each placement's cores as words (``_owned[_owned_rows[job]]``) and their chunk counts (``_owned_cc``),
    # for ``scan``, with the log's
    # length when it was last found to be its first fit (``_checked``, -1: never) and the bound then
    # on its earlier windows (``_bound``; as steps over their start: ``_steps_t``, ``_steps_m``, ``_nsteps``)
    def _keep_owned(self, job, used: int) -> None:
        row = self._owned_rows.get(job)
        if row is None:
            if not self._owned_spare:
                size = len(self._owned)
                for name, fill in OWNED_ROWS:  # every per-placement array doubles
                    array = getattr(self, name)
                    setattr(self, name, np.concatenate([array, np.full_like(array, fill)]))
                self._owned_spare = list(range(2 * size - 1, size - 1, -1))
            row = self._owned_rows[job] = self._owned_spare.pop()
            self._res_cores[row] = job.res
        self._owned[row] = self._words(used)
        self._k.chunk_counts(self._owned[row], self._owned_cc[row])
        self._checked[row] = -1
        self._nsteps[row] = 0

    def confirm(self, job, most: int | None = None) -> None:
        """``job``'s reservation was just placed at its first fit (``add_first_fit``, or where
        the last ``scan`` found it, with its bound ``most`` and the steps of that bound; None:
        unknown)."""
        row = self._owned_rows[job]
        self._checked[row] = self._log_count
        self._bound[row] = job.res - 1 if most is None else most
        steps_t, steps_m, nsteps = self._scratch[6:9]  # the last scan's steps (``core_kernels.find``)
        steps = 0 if most is None else int(nsteps[0])
        self._nsteps[row] = steps
        self._steps_t[row, :steps] = steps_t[:steps]
        self._steps_m[row, :steps] = steps_m[:steps]

    def _next_log_entry(self) -> int:
        """The index of the freed-log entry about to be written (the caller then counts it in
        ``_log_count``); a full log starts again, so every reservation checked before is searched
        in full."""
        if self._log_count - self._log_base == FREED_LOG:
            self._log_base = self._log_count
        return self._log_count - self._log_base

    def _log_freed(self, i: int, j: int, words: np.ndarray) -> None:
        """The cores ``words`` are being freed in slices ``[i, j)``; also logged: how far
        around that interval one of them stays free (``core_kernels.free_around``)."""
        e = self._next_log_entry()
        self._log_a[e] = self.times[i]
        self._log_b[e] = self.times[j] if j < len(self.times) else np.inf
        self._log_n[e] = int(np.bitwise_count(words).sum())
        self._k.chunk_mask(words, self._log_chunks[e])
        self._log_pre[e], self._log_ext[e] = self._k.free_around(self.times, self.pool, self.rows, i, j, words)
        self._log_count += 1
        if self._kept[0]:
            self._k.retreat_no_fit(self._nofit, self._kept[0], self._log_a[e])

    def release(self, p: Placement) -> None:
        """``CoreProfile.release`` in one compiled call (``core_kernels.release``: the splits, the
        log entry, the cores given back and the merge, as ``_split``, ``_give_back`` and
        ``_merge_around`` do them): every job that ends and every reservation dropped passes here."""
        if p.end <= self.times[0] or p.end == INF:
            return super().release(p)
        e = self._next_log_entry()
        self._spare_rows(2)  # the splits' rows
        self.times, self.counts, self.rows, self._nspare = self._k.release(
            self.times, self.counts, self.rows, self.pool, self.cpool, self._spare, self._nspare, float(p.start),
            float(p.end), self._words(self._held(p)), self._log_a, self._log_b, self._log_n, self._log_pre,
            self._log_ext, self._log_chunks, e, self._nofit, self._kept)
        self._log_count += 1

    def _register(self, job, p):
        self._keep_owned(job, self._held(p))
        row = self._owned_rows[job]
        self._res_starts[row], self._res_ends[row] = p.start, p.end  # for ``candidates``
        return super()._register(job, p)

    def remove(self, job) -> None:
        row, placed = self._owned_rows.get(job), self.placed[job]
        if row is not None and not isinstance(placed, WordsPlacement):  # its cores' words, for the release
            self._remember(placed.used, self._owned[row].copy())
        super().remove(job)
        row = self._owned_rows.pop(job, None)
        if row is not None:
            self._owned_spare.append(row)

    def move(self, job, start: float, end: float, used):
        """``remove(job)`` then ``place(job, start, end, used)`` for a reservation that the pass
        re-places (``scan`` found it a better window), in one compiled call: the same slices,
        rows, log and placement, without a numpy call per split, merge and log entry. ``used``:
        an int mask or words (then the placement is a ``WordsPlacement``)."""
        placed, row = self.placed[job], self._owned_rows.get(job)
        if row is None or placed.end <= self.times[0] or placed.end == INF or end == INF:
            return super().move(job, start, end, used if isinstance(used, int) else self._mask(used))
        e = self._next_log_entry()
        self._spare_rows(4)  # the splits' rows
        self.times, self.counts, self.rows, self._nspare, i = self._k.move(
            self.times, self.counts, self.rows, self.pool, self.cpool, self._spare, self._nspare, self.origin, row,
            placed.start, placed.end, start, end, self._words(used), self._owned, self._owned_cc, self._checked,
            self._nsteps, self._log_a, self._log_b, self._log_n, self._log_pre, self._log_ext, self._log_chunks,
            e, self._nofit, self._kept)
        self._log_count += 1
        del self.placed[job]  # re-registered below, as by ``remove`` and ``place``
        self._owned_rows[job] = self._owned_rows.pop(job)
        start = float(self.times[i])
        placement = (Placement(start, end, used, i == 0) if isinstance(used, int)
                     else WordsPlacement(start, end, used, i == 0))
        self._res_starts[row], self._res_ends[row] = placement.start, end
        return super()._register(job, placement)

    def candidates(self, jobs: list, spans) -> tuple:
        """The arrays ``scan`` reads for these jobs: cores, spans, reservations (NaN: none)
        and rows of ``_owned`` (read by ``map``: no Python step per job). The cores of a job with
        a row are kept with the row (``_res_cores``): a read of the queue less per pass."""
        owned = self._owned_rows  # a job has a row exactly while it is placed
        rows = np.fromiter(map(owned.get, jobs, repeat(-1)), np.int64, len(jobs))
        none = rows < 0
        rows[none] = 0
        starts, ends, cores = self._res_starts[rows], self._res_ends[rows], self._res_cores[rows]  # copies
        starts[none] = ends[none] = np.nan
        missing = np.flatnonzero(none).tolist()  # new arrivals, started jobs: few
        if missing:
            cores[missing] = [jobs[k].res for k in missing]
        return cores, np.asarray(spans, dtype=np.float64), starts, ends, rows

    def scan(self, q: int, now: float, arrays: tuple) -> tuple:
        """``core_kernels.scan`` from candidate ``q`` on: ``(q, code, moved, most, earliest)``, ``moved``
        the ``(start, cores)`` of a candidate that moves (code 1 or 2, as ``reinsertion``; its cores as
        read-only words, for ``move``), ``most`` its bound for ``confirm``."""
        self._room()
        q, code, i, most, earliest = self._k.scan(
            self.times, self.counts, self.rows, self.pool, self.cpool, self.origin, now, q, *arrays, self._owned,
            self._owned_cc, self._scratch, self._log_a, self._log_b, self._log_n, self._log_pre,
            self._log_ext, self._log_chunks, self._log_base, self._log_count, self._checked,
            self._bound, self._steps_t, self._steps_m, self._nsteps, self._nofit, self._kept)
        return q, code, self._moved(q, code, i, arrays), int(most), float(earliest)

    def _moved(self, q: int, code: int, i: int, arrays: tuple):
        """``scan``'s ``moved`` for its answer ``(q, code, i)``: the new start and cores (read-only
        words) of a candidate that moves, else None."""
        if code <= 0:
            return None
        start = arrays[2][q] if code == 2 else (self.origin if i == 0 else self.times[i])
        words = self._scratch[2].copy()
        words.flags.writeable = False
        return float(start), words

    def scan_moving(self, q: int, now: float, jobs: list, spans, arrays: tuple) -> tuple:
        """``scan``, and the candidates it would stop at to move to a future start moved as ``move``
        then ``confirm`` would (``core_kernels.scan_moving``: in the same compiled call): ``(q, code,
        moved, most, earliest, placements)`` as ``scan``'s, ``placements`` the new placements of the
        candidates moved (``jobs``: the candidates, ``spans`` their spans), in queue order."""
        self._room()
        self._spare_rows(4)
        if len(self._moved_q) < len(jobs):
            self._moved_q, self._moved_start = np.empty(2 * len(jobs), dtype=np.int64), np.empty(2 * len(jobs))
        q, code, i, most, earliest, self.times, self.counts, self.rows, self._nspare, self._log_count, nmoved = \
            self._k.scan_moving(
                self.times, self.counts, self.rows, self.pool, self.cpool, self._spare, self._nspare, self.origin, now,
                q, *arrays, self._owned, self._owned_cc, self._scratch, self._log_a, self._log_b, self._log_n,
                self._log_pre, self._log_ext, self._log_chunks, self._log_base, self._log_count, self._checked,
                self._bound, self._steps_t, self._steps_m, self._nsteps, self._nofit, self._kept, self._moved_q,
                self._moved_start)
        placements = []
        owned_rows, placed = self._owned_rows, self.placed
        for position, start in zip(self._moved_q[:nmoved].tolist(), self._moved_start[:nmoved].tolist()):
            job = jobs[position]
            row = owned_rows.pop(job)  # re-registered as by ``remove`` and ``place``
            owned_rows[job] = row
            del placed[job]
            end = start + float(spans[position])
            words = self._owned[row].copy()
            words.flags.writeable = False
            self._res_starts[row], self._res_ends[row] = start, end
            placements.append(super()._register(job, WordsPlacement(start, end, words, False)))
        return q, code, self._moved(q, code, i, arrays), int(most), float(earliest), placements

    # -- slices
    def _new_row(self) -> int:
        self._spare_rows(1)
        self._nspare -= 1
        return int(self._spare[self._nspare])

    def _spare_rows(self, needed: int) -> None:
        """At least ``needed`` free rows in ``pool`` (it doubles when there are fewer)."""
        if self._nspare >= needed:
            return
        size = len(self.pool)
        self.pool = np.concatenate([self.pool, np.zeros_like(self.pool)])
        self.cpool = np.concatenate([self.cpool, np.zeros_like(self.cpool)])
        spare = np.empty(2 * size, dtype=np.int64)
        spare[:size] = np.arange(2 * size - 1, size - 1, -1)  # the new rows, below the free ones kept
        spare[size:size + self._nspare] = self._spare[:self._nspare]
        self._spare, self._nspare = spare, size + self._nspare

    def _split(self, t: float) -> int:
        times = self.times
        i = int(times.searchsorted(t, side="right")) - 1
        if times[i] == t:
            return i
        row = self._new_row()
        self.pool[row] = self.pool[self.rows[i]]
        self.cpool[row] = self.cpool[self.rows[i]]
        self.times = _inserted(times, i + 1, t)
        self.counts = _inserted(self.counts, i + 1, self.counts[i])
        self.rows = _inserted(self.rows, i + 1, row)
        return i + 1

    def _drop_slices(self, which) -> None:
        dropped = self.rows[which]
        self._spare[self._nspare:self._nspare + len(dropped)] = dropped
        self._nspare += len(dropped)
        kept = np.ones(len(self.times), dtype=bool)
        kept[which] = False
        self.times, self.counts, self.rows = self.times[kept], self.counts[kept], self.rows[kept]

    def _merge_around(self, lo: int, hi: int) -> None:
        lo, hi = max(lo, 1), min(hi, len(self.times) - 1)
        if lo > hi:
            return
        equal = self._k.same_as_previous(self.pool, self.rows, self.counts, lo, hi)
        if len(equal):
            self._drop_slices(equal)

    def update_first_slice(self, now: float) -> None:
        self.origin = now
        past = min(int(self.times.searchsorted(now, side="right")) - 1, len(self.times) - 1)
        if past > 0:
            self._drop_slices(slice(0, past))
        self.times[0] = now

    def _place_at(self, job, i: int, end: float, used):
        placement = super()._place_at(job, i, end, used)
        placement.start = float(placement.start)  # not a numpy float: it reaches the outputs
        return placement

    def add_first_fit(self, job, duration: float):
        found = self._find(job.res, duration)
        if found is None:
            return None
        i, used = found
        start = self.origin if i == 0 else float(self.times[i])
        return self._place_at(job, i, start + duration, used)

    def _slice_starts(self) -> list:
        return self.times.tolist()

    # -- resource algebra
    def available_now(self) -> int:
        return int(self.counts[0])

    def _free_throughout(self) -> list:
        return self._k.free_throughout(self.pool, self.rows).tolist()

    def _take(self, i, j, used):
        self._k.take(self.pool, self.cpool, self.rows, self.counts, i, j, self._words(used))

    def _held(self, p: Placement):
        return p.words if isinstance(p, WordsPlacement) else p.used

    def _give_back(self, i, j, used):
        words = self._words(used)
        self._log_freed(i, j, words)
        self._k.give_back(self.pool, self.cpool, self.rows, self.counts, i, j, words)

    def _find(self, n: int, duration: float, first_only: bool = False, *, starts: int | None = None,
              own: int = 0, own_size: int = 0):
        stop = (1 if first_only else len(self.times)) if starts is None else starts
        self._room()
        words = self._words(own)
        self._k.chunk_counts(words, self._scratch[5])  # ``find``'s ``owncc``
        i, _ = self._k.find(self.times, self.counts, self.rows, self.pool, self.cpool, self.origin, n, duration,
                            stop, words, own_size, self._scratch)
        return None if i < 0 else (i, self._mask(self._scratch[2]))

    def reinsertion(self, job, duration: float):
        placed = self.placed[job]
        start = placed.start
        if start <= self.origin or placed.end != start + duration:
            raise ValueError("reinsertion needs a future reservation of the same duration")
        own = self._held(placed)
        self._room()
        code, i, _ = self._k.reinsertion(self.times, self.counts, self.rows, self.pool, self.cpool, self.origin,
                                         job.res, duration, start, placed.end, self._words(own), self._scratch)
        if code == 0:
            return None
        if code == 1:
            start = self.origin if i == 0 else float(self.times[i])
        return start, self._mask(self._scratch[2])

    def _room(self) -> None:
        """The window queues' scratch holds a row per slice."""
        suffix, tail, out, csuffix, ctail, *rest = self._scratch
        if len(suffix) < len(self.times):
            self._scratch = (np.empty((2 * len(self.times), self._nwords), dtype=np.uint64), tail, out,
                             np.empty((2 * len(self.times), len(ctail)), dtype=CHUNK_COUNT), ctail, *rest)
