"""Sets of core ids stored as a Python int bitmask.

Bit ``i`` set means core ``i`` belongs to the set. Python ints give O(words)
union, intersection and popcount, which keeps the scheduler's bookkeeping cheap;
`procset` is used only where the protocol text form is parsed or checked
(its constructors are quadratic on fragmented sets).
"""

from __future__ import annotations

from collections.abc import Iterator

from procset import ProcSet


def lowest_bits(mask: int, count: int, total: int | None = None) -> int:
    """The ``count`` lowest set bits of ``mask`` (batsched's "first fit"); ``total``: the
    caller's ``mask.bit_count()`` if known (it reads every word of the mask)."""
    if count <= 0:
        return 0
    if total is None:
        total = mask.bit_count()
    if count >= total:
        return mask
    # Bisect the shortest prefix holding ``count`` bits: bits [lo, hi) of the mask are kept in
    # ``part`` and halved at each step, so the popcounts read the mask about twice in all.
    lo, hi, part, below = 0, mask.bit_length(), mask, 0  # ``below``: set bits under ``lo``
    while hi - lo > 1:
        width = (hi - lo) // 2
        low = part & ((1 << width) - 1)
        bits = low.bit_count()
        if below + bits >= count:
            hi, part = lo + width, low
        else:
            lo, part, below = lo + width, part >> width, below + bits
    return mask & ((1 << hi) - 1)


# above this many bits, intervals are read from the mask's bytes at once (numpy): the bit loop
# shifts the whole mask once per interval, quadratic on a big fragmented machine (93,312 cores)
WIDE_MASK = 4096


def mask_intervals(mask: int) -> list[tuple[int, int]]:
    """Closed intervals ``(first, last)`` of consecutive set bits, ascending."""
    if mask.bit_length() > WIDE_MASK:
        return _wide_mask_intervals(mask)
    intervals = []
    offset = 0
    while mask:
        skip = (mask & -mask).bit_length() - 1  # trailing zeros
        mask >>= skip
        offset += skip
        run = (~mask & (mask + 1)).bit_length() - 1  # trailing ones
        intervals.append((offset, offset + run - 1))
        mask >>= run
        offset += run
    return intervals


def _wide_mask_intervals(mask: int) -> list[tuple[int, int]]:
    """``mask_intervals`` in one pass over the mask's words: bit i of ``mask ^ (mask << 1)`` is
    set where a run begins (i) or ends (i = its last + 1), so those bits alternate begin, end.
    numpy is imported here, not with the module: an EASY ``serve`` starts without it."""
    import numpy as np

    edges = mask ^ (mask << 1)
    words = np.frombuffer(edges.to_bytes(-(-edges.bit_length() // 64) * 8, "little"), dtype="<u8")
    nonzero = words.nonzero()[0]
    bits = np.unpackbits(words[nonzero].view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    word, bit = np.nonzero(bits)
    at = nonzero[word] * 64 + bit
    return list(zip(at[0::2].tolist(), (at[1::2] - 1).tolist()))


def format_mask(mask: int) -> str:
    """Batsim's canonical text: ``"0-3 5 7-9"`` (empty string for no core)."""
    return " ".join(str(a) if a == b else f"{a}-{b}" for a, b in mask_intervals(mask))


def range_mask(first: int, count: int) -> int:
    """Mask of ``count`` consecutive cores starting at ``first``."""
    return ((1 << count) - 1) << first


class CoreSet:
    """An immutable set of core ids (a resource allocation)."""

    __slots__ = ("mask",)

    def __init__(self, mask: int = 0):
        self.mask = mask

    @classmethod
    def from_ids(cls, ids) -> CoreSet:
        mask = 0
        for i in ids:
            mask |= 1 << int(i)
        return cls(mask)

    @classmethod
    def from_str(cls, text: str) -> CoreSet:
        """Parse Batsim's interval text (``"0-3 5"``) through procset."""
        mask = 0
        for interval in ProcSet.from_str(text).intervals():
            mask |= range_mask(interval.inf, interval.sup - interval.inf + 1)
        return cls(mask)

    def to_procset(self) -> ProcSet:
        return ProcSet(*mask_intervals(self.mask))

    def __len__(self) -> int:
        return self.mask.bit_count()

    def __iter__(self) -> Iterator[int]:
        for first, last in mask_intervals(self.mask):
            yield from range(first, last + 1)

    def __contains__(self, core: int) -> bool:
        return bool(self.mask >> core & 1)

    def __eq__(self, other) -> bool:
        return isinstance(other, CoreSet) and other.mask == self.mask

    def __hash__(self) -> int:
        return hash(self.mask)

    def __str__(self) -> str:
        return format_mask(self.mask)

    def __repr__(self) -> str:
        return f"CoreSet({format_mask(self.mask)!r})"
