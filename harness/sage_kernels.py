"""Compiled coalition curves of tree SAGE: f_{S_0}(x), ..., f_{S_p}(x) along one permutation.

SAGE (Covert, Lundberg, Lee 2020) averages, over rows (x, y) and feature permutations π, the
loss drops ℓ(f_{S_{k-1}}(x), y) − ℓ(f_{S_k}(x), y), where S_k holds the first k features of
π. A model-agnostic estimator imputes each of the p + 1 coalitions separately. For a tree
the coalitions along π are nested, so all p + 1 values come from one pass (feature j enters
at step k = rank(j) + 1). In both imputations k = 0 and k = 1 are read from per-tree tables
built once (the tree's mean output under the imputation, and a step function of x_j per tree
and feature j), so the tree walks serve k >= 2 only.

- path-dependent imputation (E[f(X) | x_S] by node covers, as TreeSHAP's path-dependent
  mode): a node split on a feature outside S sends x to both children, weighted by their
  cover fractions; inside S, to x's child. The weight of a node is a function of k: an
  ancestor on x's side multiplies it by its cover fraction for k <= rank, by 1 after; an
  ancestor on the other side by its cover fraction for k <= rank and by 0 after. And while
  no feature of S_k is split on inside a node's subtree (k <= the subtree's smallest rank,
  read from the subtree's feature bit set through small per-permutation tables), the
  subtree's expectation is the node's own value, so the walk stops there for those k and
  descends only for the larger ones. A child that is a leaf, or a twig (a split whose
  children are both leaves), is finished at its parent instead of being visited.
  Up to ``PAIRS_PER_WALK`` (row, permutation) pairs walk a tree together, depth first: a
  node holds the list of pairs that reach it, each with its weights over k = 2, ..., p − 1
  as a dense row of lanes (vectorised arithmetic, zero outside the k that reach the node);
  k = p (f(x) itself) is collected where x's own path ends. Node data is loaded once for
  the whole list and the per-pair work has few branches.
- marginal imputation over a background set Z (sage's MarginalImputer, exactly): the hybrid
  point (x_S, z_{~S}) of a background row z reaches one leaf per k; at a node split on
  feature j, x's child holds the ranks k > rank(j) and z's own child k <= rank(j). The
  background rows are walked together, 64 at a time as bits of a word (the directions of
  all background rows at every node are computed once): a state is a node, an interval of
  k and the set of rows that reach the node for those k. Rows that go x's way share x's
  child; the others split into x's child for k > rank(j) and their own child for
  k <= rank(j); a leaf adds its value times the number of rows over the interval.

Both return the forest's curve (mean over trees) of one output column per (row, permutation)
pair: the true class's probability for cross-entropy, the regression value for squared error.
Routing follows scikit-learn (float32 inputs, ``x <= threshold``). Pairs are split into
groups processed in parallel (numba ``prange``); each pair's curve is accumulated in a fixed
order (trees, then depth first) that does not depend on the other pairs of its group, so the
results do not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from harness.background_bits import background_directions, popcount, word_rows

PAIRS_PER_WALK = 128  # path-dependent: pairs that walk a tree together (one parallel item)
CHUNK = 32  # marginal: pairs per parallel work item
LANE_BLOCK = 8  # lanes (coalition steps k = 2, ..., p - 1) are padded to a multiple of this
INTERNAL, LEAF, TWIG = 0, 1, 2  # kinds of children; leaves and twigs end at their parent


# ------------------------------------------------------------------ forest preparation


def cover_fractions(left: np.ndarray, right: np.ndarray, cover: np.ndarray,
                    offsets: np.ndarray) -> np.ndarray:
    """Each node's cover divided by its parent's (1 at the roots), for a packed forest."""
    fraction = np.ones_like(cover)
    for t in range(offsets.size - 1):
        start = offsets[t]
        internal = np.flatnonzero(left[start:offsets[t + 1]] >= 0) + start
        for children in (left[internal] + start, right[internal] + start):
            fraction[children] = cover[children] / cover[internal]
    return fraction


@njit(cache=True)
def subtree_masks(left, right, feature, offsets, n_features):
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
def _tree_cuts(left, feature, threshold, offsets, n_features):
    """Sorted thresholds of every (tree t, feature j), row-major over index t * p + j.

    Returns ``(cuts, cut_start, step_start)``: the cuts of (t, j) are
    ``cuts[cut_start[index]:cut_start[index + 1]]``, and a step function over the intervals
    (−inf, c_0], (c_0, c_1], ..., (c_last, inf) takes rows
    ``step_start[index]:step_start[index + 1]`` of a steps table; x_j lies in interval
    ``searchsorted(cuts of (t, j), x_j)``.
    """
    n_trees = offsets.size - 1
    p = n_features
    cut_start = np.zeros(n_trees * p + 1, dtype=np.int64)
    step_start = np.zeros(n_trees * p + 1, dtype=np.int64)
    for t in range(n_trees):
        for node in range(offsets[t], offsets[t + 1]):
            if left[node] != -1:
                cut_start[t * p + feature[node] + 1] += 1
    for index in range(n_trees * p):
        step_start[index + 1] = step_start[index] + cut_start[index + 1] + 1
        cut_start[index + 1] += cut_start[index]
    cuts = np.empty(cut_start[-1])
    fill = cut_start[:-1].copy()
    for t in range(n_trees):
        for node in range(offsets[t], offsets[t + 1]):
            if left[node] != -1:
                index = t * p + feature[node]
                cuts[fill[index]] = threshold[node]
                fill[index] += 1
        for j in range(p):
            index = t * p + j
            cuts[cut_start[index]:fill[index]] = np.sort(cuts[cut_start[index]:fill[index]])
    return cuts, cut_start, step_start


@njit(cache=True)
def singleton_tables(left, right, feature, threshold, value, fraction, offsets, n_features):
    """E[f_t(X) | x_j] of every tree t and feature j as a step function of x_j (path-dependent).

    g_tj(x_j) = Σ_leaves v_l C_l^(−j) 1[x_j in I_lj]: C_l^(−j) is the product of the cover
    fractions on the leaf's path except at splits on j, I_lj the interval of x_j that the
    leaf's splits on j allow (all reals if none). Between consecutive thresholds of j in the
    tree it is constant. Returns ``(cuts, cut_start, steps, step_start)`` (layout of
    :func:`_tree_cuts`); the values on the intervals are ``steps[step_start[t * p + j]:...]``,
    shape (n_cuts + 1, n_values). Cost O(leaves x (depth + n_features)) per tree, once per
    forest.
    """
    n_trees = offsets.size - 1
    n_values = value.shape[1]
    p = n_features
    cuts, cut_start, step_start = _tree_cuts(left, feature, threshold, offsets, p)
    steps = np.zeros((step_start[-1], n_values))
    largest = 1
    for t in range(n_trees):
        largest = max(largest, offsets[t + 1] - offsets[t])
    parent = np.empty(largest, dtype=np.int64)
    product = np.empty(p)
    low = np.empty(p)
    high = np.empty(p)
    seen = np.full(p, -1, dtype=np.int64)
    for t in range(n_trees):
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
                cut = threshold[start + up]
                if node == left[start + up]:
                    high[j] = min(high[j], cut)
                else:
                    low[j] = max(low[j], cut)
                product[j] *= fraction[start + node]
                weight *= fraction[start + node]
                node = up
            for j in range(p):
                index = t * p + j
                first, last = step_start[index], step_start[index + 1] - 1
                share = weight
                if seen[j] == leaf:
                    share = weight / product[j]
                    table = cuts[cut_start[index]:cut_start[index + 1]]
                    if low[j] > -np.inf:
                        first += np.searchsorted(table, low[j]) + 1
                    if high[j] < np.inf:
                        last = step_start[index] + np.searchsorted(table, high[j])
                for c in range(n_values):
                    steps[first, c] += share * value[start + leaf, c]
                    if last + 1 < step_start[index + 1]:
                        steps[last + 1, c] -= share * value[start + leaf, c]
        _integrate_steps(steps, step_start, t, p)
        seen[:] = -1
    return cuts, cut_start, steps, step_start


@njit(cache=True)
def _integrate_steps(steps, step_start, t, p):
    """Turn tree t's difference arrays over the cut intervals into values (prefix sums)."""
    for j in range(p):
        index = t * p + j
        for row in range(step_start[index] + 1, step_start[index + 1]):
            for c in range(steps.shape[1]):
                steps[row, c] += steps[row - 1, c]


