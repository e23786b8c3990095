"""The ``noalias`` decorator option reaches LLVM: the path-dependent TreeSHAP kernel's speed
rests on it (harness.kernels.no_alias), and a numba that stopped honouring it would only make
the kernel slower, silently."""

from __future__ import annotations

import numpy as np
from numba import njit

from harness.kernels.no_alias import NOALIAS


def _accumulate(out, x):
    for i in range(x.size):
        out[i] += 2.0 * x[i]


def _definition(function) -> str:
    """The ``define`` line of the compiled function (not its Python wrappers)."""
    function(np.zeros(4), np.ones(4))
    ir = function.inspect_llvm(function.signatures[0])
    return next(line for line in ir.splitlines()
                if line.startswith("define") and "_accumulate" in line
                and "cpython" not in line and "cfunc" not in line)


def test_the_option_marks_the_array_arguments_noalias():
    assert NOALIAS == {"noalias": True}
    plain = _definition(njit(_accumulate))
    restricted = _definition(njit(**NOALIAS)(_accumulate))
    # numba marks its return and exception pointers noalias in both; the option adds the
    # arguments' pointers (data, meminfo, parent of each array)
    assert plain.count("noalias") == 2
    assert restricted.count("noalias") > plain.count("noalias") + 2
