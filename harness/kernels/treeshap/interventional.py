"""Exact interventional TreeSHAP in float64 (Lundberg et al. 2020, "Interventional Tree SHAP").

For one tree, a row x and a background row z, the interventional coalition value is
v(S) = f(x_S, z_{~S}). The hybrid point reaches a leaf l only through the splits where x and z
go different ways; writing A_l (B_l) for the features whose x-side (z-side) branch is on the
path to l, l is reached iff A_l ⊆ S and B_l ∩ S = ∅, so each leaf is a game of |A_l| + |B_l|
players with the closed-form Shapley values

    φ_j += v_l (a-1)! b! / (a+b)!   for j in A_l,    φ_j -= v_l a! (b-1)! / (a+b)!   for j in B_l,

with a = |A_l|, b = |B_l|. The forest value is the mean over trees and background rows, and
base + Σ_j φ_j = f(x) with base = mean_z f(z) (efficiency).

The background rows are walked together, 64 at a time as the bits of a word (which rows go
left at each node is computed once per forest): a state is a node, the features assigned so
far with their side (x's or z's branch) and the set of rows that share them. At a split on
an unassigned feature j the rows that go x's way stay in the state; the others continue
twice, down x's branch with j assigned to x and down their own branch with j assigned to z.
At a split on an assigned feature all rows follow x (side x) or each its own way (side z). A
leaf adds its value times its number of rows, so a leaf that many background rows reach in
the same state costs one visit instead of one per row (shap walks each (x, z) pair apart).
Blocks of rows and groups of trees are explained in parallel; each row's values are summed
in the same order whatever the number of threads. shap computes the same quantity, but in
single precision and with deviations from the definition (see ``methods/treeshap.py``);
this kernel keeps double precision, so that it equals subset enumeration and the additivity
holds to ~1e-12.

Routing is the view's rule (:func:`harness.forest.packed.goes_left`): a coded row goes left
when ``x_j <= threshold``, or when ``x_j`` is NaN and the node sends missing values left.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit

from harness.forest.compact import PathForest, compact_forest
from harness.forest.packed import PackedForest, as_float32_rows, goes_left
from harness.kernels.background_bits import background_directions, popcount, word_rows
from harness.kernels.tree_groups import sum_by_groups, tree_groups

X_SIDE, Z_SIDE = 1, 2
ROWS_PER_BLOCK = 32  # rows explained together, tree by tree (one parallel work item)


def shapley_weights(size: int) -> np.ndarray:
    """``weights[a, b] = a! b! / (a + b + 1)!`` for a + b < size: the Shapley weight of a
    coalition of a players for one of a + b + 1 (by lgamma, no overflow)."""
    a = np.arange(size)[:, None]
    b = np.arange(size)[None, :]
    return np.exp([[math.lgamma(i + 1) + math.lgamma(j + 1) - math.lgamma(i + j + 2)
                    for j in range(size)] for i in range(size)]) * (a + b < size)


@njit(cache=True)
def _leaf(value, at, count, a, b, path_feature, path_side, weights, phi):
    """Add leaf ``at``'s Shapley values, for ``count`` background rows, to ``phi``."""
    if a + b == 0:
        return
    gain = weights[a - 1, b] * count if a > 0 else 0.0
    loss = weights[a, b - 1] * count if b > 0 else 0.0
    for k in range(a + b):
        w = gain if path_side[k] == X_SIDE else -loss
        j = path_feature[k]
        for c in range(value.shape[1]):
            phi[j, c] += w * value[at, c]


@njit(cache=True)
def _walk(kids, feature, threshold, missing, value, directions, start, word, held, x, weights,
          side_of, path_feature, path_side, stack, phi):
    """Add one tree's Shapley values of row x over the background rows ``held`` of ``word``.

    A stack frame is (node, rows, a, b, path length, feature assigned on entering, its side);
    entering a frame truncates the path to its length (clearing ``side_of`` of the features
    dropped) and appends its assignment, so ``side_of`` always describes the frame's path.
    """
    s_node, s_rows, s_a, s_b, s_len, s_feature, s_side = stack
    s_node[0], s_rows[0], s_a[0], s_b[0], s_len[0], s_feature[0] = start, held, 0, 0, 0, -1
    top = 1
    length = 0
    while top > 0:
        top -= 1
        at, held, a, b = s_node[top], s_rows[top], s_a[top], s_b[top]
        while length > s_len[top]:
            length -= 1
            side_of[path_feature[length]] = 0
        if s_feature[top] >= 0:
            path_feature[length] = s_feature[top]
            path_side[length] = s_side[top]
            side_of[s_feature[top]] = s_side[top]
            length += 1
        j = feature[at]
        while j >= 0:
            x_left = goes_left(x[j], threshold[at], missing, at)
            x_child = start + kids[at, np.int64(x_left)]
            side = side_of[j]
            if side == X_SIDE:
                at = x_child
                j = feature[at]
                continue
            rows_left = directions[at, word]
            agree = held & (rows_left if x_left else ~rows_left)
            differ = held & ~agree
            if differ != 0:
                other = start + kids[at, np.int64(not x_left)]
                if side == Z_SIDE:  # each row its own way: x's way or the other
                    s_node[top], s_rows[top], s_a[top], s_b[top] = other, differ, a, b
                    s_len[top], s_feature[top] = length, -1
                    top += 1
                else:
                    s_node[top], s_rows[top], s_a[top], s_b[top] = other, differ, a, b + 1
                    s_len[top], s_feature[top], s_side[top] = length, j, Z_SIDE
                    top += 1
                    s_node[top], s_rows[top], s_a[top], s_b[top] = x_child, differ, a + 1, b
                    s_len[top], s_feature[top], s_side[top] = length, j, X_SIDE
                    top += 1
            if agree == 0:
                break
            held = agree
            at = x_child
            j = feature[at]
        if j < 0:
            _leaf(value, at, popcount(held), a, b, path_feature, path_side, weights, phi)


