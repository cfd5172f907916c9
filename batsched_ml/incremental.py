"""Containers that a snapshot writes incrementally: each change once, not the whole history each time.

A long run keeps histories that only grow -- training rows, per-job records, the profiles of every
job submitted, a learner's per-slice counts. Pickled whole, each snapshot would cost time and
space in proportion to the run's length. These containers say what changed since a given point
(``Incremental.version``, ``Incremental.changes_since``) and are rebuilt from those pieces
in order (``Incremental.rebuilt``): a snapshot stores, once each, the pieces that appeared
since the previous snapshot, and refers to them afterwards (``simulator.snapshots``).

* ``AppendOnlyList``: a list that is only appended to (``append``, ``extend``, ``+=``);
* ``JournaledDict``: a dict whose keys are never removed; assigning a key records it, and a
  value changed in place is recorded with ``JournaledDict.touch`` (forgetting to touch it would
  resume a run with the old value: the snapshot property tests compare resumed runs byte for byte).

Operations that would change what an earlier snapshot already holds (removing, reordering,
replacing a list item) raise TypeError. The pieces are pickled apart from the run's other objects:
items must be plain values, not objects shared with the rest of the run.

Standard library only: a bottom-layer module (components and the simulator use it).
"""

from __future__ import annotations

from itertools import chain

__all__ = ["AppendOnlyList", "Incremental", "JournaledDict"]


class Incremental:
    """What a snapshot needs of a container it writes incrementally."""

    __slots__ = ()

    def version(self) -> int:
        """A number that grows with every change (the changes so far)."""
        raise NotImplementedError

    def changes_since(self, version: int):
        """The changes after ``version`` (a picklable piece; ``version`` 0: everything)."""
        raise NotImplementedError

    def incremental_state(self):
        """What else the container holds (small: pickled with each snapshot), for ``rebuilt``."""
        return None

    @classmethod
    def rebuilt(cls, pieces: list, state=None):
        """The container whose changes were ``pieces``, in order, and whose other state is ``state``."""
        raise NotImplementedError


def _refuse(self, *args, **kwargs):
    raise TypeError(f"a {type(self).__name__} only grows: snapshots write each of its items once")


class AppendOnlyList(list, Incremental):
    """A list that only grows at its end."""

    def version(self) -> int:
        return len(self)

    def changes_since(self, version: int) -> list:
        return self[version:]

    @classmethod
    def rebuilt(cls, pieces: list, state=None) -> "AppendOnlyList":
        return cls(chain.from_iterable(pieces))

    def __iadd__(self, items):
        self.extend(items)
        return self

    def __reduce_ex__(self, protocol):  # pickled alone (not by a snapshot): as a list
        return type(self), (list(self),)

    __setitem__ = __delitem__ = insert = pop = remove = clear = sort = reverse = __imul__ = _refuse


class JournaledDict(dict, Incremental):
    """A dict whose keys stay: each assignment is journaled, and so is each value changed in place
    once ``touch`` says so. Its pieces: the keys changed, with their values then, in the order
    first changed (a new key's first change is its insertion: the rebuilt dict has the same order)."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self._journal: list = []
        self.update(*args, **kwargs)

    def __setitem__(self, key, value) -> None:
        dict.__setitem__(self, key, value)
        self._journal.append(key)

    def touch(self, key) -> None:
        """``self[key]`` was changed in place (a counter row incremented...): the next snapshot writes it."""
        self._journal.append(key)

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *args, **kwargs) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def version(self) -> int:
        return len(self._journal)

    def changes_since(self, version: int) -> list:
        keys = dict.fromkeys(self._journal[version:])
        return [(key, dict.__getitem__(self, key)) for key in keys]

    @classmethod
    def rebuilt(cls, pieces: list, state=None) -> "JournaledDict":
        out = cls()
        for piece in pieces:
            for key, value in piece:
                out[key] = value
        return out

    def __reduce_ex__(self, protocol):  # pickled alone (not by a snapshot): as a dict
        return type(self), (dict(self),)

    __delitem__ = pop = popitem = clear = __ior__ = _refuse
