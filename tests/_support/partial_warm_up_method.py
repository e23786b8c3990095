"""A method whose module holds two cached kernels and whose ``prepare()`` compiles one: the
other is an entry the compile check reaches by module, as LOCO reaches the OOB methods'
permutation pass, that its warm-up never calls (for ``tests/run/test_compile.py``)."""

from __future__ import annotations

import numpy as np
from numba import njit

from harness.core.method import Method


@njit(cache=True)
def column_maxima(X):
    out = np.full(X.shape[1], -np.inf)
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            out[j] = max(out[j], X[i, j])
    return out


@njit(cache=True)
def column_minima(X):  # in the module, never called by PartialWarmUp
    out = np.full(X.shape[1], np.inf)
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            out[j] = min(out[j], X[i, j])
    return out


class PartialWarmUp(Method):
    """max_i X_ij, through a compiled kernel."""

    name = "partial_warm_up"
    scope = "global"
    family = "example"
    tasks = ("regression", "classification")
    unit, explains = "max", "the rows"

    @classmethod
    def prepare(cls) -> None:
        super().prepare()
        column_maxima(np.zeros((1, 1)))

    def _explain(self, model, data, rng):
        return column_maxima(np.ascontiguousarray(data.X, dtype=float))
