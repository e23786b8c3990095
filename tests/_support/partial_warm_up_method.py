"""A method whose module holds a cached kernel that its ``prepare()`` never calls: an entry the
compile check reaches by module, as LOCO reaches the OOB methods' permutation pass, that its
warm-up leaves uncompiled (for ``tests/run/test_compile.py``)."""

from __future__ import annotations

import numpy as np
from numba import njit

from tests._support.tiny_kernel_method import TinyKernel


@njit(cache=True)
def column_minima(X):  # in the module, never called by PartialWarmUp
    out = np.full(X.shape[1], np.inf)
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            out[j] = min(out[j], X[i, j])
    return out


class PartialWarmUp(TinyKernel):
    """TinyKernel's column sums (its warm-up compiles them), beside ``column_minima``."""

    name = "partial_warm_up"