@njit(cache=True)
def _table_value(tables, index, x_j, column):
    """Value at x_j of the step function ``index`` = t * p + j of ``tables``."""
    cuts, cut_start, steps, step_start = tables
    cell = np.searchsorted(cuts[cut_start[index]:cut_start[index + 1]], np.float64(x_j))
    return steps[step_start[index] + cell, column]


# ------------------------------------------------------------------ path-dependent walk


@njit(cache=True)
def _lane_count(p):
    """Lanes for k = 2, ..., p − 1, padded to a multiple of LANE_BLOCK (at least one block)."""
    return LANE_BLOCK * max(1, (p - 2 + LANE_BLOCK - 1) // LANE_BLOCK)


@njit(cache=True)
def _chunk_width(p):
    """Bits per chunk of a feature bit set: p features in ceil(p / 8) chunks of equal width
    (at most 8), so that the rank tables stay small (2 x 32 entries for p = 10)."""
    n_chunks = (p + 7) // 8
    return (p + n_chunks - 1) // n_chunks


@njit(cache=True)
def _rank_tables(rank, tables):
    """tables[b, m]: the smallest rank among the features set in value m of chunk b of a
    feature bit set (chunk b holds features w b, ..., w b + w − 1), p if none."""
    p = rank.size
    width = _chunk_width(p)
    for b in range(tables.shape[0]):
        tables[b, 0] = p
        for i in range(width):
            j = width * b + i
            r = rank[j] if j < p else p
            for m in range(1 << i, 2 << i):
                tables[b, m] = min(r, tables[b, m - (1 << i)])


@njit(cache=True)
def _mask_chunks(masks, at, width, chunks):
    """Split the feature bit set of node ``at`` into chunks of ``width`` bits (no chunk
    straddles two words: with more than 64 features the width is 8)."""
    whole = (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    for b in range(chunks.size):
        bit = width * b
        chunks[b] = (masks[at, bit >> 6] >> np.uint64(bit & 63)) & whole


@njit(cache=True)
def _prepare_pairs(X32, rows, perms, columns, first, pairs):
    """Per pair of the group starting at ``first``: its row, the rank of every feature in its
    permutation, its rank tables and its output column."""
    xs, ranks, rank_tables, cols = pairs
    for q in range(xs.shape[0]):
        for k in range(perms.shape[1]):
            ranks[q, perms[first + q, k]] = k
            xs[q, k] = X32[rows[first + q], k]
        _rank_tables(ranks[q], rank_tables[q])
        cols[q] = columns[first + q]


@njit(cache=True, inline='always')
def _kind(left, right, start, at):
    """LEAF, TWIG (a split whose children are both leaves) or INTERNAL."""
    if left[at] == -1:
        return LEAF
    if left[start + left[at]] == -1 and left[start + right[at]] == -1:
        return TWIG
    return INTERNAL


@njit(cache=True, inline='always')
def _probe(tree, start, at, kind_l, kind_r, pairs, work, src, cnt):
    """First pass over the pairs listed at internal node ``at``: the smallest rank split on in
    its subtree (scratch row 0), the rank of its feature and whether x goes left (rows 1, 2),
    and the same two for twig children (rows 3, 4 left; 5, 6 right)."""
    left, right, feature, threshold, value, fraction, masks = tree
    xs, ranks, rank_tables, cols = pairs
    ids, lows, reaches, rows, counts, scratch, chunks = work
    n_chunks = chunks.size
    _mask_chunks(masks, at, _chunk_width(ranks.shape[1]), chunks)
    j, cut = feature[at], threshold[at]
    left_at, right_at = start + left[at], start + right[at]
    j_l, cut_l = feature[left_at], threshold[left_at]
    j_r, cut_r = feature[right_at], threshold[right_at]
    chunk_0, chunk_1 = chunks[0], chunks[min(1, n_chunks - 1)]
    for s in range(cnt):
        q = ids[src, s]
        lowest = min(np.int64(rank_tables[q, 0, chunk_0]),
                     np.int64(rank_tables[q, min(1, n_chunks - 1), chunk_1]))
        for b in range(2, n_chunks):
            lowest = min(lowest, np.int64(rank_tables[q, b, chunks[b]]))
        scratch[0, s] = lowest
        scratch[1, s] = ranks[q, j]
        scratch[2, s] = xs[q, j] <= cut
        if kind_l == TWIG:
            scratch[3, s] = ranks[q, j_l]
            scratch[4, s] = xs[q, j_l] <= cut_l
        if kind_r == TWIG:
            scratch[5, s] = ranks[q, j_r]
            scratch[6, s] = xs[q, j_r] <= cut_r


@njit(cache=True, inline='always')
def _route(tree, start, at, kind_l, kind_r, pairs, work, src, cnt, dst, lanes, full):
    """Second pass at internal node ``at``: add what ends here (the node's value for
    k <= lowest, finished children for larger k) and list the pairs that go on into
    internal children in slots dst (left) and dst + 1 (right).

    Written out in one function: numba's inlining of helpers with branches here made the
    loop several times slower.
    """
    left, right, feature, threshold, value, fraction, masks = tree
    xs, ranks, rank_tables, cols = pairs
    ids, lows, reaches, rows, counts, scratch, chunks = work
    p = ranks.shape[1]
    left_at, right_at = start + left[at], start + right[at]
    c_l, c_r = fraction[left_at], fraction[right_at]
    n_l = 0
    n_r = 0
    for s in range(cnt):
        q, low, reach = ids[src, s], lows[src, s], reaches[src, s]
        lowest, r, x_left = scratch[0, s], scratch[1, s], scratch[2, s] != 0
        below = max(low, lowest + 1)  # the steps that go on below this node
        reach_l = reach if x_left else min(reach, r)
        reach_r = min(reach, r) if x_left else reach
        fill_l = 1.0 if x_left else 0.0  # weight factor after the split joins S_k
        fill_r = 1.0 - fill_l
        stop, split = lowest - 2, r - 2  # as lanes: lane i is step k = i + 2
        if lowest >= low or (kind_l != INTERNAL and reach_l >= below) or (
                kind_r != INTERNAL and reach_r >= below):
            # a finished child's expectation is `own` while its split feature is outside
            # S_k (lanes <= last) and `then` (x's leaf) after; an internal child's is 0 here
            column = cols[q]
            own_l = 0.0
            then_l = 0.0
            last_l = -1
            if kind_l != INTERNAL:
                own_l = value[left_at, column]
                then_l = own_l
            if kind_l == TWIG:
                leaf = left[left_at] if scratch[4, s] != 0 else right[left_at]
                then_l = value[start + leaf, column]
                last_l = scratch[3, s] - 2
            own_r = 0.0
            then_r = 0.0
            last_r = -1
            if kind_r != INTERNAL:
                own_r = value[right_at, column]
                then_r = own_r
            if kind_r == TWIG:
                leaf = left[right_at] if scratch[6, s] != 0 else right[right_at]
                then_r = value[start + leaf, column]
                last_r = scratch[5, s] - 2
            v = value[at, column]
            for i in range(rows.shape[2]):
                e_l = own_l if i <= last_l else then_l
                e_r = own_r if i <= last_r else then_r
                gain = v if i <= stop else (
                    c_l * e_l + c_r * e_r if i <= split else fill_l * e_l + fill_r * e_r)
                lanes[q, i] += gain * rows[src, s, i]
            if reach == p:  # x's own path ends in a finished child: f(x), step k = p
                full[q] += fill_l * then_l + fill_r * then_r
        # child weights: 0 for lanes <= stop, times the cover fraction up to lane split
        # (the split's feature outside S_k), then 1 on x's side and 0 on the other
        if kind_l == INTERNAL:
            for i in range(rows.shape[2]):
                rows[dst, n_l, i] = rows[src, s, i] * (
                    0.0 if i <= stop else (c_l if i <= split else fill_l))
            ids[dst, n_l], lows[dst, n_l], reaches[dst, n_l] = q, below, reach_l
            n_l += reach_l >= below  # kept only if it reaches some step
        if kind_r == INTERNAL:
            for i in range(rows.shape[2]):
                rows[dst + 1, n_r, i] = rows[src, s, i] * (
                    0.0 if i <= stop else (c_r if i <= split else fill_r))
            ids[dst + 1, n_r], lows[dst + 1, n_r], reaches[dst + 1, n_r] = q, below, reach_r
            n_r += reach_r >= below
    counts[dst] = n_l
    counts[dst + 1] = n_r


@njit(cache=True)
def _walk_tree(tree, start, pairs, work, stack, lanes, full):
    """Add tree ``start``'s terms for k >= 2 of every pair of the group (see module docs).

    The pairs listed at a node of depth d sit in slot 2d or 2d + 1 (left or right child);
    a slot is rewritten only once its node's subtree is done.
    """
    left, right, feature, threshold, value, fraction, masks = tree
    xs, ranks, rank_tables, cols = pairs
    ids, lows, reaches, rows, counts, scratch, chunks = work
    stack_node, stack_slot, stack_depth = stack
    n_q, p = ranks.shape
    if left[start] == -1:  # a single leaf: every coalition gives its value
        for q in range(n_q):
            full[q] += value[start, cols[q]]
            for i in range(p - 2):
                lanes[q, i] += value[start, cols[q]]
        return
    for s in range(n_q):
        ids[0, s], lows[0, s], reaches[0, s] = s, 2, p
        for i in range(rows.shape[2]):
            rows[0, s, i] = 1.0 if i < p - 2 else 0.0
    counts[0] = n_q
    stack_node[0], stack_slot[0], stack_depth[0] = 0, 0, 0
    top = 1
    while top > 0:
        top -= 1
        at, src, depth = start + stack_node[top], stack_slot[top], stack_depth[top]
        kind_l = _kind(left, right, start, start + left[at])
        kind_r = _kind(left, right, start, start + right[at])
        dst = 2 * (depth + 1)
        _probe(tree, start, at, kind_l, kind_r, pairs, work, src, counts[src])
        _route(tree, start, at, kind_l, kind_r, pairs, work, src, counts[src], dst, lanes,
               full)
        for side in range(2):
            if counts[dst + 1 - side] > 0:
                stack_node[top] = right[at] if side == 0 else left[at]
                stack_slot[top] = dst + 1 - side
                stack_depth[top] = depth + 1
                top += 1


@njit(cache=True)
def _walk_group(tree, offsets, max_depth, X32, rows, perms, columns, tables, first, last,
                table_type, curves):
    """Curves of pairs first, ..., last − 1: k = 0 and 1 from the root and the singleton
    tables, k >= 2 from walks of every tree; written to ``curves`` (mean over trees)."""
    value = tree[4]
    n_q, p = last - first, perms.shape[1]
    n_trees = offsets.size - 1
    pairs = (np.empty((n_q, p)), np.empty((n_q, p), dtype=np.int64),
             np.empty((n_q, (p + 7) // 8, 1 << _chunk_width(p)), dtype=table_type.dtype),
             np.empty(n_q, dtype=np.int64))
    _prepare_pairs(X32, rows, perms, columns, first, pairs)
    xs, cols = pairs[0], pairs[3]
    n_slots = 2 * (max_depth + 2)
    work = (np.empty((n_slots, n_q), dtype=np.int64), np.empty((n_slots, n_q), dtype=np.int64),
            np.empty((n_slots, n_q), dtype=np.int64), np.empty((n_slots, n_q, _lane_count(p))),
            np.zeros(n_slots, dtype=np.int64), np.empty((7, n_q), dtype=np.int64),
            np.empty((p + 7) // 8, dtype=np.uint64))
    size = 2 * max_depth + 4
    stack = (np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64),
             np.empty(size, dtype=np.int64))
    lanes = np.zeros((n_q, _lane_count(p)))
    full = np.zeros(n_q)
    for t in range(n_trees):
        start = offsets[t]
        for q in range(n_q):
            first_feature = perms[first + q, 0]
            curves[first + q, 0] += value[start, cols[q]]
            curves[first + q, 1] += _table_value(tables, t * p + first_feature,
                                                 xs[q, first_feature], cols[q])
        if p >= 2:
            _walk_tree(tree, start, pairs, work, stack, lanes, full)
    for q in range(n_q):
        for k in range(2, p):
            curves[first + q, k] = lanes[q, k - 2]
        if p >= 2:
            curves[first + q, p] = full[q]
        for k in range(p + 1):
            curves[first + q, k] /= n_trees


@njit(cache=True, parallel=True)
def _path_dependent_kernel(tree, offsets, max_depth, X32, rows, perms, columns, tables,
                           table_type):
    n_pairs, p = perms.shape
    curves = np.zeros((n_pairs, p + 1))
    n_groups = (n_pairs + PAIRS_PER_WALK - 1) // PAIRS_PER_WALK
    for group in prange(n_groups):
        first = group * PAIRS_PER_WALK
        last = min(n_pairs, first + PAIRS_PER_WALK)
        _walk_group(tree, offsets, max_depth, X32, rows, perms, columns, tables, first, last,
                    table_type, curves)
    return curves


def path_dependent_curves(left: np.ndarray, right: np.ndarray, feature: np.ndarray,
                          threshold: np.ndarray, value: np.ndarray, fraction: np.ndarray,
                          offsets: np.ndarray, max_depth: int, X32: np.ndarray,
                          rows: np.ndarray, perms: np.ndarray, columns: np.ndarray,
                          tables: tuple, masks: np.ndarray) -> np.ndarray:
    """Coalition curves with path-dependent imputation, shape (n_pairs, p + 1).

    Parameters
    ----------
    fraction : ndarray
        Each node's cover over its parent's (:func:`cover_fractions`).
    tables : tuple
        Output of :func:`singleton_tables` (k = 1 is read from them).
    masks : ndarray
        Output of :func:`subtree_masks`.
    rows, perms, columns : ndarray
        Pair q explains row ``rows[q]`` along permutation ``perms[q]`` and returns the curve
        of output column ``columns[q]``.
    """
    p = perms.shape[1]
    n_chunks = (p + 7) // 8
    entries = n_chunks << -(-p // n_chunks)  # rank table entries per pair (_chunk_width)
    # 8-byte entries while a pair's tables fit a cache line or so (p = 10: 2 x 32), then
    # bytes (measured: faster on Friedman #1 and on digits respectively)
    table_type = np.empty(0, dtype=np.int64 if entries <= 64 else np.uint8 if p < 255
                          else np.uint16)
    tree = (left, right, feature, threshold, value, fraction, masks)
    return _path_dependent_kernel(tree, offsets, max_depth, X32, rows, perms, columns,
                                  tables, table_type)


# ------------------------------------------------------------------ marginal walk


@njit(cache=True)
def _spread(left, right, feature, threshold, value, directions, start, word, n_background, j,
            table, first_step, last_step, totals, stack):
    """Walk the background rows of ``word`` through one tree, each its own way except at
    splits on feature j (none if j < 0), where x_j decides: both children are followed with
    the interval of x_j cells (cut indices in ``table``) that lead there. A leaf adds its
    value times its number of rows to the difference array ``totals`` over its cells
    (rows first_step, ..., last_step)."""
    stack_node, stack_low, stack_high, stack_rows = stack
    stack_node[0], stack_low[0], stack_high[0] = 0, 0, table.size
    stack_rows[0] = word_rows(n_background, word)
    top = 1
    while top > 0:
        top -= 1
        at, low, high, held = start + stack_node[top], stack_low[top], stack_high[top], \
            stack_rows[top]
        if left[at] == -1:
            count = popcount(held)
            for c in range(value.shape[1]):
                totals[first_step + low, c] += value[at, c] * count
                if first_step + high + 1 <= last_step:
                    totals[first_step + high + 1, c] -= value[at, c] * count
            continue
        if feature[at] == j:
            cut = np.searchsorted(table, threshold[at])  # x_j <= threshold: cells <= cut
            children = ((left[at], low, min(high, cut), held),
                        (right[at], max(low, cut + 1), high, held))
        else:
            goes_left = directions[at, word]
            children = ((left[at], low, high, held & goes_left),
                        (right[at], low, high, held & ~goes_left))
        for node, child_low, child_high, child_rows in children:
            if child_low <= child_high and child_rows != 0:
                stack_node[top], stack_low[top], stack_high[top] = node, child_low, child_high
                stack_rows[top] = child_rows
                top += 1


@njit(cache=True)
def marginal_tables(left, right, feature, threshold, value, offsets, n_features, directions,
                    n_background):
    """Σ_b f_t(z_b) per tree (k = 0) and Σ_b f_t(x_j, z_b,~j) as step functions of x_j per
    tree and feature (k = 1), for the marginal walk.

    Returns ``(base, tables)``: ``base`` (n_trees, n_values) and ``tables`` in the layout of
    :func:`singleton_tables`. Sums over the background rows, not means.
    """
    n_trees = offsets.size - 1
    p = n_features
    cuts, cut_start, step_start = _tree_cuts(left, feature, threshold, offsets, p)
    steps = np.zeros((step_start[-1], value.shape[1]))
    base = np.zeros((n_trees, value.shape[1]))
    largest = 2
    for t in range(n_trees):
        largest = max(largest, offsets[t + 1] - offsets[t] + 1)
    stack = (np.empty(largest, dtype=np.int64), np.empty(largest, dtype=np.int64),
             np.empty(largest, dtype=np.int64), np.empty(largest, dtype=np.uint64))
    nothing = np.empty(0)
    for t in range(n_trees):
        for word in range(directions.shape[1]):
            _spread(left, right, feature, threshold, value, directions, offsets[t], word,
                    n_background, -1, nothing, t, t, base, stack)
            for j in range(p):
                index = t * p + j
                _spread(left, right, feature, threshold, value, directions, offsets[t], word,
                        n_background, j, cuts[cut_start[index]:cut_start[index + 1]],
                        step_start[index], step_start[index + 1] - 1, steps, stack)
        _integrate_steps(steps, step_start, t, p)
    return base, (cuts, cut_start, steps, step_start)


def marginal_setup(left: np.ndarray, right: np.ndarray, feature: np.ndarray,
                   threshold: np.ndarray, value: np.ndarray, offsets: np.ndarray,
                   n_features: int, Z32: np.ndarray) -> tuple:
    """What :func:`marginal_curves` needs of a forest and background set, computed once:
    ``(n_background, directions, base, tables)``."""
    directions = background_directions(left, feature, threshold, offsets, Z32)
    base, tables = marginal_tables(left, right, feature, threshold, value, offsets, n_features,
                                   directions, Z32.shape[0])
    return Z32.shape[0], directions, base, tables


@njit(cache=True)
def _bitset_walk(left, right, feature, threshold, value, directions, start, word, held, x, rank,
                 column, steps, stack):
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
            x_left = np.float64(x[j]) <= threshold[at]
            goes_left = directions[at, word]
            agree = held & (goes_left if x_left else ~goes_left)
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


@njit(cache=True, parallel=True)
def _marginal_kernel(left, right, feature, threshold, value, offsets, max_depth, X32,
                     n_background, directions, base, tables, rows, perms, columns):
    n_pairs, p = perms.shape
    n_trees = offsets.size - 1
    steps = np.zeros((n_pairs, p + 2))
    size = 2 * max_depth + 4
    n_chunks = (n_pairs + CHUNK - 1) // CHUNK
    for chunk in prange(n_chunks):
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
                single = _table_value(tables, t * p + perms[q, 0], x[perms[q, 0]], column)
                steps[q, 1] += single - base[t, column]
                steps[q, 2] -= single
                if p < 2:
                    continue
                for word in range(directions.shape[1]):
                    _bitset_walk(left, right, feature, threshold, value, directions, start,
                                 word, word_rows(n_background, word), x, ranks[q - first],
                                 column, steps[q], stack)
    curves = np.empty((n_pairs, p + 1))
    scale = 1.0 / (n_trees * n_background)
    for q in range(n_pairs):
        total = 0.0
        for k in range(p + 1):
            total += steps[q, k]
            curves[q, k] = total * scale
    return curves


def marginal_curves(left: np.ndarray, right: np.ndarray, feature: np.ndarray,
                    threshold: np.ndarray, value: np.ndarray, offsets: np.ndarray,
                    max_depth: int, X32: np.ndarray, Z32: np.ndarray, rows: np.ndarray,
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
        setup = marginal_setup(left, right, feature, threshold, value, offsets, X32.shape[1],
                               Z32)
    n_background, directions, base, tables = setup
    return _marginal_kernel(left, right, feature, threshold, value, offsets, max_depth, X32,
                            n_background, directions, base, tables, rows, perms, columns)
