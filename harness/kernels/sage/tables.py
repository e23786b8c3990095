"""Per-forest tables of tree SAGE, built once per forest (and background set).

SAGE (Covert, Lundberg, Lee 2020) averages, over rows (x, y) and feature permutations π, the
loss drops ℓ(f_{S_{k-1}}(x), y) − ℓ(f_{S_k}(x), y), where S_k holds the first k features of
π. A model-agnostic estimator imputes each of the p + 1 coalitions separately. For a tree
the coalitions along π are nested, so all p + 1 values come from one pass (feature j enters
at step k = rank(j) + 1). Steps k = 0 and k = 1 need no walk: the tree's mean output under the
imputation is a constant, and f_{{j}}(x) is a step function of x_j per tree and feature,
constant between consecutive thresholds of j in the tree, and constant at x_j = NaN (which
follows each node's missing-value direction, :func:`harness.forest.packed.goes_left`): that
value is one more cell of the table. This module builds those step functions for the
path-dependent imputation (the marginal ones are in :mod:`harness.kernels.sage.marginal`),
reads them for every row (the control variates of :mod:`harness.estimators.sage`), and the
per-node data of the path-dependent walk (cover fractions, subtree feature bit sets).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from harness.core.tasks import run_tasks
from harness.forest.packed import PackedForest

#: Trees whose cover fractions are computed together (bounds the index temporaries).
TREES_AT_ONCE = 32


def cover_fractions(forest: PackedForest) -> np.ndarray:
    """Each node's cover divided by its parent's (1 at the roots), for a packed forest."""
    left, right, cover, offsets = forest.left, forest.right, forest.cover, forest.offsets
    fraction = np.ones_like(cover)
    # TREES_AT_ONCE trees at a time (a loop over single trees cost 10 ms serial on 500
    # trees; all at once, index temporaries of the whole forest's size raised tree SAGE's
    # peak memory on sage-C by 4 MiB): the first node of each internal node's tree turns
    # its local child ids into packed ones
    n_trees = offsets.size - 1
    for first in range(0, n_trees, TREES_AT_ONCE):
        last = min(first + TREES_AT_ONCE, n_trees)
        internal = np.flatnonzero(left[offsets[first]:offsets[last]] >= 0) + offsets[first]
        start = offsets[np.searchsorted(offsets, internal, side="right") - 1]
        for children in (left[internal] + start, right[internal] + start):
            fraction[children] = cover[children] / cover[internal]
    return fraction


def subtree_masks(forest: PackedForest) -> np.ndarray:
    """Bit set of the features split on in each node's subtree, (total_nodes, words) uint64
    (see :func:`_subtree_masks`)."""
    return _subtree_masks(forest.left, forest.right, forest.feature, forest.offsets,
                          forest.n_features)


@njit(cache=True)
def _subtree_masks(left, right, feature, offsets, n_features):
    """Bit set of the features split on in each node's subtree, (total_nodes, words) uint64.

    Feature j is bit j % 64 of word j // 64. Children have larger ids than their parent
    within a tree, so one backward pass per tree fills it.
    """
    words = (n_features + 63) // 64
    masks = np.zeros((offsets[-1], words), dtype=np.uint64)
    for t in range(offsets.size - 1):
        start = offsets[t]
        for node in range(offsets[t + 1] - 1, start - 1, -1):
            if left[node] == -1:
                continue
            j = feature[node]
            masks[node, j >> 6] |= np.uint64(1) << np.uint64(j & 63)
            for w in range(words):
                masks[node, w] |= masks[start + left[node], w] | masks[start + right[node], w]
    return masks


@njit(cache=True)
def count_below(values, first, last, x):
    """Number of ``values[first:last]`` (sorted ascending, no NaN) below ``x``: NumPy's
    ``searchsorted(values[first:last], x)`` (side 'left') for a number ``x``, by bisection.
    Written out: numba compiles ``np.searchsorted`` and ``np.sort`` into seconds of generic
    machinery, which a fresh environment waits for (issue 22, part 1)."""
    low, high = first, last
    while low < high:
        middle = (low + high) // 2
        if values[middle] < x:
            low = middle + 1
        else:
            high = middle
    return low - first


@njit(cache=True)
def _before(a, b):
    """Whether ``a`` sorts before ``b``, NaN last (NumPy's order)."""
    return a < b or (a == a and b != b)


@njit(cache=True)
def _sift_down(keys, order, root, end):
    while True:
        child = 2 * root + 1
        if child >= end:
            return
        if child + 1 < end and _before(keys[order[child]], keys[order[child + 1]]):
            child += 1
        if not _before(keys[order[root]], keys[order[child]]):
            return
        order[root], order[child] = order[child], order[root]
        root = child


@njit(cache=True)
def argsort_into(keys, order):
    """Indices that sort the 1-D ``keys`` ascending, NaN last, into ``order`` (heapsort:
    O(n log n) without recursion; equal keys in any order, so use it where their order
    does not matter)."""
    n = keys.size
    for i in range(n):
        order[i] = i
    for root in range(n // 2 - 1, -1, -1):
        _sift_down(keys, order, root, n)
    for end in range(n - 1, 0, -1):
        order[0], order[end] = order[end], order[0]
        _sift_down(keys, order, np.int64(0), end)


@njit(cache=True)
def cut_layout(left, feature, offsets, n_features):
    """``(cut_start, step_start)`` of :func:`tree_cuts`: where the cuts and the steps of
    each (tree t, feature j) begin, row-major over index t * p + j (one pass over the
    nodes)."""
    n_trees = offsets.size - 1
    p = n_features
    cut_start = np.zeros(n_trees * p + 1, dtype=np.int64)
    step_start = np.zeros(n_trees * p + 1, dtype=np.int64)
    for t in range(n_trees):
        for node in range(offsets[t], offsets[t + 1]):
            if left[node] != -1:
                cut_start[t * p + feature[node] + 1] += 1
    for index in range(n_trees * p):
        step_start[index + 1] = step_start[index] + cut_start[index + 1] + 2  # + NaN cell
        cut_start[index + 1] += cut_start[index]
    return cut_start, step_start


@njit(cache=True)
def sort_tree_cuts(left, feature, threshold, offsets, n_features, cut_start, cuts, t, fill,
                   unsorted, order):
    """Write tree t's thresholds into its part of ``cuts`` (the layout of :func:`tree_cuts`),
    each feature's sorted ascending. ``fill`` (p,), ``unsorted`` and ``order`` (at least the
    tree's most cuts on one feature) are buffers; no other tree's part is touched."""
    p = n_features
    for j in range(p):
        fill[j] = cut_start[t * p + j]
    for node in range(offsets[t], offsets[t + 1]):
        if left[node] != -1:
            j = feature[node]
            cuts[fill[j]] = threshold[node]
            fill[j] += 1
    for j in range(p):
        first, size = cut_start[t * p + j], fill[j] - cut_start[t * p + j]
        for k in range(size):
            unsorted[k] = cuts[first + k]
        argsort_into(unsorted[:size], order[:size])
        for k in range(size):
            cuts[first + k] = unsorted[order[k]]


@njit(cache=True)
def most_cuts(cut_start):
    """The largest number of cuts of one (tree, feature) (at least 1: a buffer size)."""
    largest = 1
    for index in range(cut_start.size - 1):
        largest = max(largest, cut_start[index + 1] - cut_start[index])
    return largest


@njit(cache=True)
def tree_cuts(left, feature, threshold, offsets, n_features):
    """Sorted thresholds of every (tree t, feature j), row-major over index t * p + j.

    Returns ``(cuts, cut_start, step_start)``: the cuts of (t, j) are
    ``cuts[cut_start[index]:cut_start[index + 1]]``, and a step function over the intervals
    (−inf, c_0], (c_0, c_1], ..., (c_last, inf), then x_j = NaN, takes rows
    ``step_start[index]:step_start[index + 1]`` of a steps table; x_j lies in interval
    ``searchsorted(cuts of (t, j), x_j)``, NaN in the last row (:func:`table_value`).
    One thread; :func:`singleton_tables` sorts each tree's cuts in that tree's task.
    """
    cut_start, step_start = cut_layout(left, feature, offsets, n_features)
    cuts = np.empty(cut_start[-1])
    largest = most_cuts(cut_start)
    unsorted = np.empty(largest)
    order = np.empty(largest, dtype=np.int64)
    fill = np.empty(n_features, dtype=np.int64)
    for t in range(offsets.size - 1):
        sort_tree_cuts(left, feature, threshold, offsets, n_features, cut_start, cuts, t, fill,
                       unsorted, order)
    return cuts, cut_start, step_start


def singleton_tables(forest: PackedForest, fraction: np.ndarray) -> tuple:
    """E[f_t(X) | x_j] of every tree t and feature j as step functions of x_j, path-dependent
    (see :func:`_singleton_tables_tasks`); ``fraction`` is :func:`cover_fractions` of
    ``forest``. One task per tree (:func:`harness.core.tasks.run_tasks`): a tree writes only
    its own rows of the table and sorts its own cuts first (:func:`sort_tree_cuts`; sorted
    in one serial pass before the tasks, they took 0.03 s of a 0.76 s tree SAGE on sage-C's
    300 trees on 2 threads), so the bits do not depend on the number of threads."""
    cut_start, step_start = cut_layout(forest.left, forest.feature, forest.offsets,
                                       forest.n_features)
    cuts = np.empty(cut_start[-1])
    steps = np.zeros((step_start[-1], forest.value.shape[1]))
    run_tasks(_singleton_tables_tasks, forest.n_trees, forest.left, forest.right,
              forest.feature, forest.threshold, forest.missing_left, forest.value, fraction,
              forest.offsets, forest.n_features, cuts, cut_start, step_start, steps)
    return cuts, cut_start, steps, step_start


@njit(cache=True, nogil=True)
def _singleton_tables_tasks(left, right, feature, threshold, missing_left, value, fraction,
                            offsets, n_features, cuts, cut_start, step_start, steps,
                            first_tree, last_tree):
    """E[f_t(X) | x_j] of trees ``first_tree, ..., last_tree - 1`` and every feature j as a
    step function of x_j (path-dependent), into their rows of ``steps``.

    g_tj(x_j) = Σ_leaves v_l C_l^(−j) 1[x_j in I_lj]: C_l^(−j) is the product of the cover
    fractions on the leaf's path except at splits on j, I_lj the interval of x_j that the
    leaf's splits on j allow (all reals if none). Between consecutive thresholds of j in the
    tree it is constant; at x_j = NaN it sums the leaves whose splits on j all go the way
    missing values go (the table's last cell, filled directly rather than by differences).
    The tables are in the layout of :func:`tree_cuts`; the values on the intervals and at
    NaN are ``steps[step_start[t * p + j]:...]``, shape (n_cuts + 2, n_values). Cost
    O(leaves x (depth + n_features)) per tree, once per forest.
    """
    n_values = value.shape[1]
    p = n_features
    largest = 1
    for t in range(first_tree, last_tree):
        largest = max(largest, offsets[t + 1] - offsets[t])
    parent = np.empty(largest, dtype=np.int64)
    fill = np.empty(p, dtype=np.int64)
    unsorted = np.empty(largest)  # a tree has fewer cuts than nodes
    order = np.empty(largest, dtype=np.int64)
    product = np.empty(p)
    low = np.empty(p)
    high = np.empty(p)
    nan_in = np.empty(p, dtype=np.bool_)  # NaN in x_j reaches the leaf
    seen = np.full(p, -1, dtype=np.int64)
    for t in range(first_tree, last_tree):
        sort_tree_cuts(left, feature, threshold, offsets, n_features, cut_start, cuts, t, fill,
                       unsorted, order)
        start = offsets[t]
        for node in range(offsets[t + 1] - start):
            if left[start + node] != -1:
                parent[left[start + node]] = node
                parent[right[start + node]] = node
        for leaf in range(offsets[t + 1] - start):
            if left[start + leaf] != -1:
                continue
            weight = 1.0
            node = leaf
            while node != 0:
                up = parent[node]
                j = feature[start + up]
                if seen[j] != leaf:
                    seen[j] = leaf
                    product[j] = 1.0
                    low[j] = -np.inf
                    high[j] = np.inf
                    nan_in[j] = True
                cut = threshold[start + up]
                went_left = node == left[start + up]
                if went_left:
                    high[j] = min(high[j], cut)
                else:
                    low[j] = max(low[j], cut)
                nan_in[j] = nan_in[j] and went_left == (missing_left[start + up] != 0)
                product[j] *= fraction[start + node]
                weight *= fraction[start + node]
                node = up
            for j in range(p):
                index = t * p + j
                nan_row = step_start[index + 1] - 1
                first, last = step_start[index], nan_row - 1
                share = weight
                nan_reaches = True
                if seen[j] == leaf:
                    nan_reaches = nan_in[j]
                    share = weight / product[j]
                    if low[j] > -np.inf:
                        first += count_below(cuts, cut_start[index], cut_start[index + 1],
                                             low[j]) + 1
                    if high[j] < np.inf:
                        last = step_start[index] + count_below(
                            cuts, cut_start[index], cut_start[index + 1], high[j])
                for c in range(n_values):
                    if first <= last:
                        steps[first, c] += share * value[start + leaf, c]
                        if last + 1 < nan_row:
                            steps[last + 1, c] -= share * value[start + leaf, c]
                    if nan_reaches:
                        steps[nan_row, c] += share * value[start + leaf, c]
        integrate_steps(steps, step_start, t, p)
        seen[:] = -1


@njit(cache=True)
def integrate_steps(steps, step_start, t, p):
    """Turn tree t's difference arrays over the cut intervals into values (prefix sums); the
    last (NaN) cell of each table holds its value already."""
    for j in range(p):
        index = t * p + j
        for row in range(step_start[index] + 1, step_start[index + 1] - 1):
            for c in range(steps.shape[1]):
                steps[row, c] += steps[row - 1, c]


@njit(cache=True)
def table_value(tables, index, x_j, column):
    """Value at x_j of the step function ``index`` = t * p + j of ``tables``."""
    cuts, cut_start, steps, step_start = tables
    if x_j != x_j:  # NaN: the table's last cell
        return steps[step_start[index + 1] - 1, column]
    cell = count_below(cuts, cut_start[index], cut_start[index + 1], np.float64(x_j))
    return steps[step_start[index] + cell, column]


@njit(cache=True, nogil=True)
def _singleton_sums_tasks(tables, X32, columns, n_trees, out, first_task, last_task):
    """Features ``first_task, ..., last_task - 1`` of :func:`singleton_sums` into their rows
    of ``out`` (p, n)."""
    cuts, cut_start, steps, step_start = tables
    n, p = X32.shape
    column = np.empty(n)  # float64, as the cuts argsort_into sorts: one signature
    order = np.empty(n, dtype=np.int64)
    for j in range(first_task, last_task):
        for i in range(n):
            column[i] = X32[i, j]
        argsort_into(column, order)
        for t in range(n_trees):
            index = t * p + j
            first, last = cut_start[index], cut_start[index + 1]
            cell = 0  # the number of cuts below x: searchsorted(cuts, x, side="left")
            for r in range(n):
                i = order[r]
                x = np.float64(X32[i, j])
                if x != x:  # NaN (sorted last): the table's last cell
                    out[j, i] += steps[step_start[index + 1] - 1, columns[i]]
                    continue
                while first + cell < last and cuts[first + cell] < x:
                    cell += 1
                out[j, i] += steps[step_start[index] + cell, columns[i]]


def singleton_sums(tables, X32: np.ndarray, columns: np.ndarray, n_trees: int) -> np.ndarray:
    """Σ_t g_tj(x_ij) in output column ``columns[i]`` for every row i and feature j, (n, p).

    ``tables`` in the layout of :func:`singleton_tables` (or the marginal sums of
    :func:`harness.kernels.sage.marginal.marginal_tables`). Each column of X is sorted once and the
    cuts of every tree are swept beside it, instead of a binary search per (row, tree,
    feature). One task per feature (:func:`harness.core.tasks.run_tasks`); each entry is
    summed over the trees in order, whatever the number of threads.
    """
    out = np.zeros(X32.shape[::-1])  # a row per feature: no two tasks write one cache line
    run_tasks(_singleton_sums_tasks, X32.shape[1], tables, X32, columns, n_trees, out)
    return np.ascontiguousarray(out.T)
