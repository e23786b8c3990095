"""A fitted forest packed into contiguous arrays, for the compiled kernels.

Every tree's node arrays are concatenated; ``offsets[t]`` is the first node of tree ``t`` and
child ids stay local to their tree (``-1`` marks a leaf), so tree ``t``'s node ``k`` lives at
``offsets[t] + k``. Routing is the rule of :class:`~harness.forest.flat.FlatTree`: rows come
coded by the view (:meth:`~harness.forest.view.ForestView.rows`; for scikit-learn, the float32
cast it routes with) and a row goes left when ``x_j <= threshold`` (the threshold is float64),
or when ``x_j`` is NaN and ``missing_left`` is set at the node. :func:`goes_left` is that rule
for every compiled kernel: the NaN test is one compare on the value already loaded, and the
``missing_left`` byte is read only for a NaN (a branch that rows without NaN never take).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numba import njit

from harness.core.tasks import run_tasks
from harness.forest.flat import FlatTree, as_float32_rows  # noqa: F401 (re-exported)

#: "every tree" for :func:`forest_output` (a count matrix with no tree column)
NO_COUNTS = np.zeros((0, 0), dtype=np.int32)


@dataclass
class PackedForest:
    """All trees of a forest as flat arrays (see the module docstring).

    ``value`` has shape (total_nodes, n_values): class probabilities (rows sum to one) for a
    classifier, the node mean for a regressor, exactly what each tree's ``predict_proba`` /
    ``predict`` returns.
    """

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    value: np.ndarray
    cover: np.ndarray  # weighted number of training samples reaching each node
    impurity: np.ndarray  # node impurity i(t), float64 (bits for entropy)
    offsets: np.ndarray
    max_depth: int
    n_features: int
    #: True when the kernels read several value columns: a classifier's classes, or the
    #: outputs of a multi-output model (``ForestView.packed`` sets it for both)
    classifier: bool
    #: uint8 per node: 1 where a NaN goes left (all zeros when no tree routes NaN left)
    missing_left: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.missing_left is None:  # NaN goes right everywhere (x <= t is false)
            self.missing_left = np.zeros(self.left.shape[0], dtype=np.uint8)

    @property
    def n_trees(self) -> int:
        return int(self.offsets.size - 1)

    @functools.cached_property
    def kids(self) -> np.ndarray:
        """``(right, left)`` of every node, int32 local ids, built once per forest: the child
        a row takes is the load ``kids[node, goes_left]``, an address computed from the
        direction, where a choice between ``left`` and ``right`` is the compiler's to make
        a branch (it did for Sobol-MDA's descent on an AMD EPYC, znver4: 1.22 s against
        0.97 s on Friedman #1 / RF 300). Not counted in :attr:`nbytes`."""
        return np.stack((self.right, self.left), axis=1).astype(np.int32)

    @property
    def n_values(self) -> int:
        return int(self.value.shape[1])

    @property
    def nbytes(self) -> int:
        """Bytes held by the node arrays."""
        return sum(array.nbytes for array in (self.left, self.right, self.feature,
                                              self.threshold, self.value, self.cover,
                                              self.impurity, self.offsets,
                                              self.missing_left))

    def tree_features(self, t: int) -> np.ndarray:
        """Sorted features that tree ``t`` splits on."""
        start, stop = self.offsets[t], self.offsets[t + 1]
        features = self.feature[start:stop][self.left[start:stop] >= 0]
        return np.unique(features)


def pack_trees(trees: list[FlatTree], n_features: int, classifier: bool) -> PackedForest:
    """Concatenate flat trees into a :class:`PackedForest` (see the module docstring)."""
    sizes = np.array([tree.n_nodes for tree in trees], dtype=np.int64)
    return PackedForest(
        left=np.concatenate([tree.left for tree in trees]).astype(np.int64),
        right=np.concatenate([tree.right for tree in trees]).astype(np.int64),
        feature=np.concatenate([tree.feature for tree in trees]).astype(np.int64),
        threshold=np.concatenate([tree.threshold for tree in trees]).astype(np.float64),
        value=np.ascontiguousarray(np.concatenate([tree.value for tree in trees])),
        cover=np.concatenate([tree.weighted_n for tree in trees]).astype(np.float64),
        impurity=np.concatenate([tree.impurity for tree in trees]).astype(np.float64),
        offsets=np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
        max_depth=max(tree.max_depth for tree in trees),
        n_features=int(n_features),
        classifier=bool(classifier),
        missing_left=np.concatenate([
            np.zeros(tree.n_nodes, dtype=np.uint8) if tree.missing_left is None
            else np.asarray(tree.missing_left, dtype=np.uint8) for tree in trees]),
    )


@njit(inline="always")
def goes_left(x, cut, missing_left, at):
    """The routing rule at node ``at``: ``x <= cut``, or ``missing_left[at]`` if x is NaN.

    ``x != x`` is the NaN test on the value already in a register; ``missing_left`` is read
    only in that (rare, well-predicted) branch, so rows without NaN pay one compare. Inlined
    into its caller's numba IR (``inline="always"``): no call boundary, so no reference
    counting on ``missing_left`` inside the callers' node loops, which all threads of a
    parallel kernel share; every kernel routes a row through this one rule.
    """
    if x != x:
        return missing_left[at] != 0
    return x <= cut


@njit(inline="always")
def left_bit(x, cut, missing_left):
    """:func:`goes_left` as 0 or 1 without a branch, for kernels that pack the directions of
    many rows into the bits of a word; ``missing_left`` is the node's flag (nonzero: NaN goes
    left), read once for all the rows."""
    return np.uint64((x <= cut) | ((missing_left != 0) & (x != x)))


@njit(cache=True)
def leaf_of(left, right, feature, threshold, missing_left, start, X32, row):
    """Local id of the leaf that ``row`` reaches in the tree starting at ``start``."""
    node = 0
    at = start
    while left[at] != -1:
        x = np.float64(X32[row, feature[at]])
        node = left[at] if goes_left(x, threshold[at], missing_left, at) else right[at]
        at = start + node
    return node


#: Row blocks of the parallel leaf lookups and forest outputs: at most ``ROW_BLOCKS`` blocks of
#: at least ``BLOCK_ROWS`` rows. Few and large, since a block walks every tree and larger
#: blocks find more of a tree's nodes in cache; 8 keep 2 threads balanced (4 each). From n
#: alone, never from the number of threads: each row's sum runs over the trees in order
#: whatever block and thread it falls in, so the results are the same bits on any number of
#: threads (and the same as the serial tree-by-tree loop these kernels replace).
ROW_BLOCKS, BLOCK_ROWS = 8, 32


@njit(cache=True)
def row_blocks(n):
    """Number of row blocks of :data:`ROW_BLOCKS` for ``n`` rows (at least one)."""
    return max(1, min(ROW_BLOCKS, (n + BLOCK_ROWS - 1) // BLOCK_ROWS))


@njit(cache=True, nogil=True)
def _apply_tasks(left, right, feature, threshold, missing_left, offsets, X32, leaves,
                 first_block, last_block):
    """Leaf of every row of row blocks ``first_block, ..., last_block - 1`` (of
    :func:`row_blocks`) in every tree, trees in order in a block."""
    n, n_trees = X32.shape[0], offsets.size - 1
    n_blocks = row_blocks(n)
    for b in range(first_block, last_block):
        first, last = b * n // n_blocks, (b + 1) * n // n_blocks
        for t in range(n_trees):
            for i in range(first, last):
                leaves[i, t] = leaf_of(left, right, feature, threshold, missing_left,
                                       offsets[t], X32, i)


@njit(cache=True)
def _apply_tree(left, right, feature, threshold, missing_left, start, X32):
    leaves = np.empty(X32.shape[0], dtype=np.int64)
    for i in range(X32.shape[0]):
        leaves[i] = leaf_of(left, right, feature, threshold, missing_left, start, X32, i)
    return leaves


def apply_tree(forest: PackedForest, X32: np.ndarray, tree: int) -> np.ndarray:
    """Local leaf id of every coded row (:meth:`ForestView.rows`) in tree ``tree`` only,
    shape (n,)."""
    return _apply_tree(forest.left, forest.right, forest.feature, forest.threshold,
                       forest.missing_left, forest.offsets[tree], as_float32_rows(X32))


def apply_packed(forest: PackedForest, X32: np.ndarray) -> np.ndarray:
    """Local leaf id of every coded row in every tree, shape (n, n_trees); equals
    ``model.apply``."""
    X32 = as_float32_rows(X32)
    leaves = np.empty((X32.shape[0], forest.n_trees), dtype=np.int64)
    run_tasks(_apply_tasks, row_blocks(X32.shape[0]), forest.left, forest.right,
              forest.feature, forest.threshold, forest.missing_left, forest.offsets, X32, leaves)
    return leaves


@njit(cache=True, nogil=True)
def _forest_output_tasks(left, right, feature, threshold, missing_left, value, offsets, counts,
                         X32, total, n_summed, first_block, last_block):
    """Row blocks ``first_block, ..., last_block - 1`` of :func:`forest_output`."""
    n, n_trees = X32.shape[0], offsets.size - 1
    every = counts.shape[1] == 0  # no counts given: every tree
    n_blocks = row_blocks(n)
    for b in range(first_block, last_block):
        first, last = b * n // n_blocks, (b + 1) * n // n_blocks
        for t in range(n_trees):
            for i in range(first, last):
                if every or counts[i, t] == 0:
                    at = offsets[t] + leaf_of(left, right, feature, threshold, missing_left,
                                              offsets[t], X32, i)
                    # element by element: a row view of the shared ``value`` would count
                    # references on its one header from both threads
                    for c in range(value.shape[1]):
                        total[i, c] += value[at, c]
                    n_summed[i] += 1


def forest_output(forest: PackedForest, counts: np.ndarray,
                  X32: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum over trees of the tree outputs of every row, in tree order, and how many trees
    each sum is over: all of them, or (``counts`` with a column per tree) only those where
    the row's count is 0, its out-of-bag trees; a tree not summed is not walked.

    Row blocks are tasks (:func:`row_blocks`, :func:`harness.core.tasks.run_tasks`); each
    row adds its trees in order from 0.0, as the serial tree-by-tree loop did, so the bits
    do not depend on the split.
    """
    total = np.zeros((X32.shape[0], forest.value.shape[1]))
    n_summed = np.zeros(X32.shape[0], dtype=np.int64)
    run_tasks(_forest_output_tasks, row_blocks(X32.shape[0]), forest.left, forest.right,
              forest.feature, forest.threshold, forest.missing_left, forest.value,
              forest.offsets, counts, X32, total, n_summed)
    return total, n_summed


def packed_output(forest: PackedForest, X32: np.ndarray) -> np.ndarray:
    """Mean over trees of the tree outputs of coded rows, (n, n_values): ``predict_proba`` /
    ``predict`` as a column, summed in tree order, without scikit-learn's per-tree Python
    loop."""
    total, _ = forest_output(forest, NO_COUNTS, as_float32_rows(X32))
    return total / forest.n_trees


def packed_oob_output(forest: PackedForest, X32: np.ndarray,
                      counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum over each coded row's out-of-bag trees (``counts[i, t] == 0``, the in-bag counts
    (n, n_trees)) of the tree outputs, in tree order, (n, n_values), and the number of those
    trees per row, (n,); in-bag trees are not walked."""
    if counts.shape != (X32.shape[0], forest.n_trees):
        raise ValueError(f"counts must have shape {(X32.shape[0], forest.n_trees)} (rows, "
                         f"trees); got {counts.shape}.")
    return forest_output(forest, np.ascontiguousarray(counts, dtype=np.int32),
                         as_float32_rows(X32))
