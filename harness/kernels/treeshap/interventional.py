"""Exact interventional TreeSHAP in float64 (Lundberg et al. 2020, "Interventional Tree SHAP").

For one tree, a row x and a background row z, the interventional coalition value is
v(S) = f(x_S, z_{~S}). The hybrid point reaches a leaf l iff, for every feature j split on
the path to l, the value it takes satisfies all of the path's splits on j. Writing A_l for
the path's features that z fails (and x satisfies) and B_l for those that x fails (and z
satisfies), l is reached iff A_l ⊆ S and B_l ∩ S = ∅ (a feature both fail closes the leaf,
one both satisfy is free), so each leaf is a game of a + b players with the closed-form
Shapley values

    φ_j += v_l (a-1)! b! / (a+b)!   for j in A_l,    φ_j -= v_l a! (b-1)! / (a+b)!   for j in B_l,

with a = |A_l|, b = |B_l|. The forest value is the mean over trees and background rows, and
base + Σ_j φ_j = f(x) with base = mean_z f(z) (efficiency).

A tree is walked once for a block of up to 64 rows and 64 background rows, each set held as
the bits of a word (which background rows go left at each node is computed once per forest):
for every feature on the path, the rows and the background rows that satisfy all its splits
so far, and for every row the background rows it still forms a live pair with (no feature
failed by both). A node that no live pair reaches is not entered. At a leaf each row adds,
over its live pairs, its loss to the features it fails and the pairs' gains to the features
they fail: one visit per (row, leaf) instead of shap's one walk per (row, background row).
Blocks of rows and groups of trees are explained in parallel; each row's values are summed in
the same order whatever the number of threads or the other rows of its block. shap computes
the same quantity, but in single precision and with deviations from the definition (see
``methods/treeshap.py``); this kernel keeps double precision, so that it equals subset
enumeration and the additivity holds to ~1e-12.

Routing is the view's rule (:func:`harness.forest.packed.goes_left`): a coded row goes left
when ``x_j <= threshold``, or when ``x_j`` is NaN and the node sends missing values left.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from harness.forest.compact import PathForest, compact_forest
from harness.forest.packed import PackedForest, as_float32_rows, left_bit
from harness.kernels.background_bits import (
    ALL_ROWS,
    background_routing,
    feature_columns,
    word_rows,
)
from harness.kernels.no_alias import NOALIAS
from harness.kernels.tree_groups import sum_by_groups, tree_groups

ROWS_PER_BLOCK = 64  # rows walked together as the bits of a word (one parallel work item)
LANES = 8  # a leaf's sums run over whole lanes of this many path features (_pair_sums)
_ONE, _NONE = np.uint64(1), np.uint64(0)


@functools.cache
def shapley_weights(size: int) -> np.ndarray:
    """``weights[a + 1, b + 1] = a! b! / (a + b + 1)!`` for a + b < size: the Shapley weight
    of a coalition of a players for one of a + b + 1 (by lgamma, no overflow), shape
    (size + 1, size + 1). Row and column 0 are zeros: a leaf reads W(a - 1, b) for a
    background row that fails nothing (a = 0) and W(a, b - 1) for a row that fails nothing
    (b = 0), values that multiply only zeros there, so the kernel indexes with unsigned
    counts (no negative-index wraparound). Computed once per size and read-only, since every
    explain shares it."""
    a = np.arange(size)[:, None]
    b = np.arange(size)[None, :]
    weights = np.zeros((size + 1, size + 1))
    weights[1:, 1:] = np.exp([[math.lgamma(i + 1) + math.lgamma(j + 1) - math.lgamma(i + j + 2)
                               for j in range(size)] for i in range(size)]) * (a + b < size)
    weights.flags.writeable = False
    return weights


@njit(cache=True)
def _scratch_buffers(n_features, max_depth):
    """The buffers of :func:`_walk_pairs`, one set per task (see its docstring)."""
    levels = max_depth + 2
    # distinct features on a path, padded to whole lanes of LANES (see _pair_sums)
    on_path = (min(n_features, levels) + LANES - 1) // LANES * LANES
    return (np.full(n_features, ALL_ROWS), np.full(n_features, ALL_ROWS),
            np.zeros(n_features, dtype=np.int64), np.empty(levels, dtype=np.uint64),
            np.empty((levels, 64), dtype=np.uint64), np.empty(levels, dtype=np.uint64),
            np.empty(levels, dtype=np.uint64), np.empty(levels, dtype=np.int64),
            np.empty(levels, dtype=np.uint64), np.empty(levels, dtype=np.uint64),
            np.empty(levels, dtype=np.uint64), np.empty(on_path, dtype=np.uint64),
            np.empty(on_path, dtype=np.uint64), np.zeros(64, dtype=np.uint64),
            np.zeros((64, on_path)), np.empty(on_path, dtype=np.uint64), np.zeros(on_path))


@njit(cache=True, inline="always")
def _pair_sums(gain, z_fails, a_of, weights, z, b, lanes):
    """Row k's sums at a leaf over its live pairs ``z`` (a bit set of background rows):
    ``gain[q]`` = Σ_z W(a_z - 1, b) over the z that fail path feature q, q < ``lanes``, and
    the loss Σ_z W(a_z, b - 1), returned (``b`` the features row k fails).

    Inlined where :func:`_walk_pairs` calls it with a literal ``lanes`` (8 or 16 slots, the
    path's features padded with zeros in ``z_fails``), the fixed trip count turns the
    multiply-adds into vector code, where a loop over the path's features (6.8 on average
    on the bench's case C) runs too short to: C 80.2 -> 71.3 ms for the call, B 8.5 -> 7.1
    ms, A2 28.3 -> 25.6 ms on one thread; the same bits, since a padded slot adds zeros that
    are never written out and each slot sums its terms in the same order. Wider literals (24,
    32) and a literal-width build of ``z_fails`` were slower (C 73.8 and 76.7 ms)."""
    for q in range(lanes):
        gain[q] = 0.0
    loss = 0.0
    while z:
        zk = trailing_zeros(z)
        z &= z - _ONE
        a = a_of[zk]
        loss += weights[a + _ONE, b]  # W(a, b - 1)
        w = weights[a, b + _ONE]  # W(a - 1, b)
        for q in range(lanes):
            gain[q] += w * z_fails[zk, q]
    return loss


@njit(cache=True, **NOALIAS)
def _walk_pairs(kids, feature, threshold, missing, leaf_ptr, leaf_class, leaf_value, start,
                columns, first_row, n_rows, directions, word, background_rows, weights,
                scratch, out):
    """Add one tree's Shapley values of rows ``first_row``, ..., ``first_row + n_rows - 1``
    (at most 64: bit k is row first_row + k) over the background rows ``background_rows`` of
    ``word`` into ``out``.

    A depth-first walk; on the path to the current node, ``row_ok[j]`` (``background_ok[j]``)
    holds the rows (background rows) that satisfy every split on feature j, ``features[:n_on]``
    the distinct features split on, ``live[level, k]`` the background rows that row k forms a
    live pair with (none for a row outside ``alive[level]``, so that a leaf's paired
    background rows are one branch-free OR over the block: C 62 -> 60.5 ms) and
    ``alive[level]`` the rows with one at least. ``phase[level]`` is 0 before the left child, 1
    before the right one, 2 when both are done; entering a child saves ``row_ok[j]`` and
    ``background_ok[j]``, which leaving it restores.

    At a leaf, for each live pair (row k, background row z), a = the features z fails and
    b = those row k fails: row k loses Σ_z W(a_z, b - 1) on each feature it fails and gains,
    on each feature f that one of its background rows fails, Σ_{z fails f} W(a_z - 1, b),
    with W(i, j) = ``weights[i + 1, j + 1]``. The leaf works on dense rows over the path's
    features (which of them each paired background row fails, as 0/1 in ``z_fails[z]``): a
    row's gains are a multiply-add of ``z_fails[z]`` per pair, and it adds ``gain - fails *
    loss`` (``fails`` its own bit) to every path feature, zero where it neither fails nor
    gains. Branch-free short loops in place of one loop per set bit run the bench's leaves 2x
    faster (C: 159 -> 89 ms for the kernel, A1: 110 -> 55 ms, the same bits: a feature a live
    pair's row fails is failed by none of its background rows, so each value still gets
    exactly the loss or the gains, summed in the same order). The sums go to the flat output
    at unsigned offsets (``column[q]``: path feature q's, once per leaf), and counts are
    unsigned, so no index pays numba's negative-index wraparound (C: 64 -> 61 ms, the same
    bits).

    Every array it writes (``out`` and the buffers of ``scratch``) is an allocation of its
    own, which no other argument shares (:data:`harness.kernels.no_alias.NOALIAS`): one
    thread, the same bits, best of 15 calls of 30 rows against 30 background rows, C 79.7 ->
    77.2 ms, B 9.5 -> 8.4, A2 25.8 -> 23.8, A1 50.8 -> 48.5.
    """
    (row_ok, background_ok, on_path, features, live, alive, node_at, phase, rows_left,
     saved_rows, saved_background, background_fails, row_fails, a_of, z_fails, column,
     gain) = scratch
    n_values = np.uint64(out.shape[2])
    row_stride = np.uint64(out.shape[1]) * n_values
    flat = out.reshape(-1)
    alive[0] = ALL_ROWS if n_rows == 64 else (_ONE << np.uint64(n_rows)) - _ONE
    for k in range(n_rows):
        live[0, k] = background_rows
    node_at[0], phase[0] = np.uint64(start), 0
    level = n_on = 0
    while level >= 0:
        here = np.uint64(level)  # buffers, nodes and features are indexed unsigned: no
        at = node_at[here]  # negative-index wraparound (C: 60.5 -> 58 ms, the same bits)
        j = feature[at]
        if j < 0:
            first, last = leaf_ptr[at], leaf_ptr[at + _ONE]
            if first == last:  # a leaf of zeros adds nothing
                level -= 1
                continue
            held = alive[here]
            paired = _NONE
            for k in range(n_rows):  # (a row that is not held has no live pair left)
                paired |= live[here, k]
            for q in range(n_on):
                f = features[q]
                background_fails[q] = ~background_ok[f]
                row_fails[q] = ~row_ok[f]
                column[q] = np.uint64(f) * n_values
            lanes = (n_on + LANES - 1) // LANES * LANES
            for q in range(n_on, lanes):  # padding: no background row fails it
                background_fails[q] = _NONE
            m = paired
            while m:  # each paired background row's failed features, and how many
                z = trailing_zeros(m)
                m &= m - _ONE
                a = _NONE
                for q in range(lanes):
                    bit = (background_fails[q] >> z) & _ONE
                    z_fails[z, q] = np.float64(bit)
                    a += bit
                a_of[z] = a
            single_value = last - first == 1
            m = held
            while m:
                k = trailing_zeros(m)
                m &= m - _ONE
                b = _NONE
                for q in range(n_on):
                    b += (row_fails[q] >> k) & _ONE
                if lanes == LANES:  # literal widths: loops LLVM unrolls into vector code
                    loss = _pair_sums(gain, z_fails, a_of, weights, live[here, k], b, LANES)
                elif lanes == 2 * LANES:
                    loss = _pair_sums(gain, z_fails, a_of, weights, live[here, k], b,
                                      2 * LANES)
                else:
                    loss = _pair_sums(gain, z_fails, a_of, weights, live[here, k], b, n_on)
                at_row = (np.uint64(first_row) + k) * row_stride
                if single_value:
                    value, c = leaf_value[first], np.uint64(leaf_class[first])
                    for q in range(n_on):
                        fails = np.float64((row_fails[q] >> k) & _ONE)
                        flat[at_row + column[q] + c] += (gain[q] - fails * loss) * value
                else:
                    for q in range(n_on):
                        delta = gain[q] - np.float64((row_fails[q] >> k) & _ONE) * loss
                        for e in range(first, last):
                            flat[at_row + column[q] + np.uint64(leaf_class[e])] += (
                                delta * leaf_value[e])
            level -= 1
            continue
        split = np.uint64(j)
        step = phase[here]
        if step > 0:  # back from a child
            row_ok[split], background_ok[split] = saved_rows[here], saved_background[here]
            on_path[split] -= 1
            n_on -= on_path[split] == 0
            if step == 2:
                level -= 1
                continue
        phase[here] = step + 1
        held = alive[here]
        if step == 0:  # every row of the block, branch-free (a feature's values are contiguous)
            left = _NONE
            cut, missing_left = threshold[at], missing[at]
            for k in range(n_rows):
                left |= left_bit(columns[split, k], cut, missing_left) << np.uint64(k)
            rows_left[here] = left
            row_way, background_way = left, directions[at, word]
        else:
            row_way, background_way = ~rows_left[here], ~directions[at, word]
        saved_rows[here], saved_background[here] = row_ok[split], background_ok[split]
        rows_ok, backgrounds_ok = row_ok[split] & row_way, background_ok[split] & background_way
        row_ok[split], background_ok[split] = rows_ok, backgrounds_ok
        if on_path[split] == 0:
            features[n_on] = split
            n_on += 1
        on_path[split] += 1
        failing = held & ~rows_ok  # rows whose pairs now need backgrounds_ok
        still = held & rows_ok
        cleared = ~backgrounds_ok  # branch-free over the block (C: 88 -> 84 ms)
        for k in range(n_rows):
            fails = (failing >> np.uint64(k)) & _ONE
            held_bit = (held >> np.uint64(k)) & _ONE  # a row not held keeps no live pair
            kept = live[here, k] & ~(cleared * fails) & (_NONE - held_bit)
            live[here + _ONE, k] = kept
            still |= (np.uint64(kept != _NONE) & fails) << np.uint64(k)
        if still == 0:
            continue  # no live pair reaches the child
        level += 1
        here += _ONE
        alive[here] = still
        node_at[here] = np.uint64(start + kids[at, np.uint64(step == 0)])
        phase[here] = 0


@njit(cache=True)
def _explain_block(kids, feature, threshold, missing, leaf_ptr, leaf_class, leaf_value,
                   offsets, max_depth, X32, n_background, directions, weights, first_tree,
                   last_tree, first_row, last_row, out):
    """Add trees ``first_tree``, ..., ``last_tree - 1`` (in order) of rows ``first_row``, ...,
    ``last_row - 1`` (at most 64) into ``out``, with buffers of their own."""
    scratch = _scratch_buffers(X32.shape[1], max_depth)
    columns = feature_columns(X32, first_row, last_row)
    for t in range(first_tree, last_tree):
        for word in range(directions.shape[1]):
            _walk_pairs(kids, feature, threshold, missing, leaf_ptr, leaf_class, leaf_value,
                        offsets[t], columns, first_row, last_row - first_row, directions,
                        word, word_rows(n_background, word), weights, scratch, out)


@njit(cache=True, nogil=True)
def _interventional_tasks(kids, feature, threshold, missing, leaf_ptr, leaf_class, leaf_value,
                          offsets, max_depth, X32, n_background, directions, weights, n_groups,
                          out, others, first, last):
    """Tasks ``first, ..., last - 1`` of :func:`_interventional_sums`: task (group, block)
    adds the trees of group ``group`` for the rows of block ``block`` into ``out`` (group 0)
    or ``others[group - 1]``."""
    n = X32.shape[0]
    n_trees = offsets.size - 1
    n_blocks = (n + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK
    for task in range(first, last):
        group, block = task // n_blocks, task % n_blocks
        _explain_block(kids, feature, threshold, missing, leaf_ptr, leaf_class, leaf_value,
                       offsets, max_depth, X32, n_background, directions, weights,
                       group * n_trees // n_groups, (group + 1) * n_trees // n_groups,
                       block * ROWS_PER_BLOCK, min(n, (block + 1) * ROWS_PER_BLOCK),
                       out if group == 0 else others[group - 1])


def _interventional_sums(compact: PathForest, X32, n_background, directions, weights,
                         n_groups) -> np.ndarray:
    """Sum over trees and background rows of every row's values, (n, p, n_values).

    One task per (group of trees, block of rows) (:func:`harness.core.tasks.run_tasks`); a
    group's sums go to an array of its own (the first group's to the result) and are added
    in group order, so a row's arithmetic is fixed by ``n_groups``, which the caller derives
    from the sizes only: the same bits on any number of threads.
    """
    n, p = X32.shape
    forest = compact.packed
    out = np.zeros((n, p, forest.value.shape[1]))
    n_blocks = (n + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK
    sum_by_groups(_interventional_tasks, n_groups * n_blocks, out, n_groups, compact.kids,
                  compact.feature, compact.threshold, compact.missing_left, compact.leaf_ptr,
                  compact.leaf_class, compact.leaf_value, forest.offsets, forest.max_depth,
                  X32, n_background, directions, weights, n_groups)
    return out


@dataclass(frozen=True)
class CodedBackground:
    """Background rows made ready for one forest, once for every block of rows explained:
    how many there are, which of them go left at each node, and the base value E_z f(z),
    shape (n_values,), both from :func:`harness.kernels.background_bits.background_routing`;
    ``forest`` is the packed forest they were routed through (bits of another forest's
    nodes would be misread)."""

    n_background: int
    directions: np.ndarray
    mean_output: np.ndarray
    forest: PackedForest


def code_background(compact: PathForest, background: np.ndarray) -> CodedBackground:
    """:class:`CodedBackground` of ``background`` (rows coded by the view) for ``compact``."""
    forest = compact.packed
    Z32 = as_float32_rows(background)
    directions, mean_output = background_routing(
        forest.left, forest.right, forest.feature, forest.threshold, forest.missing_left,
        forest.value, forest.offsets, Z32)
    return CodedBackground(Z32.shape[0], directions, mean_output, forest)


def interventional_shap(compact: PathForest, X: np.ndarray,
                        background: np.ndarray | CodedBackground) -> np.ndarray:
    """Interventional Shapley values of a forest, shape (n, p, n_values).

    Parameters
    ----------
    compact : PathForest
        A forest view's ``paths`` field (its ``packed`` form included).
    X : ndarray of shape (n, p)
        Rows to explain, coded by the view (:meth:`harness.forest.view.ForestView.rows`).
    background : ndarray of shape (m, p), or CodedBackground
        Rows over which absent features are integrated (the marginal distribution), coded
        likewise, or those rows made ready by :func:`code_background` (once for every block
        of rows of one explain).
    """
    forest = compact.packed
    X32 = as_float32_rows(X)
    if not isinstance(background, CodedBackground):
        background = code_background(compact, background)
    elif background.forest is not forest:
        raise ValueError("the background was made ready (code_background) for another "
                         "forest than the one explained; make it for this forest's paths.")
    n_background = background.n_background
    weights = shapley_weights(min(X32.shape[1], forest.max_depth) + 1)
    out_bytes = X32.shape[0] * X32.shape[1] * forest.value.shape[1] * 8
    out = _interventional_sums(compact, X32, n_background, background.directions, weights,
                               tree_groups(forest.n_trees, out_bytes))
    out /= forest.n_trees * n_background
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
