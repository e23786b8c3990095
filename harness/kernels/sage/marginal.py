"""Compiled coalition curves of tree SAGE, marginal imputation (sage's MarginalImputer).

SAGE (Covert, Lundberg, Lee 2020) averages, over rows (x, y) and feature permutations π, the
loss drops ℓ(f_{S_{k-1}}(x), y) − ℓ(f_{S_k}(x), y), where S_k holds the first k features of
π. A model-agnostic estimator imputes each of the p + 1 coalitions separately. For a tree
the coalitions along π are nested, so all p + 1 values come from one pass (feature j enters
at step k = rank(j) + 1). Steps k = 0, 1 come from per-tree tables built here once per
background set, so the walks serve k >= 2 only.

Marginal imputation over a background set Z (sage's MarginalImputer, exactly): the hybrid
point (x_S, z_{~S}) of a background row z reaches one leaf per k; at a node split on
feature j, x's child holds the ranks k > rank(j) and z's own child k <= rank(j). The
background rows are walked together, 64 at a time as bits of a word (the directions of
all background rows at every node are computed once): a state is a node, an interval of
k and the set of rows that reach the node for those k. Rows that go x's way share x's
child; the others split into x's child for k > rank(j) and their own child for
k <= rank(j); a leaf adds its value times the number of rows over the interval. Every
direction, x's and the background rows', follows the view's routing rule, NaN included
(:func:`harness.forest.packed.goes_left`).

The curves, their output column and their independence of the thread count are as in
:mod:`harness.kernels.sage.path_dependent` (pairs in groups of ``CHUNK``, each summed over trees
and
background words in a fixed order).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from harness.core.tasks import run_tasks
from harness.forest.packed import PackedForest, goes_left
from harness.kernels.background_bits import background_directions, popcount, word_rows
from harness.kernels.sage.tables import count_below, integrate_steps, table_value, tree_cuts

CHUNK = 32  # pairs per parallel work item


@njit(cache=True)
def _spread(left, right, feature, threshold, missing_left, value, directions, start, word,
            n_background, j, table, first_step, last_step, totals, stack):
    """Walk the background rows of ``word`` through one tree, each its own way except at
    splits on feature j (none if j < 0), where x_j decides: both children are followed with
    the interval of x_j cells (cut indices in ``table``) that lead there, and whether
    x_j = NaN leads there too. A leaf adds its value times its number of rows to the
    difference array ``totals`` over its cells (rows first_step, ..., last_step) and, if
    NaN reaches it, directly to the NaN cell (row last_step + 1)."""
    stack_node, stack_low, stack_high, stack_rows, stack_nan = stack
    stack_node[0], stack_low[0], stack_high[0] = 0, 0, table.size
    stack_rows[0] = word_rows(n_background, word)
    stack_nan[0] = j >= 0  # the base sums (j < 0) have no NaN cell
    top = 1
    while top > 0:
        top -= 1
        at, low, high, held = start + stack_node[top], stack_low[top], stack_high[top], \
            stack_rows[top]
        nan = stack_nan[top]
        if left[at] == -1:
            count = popcount(held)
            for c in range(value.shape[1]):
                if low <= high:
                    totals[first_step + low, c] += value[at, c] * count
                    if first_step + high + 1 <= last_step:
                        totals[first_step + high + 1, c] -= value[at, c] * count
                if nan:
                    totals[last_step + 1, c] += value[at, c] * count
            continue
        if feature[at] == j:
            # x_j <= cut: cells <= cut
            cut = count_below(table, np.int64(0), table.size, threshold[at])
            nan_left = missing_left[at] != 0
            children = ((left[at], low, min(high, cut), held, nan and nan_left),
                        (right[at], max(low, cut + 1), high, held, nan and not nan_left))
        else:
            rows_left = directions[at, word]
            children = ((left[at], low, high, held & rows_left, nan),
                        (right[at], low, high, held & ~rows_left, nan))
        for node, child_low, child_high, child_rows, child_nan in children:
            if (child_low <= child_high or child_nan) and child_rows != 0:
                stack_node[top], stack_low[top], stack_high[top] = node, child_low, child_high
                stack_rows[top] = child_rows
                stack_nan[top] = child_nan
                top += 1


@njit(cache=True)
def marginal_tables(left, right, feature, threshold, missing_left, value, offsets, n_features,
                    directions, n_background):
    """Σ_b f_t(z_b) per tree (k = 0) and Σ_b f_t(x_j, z_b,~j) as step functions of x_j per
    tree and feature (k = 1), for the marginal walk.

    Returns ``(base, tables)``: ``base`` (n_trees, n_values) and ``tables`` in the layout of
    :func:`singleton_tables`. Sums over the background rows, not means.
    """
    n_trees = offsets.size - 1
    p = n_features
    cuts, cut_start, step_start = tree_cuts(left, feature, threshold, offsets, p)
    steps = np.zeros((step_start[-1], value.shape[1]))
    base = np.zeros((n_trees, value.shape[1]))
    largest = 2
    for t in range(n_trees):
        largest = max(largest, offsets[t + 1] - offsets[t] + 1)
    stack = (np.empty(largest, dtype=np.int64), np.empty(largest, dtype=np.int64),
             np.empty(largest, dtype=np.int64), np.empty(largest, dtype=np.uint64),
             np.empty(largest, dtype=np.bool_))
    nothing = np.empty(0)
    for t in range(n_trees):
        for word in range(directions.shape[1]):
            _spread(left, right, feature, threshold, missing_left, value, directions,
                    offsets[t], word, n_background, np.int64(-1), nothing, t, t, base, stack)
            for j in range(p):
                index = t * p + j
                _spread(left, right, feature, threshold, missing_left, value, directions,
                        offsets[t], word, n_background, j,
                        cuts[cut_start[index]:cut_start[index + 1]], step_start[index],
                        step_start[index + 1] - 2, steps, stack)
        integrate_steps(steps, step_start, t, p)
    return base, (cuts, cut_start, steps, step_start)


def marginal_setup(forest: PackedForest, Z32: np.ndarray) -> tuple:
    """What :func:`marginal_curves` needs of a forest and background set, computed once:
    ``(n_background, directions, base, tables)``."""
    f = forest
    directions = background_directions(f.left, f.feature, f.threshold, f.missing_left,
                                       f.offsets, Z32)
    base, tables = marginal_tables(f.left, f.right, f.feature, f.threshold, f.missing_left,
                                   f.value, f.offsets, f.n_features, directions, Z32.shape[0])
    return Z32.shape[0], directions, base, tables


@njit(cache=True)
def _bitset_walk(left, right, feature, threshold, missing_left, value, directions, start, word,
                 held, x, rank, column, steps, stack):
    """Add, for the background rows ``held`` of ``word``, the hybrid leaf values of every
    step k >= 2 to ``steps`` (a difference array over k). A state (node, [low, high], rows)
    follows x's way without the stack while the rows agree with x or the split's feature is
    in every S_k of the interval."""
    stack_node, stack_low, stack_high, stack_rows = stack
    p = rank.size
    stack_node[0], stack_low[0], stack_high[0], stack_rows[0] = 0, 2, p, held
    top = 1
    while top > 0:
        top -= 1
        node, low, high, held = stack_node[top], stack_low[top], stack_high[top], \
            stack_rows[top]
        at = start + node
        while left[at] != -1:
            j = feature[at]
            x_left = goes_left(np.float64(x[j]), threshold[at], missing_left, at)
            rows_left = directions[at, word]
            agree = held & (rows_left if x_left else ~rows_left)
            differ = held & ~agree
            x_child = left[at] if x_left else right[at]
            r = rank[j]  # x's child from step r + 1 on, the rows' own child up to r
            if differ != 0 and r >= low:
                own_child = right[at] if x_left else left[at]
                if agree != 0:
                    stack_node[top], stack_low[top], stack_high[top] = x_child, low, high
                    stack_rows[top] = agree
                    top += 1
                if r >= high:
                    x_child = own_child
                else:
                    stack_node[top], stack_low[top], stack_high[top] = own_child, low, r
                    stack_rows[top] = differ
                    top += 1
                    low = r + 1
                held = differ
            at = start + x_child
        v = value[at, column] * popcount(held)
        steps[low] += v
        steps[high + 1] -= v


@njit(cache=True, nogil=True)
def _marginal_tasks(left, right, feature, threshold, missing_left, value, offsets, max_depth,
                    X32, n_background, directions, base, tables, rows, perms, columns, steps,
                    curves, first_chunk, last_chunk):
    """Chunks of CHUNK pairs ``first_chunk, ..., last_chunk - 1`` of :func:`marginal_curves`:
    their step changes into ``steps``, then their curves (the running sums) into
    ``curves``."""
    n_pairs, p = perms.shape
    n_trees = offsets.size - 1
    size = 2 * max_depth + 4
    scale = 1.0 / (n_trees * n_background)
    for chunk in range(first_chunk, last_chunk):
        first, last = chunk * CHUNK, min(n_pairs, (chunk + 1) * CHUNK)
        ranks = np.empty((last - first, p), dtype=np.int64)
        for q in range(first, last):
            for k in range(p):
                ranks[q - first, perms[q, k]] = k
        stack = (np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64),
                 np.empty(size, dtype=np.int64), np.empty(size, dtype=np.uint64))
        for t in range(n_trees):
            start = offsets[t]
            for q in range(first, last):
                column, x = columns[q], X32[rows[q]]
                steps[q, 0] += base[t, column]
                single = table_value(tables, t * p + perms[q, 0], np.float64(x[perms[q, 0]]),
                                     column)
                steps[q, 1] += single - base[t, column]
                steps[q, 2] -= single
                if p < 2:
                    continue
                for word in range(directions.shape[1]):
                    _bitset_walk(left, right, feature, threshold, missing_left, value,
                                 directions, start, word, word_rows(n_background, word), x,
                                 ranks[q - first], column, steps[q], stack)
        for q in range(first, last):
            total = 0.0
            for k in range(p + 1):
                total += steps[q, k]
                curves[q, k] = total * scale


def marginal_curves(forest: PackedForest, X32: np.ndarray, Z32: np.ndarray, rows: np.ndarray,
                    perms: np.ndarray, columns: np.ndarray,
                    setup: tuple | None = None) -> np.ndarray:
    """Coalition curves with marginal imputation over the background rows ``Z32``.

    f_S(x) = mean over background rows z of f(x_S, z_{~S}), exactly as sage's
    MarginalImputer computes it, shape (n_pairs, p + 1); any number of background rows.

    Parameters
    ----------
    setup : tuple, optional
        :func:`marginal_setup` of this forest and ``Z32``, to compute it once for many calls.
    """
    if setup is None:
        setup = marginal_setup(forest, Z32)
    n_background, directions, base, tables = setup
    f = forest
    n_pairs, p = perms.shape
    steps = np.zeros((n_pairs, p + 2))
    curves = np.empty((n_pairs, p + 1))
    run_tasks(_marginal_tasks, -(-n_pairs // CHUNK), f.left, f.right, f.feature, f.threshold,
              f.missing_left, f.value, f.offsets, f.max_depth, X32, n_background, directions,
              base, tables, rows, perms, columns, steps, curves)
    return curves
