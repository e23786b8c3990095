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
    exact zeros leaves every sum unchanged.
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
    )
