"""Exact interventional TreeSHAP in float64 (Lundberg et al. 2020, "Interventional Tree SHAP").

For one tree, a row x and a background row z, the interventional coalition value is
v(S) = f(x_S, z_{~S}). The hybrid point reaches a leaf l only through the splits where x and z
go different ways; writing A_l (B_l) for the features whose x-side (z-side) branch is on the
path to l, l is reached iff A_l ⊆ S and B_l ∩ S = ∅, so each leaf is a game of |A_l| + |B_l|
players with the closed-form Shapley values

    φ_j += v_l (a-1)! b! / (a+b)!   for j in A_l,    φ_j -= v_l a! (b-1)! / (a+b)!   for j in B_l,

with a = |A_l|, b = |B_l|. One joint walk of x's and z's paths visits every such leaf; the
forest value is the mean over trees and background rows, and base + Σ_j φ_j = f(x) with
base = mean_z f(z) (efficiency). shap computes the same quantity in single precision; this
kernel keeps double precision so that the additivity holds to ~1e-12.

Routing follows scikit-learn: a row goes left when ``float32(x_j) <= threshold``.
"""

from __future__ import annotations

import math
import os

import numba
import numpy as np
from numba import njit, prange

from harness.packed import PackedForest, as_float32_rows

if "NUMBA_THREADING_LAYER" not in os.environ:
    # The runner forks one process per cell, and GNU OpenMP (numba's usual layer) aborts a
    # forked child once the parent has used it; numba's own work queue is fork-safe.
    numba.config.THREADING_LAYER = "workqueue"


@njit(cache=True)
def _weight(a: int, b: int) -> float:
    """a! b! / (a + b + 1)!, the Shapley weight of a coalition, in log space."""
    return math.exp(math.lgamma(a + 1) + math.lgamma(b + 1) - math.lgamma(a + b + 2))


@njit(cache=True)
def _pair(x, z, left, right, feature, threshold, value, stack, path_feature, path_side, phi):
    """Add the Shapley values of one (x, z) pair for one tree into ``phi`` (p, n_values).

    Iterative depth-first walk (numba cannot cache recursive functions). A stack frame is
    (node, a, b, feature assigned on entering, its side); the path prefix of length a + b
    holds the features met so far with their side (1: x's branch, 2: z's branch).
    """
    top = 0
    stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3], stack[0, 4] = 0, 0, 0, -1, 0
    while top >= 0:
        node, a, b, new_feature, new_side = (stack[top, 0], stack[top, 1], stack[top, 2],
                                             stack[top, 3], stack[top, 4])
        top -= 1
        if new_feature >= 0:
            path_feature[a + b - 1] = new_feature
            path_side[a + b - 1] = new_side
        if left[node] < 0:
            for k in range(a + b):
                if path_side[k] == 1:
                    w = _weight(a - 1, b)
                else:
                    w = -_weight(a, b - 1)
                for c in range(value.shape[1]):
                    phi[path_feature[k], c] += w * value[node, c]
            continue
        j = feature[node]
        x_child = left[node] if x[j] <= threshold[node] else right[node]
        z_child = left[node] if z[j] <= threshold[node] else right[node]
        side = 0
        for k in range(a + b):
            if path_feature[k] == j:
                side = path_side[k]
        top += 1
        if x_child == z_child or side == 1:
            stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = x_child, a, b, -1
        elif side == 2:
            stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = z_child, a, b, -1
        else:
            stack[top, 0], stack[top, 1], stack[top, 2] = z_child, a, b + 1
            stack[top, 3], stack[top, 4] = j, 2
            top += 1
            stack[top, 0], stack[top, 1], stack[top, 2] = x_child, a + 1, b
            stack[top, 3], stack[top, 4] = j, 1


@njit(cache=True, parallel=True)
def _tree_shap(X, Z, left, right, feature, threshold, value, out):
    n, p = X.shape
    for i in prange(n):
        stack = np.zeros((left.shape[0] + 1, 5), dtype=np.int64)
        path_feature = np.zeros(p, dtype=np.int64)
        path_side = np.zeros(p, dtype=np.int64)
        phi = np.zeros((p, value.shape[1]))
        for r in range(Z.shape[0]):
            _pair(X[i], Z[r], left, right, feature, threshold, value, stack, path_feature,
                  path_side, phi)
        for j in range(p):
            for c in range(value.shape[1]):
                out[i, j, c] += phi[j, c]


def interventional_shap(forest: PackedForest, X: np.ndarray,
                        background: np.ndarray) -> np.ndarray:
    """Interventional Shapley values of a forest, shape (n, p, n_values).

    Parameters
    ----------
    forest : PackedForest
        From :func:`harness.packed.pack_forest` (each tree is a view into it, not a copy).
    X : ndarray of shape (n, p)
        Rows to explain.
    background : ndarray of shape (m, p)
        Rows over which absent features are integrated (the marginal distribution).
    """
    X32 = as_float32_rows(X)
    Z32 = as_float32_rows(background)
    out = np.zeros((X32.shape[0], X32.shape[1], forest.n_values))
    for t in range(forest.n_trees):
        tree = slice(forest.offsets[t], forest.offsets[t + 1])
        _tree_shap(X32, Z32, forest.left[tree], forest.right[tree], forest.feature[tree],
                   forest.threshold[tree], forest.value[tree], out)
    return out / (forest.n_trees * Z32.shape[0])


def compile_kernel() -> None:
    """Compile (or load from numba's cache) the kernel for both output widths, on a stump."""
    X = np.array([[0.0], [1.0]])
    for width in (1, 2):
        stump = PackedForest(
            left=np.array([1, -1, -1]), right=np.array([2, -1, -1]),
            feature=np.array([0, -2, -2]), threshold=np.array([0.5, -2.0, -2.0]),
            value=np.ones((3, width)), cover=np.ones(3), impurity=np.zeros(3),
            offsets=np.array([0, 3]), max_depth=1, n_features=1, classifier=width > 1)
        interventional_shap(stump, X, X)
