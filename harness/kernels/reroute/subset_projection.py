"""Out-of-bag predictions of forests projected on variable subsets (SHAFF, step 2).

Bénard, Biau, Da Veiga, Scornet (AISTATS 2022) estimate v(U) = V(E[Y | X_U]) / V(Y) with the
forest *projected* on U: every split on a variable outside U is ignored. It is the Sobol-MDA
projection (:mod:`harness.kernels.reroute.projection`) generalised from "drop j" to "keep U". A
row's projected cell in a tree is the intersection of the cells of the leaves its projected
descent reaches (a split on a kept variable sends it to the child it takes, any other split
to both children); rows share a cell exactly when they reach the same leaf set. Its value is
the in-bag-count-weighted mean of the targets of the in-bag rows in the cell.

Empty cells, as in the Sobol-MDA reference (ranger ``sobol-mda`` fork,
``predictProjectedTree``; :mod:`harness.kernels.reroute.projection`): the descent is also read
level by level, the key of level d being the set of nodes reached at depth d together with
the leaves reached above it (the projected tree cut at depth d). When no in-bag row reaches the
row's leaf set, the row takes the deepest level whose key some in-bag row shares (keys are
nested, so this is the last level before the first miss; level 0, the root, is shared by every
in-bag row). The cell thus stays an intersection of projected cells, conditioned on X_U only,
as the estimate of E[Y | X_U] requires. A previous version fell back to the cover-weighted mean
of the reached leaves (the path-dependent expectation of TreeSHAP, a union of cells that
averages over the removed variables as if they were independent of the kept ones): on the
p = 200 correlated Gaussian design of issue 20 that fallback served up to 56 % of the
predictions of sets of 50 to 150 variables and put v̂ at 0.52 where the walk-back gives 0.69
(exact 0.83, the forest's own fit 0.76 of 0.9).

Speed: a subtree without any kept variable is reached whole, so it is one *terminal* node of
the descent, keyed by the sum of its leaves' hashes at every level from its depth on (the set
of its nodes at any deeper level is fixed once it is reached, so this keying is one-to-one);
the descent therefore only branches where kept variables still split below. Node sets are
hashed as sums of 64-bit hashes (collision probability about 2**-64 per pair of distinct
sets) into an open-addressing table per (subset, tree). What depends on the forest only
(leaf-hash sums, depths) is computed once (:func:`descent_tables`); per (subset, tree) every
row descends at once (:func:`_kept_descents`). Keys are exact sums modulo 2**64 and every
cell receives its in-bag rows in row order, so none of this changes a bit of the result
(issue 20: one SHAFF explain at p = 200 with 300 trees took 345 CPU s with one walk per row
and per-subset tables, 119 CPU s with these). A kept split partitions its rows without a
branch (their directions are unpredictable), and the in-bag counts are read tree by tree (a
column copied once per (subset, tree)): 3.0 s against 2.1 s for 60 random subsets of the
p = 200 bench forest, one thread, the same bits. Each parallel group's table grows with the
cells it holds (:func:`_filled_table`; up to 4096 slots on the p = 200 bench forest, where
tables sized for a key per in-bag row and level took 16 384: 0.4 MB less per thread, at the
same speed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from harness.core.tasks import run_tasks
from harness.forest.packed import PackedForest, left_bit
from harness.kernels.reroute.projection import (
    add_to_cell,
    deepest_shared_slot,
    node_hash,
    open_cell,
    table_size,
    table_slot,
)

#: Interleaved groups of subsets of :func:`projected_oob_predictions`, one parallel task
#: each. A fixed number, never the number of threads, and every subset is computed on its
#: own anyway, so the result is the same bit for bit on any number of threads; interleaved
#: because the design lists its subsets by size, and the cost of a subset depends on its size.
SUBSET_GROUPS = 64


@njit(cache=True)
def descent_tables(left, right, offsets):
    """What every projection of the forest reads, per packed node: once per forest, as none
    of it depends on the subset (children come after their parent in the arrays).

    The node's own hash, :func:`~harness.kernels.reroute.projection.node_hash`, is not
    kept: the descents compute it once per node they enter (8 bytes a node less, 0.46 MB on
    the p = 200 bench forest).

    Returns
    -------
    leaf_sums : ndarray of uint64 (n_nodes,)
        Sum of the hashes of the leaves below the node (its own for a leaf): the key of a
        subtree reached whole.
    depth : ndarray of int32 (n_nodes,)
        Depth of the node in its tree (4 bytes a node: a tree of 2**31 levels would need
        as many samples).
    tree_depth : ndarray of int64 (n_trees,)
        Depth of each tree's deepest node.
    """
    n_trees = offsets.size - 1
    n_nodes = offsets[n_trees]
    leaf_sums = np.empty(n_nodes, dtype=np.uint64)
    depth = np.zeros(n_nodes, dtype=np.int32)
    tree_depth = np.zeros(n_trees, dtype=np.int64)
    for t in range(n_trees):
        start = offsets[t]
        for at in range(start, offsets[t + 1]):
            tree_depth[t] = max(tree_depth[t], depth[at])
            if left[at] != -1:
                depth[start + left[at]] = depth[at] + 1
                depth[start + right[at]] = depth[at] + 1
        for at in range(offsets[t + 1] - 1, start - 1, -1):
            if left[at] == -1:
                leaf_sums[at] = node_hash(at)
            else:
                leaf_sums[at] = leaf_sums[start + left[at]] + leaf_sums[start + right[at]]
    return leaf_sums, depth, tree_depth


@njit(cache=True)
def _mark_kept_below(left, right, feature, start, size, keep, below):
    """Write into ``below[:size]``, per node of the tree at ``start``, whether a split on a
    kept variable lies in its subtree (itself included)."""
    for node in range(size - 1, -1, -1):
        at = start + node
        below[node] = left[at] != -1 and (keep[feature[at]] or below[left[at]]
                                          or below[right[at]])


@njit(cache=True)
def _kept_descents(left, right, feature, threshold, missing, start, X32, keep, below,
                   leaf_sums, depth, n_depths, internal, terminal, deepest, segments, stack_node,
                   stack_first, stack_count, stack_mark):
    """Descend every row of ``X32`` at once through the tree at ``start``, applying only the
    splits on kept variables (``keep``); write what its level keys are made of.

    Row r's key at level d (:func:`_row_level_keys`) hashes the nodes it reaches at depth d
    with the terminal nodes (leaves, or subtrees without a kept split: ``below`` is false)
    it reaches above. ``internal[d, r]`` receives the sum of the hashes of the non-terminal
    nodes r reaches at depth d, ``terminal[d, r]`` the sum of the leaf hashes of the terminal
    nodes it reaches at depth d, ``deepest[r]`` the depth of its deepest non-terminal node.

    All rows at once, not one descent per row: a node's rows are a segment of ``segments``, a
    split on a dropped variable passes the same segment to both children, and a kept split
    partitions it into a new segment. The work per (node, row) is then a few array updates
    in a loop of the node instead of a branch of a row's own walk (the kernel 2.7 times
    faster at p = 200). A segment lives until its node's subtree is done (``stack_mark``): the live
    segments are those of a path's kept splits, at most ``n (max_depth + 2)`` entries.
    ``below`` is indexed by the tree's local node ids, the :func:`descent_tables`
    (``leaf_sums``, ``depth``) and the node hashes by packed ids; the tree has ``n_depths``
    depths.
    """
    n = X32.shape[0]
    internal[:n_depths] = 0
    terminal[:n_depths] = 0
    deepest[:] = -1
    for r in range(n):
        segments[r] = r
    stack_node[0] = 0
    stack_first[0] = 0
    stack_count[0] = n
    stack_mark[0] = n
    top = 1
    while top > 0:
        top -= 1
        node = stack_node[top]
        first = stack_first[top]
        count = stack_count[top]
        used = stack_mark[top]  # segments past this are of subtrees already done
        at = start + node
        d = depth[at]
        if not below[node]:  # reached whole: its leaves at every level from d on
            value = leaf_sums[at]
            for q in range(first, first + count):
                terminal[d, segments[q]] += value
            continue
        value = node_hash(at)
        for q in range(first, first + count):
            r = segments[q]
            internal[d, r] += value
            deepest[r] = max(deepest[r], d)
        if keep[feature[at]]:
            # partition into [used, low) (left) and [low, used + count) (right)
            column = feature[at]
            cut = threshold[at]
            low = used
            high = used + count - 1
            for q in range(first, first + count):
                r = segments[q]
                segments[low] = r
                segments[high] = r
                goes = np.int64(left_bit(np.float64(X32[r, column]), cut, missing[at]))
                low += goes  # branch-free: the directions of a node's rows are not predictable
                high -= 1 - goes
            stack_node[top], stack_first[top] = right[at], low
            stack_count[top], stack_mark[top] = used + count - low, used + count
            stack_node[top + 1], stack_first[top + 1] = left[at], used
            stack_count[top + 1], stack_mark[top + 1] = low - used, used + count
        else:
            stack_node[top], stack_first[top] = right[at], first
            stack_count[top], stack_mark[top] = count, used
            stack_node[top + 1], stack_first[top + 1] = left[at], first
            stack_count[top + 1], stack_mark[top + 1] = count, used
        top += 2


@njit(cache=True)
def _row_level_keys(internal, terminal, deepest, row, keys):
    """Keys of ``row``'s projected descent level by level (from :func:`_kept_descents`) into
    ``keys``; returns their number.

    ``keys[d]`` hashes the nodes reached at depth d with the terminal nodes reached above;
    the last key is the set of reached terminal nodes, the row's projected cell.
    """
    n_levels = deepest[row] + 2
    above = np.uint64(0)
    for d in range(n_levels):
        above += terminal[d, row]
        keys[d] = internal[d, row] + above
    return n_levels


@njit(cache=True, nogil=True)
def _filled_table(table_keys, stamps, weights, sums, generation, internal, terminal, deepest,
                  tree_counts, targets, keys):
    """Open a cell stamped ``generation`` for every level key of every in-bag row (count
    ``tree_counts[i]`` > 0) and add the row's weighted targets to it, rows in order. False,
    and the table left to be replaced, when the cells would fill more than half of it (the
    caller then passes a table twice as large). A function of its own, so that the kernel
    rebinds its table only between fills: rebinding arrays inside the rows' loop had numba
    count references at every access (3.3× the time)."""
    mask = table_keys.size - 1
    opened = 0
    for i in range(tree_counts.size):  # in row order: the cells' sums are added in that order
        weight = np.float64(tree_counts[i])
        if weight == 0.0:
            continue
        n_levels = _row_level_keys(internal, terminal, deepest, i, keys)
        for level in range(n_levels):  # the row joins its cell at every level
            at = table_slot(table_keys, stamps, generation, keys[level], mask)
            if stamps[at] != generation:  # a cell not yet opened
                opened += 1
                if 2 * opened > mask + 1:
                    return False
                open_cell(table_keys, stamps, weights, sums, generation, at, keys[level])
            add_to_cell(weights, sums, at, weight, targets, i)
    return True


@njit(cache=True, nogil=True)
def _projected_oob_tasks(left, right, feature, threshold, missing, offsets, max_depth, X32,
                         counts, targets, keep, leaf_sums, depth, tree_depth,
                         n_groups, largest, capacity, total, n_walked_up, first_group,
                         last_group):
    """Groups ``first_group, ..., last_group - 1`` of :func:`projected_oob_predictions`, each
    with buffers of its own: group g does the subsets g, g + n_groups, ..., into their rows
    of ``total`` and ``n_walked_up``. ``counts`` (n, n_trees) are the in-bag counts; each
    (subset, tree) copies its tree's column into a buffer and reads that, contiguously
    (the same speed as a transposed copy of all the counts, without its n × n_trees
    bytes)."""
    n = X32.shape[0]
    n_trees = offsets.size - 1
    n_values = targets.shape[1]
    n_subsets = keep.shape[0]
    for g in range(first_group, last_group):
        below = np.empty(largest, dtype=np.bool_)
        internal = np.empty((max_depth + 2, n), dtype=np.uint64)
        terminal = np.empty((max_depth + 2, n), dtype=np.uint64)
        deepest = np.empty(n, dtype=np.int64)
        segments = np.empty(n * (max_depth + 2), dtype=np.int64)
        stack_node = np.empty(largest + 1, dtype=np.int64)
        stack_first = np.empty(largest + 1, dtype=np.int64)
        stack_count = np.empty(largest + 1, dtype=np.int64)
        stack_mark = np.empty(largest + 1, dtype=np.int64)
        keys = np.empty(max_depth + 2, dtype=np.uint64)
        tree_counts = np.empty(n, dtype=counts.dtype)
        table_keys = np.empty(capacity, dtype=np.uint64)  # grown as _filled_table asks
        stamps = np.zeros(capacity, dtype=np.int64)
        weights = np.empty(capacity)
        sums = np.empty((capacity, n_values))
        generation = 0
        for s in range(g, n_subsets, n_groups):
            walked_up = 0  # written once: another thread counts the neighbouring subsets
            for t in range(n_trees):
                start = offsets[t]
                _mark_kept_below(left, right, feature, start, offsets[t + 1] - start, keep[s],
                                 below)
                _kept_descents(left, right, feature, threshold, missing, start, X32, keep[s],
                               below, leaf_sums, depth, tree_depth[t] + 1, internal,
                               terminal, deepest, segments, stack_node, stack_first,
                               stack_count, stack_mark)
                generation += 1  # a new table for every (subset, tree)
                for i in range(n):  # the tree's column, read two times below
                    tree_counts[i] = counts[i, t]
                while not _filled_table(table_keys, stamps, weights, sums, generation,
                                        internal, terminal, deepest, tree_counts, targets,
                                        keys):
                    # more cells than half the table: twice the size, and fill it anew
                    size = 2 * table_keys.size
                    table_keys = np.empty(size, dtype=np.uint64)
                    stamps = np.zeros(size, dtype=np.int64)
                    weights = np.empty(size)
                    sums = np.empty((size, n_values))
                mask = table_keys.size - 1
                for i in range(n):
                    if tree_counts[i] != 0:
                        continue
                    n_levels = _row_level_keys(internal, terminal, deepest, i, keys)
                    at, level = deepest_shared_slot(table_keys, stamps, generation, mask, keys,
                                                    n_levels)
                    if at == -1:  # only for a tree without in-bag rows
                        continue
                    for k in range(n_values):
                        total[s, i, k] += sums[at, k] / weights[at]
                    if level < n_levels - 1:
                        walked_up += 1
            n_walked_up[s] = walked_up


@dataclass(frozen=True)
class SubsetProjector:
    """Projections of one forest on variable subsets, for one set of training rows: what every
    call shares (the forest's descent tables, the in-bag counts tree by tree, the tables'
    first size) is computed once, by :meth:`build`, so that a caller that projects its
    subsets in chunks (:class:`harness.estimators.shaff.StreamedShapley`) pays it once."""

    forest: PackedForest
    X32: np.ndarray
    #: (n, n_trees): the in-bag counts, as the forest view holds them (not copied: the
    #: kernel copies a tree's column once per (subset, tree) and reads that copy)
    counts: np.ndarray
    targets: np.ndarray
    tables: tuple
    largest: int
    #: the tables' first size (a power of two above the largest tree's nodes); a group's
    #: table doubles whenever a (subset, tree) opens more cells than half of it
    capacity: int

    @classmethod
    def build(cls, forest: PackedForest, X32: np.ndarray, counts: np.ndarray,
              targets: np.ndarray) -> SubsetProjector:
        """See :func:`projected_oob_predictions` for the arguments."""
        tables = descent_tables(forest.left, forest.right, forest.offsets)
        # a table holds the distinct cells of one tree's in-bag rows, over the levels of
        # their descents: as many as the nodes they reach for the set of all variables, up
        # to a key per row and level for others. Sized by growing (load at most 1/2), not by
        # that bound: on the p = 200 bench forest the bound asked 16 384 slots (0.5 MB per
        # parallel group), where the cells fill about 1 000
        largest = int(np.diff(forest.offsets).max(initial=1))
        return cls(forest, X32, np.ascontiguousarray(counts), targets, tables, largest,
                   int(table_size(largest, 16)))

    def predictions(self, keep: np.ndarray,
                    n_groups: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:func:`projected_oob_predictions` of the subsets ``keep``."""
        forest = self.forest
        n_subsets = keep.shape[0]
        if n_groups is None:
            n_groups = int(max(1, min(SUBSET_GROUPS, n_subsets)))
        total = np.zeros((n_subsets, self.X32.shape[0], self.targets.shape[1]))
        n_walked_up = np.zeros(n_subsets, dtype=np.int64)
        run_tasks(_projected_oob_tasks, n_groups, forest.left, forest.right, forest.feature,
                  forest.threshold, forest.missing_left, forest.offsets, forest.max_depth,
                  self.X32, self.counts, self.targets, keep, *self.tables, n_groups,
                  self.largest, self.capacity, total, n_walked_up)
        return total, n_walked_up


