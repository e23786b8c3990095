"""The compact form of a packed forest that the path walks read.

Derived from :class:`harness.forest.packed.PackedForest` alone, so every tree library whose
adapter fills the packed arrays gets it for free. Built once per fitted model by
:class:`harness.forest.view.ForestView` (its ``paths`` field).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.forest.packed import PackedForest


@dataclass
class PathForest:
    """A :class:`PackedForest` in the compact form the path walks read.

    Ids are int32 and local to their tree; ``kids[t] = (right, left)`` so that the child is
    ``kids[t, goes_left]``, an indexed load instead of an unpredictable branch (``goes_left``
    is :func:`harness.forest.packed.goes_left`, NaN read from ``missing_left``, uint8 per node);
    ``feature`` is -1 at leaves; ``threshold`` is float32, rounded down; ``value_by_class``
    is ``value`` transposed (n_values, n_nodes), one contiguous row per class. ``leaf_ptr``,
    ``leaf_class`` and ``leaf_value`` hold the nonzero leaf values (CSR by node): skipping
    exact zeros leaves every sum unchanged. ``refill`` is :func:`uneven_trees` (uint8 per
    tree), how the walks schedule their rows in each tree.
    """

    packed: PackedForest
    kids: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    value_by_class: np.ndarray
    leaf_ptr: np.ndarray
    leaf_class: np.ndarray
    leaf_value: np.ndarray
    missing_left: np.ndarray
    refill: np.ndarray


#: Standard deviation of the leaf depth (weighted by the training rows reaching each leaf)
#: from which a tree counts as uneven. Local MDI on Friedman #1 and digits forests, one
#: thread, 1000-1800 rows: refilled lanes took 1.19-1.27x the time of lockstep ones on trees
#: capped at depth 4-10 (sd 0.0-1.0), and 0.66-0.83x on trees of max_depth 14 or fully
#: grown (sd 2.3-4.7); at max_depth 12 (sd 1.7) either took about the same
UNEVEN_DEPTH_SD = 1.5


def node_depths(packed: PackedForest) -> np.ndarray:
    """Depth of every node of a packed forest (0 at each root), one level of every tree at a
    time."""
    tree_start = np.repeat(packed.offsets[:-1], np.diff(packed.offsets))
    depth = np.zeros(packed.left.size, dtype=np.int64)
    level, d = packed.offsets[:-1].astype(np.int64), 0
    while level.size:
        depth[level] = d
        inner = level[packed.left[level] >= 0]
        level = np.concatenate((tree_start[inner] + packed.left[inner],
                                tree_start[inner] + packed.right[inner]))
        d += 1
    return depth


def leaf_depths(packed: PackedForest) -> tuple[np.ndarray, np.ndarray]:
    """The tree and the depth of every leaf of a packed forest, in node order."""
    leaf = packed.left < 0
    tree = np.repeat(np.arange(packed.n_trees), np.diff(packed.offsets))[leaf]
    return tree, node_depths(packed)[leaf]


def uneven_trees(packed: PackedForest) -> np.ndarray:
    """1 for each tree whose leaf depth, weighted by the training rows (``cover``) reaching
    each leaf, has a standard deviation of at least :data:`UNEVEN_DEPTH_SD`, else 0: the rows
    of one tree then end their walks at very different depths, and the path walks
    (:func:`harness.kernels.paths._walk_rows`) give a finished walk's lane the next row
    instead of finishing the others alone."""
    tree, depth = leaf_depths(packed)
    depth, weight = depth.astype(float), packed.cover[packed.left < 0]
    total = np.maximum(np.bincount(tree, weight, packed.n_trees), np.finfo(float).tiny)
    mean = np.bincount(tree, weight * depth, packed.n_trees) / total
    spread = np.bincount(tree, weight * (depth - mean[tree]) ** 2, packed.n_trees) / total
    return (np.sqrt(spread) >= UNEVEN_DEPTH_SD).astype(np.uint8)


def _round_down_float32(threshold: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        low = threshold.astype(np.float32)
    above = low.astype(np.float64) > threshold
    low[above] = np.nextafter(low[above], np.float32(-np.inf))
    return low


def compact_forest(packed: PackedForest) -> PathForest:
    """Build the :class:`PathForest` of a packed forest."""
    inner = packed.left >= 0
    leaf_values = np.where(inner[:, None], 0.0, packed.value)
    rows, classes = np.nonzero(leaf_values)
    return PathForest(
        packed=packed,
        kids=packed.kids,
        feature=np.where(inner, packed.feature, -1).astype(np.int32),
        threshold=_round_down_float32(packed.threshold),
        value_by_class=np.ascontiguousarray(packed.value.T),
        leaf_ptr=np.concatenate(([0], np.cumsum(np.count_nonzero(leaf_values, axis=1)))),
        leaf_class=classes.astype(np.int32),
        leaf_value=leaf_values[rows, classes],
        missing_left=packed.missing_left,
        refill=uneven_trees(packed),
    )
