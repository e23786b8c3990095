"""Each tree's own columns: the rows' values of the features a tree splits on, close together.

A walk reads ``X32[row, feature[node]]``. When the rows are wide (p in the thousands), each
read lands on its own cache line of a matrix larger than the caches, and a walk step costs a
trip to memory although the walks hardly change with p (Sobol-MDA's projections on
Friedman #1, 1000 rows, 100 trees of depth 8, one thread: 0.30 s at p = 10^4 against
0.047 s at p = 10, for 1.35 times the walk steps). A tree splits on at most one feature per
internal node, so its walks need only those columns: :func:`tree_columns` numbers them per
tree (``local``: the node's feature as a column of its tree) and :func:`gather_tree_rows`
copies them, for every row, into an (n, columns) matrix that stays in the cache while the
tree's walks run, from the feature-major copy of the rows (each column one contiguous
read). The walks then run unchanged on that matrix and ``local``, with columns in place of
features.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

#: Rows larger than this (bytes of the float32 matrix) may be walked tree by tree on the
#: tree's own columns. Below, they stay in the caches and copying the columns costs more
#: than it saves (Sobol-MDA, 1000 rows, 100 trees of depth 8, one thread: 0.079 s on the
#: rows against 0.086 s on the columns at p = 300, the same at p = 1000, 0.126 against
#: 0.114 s at p = 3000, 0.311 against 0.151 s at p = 10^4).
COMPACT_BYTES = 4 << 20
#: ... when the trees split, on average, on at most this fraction of the features (else
#: each tree's columns are about the whole matrix, copied once per tree for nothing).
COMPACT_SHARE = 0.25


def compact_walks(X32: np.ndarray, n_columns: int, n_trees: int) -> bool:
    """Whether the walks of ``n_trees`` trees with ``n_columns`` columns in all
    (:func:`tree_columns`) should run on each tree's columns rather than on ``X32``."""
    p = X32.shape[1]
    return X32.nbytes > COMPACT_BYTES and n_columns <= COMPACT_SHARE * p * max(n_trees, 1)


def walk_columns(left, feature, offsets, X32: np.ndarray) -> tuple:
    """``(split_on, columns, column_start, XT)`` for walks over the trees ``left``,
    ``feature``, ``offsets`` (a packed forest's) of the rows ``X32``: each tree's own columns
    (:func:`tree_columns`) and the rows' feature-major copy when :func:`compact_walks` says
    so; else ``feature`` itself, no columns and an empty ``XT`` (the tables are built only
    for rows past ``COMPACT_BYTES``)."""
    n, p = X32.shape
    n_trees = offsets.size - 1
    if X32.nbytes > COMPACT_BYTES:
        local, columns, column_start = tree_columns(left, feature, offsets, p)
        if compact_walks(X32, columns.size, n_trees):
            return local, columns, column_start, np.ascontiguousarray(X32.T)
    return (feature, np.empty(0, dtype=np.int64), np.zeros(n_trees + 1, dtype=np.int64),
            np.empty((0, n), dtype=np.float32))


@functools.cache
def compile_kernels() -> None:
    """Compile (or load from numba's cache) :func:`tree_columns` on a stump, once per
    process: :func:`walk_columns` calls it only for rows past ``COMPACT_BYTES``, which no
    warm-up's tiny rows reach, and a kernel missing from the cache makes every process that
    prepares a method reaching this module compile it in a worker first
    (:func:`harness.run.compile.cache_is_warm`)."""
    stump = np.array([1, -1, -1], dtype=np.int64)
    tree_columns(stump, np.array([0, -2, -2], dtype=np.int64),
                 np.array([0, 3], dtype=np.int64), 1)


@njit(cache=True)
def tree_columns(left, feature, offsets, n_features):
    """Number each tree's split features as its columns ``0, 1, ...`` (first use first).

    Returns
    -------
    local : ndarray (n_nodes,)
        The column of the node's split feature in its tree (leaves: 0, never read).
    columns : ndarray
        Tree t's columns are features ``columns[column_start[t]:column_start[t + 1]]``.
    column_start : ndarray (n_trees + 1,)
    """
    n_trees = offsets.size - 1
    local = np.zeros(feature.size, dtype=np.int64)
    columns = np.empty(feature.size, dtype=np.int64)
    column_start = np.zeros(n_trees + 1, dtype=np.int64)
    seen_in = np.full(n_features, -1, dtype=np.int64)
    column_of = np.empty(n_features, dtype=np.int64)
    total = 0
    for t in range(n_trees):
        for at in range(offsets[t], offsets[t + 1]):
            if left[at] == -1:
                continue
            f = feature[at]
            if seen_in[f] != t:
                seen_in[f] = t
                column_of[f] = total - column_start[t]
                columns[total] = f
                total += 1
            local[at] = column_of[f]
        column_start[t + 1] = total
    return local, columns[:total], column_start


@njit(cache=True, inline="always")
def gather_tree_rows(XT, columns, first, stop, buffer):
    """Rows of features ``columns[first:stop]`` as an (n, stop - first) C-ordered matrix held
    in ``buffer`` (at least n * (stop - first) long), from ``XT`` (p, n), the rows' feature-
    major copy."""
    n = XT.shape[1]
    width = stop - first
    rows = buffer[:n * width].reshape((n, width))
    for c in range(width):
        column = XT[columns[first + c]]
        for i in range(n):
            rows[i, c] = column[i]
    return rows