def projected_oob_predictions(forest: PackedForest, X32: np.ndarray, counts: np.ndarray,
                              targets: np.ndarray, keep: np.ndarray,
                              n_groups: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sum over each row's out-of-bag trees of the projected tree outputs, per subset.

    Interleaved groups of subsets (at most SUBSET_GROUPS), one task each
    (:func:`harness.core.tasks.run_tasks`) with buffers of its own; a subset's sums do not
    depend on its group, nor on the number of threads.

    Parameters
    ----------
    forest : PackedForest
        A forest view's ``packed`` field.
    counts : ndarray (n, n_trees)
        In-bag counts; rows with count 0 are out of bag.
    targets : ndarray (n, n_values)
        y as a column, or the one-hot classes.
    keep : ndarray of bool, shape (n_subsets, p)
        The kept variables U of each subset.
    n_groups : int, optional
        Groups of subsets (default: SUBSET_GROUPS, or one per subset when fewer); the
        result does not depend on it.

    Returns
    -------
    total : ndarray (n_subsets, n, n_values)
        Divide by each row's number of out-of-bag trees for the OOB projected forest.
    n_walked_up : ndarray (n_subsets,)
        How many (row, tree) predictions found no in-bag row in their projected cell and took
        a shallower level's.
    """
    return SubsetProjector.build(forest, X32, counts, targets).predictions(keep, n_groups)
