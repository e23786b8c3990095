"""Compiled coalition curves of tree SAGE, path-dependent imputation.

SAGE (Covert, Lundberg, Lee 2020) averages, over rows (x, y) and feature permutations π, the
loss drops ℓ(f_{S_{k-1}}(x), y) − ℓ(f_{S_k}(x), y), where S_k holds the first k features of
π. A model-agnostic estimator imputes each of the p + 1 coalitions separately. For a tree
the coalitions along π are nested, so all p + 1 values come from one pass (feature j enters
at step k = rank(j) + 1). Steps k = 0, 1 come from :mod:`harness.kernels.sage.tables`, so the
tree walks serve k >= 2 only.

Path-dependent imputation (E[f(X) | x_S] by node covers, as TreeSHAP's path-dependent
mode): a node split on a feature outside S sends x to both children, weighted by their
cover fractions; inside S, to x's child. The weight of a node is a function of k: an
ancestor on x's side multiplies it by its cover fraction for k <= rank, by 1 after; an
ancestor on the other side by its cover fraction for k <= rank and by 0 after. And while
no feature of S_k is split on inside a node's subtree (k <= the subtree's smallest rank,
read from the subtree's feature bit set through small per-permutation tables), the
subtree's expectation is the node's own value, so the walk stops there for those k and
descends only for the larger ones. A child that is a leaf, or a twig (a split whose
children are both leaves), is finished at its parent instead of being visited.
Up to ``PAIRS_PER_WALK`` (row, permutation) pairs (fewer for deep trees with many
features or for small forests, within ``GROUP_BYTES``) walk a tree together, depth first:
a node holds the list of pairs that reach it, each with its weights over k = 2, ..., p − 1
as a dense row of lanes (vectorised arithmetic, zero outside the k that reach the node);
k = p (f(x) itself) is collected where x's own path ends. Node data is loaded once for the
whole list and the per-pair work has few branches.

The kernel returns the forest's curve (mean over trees) of one output column per (row,
permutation) pair: the true class's probability for cross-entropy, the regression value
for squared error. Routing is the view's rule (:func:`harness.forest.packed.goes_left`:
coded rows, ``x <= threshold`` or NaN where missing values go left). Pairs
are split into groups and the trees into chunks (:func:`tree_chunks`), a task per group and
chunk (:func:`harness.core.tasks.run_tasks`); each pair's curve is accumulated within a chunk
in a fixed order (trees, then depth first) that does not depend on the other pairs of its
group, and the chunks' sums are added in chunk order, so the results do not depend on the
number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from harness.core.errors import BadInputError
from harness.forest.packed import PackedForest, goes_left
from harness.kernels.sage.tables import table_value
from harness.kernels.tree_groups import sum_by_groups

PAIRS_PER_WALK = 128  # at most this many pairs walk a tree together (one parallel item)
GROUP_BYTES = 2**19  # and their lanes of weights take at most this much (all depths)
LANE_BLOCK = 8  # lanes (coalition steps k = 2, ..., p - 1) are padded to a multiple of this
#: The rank tables hold 16-bit ranks (0..p), for every p: one type, so one compile of the
#: walk. Measured against 8-byte entries up to p = 10 and 8-bit ones beyond (two compiles,
#: 8 s more on the cold start's longest task): tree_sage on Friedman #1 / RF 300 0.66 s
#: against 0.68 s, on digits 0.50-0.52 s against 0.51-0.53 s
MAX_FEATURES = np.iinfo(np.uint16).max
#: A batch with fewer groups of pairs than this walks its trees in chunks (tasks apart,
#: summed in chunk order after), so that it still makes this many tasks: 3 per thread on 2
#: threads share a batch of few pairs; ...within this many bytes of extra per-chunk sums
MIN_TASKS, CHUNK_SUMS_BYTES = 6, 2**24
INTERNAL, LEAF, TWIG = 0, 1, 2  # kinds of children; leaves and twigs end at their parent


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
    left, right, feature, threshold, value, fraction, masks, missing = tree
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
        scratch[2, s] = goes_left(xs[q, j], cut, missing, at)
        if kind_l == TWIG:
            scratch[3, s] = ranks[q, j_l]
            scratch[4, s] = goes_left(xs[q, j_l], cut_l, missing, left_at)
        if kind_r == TWIG:
            scratch[5, s] = ranks[q, j_r]
            scratch[6, s] = goes_left(xs[q, j_r], cut_r, missing, right_at)


@njit(cache=True, inline='always')
def _route(tree, start, at, kind_l, kind_r, pairs, work, src, cnt, dst, lanes, full):
    """Second pass at internal node ``at``: add what ends here (the node's value for
    k <= lowest, finished children for larger k) and list the pairs that go on into
    internal children in slots dst (left) and dst + 1 (right).

    Written out in one function: numba's inlining of helpers with branches here made the
    loop several times slower.
    """
    left, right, feature, threshold, value, fraction, masks, missing = tree
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
    left, right, feature, threshold, value, fraction, masks, missing = tree
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
                first_tree, last_tree, sums):
    """Sums over trees ``first_tree, ..., last_tree - 1`` of the curves of pairs first, ...,
    last − 1: k = 0 and 1 from the root and the singleton tables, k >= 2 from walks of those
    trees; written to ``sums`` (a row per pair, not yet divided by the number of trees)."""
    value = tree[4]
    n_q, p = last - first, perms.shape[1]
    pairs = (np.empty((n_q, p)), np.empty((n_q, p), dtype=np.int64),
             np.empty((n_q, (p + 7) // 8, 1 << _chunk_width(p)), dtype=np.uint16),
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
    for t in range(first_tree, last_tree):
        start = offsets[t]
        for q in range(n_q):
            first_feature = perms[first + q, 0]
            sums[first + q, 0] += value[start, cols[q]]
            sums[first + q, 1] += table_value(tables, t * p + first_feature,
                                               np.float64(xs[q, first_feature]), cols[q])
        if p >= 2:
            _walk_tree(tree, start, pairs, work, stack, lanes, full)
    for q in range(n_q):
        for k in range(2, p):
            sums[first + q, k] = lanes[q, k - 2]
        if p >= 2:
            sums[first + q, p] = full[q]


@njit(cache=True, nogil=True)
def _path_dependent_tasks(tree, offsets, max_depth, X32, rows, perms, columns, tables,
                          group_size, tree_bounds, curves, others, first_task, last_task):
    """Tasks ``first_task, ..., last_task - 1`` of :func:`path_dependent_curves`: task
    g C + c is the group g of pairs over the trees of chunk c (``tree_bounds[c]`` to
    ``tree_bounds[c + 1]``), into ``curves`` (chunk 0) or ``others[c - 1]``."""
    n_pairs, n_chunks = perms.shape[0], tree_bounds.size - 1
    for task in range(first_task, last_task):
        group, chunk = task // n_chunks, task % n_chunks
        first = group * group_size
        last = min(n_pairs, first + group_size)
        _walk_group(tree, offsets, max_depth, X32, rows, perms, columns, tables, first, last,
                    tree_bounds[chunk], tree_bounds[chunk + 1],
                    curves if chunk == 0 else others[chunk - 1])


def tree_chunks(n_trees: int, n_groups: int, n_pairs: int, p: int) -> np.ndarray:
    """Bounds of the chunks of consecutive trees that tasks walk apart, (n_chunks + 1,):
    as many chunks of equal size as make ``n_groups`` groups of pairs at least
    ``MIN_TASKS`` tasks (one chunk, the whole forest, for a batch of that many groups; at
    most one chunk per tree), fewer where the sums of every chunk but the first would
    outgrow ``CHUNK_SUMS_BYTES``. A function of the forest and the batch alone, never of
    the number of threads: the chunks fix the order of every curve's sum."""
    per_chunk = max(1, n_pairs) * (p + 1) * 8
    wanted = -(-MIN_TASKS // max(1, n_groups))
    n_chunks = max(1, min(wanted, n_trees, 1 + CHUNK_SUMS_BYTES // per_chunk))
    return np.linspace(0, n_trees, n_chunks + 1).round().astype(np.int64)


def path_dependent_curves(forest: PackedForest, fraction: np.ndarray, X32: np.ndarray,
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
    left, right, feature, threshold, value = (forest.left, forest.right, forest.feature,
                                              forest.threshold, forest.value)
    offsets, max_depth = forest.offsets, forest.max_depth
    p = perms.shape[1]
    if p > MAX_FEATURES:
        raise BadInputError(f"tree SAGE's path-dependent walk ranks at most {MAX_FEATURES} "
                            f"features (16-bit rank tables); got {p}.")
    tree = (left, right, feature, threshold, value, fraction, masks, forest.missing_left)
    # measured: larger groups load each node for more pairs (Friedman #1: 128 pairs 2.4x
    # faster than 16); the bound keeps the lanes of a group within a cache-sized buffer and
    # within a quarter of the forest's node arrays (not divided by the number of threads:
    # each core has its own L2 here, and halving the groups on 2 threads cost 27% more work
    # on breast cancer/RF500). The threads share the work through the chunks of trees, not
    # through smaller groups: a last batch of 64 pairs on Friedman #1 / RF 300 split in two
    # groups of 32 took 1.34x the work of one group of 64 (1.4x on 2 threads, not 2x).
    forest_bytes = sum(a.nbytes for a in (left, right, feature, threshold, value, fraction))
    budget = min(GROUP_BYTES, forest_bytes // 4)
    pair_bytes = 2 * (max_depth + 2) * _lane_count(p) * 8
    largest = int(np.clip(budget // pair_bytes, 32, PAIRS_PER_WALK))
    n_pairs = perms.shape[0]
    n_groups = -(-max(n_pairs, 1) // largest)
    group_size = max(1, -(-n_pairs // n_groups))
    bounds = tree_chunks(forest.n_trees, n_groups, n_pairs, p)
    curves = np.zeros((n_pairs, p + 1))
    # chunk 0 sums into the curves, the others apart, added in chunk order after
    sum_by_groups(_path_dependent_tasks, -(-n_pairs // group_size) * (bounds.size - 1),
                  curves, bounds.size - 1, tree, offsets, max_depth, X32, rows, perms,
                  columns, tables, group_size, bounds)
    curves /= forest.n_trees
    return curves
