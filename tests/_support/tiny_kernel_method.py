"""A method whose ``prepare()`` compiles one small cached numba kernel (for the compile tests:
cheap to compile from an empty cache, so the parallel compile can be checked end to end)."""

from __future__ import annotations

import numpy as np
from numba import njit

from harness.core.method import Method


@njit(cache=True)
def column_sums(X):
    out = np.zeros(X.shape[1])
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            out[j] += X[i, j]
    return out


class TinyKernel(Method):
    """Σ_i X_ij, through a compiled kernel."""

    name = "tiny_kernel"
    scope = "global"
    family = "example"
    tasks = ("regression", "classification")
    unit, explains = "sum", "the rows"

    @classmethod
    def prepare(cls) -> None:
        super().prepare()
        column_sums(np.zeros((1, 1)))

    def _explain(self, model, data, rng):
        return column_sums(np.ascontiguousarray(data.X, dtype=float))


class TinyKernelTwin(TinyKernel):
    """The same kernel under another name (two methods sharing one cached kernel)."""

    name = "tiny_kernel_twin"


class BrokenPrepare(TinyKernel):
    """A method whose ``prepare()`` fails."""

    name = "broken_prepare"

    @classmethod
    def prepare(cls) -> None:
        raise RuntimeError("no compiler today")
