"""numba's start-up without the parts our kernels never use.

Call ``load_numba_without_blas()`` before the first call of any compiled kernel (the first call
loads numba's typing registries; calling it later changes nothing, and neither does calling it
twice). Used by ``release_kernel``; any module of compiled kernels may call it too.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading

HIDDEN = "scipy.linalg"


class HiddenInThisThread(importlib.abc.MetaPathFinder):
    """Makes an import of ``name`` fail in the thread that created it; other threads import it
    as usual (a campaign may run simulations in threads of one process)."""

    def __init__(self, name: str):
        self.name, self.thread = name, threading.get_ident()

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"{fullname} is not imported while numba loads", name=fullname)
        return None  # the next finders decide


def load_numba_without_blas() -> None:
    """Load numba's array typing (``numba.np.arraymath``) without ``scipy.linalg``.

    At the first call of any kernel numba loads its array registries, and ``arraymath`` imports
    ``scipy.linalg`` (0.3 CPU s, a third of numba's start-up) only to learn whether ``np.dot`` may
    call BLAS. No kernel of ours calls BLAS (nor ``np.dot``: ``tests/test_probabilistic.py``
    checks it), so the module is loaded here with ``scipy.linalg`` hidden from this thread's
    imports (numba then treats BLAS as absent: ``np.dot`` of 1-D arrays would be a plain loop).
    ``scipy.linalg`` stays importable (scikit-learn needs it); when it is already imported, or
    numba's registries already loaded, this changes nothing."""
    if HIDDEN in sys.modules or "numba.np.arraymath" in sys.modules:
        return
    finder = HiddenInThisThread(HIDDEN)
    # a new list, never the one another thread's import may be iterating over
    sys.meta_path = [finder, *sys.meta_path]
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        sys.meta_path = [f for f in sys.meta_path if f is not finder]
