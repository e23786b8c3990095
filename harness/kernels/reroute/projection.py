"""Compiled projected-tree predictions of Sobol-MDA (Bénard, Da Veiga, Scornet 2022).

The tree projected along feature j ignores its splits on j. A row whose path first meets j at
node u is dropped from u level by level: a split on j sends it to both children, any other
split to the child it takes. At level k the row's *key* is the set of leaves reached so far
plus the frontier of nodes pushed for the next level (children are pushed before anyone
looks whether they are leaves, so the last key with a non-empty frontier is exactly the set
of reached leaves: the row's projected cell). The cell's value is not read from the reached
leaves (their union is larger than the cell): the in-bag rows are dropped the same way, and
the value is the in-bag-count-weighted mean of the targets of the in-bag rows that share the
key.

Fallback, as in the reference C++ of the ranger ``sobol-mda`` fork (``predictProjectedTree``):
if no in-bag row shares the row's key at some level, the row takes the deepest level whose key
some in-bag row shares. Keys at successive levels are nested (a key determines the keys above
it), so this is the last level before the first miss. Level 0 is ``{u}``, which every in-bag
row through u shares, so a value always exists.

Keys are sets of node ids hashed as sums of 64-bit node hashes (a collision needs two distinct
node sets with equal 64-bit sums: probability about 2**-64 per pair; sets at different levels
differ in the depth of their frontier). They are looked up in an open-addressing table that
is reset per (tree, feature) by a generation stamp.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit

from harness.forest.packed import PackedForest, left_bit
from harness.forest.permutations import GOLDEN64, MUL64_B, mix64
from harness.kernels.reroute.permutation import path_pairs
from harness.kernels.tree_columns import gather_tree_rows, walk_columns
from harness.kernels.tree_groups import TREE_GROUPS, sum_by_groups

_ZERO, _ONE, _TWO = np.uint64(0), np.uint64(1), np.uint64(2)

#: Bytes the groups' extra shift arrays may take together.
GROUP_BUDGET = 8 << 20


@njit(cache=True)
def node_hash(node):
    """64-bit hash of a packed node id; a set of nodes is keyed by the sum of its hashes."""
    return mix64(np.uint64(node) * GOLDEN64 + MUL64_B)


@njit(cache=True)
def _dropped_level_keys(left, right, kids, feature, threshold, missing, start, X32, row, u,
                        j, hashes, frontier, keys, first):
    """Keys of ``row``'s descent from ``u`` with the splits on ``j`` dropped (Sobol-MDA).

    Writes the key of every level whose frontier is not empty into ``keys[first:]`` (level 0
    is ``{u}``; the last one is the set of reached leaves) and returns how many there are.
    ``hashes`` holds the tree's :func:`node_hash` by local node id; ``frontier`` (2, nodes +
    2) holds the current level's nodes in one row and the next level's in the other. Neither
    array argument is rebound nor passed on: numba then counts no references on the caller's
    (shared) forest arrays at each call, which 2 threads did on the same cache lines. The
    child taken is chosen without a branch, ``kids[at, goes]`` (``PackedForest.kids``) with
    ``goes`` from :func:`left_bit`: the frontier's nodes are independent walks, whose loads
    the processor then overlaps instead of stopping at each mispredicted direction (Sobol-MDA
    on Friedman #1: 1.23 s with branches, 0.93 s without; written as a select,
    ``right + goes * (left - right)``, it compiled to a branch again for an AMD EPYC). Nodes,
    rows and frontier positions index unsigned, without numba's negative-index wraparound
    (Sobol-MDA on the bench's case C: 0.95 -> 0.87 s, the same bits).
    """
    start, row = np.uint64(start), np.uint64(row)
    frontier[0, 0] = u
    size = 1
    keys[first] = hashes[u]
    n_levels = 1
    leaves_key = np.uint64(0)
    now = _ZERO
    while True:
        then = _ONE - now
        n_next = _ZERO
        next_key = np.uint64(0)
        for q in range(size):
            node = np.uint64(frontier[now, q])
            at = start + node
            if left[at] == -1:
                leaves_key += hashes[node]
            elif feature[at] == j:
                frontier[then, n_next] = left[at]
                frontier[then, n_next + _ONE] = right[at]
                n_next += _TWO
                next_key += hashes[np.uint64(left[at])] + hashes[np.uint64(right[at])]
            else:
                goes = left_bit(np.float64(X32[row, np.uint64(feature[at])]), threshold[at],
                                missing[at])
                taken = np.uint64(kids[at, goes])
                frontier[then, n_next] = taken
                n_next += _ONE
                next_key += hashes[taken]
        if n_next == 0:
            return n_levels
        keys[first + n_levels] = leaves_key + next_key
        n_levels += 1
        now = then
        size = n_next


@njit(cache=True)
def table_size(n_keys, smallest):
    """The smallest power of two above ``n_keys`` and at least ``smallest``: a table that
    many keys leave with a free slot, and that stays near the cache when they are few."""
    size = smallest
    while size <= n_keys:
        size *= 2
    return size


@njit(cache=True)
def table_slot(table_keys, table_stamp, generation, key, mask):
    """Open-addressing slot of ``key``: its own, or the first one not stamped with
    ``generation`` (a table is reset by bumping the generation)."""
    at = np.int64(key & np.uint64(mask))
    while table_stamp[at] == generation and table_keys[at] != key:
        at = (at + 1) & mask
    return at


@njit(cache=True, inline="always")
def open_cell(table_keys, table_stamp, table_weight, table_sum, generation, at, key):
    """Stamp slot ``at`` with ``generation`` as the empty cell of ``key``."""
    table_stamp[at] = generation
    table_keys[at] = key
    table_weight[at] = 0.0
    table_sum[at, :] = 0.0


@njit(cache=True, inline="always")
def add_to_cell(table_weight, table_sum, at, weight, targets, row):
    """Add ``weight`` copies of ``targets[row]`` to the cell in slot ``at``."""
    table_weight[at] += weight
    for c in range(targets.shape[1]):
        table_sum[at, c] += weight * targets[row, c]


@njit(cache=True, inline="always")
def add_to_level_tables(table_keys, table_stamp, table_weight, table_sum, generation, mask,
                        keys, first, n_levels, weight, targets, row):
    """Add an in-bag row (``weight`` copies of ``targets[row]``) to the cell of each of its
    ``n_levels`` descent levels (``keys[first:first + n_levels]``), opening a cell not yet
    stamped with ``generation``."""
    for level in range(first, first + n_levels):
        at = table_slot(table_keys, table_stamp, generation, keys[level], mask)
        if table_stamp[at] != generation:
            open_cell(table_keys, table_stamp, table_weight, table_sum, generation, at,
                      keys[level])
        add_to_cell(table_weight, table_sum, at, weight, targets, row)


@njit(cache=True)
def deepest_shared_slot(table_keys, table_stamp, generation, mask, keys, n_levels):
    """``(slot, level)`` of the deepest of the first ``n_levels`` descent levels (``keys``)
    that some in-bag row shares (stamped with ``generation``), or ``(-1, -1)`` when none is.

    The reference rule for an empty projected cell (module docstring). Keys are nested (an
    in-bag row sharing level d shares every level above), so the shared levels are 0..m and
    the scan from the deepest level stops at m: one probe when the cell itself is shared,
    the usual case.
    """
    for level in range(n_levels - 1, -1, -1):
        at = table_slot(table_keys, table_stamp, generation, keys[level], mask)
        if table_stamp[at] == generation:
            return at, level
    return -1, -1


@njit(cache=True)
def _group_shift(left, right, kids, feature, threshold, missing, value, offsets, max_depth, X32,
                 local, columns, column_start, XT, counts, targets, first_tree, last_tree,
                 group, feature_group, shift):
    """Add trees ``first_tree``, ..., ``last_tree - 1`` (in order) of
    :func:`projected_oob_shift` into ``shift``, for the features j with
    ``feature_group[j] == group``, with buffers of their own.

    With ``XT`` (the rows, feature-major) not empty, each tree is walked on its own columns
    (:mod:`harness.kernels.tree_columns`: ``local``, ``columns``, ``column_start``) instead of
    ``X32`` and ``feature``: the same walks and sums, the same bits.
    """
    n = X32.shape[0]
    compact = XT.shape[0] > 0
    widest = 1
    for t in range(first_tree, last_tree):
        widest = max(widest, column_start[t + 1] - column_start[t])
    tree_rows = np.empty(n * widest if compact else 0, dtype=np.float32)
    n_values = value.shape[1]
    largest = 1
    for t in range(first_tree, last_tree):
        largest = max(largest, offsets[t + 1] - offsets[t])
    frontier = np.empty((2, largest + 2), dtype=np.int64)
    hashes = np.empty(largest, dtype=np.uint64)
    keys = np.empty(max_depth + 2, dtype=np.uint64)
    in_keys = np.empty(0, dtype=np.uint64)  # the in-bag rows' level keys, row after row
    in_levels = np.empty(0, dtype=np.int64)
    capacity = 1024
    table_keys = np.empty(capacity, dtype=np.uint64)
    table_stamp = np.zeros(capacity, dtype=np.int64)
    table_weight = np.empty(capacity)
    table_sum = np.empty((capacity, n_values))
    generation = 0
    in_rows = np.empty(n, dtype=np.int64)
    out_rows = np.empty(n, dtype=np.int64)
    outside = np.empty(X32.shape[1], dtype=np.bool_)  # features of other groups, per tree
    for t in range(first_tree, last_tree):
        start = offsets[t]
        n_in = 0
        n_out = 0
        for i in range(n):
            if counts[i, t] > 0:
                in_rows[n_in] = i
                n_in += 1
            else:
                out_rows[n_out] = i
                n_out += 1
        if n_out == 0:
            continue
        rows_in, rows_out = in_rows[:n_in], out_rows[:n_out]
        for node in range(offsets[t + 1] - start):
            hashes[node] = node_hash(start + node)
        if compact:  # the walks see the tree's columns as its features
            X = gather_tree_rows(XT, columns, column_start[t], column_start[t + 1], tree_rows)
            split_on = local
        else:
            X = X32
            split_on = feature
        width = X.shape[1]
        span = max_depth + 1
        # pairs of this group's features only: split by features, a group records and sorts
        # about 1/groups of the pairs (the walks are the same), with the same pairs in the
        # same order for each of its features, hence the same bits
        skipped = outside[:width]
        for j in range(width):
            skipped[j] = feature_group[columns[column_start[t] + j] if compact else j] != group
        _, in_row, in_node, in_order, in_bucket = path_pairs(
            left, right, split_on, threshold, missing, start, X, rows_in, width, n_in * span,
            skipped)
        out_leaf, out_row, out_node, out_order, out_bucket = path_pairs(
            left, right, split_on, threshold, missing, start, X, rows_out, width, n_out * span,
            skipped)
        for j in range(width):
            if skipped[j] or out_bucket[j + 1] == out_bucket[j]:  # another group's, or unmet
                continue
            feature_j = columns[column_start[t] + j] if compact else j
            # the in-bag rows' keys first, so that the table is sized to them: a power of two
            # above their count (33-48 % of the keys were distinct per (tree, feature) on
            # Friedman #1's forest, so the load stays under one half). A table that fits
            # the cache beats the old bound from the forest's depth by 10 % on that forest
            pairs = in_bucket[j + 1] - in_bucket[j]
            if pairs * (max_depth + 2) > in_keys.size:
                in_keys = np.empty(pairs * (max_depth + 2), dtype=np.uint64)
                in_levels = np.empty(pairs, dtype=np.int64)
            total = np.int64(0)
            for q in range(pairs):
                k = in_order[in_bucket[j] + q]
                in_levels[q] = _dropped_level_keys(left, right, kids, split_on, threshold,
                                                   missing, start, X, rows_in[in_row[k]],
                                                   in_node[k], j, hashes, frontier, in_keys,
                                                   total)
                total += in_levels[q]
            size = table_size(total, np.int64(1024))
            if size > capacity:
                capacity = size
                table_keys = np.empty(capacity, dtype=np.uint64)
                table_stamp = np.zeros(capacity, dtype=np.int64)
                table_weight = np.empty(capacity)
                table_sum = np.empty((capacity, n_values))
                generation = 0
            generation += 1
            mask = size - 1
            total = np.int64(0)
            for q in range(pairs):
                row = rows_in[in_row[in_order[in_bucket[j] + q]]]
                add_to_level_tables(table_keys, table_stamp, table_weight, table_sum,
                                    generation, mask, in_keys, total, in_levels[q],
                                    np.float64(counts[row, t]), targets, row)
                total += in_levels[q]
            for k in out_order[out_bucket[j]:out_bucket[j + 1]]:
                a = out_row[k]
                row = rows_out[a]
                n_levels = _dropped_level_keys(left, right, kids, split_on, threshold, missing,
                                               start, X, row, out_node[k], j, hashes,
                                               frontier, keys, np.int64(0))
                chosen, _ = deepest_shared_slot(table_keys, table_stamp, generation, mask, keys,
                                                n_levels)
                leaf = start + out_leaf[a]
                mass = table_weight[chosen]
                for c in range(n_values):
                    shift[row, feature_j, c] += table_sum[chosen, c] / mass - value[leaf, c]


def work_split(n_trees: int, p: int, shift_bytes: int, forest_bytes: int,
               threads: int) -> tuple[int, bool]:
    """``(n_groups, by_feature)``: how :func:`projected_oob_shift` splits its work.

    Up to ``TREE_GROUPS`` contiguous groups of trees, summed apart, while their extra shift
    arrays stay within ``GROUP_BUDGET`` bytes and a quarter of the forest's (the bench's
    memory target is twice the output plus the forest); otherwise, with enough features and
    more than one thread, a group of features per thread (:func:`feature_groups`), which
    write disjoint parts of one shift array but each walk every tree's rows (on the p = 200
    case a shift array is half the forest; each group pairs only its own features with the
    rows, so what it repeats of the others' work is the walks: 0.019 s of a 0.24 s
    one-group pass, 0.025-0.029 s when it paired every feature), or on one thread a single
    group, which walks them once (p = 10^4, 1000 rows, 100 trees: 0.10 s against 0.15 s in
    four groups of features).
    The groups of trees follow from the sizes only, never from ``threads``, so the result
    is the same bit for bit on any number of threads; groups of features give the bits of a
    single group, so ``threads`` chooses between them without changing a bit.
    """
    groups = int(max(1, min(TREE_GROUPS, n_trees)))
    if (groups - 1) * shift_bytes <= min(GROUP_BUDGET, forest_bytes // 4):
        return groups, False
    if threads > 1 and -(-p // 8) >= 4 * threads:  # enough blocks of 8 features for the
        return threads, True  # groups to weigh about the same: one group a thread
    return 1, False


@njit(cache=True, nogil=True)
def _projected_oob_tasks(left, right, kids, feature, threshold, missing, value, offsets, max_depth,
                         X32, local, columns, column_start, XT, counts, targets, n_groups,
                         by_feature, feature_group, shift, others, first_group, last_group):
    """Groups ``first_group, ..., last_group - 1`` of :func:`projected_oob_shift`: a group of
    trees into ``shift`` (the first) or ``others[g - 1]``, or (``by_feature``) the features
    of group g (``feature_group``) over every tree into their part of ``shift``."""
    n_trees = offsets.size - 1
    for g in range(first_group, last_group):
        if by_feature:
            _group_shift(left, right, kids, feature, threshold, missing, value, offsets, max_depth,
                         X32, local, columns, column_start, XT, counts, targets, np.int64(0),
                         n_trees, g, feature_group, shift)
        else:
            _group_shift(left, right, kids, feature, threshold, missing, value, offsets, max_depth,
                         X32, local, columns, column_start, XT, counts, targets,
                         g * n_trees // n_groups, (g + 1) * n_trees // n_groups, np.int64(0),
                         feature_group, shift if g == 0 else others[g - 1])


def split_covers(forest: PackedForest) -> np.ndarray:
    """Per feature j, the training rows (covers) of the nodes that split on j: about the
    rows whose descents the projection along j redoes."""
    internal = forest.left >= 0
    return np.bincount(forest.feature[internal], weights=forest.cover[internal],
                       minlength=forest.n_features)


def feature_groups(forest: PackedForest, n_groups: int) -> np.ndarray:
    """Group of each feature when the projections are split by features, with about equal
    work per group (:func:`split_covers`): blocks of 8 neighbouring features (a cache line
    of ``shift[row]``, which only one group then writes) assigned heaviest first to the
    lightest group so far. Features interleaved (j mod 2) between 2 threads wrote the same
    cache lines: on the p = 200 case, 0.138 s on 2 threads where each group alone took
    0.115 s on one; contiguous halves of the covers left one group 0.124 s of work and the
    other 0.101 s; these blocks, 0.109 and 0.112 s."""
    blocks = np.add.reduceat(split_covers(forest), np.arange(0, forest.n_features, 8))
    group_of_block = np.zeros(len(blocks), dtype=np.int64)
    load = np.zeros(n_groups)
    for b in np.argsort(-blocks, kind="stable"):
        group_of_block[b] = int(np.argmin(load))
        load[group_of_block[b]] += blocks[b]
    return group_of_block[np.arange(forest.n_features) // 8]


def projected_oob_shift(forest: PackedForest, X32: np.ndarray, counts: np.ndarray,
                        targets: np.ndarray) -> np.ndarray:
    """Sum over each row's OOB trees of (projected output − tree output), per feature, for
    ``forest`` (a forest view's ``packed`` field).

    One task per group (:func:`harness.core.tasks.run_tasks`; groups from
    :func:`work_split`): contiguous groups of trees summed apart and then added in group
    order, or (``by_feature``) groups of features (:func:`feature_groups`) over every tree;
    either way the sums do not depend on the number of threads.

    Parameters
    ----------
    targets : ndarray (n, n_values)
        The regression target as a column, or the one-hot classes (projected class
        probabilities are count-weighted class frequencies, like the leaves' values).

    Returns
    -------
    shift : ndarray (n, p, n_values)
        Rows whose path in a tree never meets j get no shift from that tree.
    """
    n, p = X32.shape
    n_values = forest.value.shape[1]
    n_groups, by_feature = work_split(forest.n_trees, p, n * p * n_values * 8, forest.nbytes,
                                      numba.get_num_threads())
    # wide rows: each tree walks its own columns
    local, columns, column_start, XT = walk_columns(forest.left, forest.feature,
                                                    forest.offsets, X32)
    shift = np.zeros((n, p, n_values))
    group = (feature_groups(forest, n_groups) if by_feature
             else np.zeros(p, dtype=np.int64))  # every feature in each group of trees
    # split by trees, the first group writes shift and the others their own arrays; split
    # by features, every group writes its part of shift
    sum_by_groups(_projected_oob_tasks, n_groups, shift, 1 if by_feature else n_groups,
                  forest.left, forest.right, forest.kids, forest.feature,
                  forest.threshold,
                  forest.missing_left, forest.value, forest.offsets, forest.max_depth, X32,
                  local, columns, column_start, XT, counts, targets, n_groups, by_feature, group)
    return shift
