"""An ordered collection that finds the first item whose value passes a threshold test.

EASY backfilling asks, of the queued jobs of one size, "the first one in queue
order whose planned span still fits before the profile's horizon". Reading the
queue until one fits costs the length of the queue at every pass (quadratic
in a burst). ``MinIndex`` keeps the items in key order in blocks of a few dozen,
with the minimum value of each block in a segment tree over the blocks, so the
first item whose value is at most a limit is found in O(log n + block), and the
index is kept up to date in the same time.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

INF = float("inf")
_LOAD = 48  # a block is split beyond 2 * _LOAD items


class MinIndex:
    """Items ``(key, value, item)`` with unique, mutually comparable keys, kept in key order."""

    def __init__(self):
        self._keys: list = []  # blocks of keys, each sorted, blocks in order
        self._vals: list = []
        self._items: list = []
        self._maxes: list = []  # last key of each block
        self._cap = 1  # leaves of the segment tree (a power of two >= number of blocks)
        self._tree = [INF, INF]  # _tree[_cap + b] = min value of block b
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def __iter__(self):
        """``(key, value, item)`` in key order."""
        for keys, vals, items in zip(self._keys, self._vals, self._items):
            yield from zip(keys, vals, items)

    def min_value(self) -> float:
        """The smallest value (inf when empty)."""
        return self._tree[1]

    def add(self, key, value, item) -> None:
        maxes = self._maxes
        if not maxes:
            self._keys.append([key])
            self._vals.append([value])
            self._items.append([item])
            maxes.append(key)
            self._rebuild()
            self._len = 1
            return
        b = bisect_left(maxes, key)
        if b == len(maxes):
            b -= 1
        keys = self._keys[b]
        i = bisect_left(keys, key)
        keys.insert(i, key)
        self._vals[b].insert(i, value)
        self._items[b].insert(i, item)
        maxes[b] = keys[-1]
        self._len += 1
        if len(keys) > 2 * _LOAD:
            self._split(b)
        elif value < self._tree[self._cap + b]:
            self._set_leaf(b, value)

    def remove(self, key) -> None:
        """Remove the item of ``key`` (KeyError if absent)."""
        maxes = self._maxes
        b = bisect_left(maxes, key)
        keys = self._keys[b] if b < len(maxes) else ()
        i = bisect_left(keys, key)
        if i == len(keys) or keys[i] != key:
            raise KeyError(key)
        del keys[i]
        value = self._vals[b].pop(i)
        del self._items[b][i]
        self._len -= 1
        if not keys:
            del self._keys[b], self._vals[b], self._items[b], maxes[b]
            self._rebuild()
            return
        maxes[b] = keys[-1]
        if value == self._tree[self._cap + b]:
            self._set_leaf(b, min(self._vals[b]))

    def first(self, limit, after=None):
        """The first ``(key, value, item)`` with key > ``after`` (or any key when None) and
        value <= ``limit``; None if there is none."""
        maxes = self._maxes
        if not maxes:
            return None
        tree, cap = self._tree, self._cap
        if after is None:
            b = 0
        else:
            b = bisect_right(maxes, after)
            if b == len(maxes):
                return None
            i = bisect_right(self._keys[b], after)
            if i:  # start inside block b
                if tree[cap + b] <= limit:
                    vals = self._vals[b]
                    for k in range(i, len(vals)):
                        if vals[k] <= limit:
                            return self._keys[b][k], vals[k], self._items[b][k]
                b += 1
                if b == len(maxes):
                    return None
        # the leftmost block >= b whose minimum passes: climb right until a subtree passes...
        n = b + cap
        while tree[n] > limit:
            while n & 1:
                if n == 1:
                    return None
                n >>= 1
            n += 1
        # ...then descend to its leftmost passing leaf
        while n < cap:
            n <<= 1
            if tree[n] > limit:
                n += 1
        b = n - cap
        if b >= len(maxes):
            return None  # only the padding passes (limit inf)
        vals = self._vals[b]
        for k in range(len(vals)):
            if vals[k] <= limit:
                return self._keys[b][k], vals[k], self._items[b][k]
        raise AssertionError("block minimum out of date")  # pragma: no cover

    # ------------------------------------------------------------ internals
    def _set_leaf(self, b: int, value) -> None:
        tree = self._tree
        n = self._cap + b
        tree[n] = value
        n >>= 1
        while n:
            m = tree[2 * n] if tree[2 * n] <= tree[2 * n + 1] else tree[2 * n + 1]
            if tree[n] == m:
                return
            tree[n] = m
            n >>= 1

    def _split(self, b: int) -> None:
        half = len(self._keys[b]) // 2
        for blocks in (self._keys, self._vals, self._items):
            block = blocks[b]
            blocks.insert(b + 1, block[half:])
            del block[half:]
        self._maxes.insert(b, self._keys[b][-1])
        self._rebuild()

    def _rebuild(self) -> None:
        """Recompute the tree over the blocks (after a block is split or dropped, or the
        first item is added: often for the few jobs of one size in a short queue)."""
        nb = len(self._vals)
        if nb <= 1:  # the root is the only leaf
            self._cap, self._tree = 1, [INF, min(self._vals[0]) if nb else INF]
            return
        cap = 1
        while cap < nb:
            cap *= 2
        tree = [INF] * (2 * cap)
        tree[cap:cap + nb] = map(min, self._vals)
        lo = cap
        while lo > 1:  # one level at a time, at C speed
            half = lo // 2
            tree[half:lo] = map(min, tree[lo:2 * lo:2], tree[lo + 1:2 * lo:2])
            lo = half
        self._cap, self._tree = cap, tree
