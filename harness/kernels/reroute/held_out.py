"""Compiled held-out permutation pass of ``mda_test``, sharing each row's original path.

Permuting column j moves row x to x' = (x'_j, x_{-j}). Down the tree x' follows x's own
path until the first split on j where x'_j goes the other way: every split on another
feature reads the same value, and a split on j where x'_j goes x_j's way keeps the path.
So each row is walked once per tree, the depths of its splits on each feature are bucketed
by feature (in path order), and for every (row, j) only those splits are checked: if x'_j
agrees at all of them the leaf is unchanged and costs nothing more; otherwise x' is walked
afresh from the other child of the first split where it disagrees, eight such walks
interleaved to hide the latency of their dependent loads. The result is the leaf that a
full walk of x' reaches, so the output equals ``forest.predict`` on the permuted rows, tree
by tree, in the same order of summation.

The walks read the compact forest of :mod:`harness.forest.compact` (children as an int32
pair, int32 features, -1 at leaves, float32 thresholds rounded down so that
``x32 <= threshold32`` is scikit-learn's ``float64(x32) <= threshold``): a third of the
bytes per node step of the packed forest. Node ids are global (tree start + local id).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from harness.core.tasks import run_tasks
from harness.forest.compact import PathForest
from harness.forest.packed import goes_left
from harness.forest.permutations import STREAM_HELD_OUT, fill_keyed_permutation


@njit(cache=True)
def _step(kids, feature, threshold, missing, start, X32, row, node, j, x_j):
    """One step down from ``node`` for ``row`` with feature j set to ``x_j`` (a leaf stays)."""
    f = feature[node]
    x = x_j if f == j else X32[row, max(f, 0)]
    down = start + kids[node, np.int64(goes_left(x, threshold[node], missing, node))]
    return node if f < 0 else down


@njit(cache=True)
def _finish_walks(kids, feature, threshold, missing, start, X32, j, task_row, task_node, task_x,
                count):
    """Walk ``count`` rows to their leaves from ``task_node`` (in place), eight at a time.

    Eight independent walks interleaved keep eight chains of dependent loads in flight
    instead of one; a walk that reaches its leaf stays there until the eight are done. On
    the bench's case C (a 12 MB forest, past the caches) eight in place of four take the
    pass from 1.12 to 0.92 s, twelve or sixteen gain no more than 2 %.
    """
    i = 0
    while i + 8 <= count:
        r0, r1, r2, r3 = task_row[i], task_row[i + 1], task_row[i + 2], task_row[i + 3]
        r4, r5, r6, r7 = task_row[i + 4], task_row[i + 5], task_row[i + 6], task_row[i + 7]
        x0, x1, x2, x3 = task_x[i], task_x[i + 1], task_x[i + 2], task_x[i + 3]
        x4, x5, x6, x7 = task_x[i + 4], task_x[i + 5], task_x[i + 6], task_x[i + 7]
        a, b, c, d = task_node[i], task_node[i + 1], task_node[i + 2], task_node[i + 3]
        e, f, g, h = task_node[i + 4], task_node[i + 5], task_node[i + 6], task_node[i + 7]
        while (feature[a] >= 0 or feature[b] >= 0 or feature[c] >= 0 or feature[d] >= 0
               or feature[e] >= 0 or feature[f] >= 0 or feature[g] >= 0 or feature[h] >= 0):
            a = _step(kids, feature, threshold, missing, start, X32, r0, a, j, x0)
            b = _step(kids, feature, threshold, missing, start, X32, r1, b, j, x1)
            c = _step(kids, feature, threshold, missing, start, X32, r2, c, j, x2)
            d = _step(kids, feature, threshold, missing, start, X32, r3, d, j, x3)
            e = _step(kids, feature, threshold, missing, start, X32, r4, e, j, x4)
            f = _step(kids, feature, threshold, missing, start, X32, r5, f, j, x5)
            g = _step(kids, feature, threshold, missing, start, X32, r6, g, j, x6)
            h = _step(kids, feature, threshold, missing, start, X32, r7, h, j, x7)
        task_node[i], task_node[i + 1], task_node[i + 2], task_node[i + 3] = a, b, c, d
        task_node[i + 4], task_node[i + 5], task_node[i + 6], task_node[i + 7] = e, f, g, h
        i += 8
    for k in range(i, count):
        node = task_node[k]
        while feature[node] >= 0:
            node = _step(kids, feature, threshold, missing, start, X32, task_row[k], node, j,
                         task_x[k])
        task_node[k] = node


@njit(cache=True)
def _paths_by_feature(kids, feature, threshold, missing, start, X32, path, split_row, split_depth,
                      bucket):
    """Walk every row; ``path[row, d]`` is the node at depth d of its path (the last is its
    leaf). The (row, depth) of every split, bucketed by its feature in row then path order,
    go to ``split_row``/``split_depth[bucket[j]:bucket[j + 1]]``. Returns the leaves."""
    n, p = X32.shape
    leaves = np.empty(n, dtype=np.int64)
    bucket[:] = 0
    for row in range(n):
        node, d = start, 0
        while feature[node] >= 0:
            path[row, d] = node
            bucket[feature[node] + 1] += 1
            node = start + kids[node, np.int64(goes_left(X32[row, feature[node]],
                                                          threshold[node], missing, node))]
            d += 1
        path[row, d] = node
        leaves[row] = node
    for j in range(p):
        bucket[j + 1] += bucket[j]
    fill = bucket[:-1].copy()
    for row in range(n):
        d = 0
        while path[row, d] != leaves[row]:
            f = feature[path[row, d]]
            split_row[fill[f]] = row
            split_depth[fill[f]] = d
            fill[f] += 1
            d += 1
    return leaves


#: Tasks per tree: blocks of contiguous features (a few per thread, for balance).
FEATURE_BLOCKS = 8


@njit(cache=True)
def _keyed_permutations(seed, first_repeat, n_repeats, p, n):
    """The permutation of column j in repeat r, keyed (seed, STREAM_HELD_OUT, r, j), for the
    repeats ``first_repeat``, ..., ``first_repeat + n_repeats - 1``: (n_repeats, p, n)."""
    perms = np.empty((n_repeats, p, n), dtype=np.int32)
    picks = np.empty(n, dtype=np.int64)
    for r in range(n_repeats):
        for j in range(p):
            fill_keyed_permutation(seed, np.int64(STREAM_HELD_OUT), first_repeat + r, j,
                                   perms[r, j], picks)
    return perms


@njit(cache=True)
def _tree_paths(kids, feature, threshold, missing, value, start, X32, path, split_row,
                split_depth, bucket, base):
    """One tree's paths (:func:`_paths_by_feature`) and its outputs added to ``base``;
    returns the leaves."""
    leaves = _paths_by_feature(kids, feature, threshold, missing, start, X32, path, split_row,
                               split_depth, bucket)
    for row in range(X32.shape[0]):
        for c in range(value.shape[1]):
            base[row, c] += value[leaves[row], c]
    return leaves


@njit(cache=True, nogil=True)
def _feature_tasks(kids, feature, threshold, missing, value, start, X32, path, split_row,
                   split_depth, bucket, leaves, perms, shift, n_blocks, first_block,
                   last_block):
    """Blocks of contiguous features ``first_block, ..., last_block - 1`` (of ``n_blocks``)
    of one tree: every repeat's output shifts into ``shift[:, :, j]``. Features write
    disjoint slices (the result does not depend on the blocks), and a block's features are
    neighbours, so that two threads rarely write one cache line."""
    n, p = X32.shape
    n_repeats, n_values = shift.shape[0], value.shape[1]
    for j in range(first_block * p // n_blocks, last_block * p // n_blocks):
        task_row = np.empty(n, dtype=np.int64)
        task_node = np.empty(n, dtype=np.int64)
        task_x = np.empty(n, dtype=np.float32)
        for r in range(n_repeats):
            count = _leaving_rows(kids, threshold, missing, start, X32, path, split_row,
                                  split_depth, bucket, j, perms[r, j], task_row,
                                  task_node, task_x)
            _finish_walks(kids, feature, threshold, missing, start, X32, j, task_row,
                          task_node, task_x, count)
            for task in range(count):
                row, leaf = task_row[task], task_node[task]
                if leaf != leaves[row]:
                    for c in range(n_values):
                        shift[r, row, j, c] += value[leaf, c] - value[leaves[row], c]


@njit(cache=True)
def _leaving_rows(kids, threshold, missing, start, X32, path, split_row, split_depth, bucket, j,
                  perm, task_row, task_node, task_x):
    """List the rows whose permuted x_j (``X32[perm[row], j]``) leaves their path at a split
    on j, with the other child of the first such split as where their walk resumes."""
    count = 0
    k, end = bucket[j], bucket[j + 1]
    while k < end:
        row = split_row[k]
        x_j = X32[perm[row], j]
        while k < end and split_row[k] == row:
            node = path[row, split_depth[k]]
            x_left = goes_left(x_j, threshold[node], missing, node)
            if x_left != (path[row, split_depth[k] + 1] == start + kids[node, 1]):
                task_row[count] = row
                task_node[count] = start + kids[node, np.int64(x_left)]
                task_x[count] = x_j
                count += 1
                while k < end and split_row[k] == row:
                    k += 1
                break
            k += 1
    return count


def held_out_permutation_pass(forest: PathForest, X32: np.ndarray, seed: int,
                              first_repeat: int, n_repeats: int) -> tuple[np.ndarray, np.ndarray]:
    """Forest output shift of every row and feature when column j is permuted over all rows,
    for repeats ``first_repeat``, ..., ``first_repeat + n_repeats - 1``.

    ``forest`` is a forest view's ``paths`` field. The permutation of column j in repeat r
    is keyed (seed, STREAM_HELD_OUT, r, j) and shared by every tree, as when the permuted
    data set is given to the forest's ``predict``. Each tree's paths are walked once for all
    the repeats, then its features are tasks (:func:`harness.core.tasks.run_tasks`).
    Returns ``(shift, base)``: ``shift`` (n_repeats, n, p, n_values) is the mean over trees
    of the output on the permuted row minus the output on the original row, ``base``
    (n, n_values) the forest's output on the original rows (``predict``, summed in tree
    order). Memory: the outputs, one (n, depth + 1) path table and the n x depth split list
    of one tree.
    """
    packed = forest.packed
    kids, feature, threshold, missing = (forest.kids, forest.feature, forest.threshold,
                                         forest.missing_left)
    value, offsets, max_depth = packed.value, packed.offsets, packed.max_depth
    n, p = X32.shape
    n_trees = offsets.size - 1
    perms = _keyed_permutations(seed, first_repeat, n_repeats, p, n)
    shift = np.zeros((n_repeats, n, p, value.shape[1]))
    base = np.zeros((n, value.shape[1]))
    path = np.empty((n, max_depth + 1), dtype=np.int64)
    split_row = np.empty(n * max_depth, dtype=np.int64)
    split_depth = np.empty(n * max_depth, dtype=np.int64)
    bucket = np.zeros(p + 1, dtype=np.int64)
    n_blocks = min(p, FEATURE_BLOCKS)
    for t in range(n_trees):
        start = offsets[t]
        leaves = _tree_paths(kids, feature, threshold, missing, value, start, X32, path,
                             split_row, split_depth, bucket, base)
        run_tasks(_feature_tasks, n_blocks, kids, feature, threshold, missing, value, start,
                  X32, path, split_row, split_depth, bucket, leaves, perms, shift, n_blocks)
    shift /= n_trees
    base /= n_trees
    return shift, base
