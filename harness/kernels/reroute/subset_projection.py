"""Out-of-bag predictions of forests projected on variable subsets (SHAFF, step 2).

Bénard, Biau, Da Veiga, Scornet (AISTATS 2022) estimate v(U) = V(E[Y | X_U]) / V(Y) with the
forest *projected* on U: every split on a variable outside U is ignored. It is the Sobol-MDA
projection (:mod:`harness.kernels.reroute.projection`) generalised from "drop j" to "keep U". A
row's
projected cell in a tree is identified by the set of leaves its projected descent reaches
(a split on a kept variable sends it to the child it takes, any other split to both
children). Its value is the in-bag-count-weighted mean of the targets of the in-bag rows
that reach the same leaf set. If no in-bag row does (possible when the row's kept-variable
pattern is new to the tree), the value falls back to the cover-weighted mean of the reached
leaves' values, the path-dependent expectation E[f_T(X) | x_U] of the tree (Lundberg et al.
2020, Alg. 1), where the reference Sobol-MDA code walks back up its level keys instead.

Speed: a subtree without any kept variable is reached whole, so its leaf set is known
without descending (a per-node sum of leaf hashes), and a node's cover-weighted value is the
sum over its leaves; the descent therefore only branches where kept variables still split
below. Leaf sets are hashed as sums of 64-bit leaf hashes (collision probability about
2**-64 per pair of distinct sets) into an open-addressing table per (subset, tree).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from harness.forest.packed import PackedForest, child
from harness.kernels.reroute.projection import node_hash, table_slot


@njit(cache=True)
def _leaf_hashes(left, right, start, size):
    """Per node of one tree, the sum of the 64-bit hashes of the leaves below it."""
    total = np.zeros(size, dtype=np.uint64)
    for node in range(size - 1, -1, -1):
        if left[start + node] == -1:
            total[node] = node_hash(start + node)
        else:
            total[node] = total[left[start + node]] + total[right[start + node]]
    return total


@njit(cache=True)
def _kept_below(left, right, feature, start, size, keep):
    """Per node, whether a split on a kept variable lies in its subtree (itself included)."""
    below = np.zeros(size, dtype=np.bool_)
    for node in range(size - 1, -1, -1):
        at = start + node
        if left[at] != -1:
            below[node] = keep[feature[at]] or below[left[at]] or below[right[at]]
    return below


@njit(cache=True)
def _projected_cell(left, right, feature, threshold, missing, cover, value, start, X32, row, keep,
                    below, hashes, stack, fallback):
    """Leaf-set hash of ``row``'s projected descent; ``fallback`` gets the cover-weighted
    mean value of the reached leaves."""
    key = np.uint64(0)
    mass = 0.0
    fallback[:] = 0.0
    stack[0] = 0
    size = 1
    while size > 0:
        size -= 1
        node = stack[size]
        at = start + node
        if left[at] == -1 or not below[node]:
            key += hashes[node]
            mass += cover[at]
            for k in range(fallback.shape[0]):
                fallback[k] += cover[at] * value[at, k]
        elif keep[feature[at]]:
            stack[size] = child(left, right, feature, threshold, missing, start, node, X32, row)
            size += 1
        else:
            stack[size] = left[at]
            stack[size + 1] = right[at]
            size += 2
    for k in range(fallback.shape[0]):
        fallback[k] /= mass
    return key


@njit(parallel=True, cache=True)
def _projected_oob_predictions(left, right, feature, threshold, missing, cover, value, offsets,
                               X32, counts, targets, keep):
    """Sum over each row's out-of-bag trees of the projected tree outputs, per subset.

    Parameters
    ----------
    cover, value : ndarrays
        Weighted node sizes and node values of the packed forest.
    counts : ndarray (n, n_trees)
        In-bag counts; rows with count 0 are out of bag.
    targets : ndarray (n, n_values)
        y as a column, or the one-hot classes.
    keep : ndarray of bool, shape (n_subsets, p)
        The kept variables U of each subset.

    Returns
    -------
    total : ndarray (n_subsets, n, n_values)
        Divide by each row's number of out-of-bag trees for the OOB projected forest.
    n_fallback : ndarray (n_subsets,)
        How many (row, tree) predictions used the fallback value.
    """
    n = X32.shape[0]
    n_trees = offsets.size - 1
    n_values = value.shape[1]
    n_subsets = keep.shape[0]
    total = np.zeros((n_subsets, n, n_values))
    n_fallback = np.zeros(n_subsets, dtype=np.int64)
    largest = 1
    for t in range(n_trees):
        largest = max(largest, offsets[t + 1] - offsets[t])
    capacity = 16
    while capacity < 2 * n:
        capacity *= 2
    mask = capacity - 1
    for s in prange(n_subsets):
        stack = np.empty(largest + 2, dtype=np.int64)
        fallback = np.empty(n_values)
        table_keys = np.empty(capacity, dtype=np.uint64)
        stamps = np.zeros(capacity, dtype=np.int64)
        weights = np.empty(capacity)
        sums = np.empty((capacity, n_values))
        for t in range(n_trees):
            start = offsets[t]
            size = offsets[t + 1] - start
            hashes = _leaf_hashes(left, right, start, size)
            below = _kept_below(left, right, feature, start, size, keep[s])
            generation = t + 1
            for i in range(n):
                weight = counts[i, t]
                if weight == 0:
                    continue
                key = _projected_cell(left, right, feature, threshold, missing, cover, value,
                                      start, X32, i, keep[s], below, hashes, stack, fallback)
                at = table_slot(table_keys, stamps, generation, key, mask)
                if stamps[at] != generation:
                    stamps[at] = generation
                    table_keys[at] = key
                    weights[at] = 0.0
                    sums[at, :] = 0.0
                weights[at] += weight
                for k in range(n_values):
                    sums[at, k] += weight * targets[i, k]
            for i in range(n):
                if counts[i, t] != 0:
                    continue
                key = _projected_cell(left, right, feature, threshold, missing, cover, value,
                                      start, X32, i, keep[s], below, hashes, stack, fallback)
                at = table_slot(table_keys, stamps, generation, key, mask)
                if stamps[at] == generation:
                    for k in range(n_values):
                        total[s, i, k] += sums[at, k] / weights[at]
                else:
                    n_fallback[s] += 1
                    for k in range(n_values):
                        total[s, i, k] += fallback[k]
    return total, n_fallback


def projected_oob_predictions(forest: PackedForest, X32: np.ndarray, counts: np.ndarray,
                              targets: np.ndarray,
                              keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum over each row's out-of-bag trees of the projected tree outputs, per subset, for
    ``forest`` (a forest view's ``packed`` field); see :func:`_projected_oob_predictions`."""
    return _projected_oob_predictions(forest.left, forest.right, forest.feature,
                                      forest.threshold, forest.missing_left, forest.cover,
                                      forest.value, forest.offsets, X32, counts, targets, keep)
