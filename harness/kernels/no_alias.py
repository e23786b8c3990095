"""numba's ``noalias`` flag as an option of its decorator, for kernels whose arrays never overlap.

numba has a compiler flag that marks every pointer argument of a function ``noalias`` (C's
``restrict``): it sets it for the gufuncs of ``parallel=True``, and a pull request to expose
it as ``@njit(noalias=True)`` (numba/numba#9108) was left unmerged. Without it, LLVM must
assume that any two array arguments may overlap: a loop that accumulates into one array while
reading another stores the accumulator back on every step and checks at run time whether
the arrays overlap. :data:`NOALIAS` holds the decorator options that set the flag, or nothing
where this numba's internals differ (the kernels then compile as before, slower, with the same
results).

A kernel may take these options only if no two of its array arguments share memory on any
call, and it passes them only to functions that keep that promise.
"""

from __future__ import annotations

#: ``{"noalias": True}`` where numba accepts the option (after :func:`_register`), else ``{}``.
NOALIAS: dict[str, bool] = {}


def _register() -> bool:
    """Map a ``noalias`` decorator option to numba's ``noalias`` compiler flag (a class
    attribute of the CPU target's options, as numba's own options are declared)."""
    try:
        from numba.core import cpu, options
        from numba.core.compiler import Flags
    except ImportError:  # pragma: no cover - numba reorganised
        return False
    if not hasattr(Flags, "noalias") or not hasattr(options, "_mapping"):
        return False  # pragma: no cover - numba without the flag
    if not hasattr(cpu.CPUTargetOptions, "noalias"):
        cpu.CPUTargetOptions.noalias = options._mapping("noalias")
    return True


if _register():
    NOALIAS["noalias"] = True