@njit(cache=True)
def _explain_block(kids, feature, threshold, missing, value, offsets, max_depth, X32,
                   n_background, directions, weights, first_tree, last_tree, first_row,
                   last_row, out):
    """Add trees ``first_tree``, ..., ``last_tree - 1`` (in order) of rows ``first_row``, ...,
    ``last_row - 1`` into ``out``, with buffers of their own."""
    p = X32.shape[1]
    size = 2 * max_depth + 4
    stack = (np.empty(size, dtype=np.int64), np.empty(size, dtype=np.uint64),
             np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64),
             np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64),
             np.empty(size, dtype=np.int64))
    side_of = np.zeros(p, dtype=np.int64)
    path_feature = np.empty(p, dtype=np.int64)
    path_side = np.empty(p, dtype=np.int64)
    for t in range(first_tree, last_tree):  # a tree stays in cache for the block's rows
        for i in range(first_row, last_row):
            for word in range(directions.shape[1]):
                _walk(kids, feature, threshold, missing, value, directions, offsets[t],
                      word, word_rows(n_background, word), X32[i], weights, side_of,
                      path_feature, path_side, stack, out[i])
                side_of[:] = 0


@njit(cache=True, nogil=True)
def _interventional_tasks(kids, feature, threshold, missing, value, offsets, max_depth, X32,
                          n_background, directions, weights, rows_per_block, n_groups, out,
                          others, first, last):
    """Tasks ``first, ..., last - 1`` of :func:`_interventional_sums`: task (group, block)
    adds the trees of group ``group`` for the rows of block ``block`` into ``out`` (group 0)
    or ``others[group - 1]``."""
    n = X32.shape[0]
    n_trees = offsets.size - 1
    n_blocks = (n + rows_per_block - 1) // rows_per_block
    for task in range(first, last):
        group, block = task // n_blocks, task % n_blocks
        _explain_block(kids, feature, threshold, missing, value, offsets, max_depth, X32,
                       n_background, directions, weights, group * n_trees // n_groups,
                       (group + 1) * n_trees // n_groups, block * rows_per_block,
                       min(n, (block + 1) * rows_per_block),
                       out if group == 0 else others[group - 1])


def _interventional_sums(kids, feature, threshold, missing, value, offsets, max_depth, X32,
                         n_background, directions, weights, rows_per_block,
                         n_groups) -> np.ndarray:
    """Sum over trees and background rows of every row's values, (n, p, n_values).

    One task per (group of trees, block of rows) (:func:`harness.core.tasks.run_tasks`); a
    group's sums go to an array of its own (the first group's to the result) and are added
    in group order, so a row's arithmetic is fixed by ``rows_per_block`` and ``n_groups``,
    which the caller derives from the sizes only: the same bits on any number of threads.
    """
    n, p = X32.shape
    out = np.zeros((n, p, value.shape[1]))
    n_blocks = (n + rows_per_block - 1) // rows_per_block
    sum_by_groups(_interventional_tasks, n_groups * n_blocks, out, n_groups, kids, feature,
                  threshold, missing, value, offsets, max_depth, X32, n_background,
                  directions, weights, rows_per_block, n_groups)
    return out


def interventional_shap(compact: PathForest, X: np.ndarray,
                        background: np.ndarray) -> np.ndarray:
    """Interventional Shapley values of a forest, shape (n, p, n_values).

    Parameters
    ----------
    compact : PathForest
        A forest view's ``paths`` field (its ``packed`` form included).
    X : ndarray of shape (n, p)
        Rows to explain, coded by the view (:meth:`harness.forest.view.ForestView.rows`).
    background : ndarray of shape (m, p)
        Rows over which absent features are integrated (the marginal distribution), coded
        likewise.
    """
    forest = compact.packed
    X32 = as_float32_rows(X)
    Z32 = as_float32_rows(background)
    directions = background_directions(forest.left, forest.feature, forest.threshold,
                                       forest.missing_left, forest.offsets, Z32)
    weights = shapley_weights(min(X32.shape[1], forest.max_depth) + 1)
    out_bytes = X32.shape[0] * X32.shape[1] * forest.value.shape[1] * 8
    out = _interventional_sums(compact.kids, compact.feature, compact.threshold,
                               compact.missing_left, forest.value, forest.offsets,
                               forest.max_depth, X32, Z32.shape[0], directions, weights,
                               ROWS_PER_BLOCK, tree_groups(forest.n_trees, out_bytes))
    out /= forest.n_trees * Z32.shape[0]
    return out


@functools.cache
def compile_kernel() -> None:
    """Compile (or load from numba's cache) the kernel for both output widths, on a stump."""
    X = np.array([[0.0], [1.0]])
    for width in (1, 2):
        stump = PackedForest(
            left=np.array([1, -1, -1]), right=np.array([2, -1, -1]),
            feature=np.array([0, -2, -2]), threshold=np.array([0.5, -2.0, -2.0]),
            value=np.ones((3, width)), cover=np.ones(3), impurity=np.zeros(3),
            offsets=np.array([0, 3]), max_depth=1, n_features=1, classifier=width > 1)
        interventional_shap(compact_forest(stump), X, X)
