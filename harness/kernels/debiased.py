"""Compiled node sums of the out-of-bag MDI corrections (MDI-oob and UFI).

The formulas are in :mod:`harness.estimators.debiased_mdi`; this module holds the one pass
per tree that routes the evaluation rows and accumulates, per split, both terms.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from harness.core.tasks import run_tasks
from harness.forest.packed import PackedForest, goes_left


@njit(cache=True)
def _node_sums(left, right, feature, threshold, missing, start, size, X32, weights, targets):
    """Weight and weighted target sum of the rows reaching every node of one tree."""
    n_values = targets.shape[1]
    weight = np.zeros(size)
    total = np.zeros((size, n_values))
    for i in range(X32.shape[0]):
        w = weights[i]
        if w == 0.0:
            continue
        node = 0
        while True:
            weight[node] += w
            for k in range(n_values):
                total[node, k] += w * targets[i, k]
            at = start + node
            if left[at] == -1:
                break
            x = np.float64(X32[i, feature[at]])
            node = left[at] if goes_left(x, threshold[at], missing, at) else right[at]
    return weight, total


@njit(cache=True, nogil=True)
def _debiased_tasks(left, right, feature, threshold, missing, value, offsets, X32, counts,
                    targets, inbag, mdi_oob, ufi, root_weight, first_tree, last_tree):
    """Trees ``first_tree, ..., last_tree - 1`` of :func:`debiased_mdi_terms` into their rows
    of ``mdi_oob``, ``ufi`` and ``root_weight``."""
    n, p = X32.shape
    n_values = value.shape[1]
    for t in range(first_tree, last_tree):
        start = offsets[t]
        size = offsets[t + 1] - start
        weights = np.empty(n)
        for i in range(n):
            if inbag:
                weights[i] = counts[i, t]
            else:
                weights[i] = 1.0 if counts[i, t] == 0 else 0.0
        weight, total = _node_sums(left, right, feature, threshold, missing, start, size, X32,
                                   weights, targets)
        root_weight[t] = weight[0]
        if weight[0] == 0.0:
            continue
        # summed apart and written once: neighbouring trees' rows share cache lines, and
        # another thread may be writing the next tree's
        tree_mdi_oob, tree_ufi = np.zeros(p), np.zeros(p)
        for node in range(size):
            if left[start + node] == -1 or weight[node] == 0.0:
                continue
            j = feature[start + node]
            for side in range(2):
                c = left[start + node] if side == 0 else right[start + node]
                if weight[c] == 0.0:
                    continue
                share = weight[c] / weight[node]
                for k in range(n_values):
                    drop = value[start + c, k] - value[start + node, k]
                    tree_mdi_oob[j] += total[c, k] * drop
                    tree_ufi[j] += (total[c, k] - share * total[node, k]) * drop
        for j in range(p):
            mdi_oob[t, j] = tree_mdi_oob[j] / weight[0]
            ufi[t, j] = tree_ufi[j] / weight[0]


def debiased_mdi_terms(forest: PackedForest, X32: np.ndarray, counts: np.ndarray,
                       targets: np.ndarray, inbag: bool) -> tuple:
    """Per-tree MDI-oob and UFI terms of ``forest`` (a forest view's ``packed`` field), shape
    (n_trees, p) each, and each tree's W_0; one task per tree
    (:func:`harness.core.tasks.run_tasks`).

    Parameters
    ----------
    counts : ndarray (n, n_trees)
        In-bag counts of the training rows.
    targets : ndarray (n, n_values)
        y as a column, or the one-hot classes.
    inbag : bool
        Score with the in-bag rows, weighted by their counts (the MDI identity), instead of
        the out-of-bag rows (weight one each). scikit-learn >= 1.7 draws a weighted
        bootstrap in proportion to ``sample_weight`` and fits each tree with the bare
        counts, so counts are the trees' only row weights.
    """
    n_trees, p = forest.n_trees, X32.shape[1]
    mdi_oob = np.zeros((n_trees, p))
    ufi = np.zeros((n_trees, p))
    root_weight = np.zeros(n_trees)
    run_tasks(_debiased_tasks, n_trees, forest.left, forest.right, forest.feature,
              forest.threshold, forest.missing_left, forest.value, forest.offsets, X32, counts,
              targets, inbag, mdi_oob, ufi, root_weight)
    return mdi_oob, ufi, root_weight
