"""Compiled coalition curves of tree SAGE: f_{S_0}(x), ..., f_{S_p}(x) along one permutation.

SAGE (Covert, Lundberg, Lee 2020) averages, over rows (x, y) and feature permutations π, the
loss drops ℓ(f_{S_{k-1}}(x), y) − ℓ(f_{S_k}(x), y), where S_k holds the first k features of
π. A model-agnostic estimator imputes each of the p + 1 coalitions separately. For a tree
the coalitions along π are nested, so all p + 1 values come from one pass (feature j enters
at step k = rank(j) + 1):

- path-dependent imputation (E[f(X) | x_S] by node covers, as TreeSHAP's path-dependent
  mode): a node split on a feature outside S sends x to both children, weighted by their
  cover fractions; inside S, to x's child. The weight of a node is a step function of k: an
  ancestor on x's side multiplies it by its cover fraction for k <= rank, by 1 after; an
  ancestor on the other side by its cover fraction for k <= rank and by 0 after, so the
  weight's support shrinks to k <= min(rank) over such ancestors. And while no feature of
  S_k is split on inside a node's subtree (k <= the subtree's smallest rank), the subtree's
  expectation is the node's own value (the cover-weighted mean of its leaves), so the walk
  stops there for those k and descends only for the larger ones: a node is visited only for
  the coalitions that split inside it (the subtree's features are a bit set per node).
  k = 1 is read from per-tree step functions of E[f | x_j] (one per feature, built once per
  forest), so the walk serves k >= 2 only and never enters the off-x-side subtrees of the
  first two features of the permutation.
- marginal imputation over a background set Z (sage's MarginalImputer, exactly): for each
  background row z the hybrid point (x_S, z_{~S}) reaches one leaf per k; at a node where x
  and z part ways on feature j, x's child holds the ranks k > rank(j) and z's child k <=
  rank(j), so one joint walk of the two paths yields the leaf of every k as intervals.

Both return the forest's curve (mean over trees) of one output column per (row, permutation)
pair: the true class's probability for cross-entropy, the regression value for squared error.
Routing follows scikit-learn (float32 inputs, ``x <= threshold``). Pairs are split into
chunks processed in parallel (numba ``prange``); each pair's curve is computed by one thread
in a fixed order, so the results do not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

CHUNK = 32  # pairs per parallel work item


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
def singleton_tables(left, right, feature, threshold, value, fraction, offsets, n_features):
    """E[f_t(X) | x_j] of every tree t and feature j as a step function of x_j (path-dependent).

    g_tj(x_j) = Σ_leaves v_l C_l^(−j) 1[x_j in I_lj]: C_l^(−j) is the product of the cover
    fractions on the leaf's path except at splits on j, I_lj the interval of x_j that the
    leaf's splits on j allow (all reals if none). Between consecutive thresholds of j in the
    tree it is constant. Returns ``(cuts, cut_start, steps, step_start)``: the sorted
    distinct thresholds of j in tree t are ``cuts[cut_start[t, j]:cut_start[t, j + 1]]``
    (row-major over (t, j)) and the values on the intervals (−inf, c_0], (c_0, c_1], ...,
    (c_last, inf) are ``steps[step_start[t, j]:...]``, shape (n_cuts + 1, n_values).
    Cost O(leaves x (depth + n_features)) per tree, once per forest.
    """
    n_trees = offsets.size - 1
    n_values = value.shape[1]
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
    steps = np.zeros((step_start[-1], n_values))
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
        for j in range(p):
            index = t * p + j
            for row in range(step_start[index] + 1, step_start[index + 1]):
                for c in range(n_values):
                    steps[row, c] += steps[row - 1, c]
        seen[:] = -1
    return cuts, cut_start, steps, step_start


@njit(cache=True)
def _path_dependent_pair(left, right, feature, threshold, value, fraction, offsets, X32, row,
                         column, perm, rank, masks, prefix, weight, support, stack_node,
                         stack_depth, stack_low, stack_rank, stack_x_side, curve, cuts,
                         cut_start, steps, step_start):
    p = perm.size
    words = masks.shape[1]
    n_trees = offsets.size - 1
    # prefix[k]: bit set of S_k, the first k features of the permutation
    prefix[0, :] = 0
    for k in range(p):
        for w in range(words):
            prefix[k + 1, w] = prefix[k, w]
        j = perm[k]
        prefix[k + 1, j >> 6] |= np.uint64(1) << np.uint64(j & 63)
        rank[j] = k
    first = perm[0]
    x_first = np.float64(X32[row, first])
    for t in range(n_trees):
        start = offsets[t]
        # k = 0: the root value; k = 1: the singleton table of the first feature
        curve[0] += value[start, column]
        index = t * p + first
        table = cuts[cut_start[index]:cut_start[index + 1]]
        curve[1] += steps[step_start[index] + np.searchsorted(table, x_first), column]
        if p < 2:
            continue
        support[0] = p
        stack_node[0] = 0
        stack_depth[0] = 0
        stack_low[0] = 2  # the walk only serves k >= 2, so off-x-side subtrees of the
        top = 1           # first two features are never entered
        while top > 0:
            top -= 1
            node, depth, low = stack_node[top], stack_depth[top], stack_low[top]
            at = start + node
            if depth > 0:
                r = stack_rank[top]  # rank of the parent's split feature
                above = depth - 1
                reach = support[above] if stack_x_side[top] else min(support[above], r)
                support[depth] = reach
                share = fraction[at]
                for k in range(low, min(reach, r) + 1):
                    weight[depth, k] = weight[above, k] * share
                for k in range(max(low, r + 1), reach + 1):
                    weight[depth, k] = weight[above, k]
            reach = support[depth]
            # lowest: the smallest rank split on below (capped to [low - 1, reach]); for
            # k <= lowest no feature of S_k splits below, so the subtree's expectation is
            # the node's own value
            lowest = reach
            below_low = False
            for w in range(words):
                if masks[at, w] & prefix[low, w]:
                    below_low = True
            if below_low:
                lowest = low - 1
            else:
                for k in range(low, reach):
                    j = perm[k]
                    if (masks[at, j >> 6] >> np.uint64(j & 63)) & np.uint64(1):
                        lowest = k
                        break
            v = value[at, column]
            for k in range(low, min(reach, lowest) + 1):
                curve[k] += v * weight[depth, k]
            if reach > lowest:
                below = max(low, lowest + 1)
                j = feature[at]
                r = rank[j]
                goes_left = np.float64(X32[row, j]) <= threshold[at]
                for side in range(2):
                    x_side = (side == 1) == goes_left
                    if not x_side and r < below:
                        continue  # off x's side a child only matters for k <= r
                    stack_node[top] = left[at] if side == 1 else right[at]
                    stack_depth[top] = depth + 1
                    stack_low[top] = below
                    stack_rank[top] = r
                    stack_x_side[top] = x_side
                    top += 1
    for k in range(p + 1):
        curve[k] /= n_trees


@njit(cache=True, parallel=True)
def path_dependent_curves(left, right, feature, threshold, value, fraction, offsets,
                          max_depth, X32, rows, perms, columns, tables, masks):
    """Coalition curves with path-dependent imputation, shape (n_pairs, p + 1).

    ``fraction[node]`` is the node's cover over its parent's (:func:`cover_fractions`),
    ``tables`` the output of :func:`singleton_tables` (k = 1 is read from them, so the
    tree walk serves k >= 2 only), ``masks`` that of :func:`subtree_masks`; ``rows[q]``
    is the row of pair q, ``perms[q]`` its permutation of the features and ``columns[q]``
    the output column whose curve is returned.
    """
    cuts, cut_start, steps, step_start = tables
    n_pairs, p = perms.shape
    curves = np.zeros((n_pairs, p + 1))
    size = 2 * max_depth + 4
    n_chunks = (n_pairs + CHUNK - 1) // CHUNK
    for chunk in prange(n_chunks):
        prefix = np.zeros((p + 1, masks.shape[1]), dtype=np.uint64)
        rank = np.empty(p, dtype=np.int64)
        # weight[d, k]: weight at coalition step k of the node visited at depth d; a node's
        # row is written when it is popped, from its parent's row, which stays intact until
        # the parent's whole subtree is done (depth-first order)
        weight = np.ones((max_depth + 2, p + 1))
        support = np.empty(max_depth + 2, dtype=np.int64)
        stack_node = np.empty(size, dtype=np.int64)
        stack_depth = np.empty(size, dtype=np.int64)
        stack_low = np.empty(size, dtype=np.int64)
        stack_rank = np.empty(size, dtype=np.int64)
        stack_x_side = np.empty(size, dtype=np.bool_)
        for q in range(chunk * CHUNK, min(n_pairs, (chunk + 1) * CHUNK)):
            _path_dependent_pair(left, right, feature, threshold, value, fraction, offsets,
                                 X32, rows[q], columns[q], perms[q], rank, masks, prefix, weight,
                                 support, stack_node, stack_depth, stack_low, stack_rank,
                                 stack_x_side, curves[q], cuts, cut_start, steps, step_start)
    return curves


@njit(cache=True)
def _joint_walks(left, right, feature, value, start, x_left, z_left, rank, column, steps,
                 stack_node, stack_low, stack_high):
    """Add, for every background row, the hybrid leaf value of every step k to ``steps``
    (a difference array over k). Agreeing nodes are walked without the stack."""
    p = rank.size
    for b in range(z_left.shape[0]):
        node, low, high = 0, 0, p
        top = 0
        while True:
            at = start + node
            while left[at] != -1:
                goes_x = x_left[node]
                if goes_x == z_left[b, node]:
                    node = left[at] if goes_x else right[at]
                else:
                    r = rank[feature[at]]  # x's branch from step r + 1 on, z's up to r
                    x_child = left[at] if goes_x else right[at]
                    z_child = right[at] if goes_x else left[at]
                    if high > r and low <= r:
                        stack_node[top] = z_child
                        stack_low[top] = low
                        stack_high[top] = r
                        top += 1
                        node, low = x_child, r + 1
                    elif high > r:
                        node, low = x_child, max(low, r + 1)
                    else:
                        node, high = z_child, min(high, r)
                at = start + node
            v = value[at, column]
            steps[low] += v
            steps[high + 1] -= v
            if top == 0:
                break
            top -= 1
            node, low, high = stack_node[top], stack_low[top], stack_high[top]


@njit(cache=True, parallel=True)
def marginal_curves(left, right, feature, threshold, value, offsets, max_depth, X32, Z32,
                    rows, perms, columns):
    """Coalition curves with marginal imputation over the background rows ``Z32``.

    f_S(x) = mean over background rows z of f(x_S, z_{~S}), exactly as sage's
    MarginalImputer computes it, shape (n_pairs, p + 1). Trees are the outer loop so that
    the directions of the background rows and of the explained rows at every node of a tree
    are computed once per tree.
    """
    n_pairs, p = perms.shape
    n_trees = offsets.size - 1
    n_background = Z32.shape[0]
    ranks = np.empty((n_pairs, p), dtype=np.int64)
    for q in range(n_pairs):
        for position in range(p):
            ranks[q, perms[q, position]] = position
    distinct = np.unique(rows)
    slot = np.full(X32.shape[0], -1, dtype=np.int64)
    for s in range(distinct.size):
        slot[distinct[s]] = s
    steps = np.zeros((n_pairs, p + 2))
    size = 2 * max_depth + 4
    n_chunks = (n_pairs + CHUNK - 1) // CHUNK
    for t in range(n_trees):
        start = offsets[t]
        n_nodes = offsets[t + 1] - start
        z_left = np.zeros((n_background, n_nodes), dtype=np.bool_)
        x_left = np.zeros((distinct.size, n_nodes), dtype=np.bool_)
        for node in range(n_nodes):
            at = start + node
            if left[at] == -1:
                continue
            f, cut = feature[at], threshold[at]
            for b in range(n_background):
                z_left[b, node] = np.float64(Z32[b, f]) <= cut
            for s in range(distinct.size):
                x_left[s, node] = np.float64(X32[distinct[s], f]) <= cut
        for chunk in prange(n_chunks):
            stack_node = np.empty(size, dtype=np.int64)
            stack_low = np.empty(size, dtype=np.int64)
            stack_high = np.empty(size, dtype=np.int64)
            for q in range(chunk * CHUNK, min(n_pairs, (chunk + 1) * CHUNK)):
                _joint_walks(left, right, feature, value, start, x_left[slot[rows[q]]],
                             z_left, ranks[q], columns[q], steps[q], stack_node, stack_low,
                             stack_high)
    curves = np.empty((n_pairs, p + 1))
    scale = 1.0 / (n_trees * n_background)
    for q in range(n_pairs):
        total = 0.0
        for k in range(p + 1):
            total += steps[q, k]
            curves[q, k] = total * scale
    return curves
