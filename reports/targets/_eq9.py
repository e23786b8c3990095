"""Eq. 9 of Sutera et al. (2021) on one fitted forest, tree by tree, with in-bag weights.

Seed 003 (Sutera et al. 2021), Sec. 4.1, Eq. 9: the local MDI of Definition 1 (Eq. 8)
averaged over the learning set is the global MDI (Louppe et al. 2013, Eq. 1). It is an
identity of each tree on the sample the tree was grown on: a tree's node impurities i(t) and
node weights p(t) are those of its learning sample. A bootstrap tree's learning sample is its
in-bag draw, so the identity holds per tree with the in-bag counts c_it as weights,

    global MDI = mean_t [ Σ_i c_it w_i local_t(x_i) / Σ_i c_it w_i ],

and not, in general, for the plain mean over the training rows of the forest's local MDI
(which weights every row once in every tree). Without bootstrap c_it = 1 and both agree.

The compiled kernel (:func:`harness.kernels.paths.local_mdi_paths`) returns the mean over
trees only, so the per-tree weighted sums are computed here by a NumPy reference on the
packed forest: Σ_i c_it w_i local_t(x_i) = Σ_{t ∋ n, n ≠ root} M_t(n) [i(parent n) − i(n)],
credited to the parent's split feature, where M_t(n) is the in-bag weight of the learning
rows routed through node n (the telescoping sum of Eq. 8 over each row's path). The same
reference with c_it = 1 must equal the kernel's mean over the learning set: that is checked
on every forest (``kernel_gap``), so the reference and the kernel vouch for each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.api import explain
from harness.core.errors import BadInputError
from harness.forest.packed import PackedForest
from harness.forest.view import forest_view


@dataclass(frozen=True)
class Eq9Gaps:
    """Eq. 9 on one forest: largest gaps over the features (impurity units).

    weighted : max_m |mean_t of the in-bag-weighted mean of local_t − global MDI| (the
        identity, judged to rounding).
    unweighted : max_m |mean over the learning set of the forest's local MDI − global MDI|
        (the kernel's local MDI; not an identity for bootstrap forests, reported only).
    kernel : max_m |reference with unit in-bag weights − the kernel's mean| (rounding).
    scale : the largest global MDI.
    """

    weighted: float
    unweighted: float
    kernel: float
    scale: float


def _levels(packed: PackedForest) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Global node ids level by level (roots first), each node's parent (−1 at roots) and
    tree."""
    sizes = np.diff(packed.offsets)
    tree_of = np.repeat(np.arange(packed.n_trees), sizes)
    base = packed.offsets[:-1][tree_of]
    internal = np.flatnonzero(packed.left >= 0)
    left = packed.left[internal] + base[internal]
    right = packed.right[internal] + base[internal]
    parent = np.full(packed.left.shape[0], -1, dtype=np.int64)
    parent[left], parent[right] = internal, internal
    levels, frontier = [], packed.offsets[:-1].astype(np.int64)
    while frontier.size:
        levels.append(frontier)
        split = frontier[packed.left[frontier] >= 0]
        frontier = np.concatenate((packed.left[split] + base[split],
                                   packed.right[split] + base[split]))
    return levels, parent, tree_of


def per_tree_weighted_local(packed: PackedForest, leaves: np.ndarray,
                            weights: np.ndarray) -> np.ndarray:
    """Per tree t, Σ_i weights[i, t] local_t(x_i) / Σ_i weights[i, t], shape (n_trees, p).

    ``leaves`` (n, n_trees) are the local leaf ids of the rows (:meth:`ForestView.apply`).
    The weight of every node (M_t(n), the weighted rows routed through it) is summed from the
    leaves up, level by level; the path sums of Eq. 8 then telescope into one term per
    non-root node (see the module docstring).
    """
    n_nodes, p = packed.left.shape[0], packed.n_features
    levels, parent, tree_of = _levels(packed)
    nodes = leaves + packed.offsets[:-1][None, :]
    mass = np.bincount(nodes.ravel(), weights=weights.ravel(), minlength=n_nodes)
    for level in reversed(levels[1:]):  # children before their parents
        np.add.at(mass, parent[level], mass[level])
    child = np.flatnonzero(parent >= 0)
    up = parent[child]
    drop = mass[child] * (packed.impurity[up] - packed.impurity[child])
    key = tree_of[child] * p + packed.feature[up]
    sums = np.bincount(key, weights=drop, minlength=packed.n_trees * p)
    root_mass = mass[packed.offsets[:-1]]
    return sums.reshape(packed.n_trees, p) / root_mass[:, None]


def learning_weights(model, n_rows: int, sample_weight: np.ndarray | None) -> np.ndarray:
    """Weight of each learning row in each tree, (n_rows, n_trees): the in-bag counts, times
    the row weights without bootstrap (a population's probabilities)."""
    view = forest_view(model)
    counts = view.inbag.counts.astype(np.float64)
    if counts.shape[0] != n_rows:
        raise BadInputError(f"Eq. 9 needs the forest's {counts.shape[0]} learning rows; "
                            f"got {n_rows}.")
    if sample_weight is None:
        return counts
    if view.bootstrap:
        # scikit-learn >= 1.7 draws the bootstrap with probabilities ∝ sample_weight and fits
        # on the counts alone; older versions multiply: refuse rather than guess
        raise BadInputError("Eq. 9 with in-bag weights is computed for bootstrap forests "
                            "fitted without sample weights only; got sample weights.")
    return counts * np.asarray(sample_weight, dtype=np.float64)[:, None]


def eq9_gaps(model, X: np.ndarray, y: np.ndarray,
             sample_weight: np.ndarray | None = None) -> Eq9Gaps:
    """Eq. 9 on a fitted forest and its learning rows ``X, y`` (in fit order), weighted by
    ``sample_weight`` where the forest was fitted with it (see :class:`Eq9Gaps`)."""
    view = forest_view(model)
    weights = learning_weights(model, len(X), sample_weight)
    leaves = view.apply(X)
    global_ = explain("mdi", model, X, y).values
    weighted = per_tree_weighted_local(view.packed, leaves, weights).mean(axis=0)
    row_weight = (np.ones(len(X)) if sample_weight is None
                  else np.asarray(sample_weight, dtype=np.float64))
    kernel_mean = row_weight @ explain("local_mdi", model, X, y).values / row_weight.sum()
    reference_mean = per_tree_weighted_local(
        view.packed, leaves, np.broadcast_to(row_weight[:, None], leaves.shape)).mean(axis=0)
    return Eq9Gaps(weighted=float(np.abs(weighted - global_).max()),
                   unweighted=float(np.abs(kernel_mean - global_).max()),
                   kernel=float(np.abs(reference_mean - kernel_mean).max()),
                   scale=float(np.abs(global_).max()))
