"""Compiled re-routing walks of the permutation importances (MDA, three variants).

Permuting column j changes a tree's output only for rows whose path meets a split on j, and
only below the first such node u: the path above u does not read x_j. So each row is walked
once, the features on its path and the first node splitting on each are recorded, and for
every (row, feature on its path) the row is re-routed from u with x_j replaced by the permuted
value. Trees or rows that never meet j cost nothing and contribute exactly 0.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from harness.forest.inbag import oob_mean
from harness.forest.losses import loss_value
from harness.forest.packed import PackedForest, goes_left
from harness.forest.permutations import STREAM_OOB, fill_keyed_permutation


@njit(cache=True)
def _reroute(left, right, feature, threshold, missing, start, X32, row, node, j, x_j):
    """Leaf reached from ``node`` by ``row`` with its feature ``j`` set to ``x_j``.

    Rows, nodes and features index unsigned here and in :func:`path_pairs`, without numba's
    negative-index wraparound (``mda_bc`` on the bench's case C: 161 -> 141 ms, the same
    bits)."""
    start, row = np.uint64(start), np.uint64(row)
    at = start + np.uint64(node)
    while left[at] != -1:
        f = feature[at]
        x = np.float64(x_j) if f == j else np.float64(X32[row, np.uint64(f)])
        node = left[at] if goes_left(x, threshold[at], missing, at) else right[at]
        at = start + np.uint64(node)
    return node


@njit(cache=True)
def path_pairs(left, right, feature, threshold, missing, start, X32, rows, n_features, max_pairs,
               skipped):
    """Walk ``rows``; return their leaves and the (row position, feature, first node) pairs.

    Pairs are bucketed by feature (counting sort): pairs of feature j are
    ``order[bucket[j]:bucket[j + 1]]``, in the order of ``rows``. A feature j with
    ``skipped[j]`` gets no pairs (an empty bucket); the others get the same pairs, in the
    same order, as with none skipped.
    """
    m = rows.size
    leaves = np.empty(m, dtype=np.int64)
    pair_row = np.empty(max_pairs, dtype=np.int64)
    pair_feature = np.empty(max_pairs, dtype=np.int64)
    pair_node = np.empty(max_pairs, dtype=np.int64)
    stamp = np.full(n_features, -1, dtype=np.int64)  # the last row position paired with f
    for f in range(n_features):
        if skipped[f]:
            stamp[f] = m  # past every row position: never below the current one
    n_pairs = 0
    origin = np.uint64(start)
    for a in range(m):
        row = np.uint64(rows[a])
        node = 0
        at = origin
        while left[at] != -1:
            f = np.uint64(feature[at])
            if stamp[f] < a:
                stamp[f] = a
                pair_row[n_pairs] = a
                pair_feature[n_pairs] = f
                pair_node[n_pairs] = node
                n_pairs += 1
            x = np.float64(X32[row, f])
            node = left[at] if goes_left(x, threshold[at], missing, at) else right[at]
            at = origin + np.uint64(node)
        leaves[a] = node
    bucket = np.zeros(n_features + 1, dtype=np.int64)
    for k in range(n_pairs):
        bucket[pair_feature[k] + 1] += 1
    for j in range(n_features):
        bucket[j + 1] += bucket[j]
    fill = bucket[:-1].copy()
    order = np.empty(n_pairs, dtype=np.int64)
    for k in range(n_pairs):
        order[fill[pair_feature[k]]] = k
        fill[pair_feature[k]] += 1
    return leaves, pair_row, pair_node, order, bucket


@njit(cache=True)
def _oob_permutation_pass(left, right, feature, threshold, missing, value, offsets, max_depth, X32,
                          counts, targets, loss_code, seed, want_ensemble):
    """Per-tree loss increases, or per-row output shifts, under OOB permutations.

    For tree t, feature j and the OOB rows O_t of t, column j is permuted within O_t by the
    keyed permutation (seed, STREAM_OOB, t, j). Each MDA variant reads one half of the pass,
    so ``want_ensemble`` chooses it. Returns

    - ``tree_increase`` (n_trees, p) unless ``want_ensemble`` (then zeros): e_tj - e_t, the
      mean over O_t of the loss of tree t on the permuted rows minus on the original rows
      (Breiman-Cutler);
    - ``shift`` (p, n, n_values) if ``want_ensemble``: the sum over row i's OOB trees of the
      tree output on the permuted row minus on the original row (Ishwaran-Kogalur), else an
      empty array; feature-major, so that one (tree, feature) writes its rows in order;
    - ``oob_total`` (n, n_values) and ``n_oob`` (n,) if ``want_ensemble``: the sum over row
      i's OOB trees of the tree outputs, in tree order from 0.0 (the bits of
      :func:`harness.forest.packed.packed_oob_output`), and how many trees it is over, from
      the leaves this pass walks anyway.
    """
    n, p = X32.shape
    n_trees = offsets.size - 1
    n_values = value.shape[1]
    tree_increase = np.zeros((n_trees, p))
    n_kept = n if want_ensemble else 0
    shift = np.zeros((p, n_kept, n_values))
    oob_total = np.zeros((n_kept, n_values))
    n_oob = np.zeros(n_kept, dtype=np.int64)
    rows_buffer = np.empty(n, dtype=np.int64)
    none_skipped = np.zeros(p, dtype=np.bool_)
    perm = np.empty(n, dtype=np.int32)
    picks = np.empty(n, dtype=np.int64)
    for t in range(n_trees):
        start = offsets[t]
        m = 0
        for i in range(n):
            if counts[i, t] == 0:
                rows_buffer[m] = i
                m += 1
        if m == 0:
            continue
        rows = rows_buffer[:m]
        leaves, pair_row, pair_node, order, bucket = path_pairs(
            left, right, feature, threshold, missing, start, X32, rows, p, m * (max_depth + 1),
            none_skipped)
        if want_ensemble:
            for a in range(m):
                at = start + leaves[a]
                for c in range(n_values):
                    oob_total[rows[a], c] += value[at, c]
                n_oob[rows[a]] += 1
        for j in range(p):
            if bucket[j + 1] == bucket[j]:
                continue
            fill_keyed_permutation(seed, np.int64(STREAM_OOB), t, j, perm[:m], picks)
            total = 0.0
            for k in order[bucket[j]:bucket[j + 1]]:
                a = pair_row[k]
                row = rows[a]
                x_j = X32[rows[perm[a]], j]
                leaf = _reroute(left, right, feature, threshold, missing, start, X32, row,
                                pair_node[k], j, x_j)
                if leaf == leaves[a]:
                    continue
                new, old = value[start + leaf], value[start + leaves[a]]
                if want_ensemble:
                    for c in range(n_values):
                        shift[j, row, c] += new[c] - old[c]
                else:
                    total += (loss_value(loss_code, targets[row], new)
                              - loss_value(loss_code, targets[row], old))
            tree_increase[t, j] = total / m
    return tree_increase, shift, oob_total, n_oob


class PermutationPass(NamedTuple):
    """What :func:`oob_permutation_pass` returns: the per-tree loss increases, or, when the
    ensemble outputs were asked for, the last three (the other part is then zeros or empty)."""

    #: (n_trees, p): per-tree loss increases (Breiman-Cutler); zeros with the ensemble outputs
    tree_increase: np.ndarray
    #: (p, n, n_values): per-row output shifts summed over the row's OOB trees, feature-major
    #: (``row_loss_moments(..., feature_major=True, ...)`` reads it in place)
    shift: np.ndarray
    #: (n, n_values): the forest's OOB output, NaN for a row no tree left out (as
    #: :func:`harness.forest.inbag.oob_predictions`, to the bit)
    oob_prediction: np.ndarray
    #: (n,): the number of OOB trees of each row
    n_oob: np.ndarray


def oob_permutation_pass(forest: PackedForest, X32: np.ndarray, counts: np.ndarray,
                         targets: np.ndarray, loss_code: int, seed: int,
                         want_ensemble: bool) -> PermutationPass:
    """Per-tree loss increases or, if ``want_ensemble``, per-row output shifts and the OOB
    output under OOB permutations of ``forest`` (a forest view's ``packed`` field); see
    :func:`_oob_permutation_pass`."""
    tree_increase, shift, total, n_oob = _oob_permutation_pass(
        forest.left, forest.right, forest.feature, forest.threshold, forest.missing_left,
        forest.value, forest.offsets, forest.max_depth, X32, counts, targets, loss_code, seed,
        want_ensemble)
    return PermutationPass(tree_increase, shift, oob_mean(total, n_oob), n_oob)
