"""The layout of the compiled pass's profile, and its constants (no numba here: ``conservative``
reads the constants without importing it).

A pass works on a profile ``P = (T, F, B, bfirst, inner, suffix_start, level, thresholds, left,
stack)`` built by ``passes.build_profile``:

* ``T``, ``F``: blocks x ``BLOCK`` slice start times and free cores;
* ``B``: one int64 table of what is kept per block, a row per quantity (the named rows below):
  ``B[CNT, b]`` slices in block ``b``, ``B[BMAX, b]`` its most free cores, ``B[ORDER, p]`` the
  block at position ``p`` in time order, ``B[VERSION, b]`` the clock when block ``b`` last
  changed, ``B[STAMP, b]`` the version its run caches were computed at; and the profile's
  counters in row ``COUNTERS``, by named slot (``B[COUNTERS, USED]`` blocks in use...);
* ``bfirst``: the first time of the block at each position;
* ``inner``, ``suffix_start``: per block and core-count level, what ``search.block_runs`` found;
* ``level``, ``thresholds``: core count -> level -> smallest count of the level (``levels``);
* ``left``, ``stack``: scratch for ``search.block_runs``.

One table rather than an array per quantity: numba counts the references of every array a
compiled function receives, at each call, and the pass makes millions of calls.
"""

from __future__ import annotations

BLOCK = 128  # slices a block holds
FILL = 32  # slices per block when a pass begins (the rest: room for splits)
KEPT = 4  # NoFitBefore.KEPT
WALK = 32  # slices a sharpened bound reads back, blocks a search follows a stretch into
EXACT_LEVELS = 128  # core counts with a run cache of their own
SLACK = 1e-6  # NoFitBefore.SLACK

# rows of ``B``
CNT = 0  # slices in the block
BMAX = 1  # most free cores of a slice of the block
ORDER = 2  # block id at each position, in time order
VERSION = 3  # the clock when the block last changed
STAMP = 4  # the version the block's run caches were computed at (-1: never)
COUNTERS = 5  # the profile's counters, by the slots below (``B`` has at least 4 columns)
ROWS = 6

# slots of ``B[COUNTERS]``
USED = 0  # blocks in use (positions 0 .. USED - 1)
ALLOCATED = 1  # block ids handed out (a split takes the next one)
CLOCK = 2  # incremented at every change of a block
SPLIT = 3  # 1 once a block has split in this pass: positions and block ids differ from then on
