"""numba's start-up without the parts our kernels never use.

Call ``load_numba_without_blas()`` before the first call of any compiled kernel (the first call
loads numba's typing registries; calling it later changes nothing, and neither does calling it
twice). Used by ``scheduling.release_kernel``; any module of compiled kernels may call it too.
"""

from __future__ import annotations

import sys


def load_numba_without_blas() -> None:
    """Load numba's array typing (``numba.np.arraymath``) without ``scipy.linalg``.

    At the first call of any kernel numba loads its array registries, and ``arraymath`` imports
    ``scipy.linalg`` (0.3 CPU s, a third of numba's start-up) only to learn whether ``np.dot`` may
    call BLAS. No kernel of ours calls BLAS (nor ``np.dot``), so the module is loaded here with
    ``scipy.linalg`` hidden (numba then treats BLAS as absent: ``np.dot`` of 1-D arrays would be a
    plain loop). ``scipy.linalg`` itself stays importable afterwards (scikit-learn needs it); when
    it is already imported, or numba's registries already loaded, this changes nothing."""
    if "scipy.linalg" in sys.modules or "numba.np.arraymath" in sys.modules:
        return
    sys.modules["scipy.linalg"] = None  # an import of it raises ImportError meanwhile
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if sys.modules.get("scipy.linalg", False) is None:
            del sys.modules["scipy.linalg"]
