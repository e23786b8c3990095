"""Randomized multiway trees of Louppe et al. (2013) on categorical inputs, and their MDI.

The trees of the paper (seed 000, "Variable importances in trees" and "Effect of
randomization"; seed 001, Sec. "Theoretical study"): at each node, K variables are drawn
uniformly without replacement among those **not yet used on the branch** (all of them when
fewer than K remain), the one with the largest impurity decrease ``Delta i`` (Shannon entropy,
in bits) wins, ties broken uniformly at random, and the node gets **one child per value** of the
winner present in the node. A branch stops when its node is pure, when every variable has been
used, or when no unused variable varies in the node (every further split would be a no-op of
zero decrease, so stopping there does not change the MDI). At K = 1 these are the totally
randomized trees of Thm 1.

It sits in the oracle layer: a reference implementation of the paper's trees that the gallery
sets beside scikit-learn's forests and the exact values, not an importance method.

This is the growth rule that ``harness.oracle.exact_mdi.expected_mdi(rule="paper")`` computes
exactly; :func:`grow_multiway_forest` grows actual trees under it, so the LED page can show
forests of the paper's rule beside scikit-learn's (binary threshold splits, K drawn among all
features) and beside the exact expectation.

Each tree's MDI is ``sum_{t: v(t) = X_m} p(t) Delta i(t)`` (seed 000, Eq. 1, one tree), with
``p(t)`` the share of the sample weight in ``t``; it is also split by the depth of the node
(the size k of the conditioning set of its branch: the degree of seed 000's Eq. 2).

The rows are the support of a finite table (a population with its probabilities, or a sample
with unit weights). Gains and partitions depend only on a node's rows and the variable, so they
are computed once per forest and reused by every tree that reaches the same node.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from harness.core.errors import BadInputError
from harness.core.params import Interval, NoneValue, Param, validate_params

#: a column with more distinct values than this is not taken for a categorical variable
MAX_LEVELS = 64
#: gains closer than this (bits) are ties, broken uniformly at random
TIE_TOLERANCE = 1e-12

_PARAMS = {
    "max_features": Param(1, (Interval(int, 1, None), NoneValue())),
    "n_trees": Param(100, (Interval(int, 1, None),)),
    "random_state": Param(None, (Interval(int, 0, None), NoneValue())),
}


@dataclass(frozen=True)
class MultiwayForestMDI:
    """Per-tree MDI of a forest of paper-rule trees.

    Attributes
    ----------
    per_tree : ndarray of shape (n_trees, p)
        MDI of each variable in each tree, in bits.
    per_tree_degree : ndarray of shape (n_trees, p, p)
        ``[t, m, k]``: the part of ``per_tree[t, m]`` made at nodes of depth k (the number of
        variables used above them).
    """

    per_tree: np.ndarray
    per_tree_degree: np.ndarray

    @property
    def n_trees(self) -> int:
        return int(self.per_tree.shape[0])

    @property
    def mean(self) -> np.ndarray:
        """Forest MDI (mean over trees), shape (p,)."""
        return self.per_tree.mean(axis=0)

    @property
    def se(self) -> np.ndarray:
        """Standard error of :attr:`mean` (per-tree standard deviation / sqrt(n_trees))."""
        if self.n_trees < 2:
            return np.full(self.per_tree.shape[1], np.nan)
        return self.per_tree.std(axis=0, ddof=1) / np.sqrt(self.n_trees)

    @property
    def degree_mean(self) -> np.ndarray:
        """Mean over trees of :attr:`per_tree_degree`, shape (p, p)."""
        return self.per_tree_degree.mean(axis=0)

    @property
    def degree_se(self) -> np.ndarray:
        if self.n_trees < 2:
            return np.full(self.per_tree_degree.shape[1:], np.nan)
        return self.per_tree_degree.std(axis=0, ddof=1) / np.sqrt(self.n_trees)


def categorical_codes(X) -> np.ndarray:
    """Integer codes of a table of categorical inputs; refuses anything else.

    Parameters
    ----------
    X : array-like of shape (n, p)
        Bool, integer, or float columns holding whole numbers, each with at most
        :data:`MAX_LEVELS` distinct values.

    Returns
    -------
    ndarray of shape (n, p), int64
        For each column, the rank of each value among the column's distinct values.

    Raises
    ------
    BadInputError
        For non-2-D, empty, non-numeric or non-finite input, a column with non-integer values,
        or a column with more than :data:`MAX_LEVELS` levels (a continuous variable).
    """
    X = np.asarray(X)
    if X.ndim != 2 or X.size == 0 or X.dtype.kind not in "biuf":
        raise BadInputError(
            "X must be a non-empty 2-D array (n, p) of categorical codes (bool or integer "
            f"values); got an array of dtype {X.dtype} and shape {X.shape}."
        )
    if X.dtype.kind == "f":
        if not np.all(np.isfinite(X)):
            raise BadInputError("X must hold finite categorical codes; got NaN or inf.")
        fractional = np.flatnonzero(np.any(X != np.round(X), axis=0))
        if fractional.size:
            j = int(fractional[0])
            value = X[X[:, j] != np.round(X[:, j]), j][0]
            raise BadInputError(
                "multiway trees need categorical inputs (whole-number codes, one child per "
                f"level); column {j} of X holds the non-integer value {value!r}. Discretise "
                "continuous variables first."
            )
    codes = np.empty(X.shape, dtype=np.int64)
    for j in range(X.shape[1]):
        levels, codes[:, j] = np.unique(X[:, j], return_inverse=True)
        if len(levels) > MAX_LEVELS:
            raise BadInputError(
                f"multiway trees need categorical inputs with at most {MAX_LEVELS} levels per "
                f"column (one child per level); column {j} of X has {len(levels)} distinct "
                "values, a continuous variable. Discretise it first."
            )
    return codes


class _Table:
    """The weighted rows, and a per-forest cache of each node's entropy and splits."""

    def __init__(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:
        self.X, self.y, self.w = X, y, w
        self.n_classes = int(y.max()) + 1
        self.nodes: dict[bytes, tuple[float, float]] = {}
        self.splits: dict[tuple[bytes, int], tuple[float, list[np.ndarray]]] = {}

    def node(self, rows: np.ndarray) -> tuple[float, float]:
        """Weight of the rows and entropy of Y among them (bits)."""
        key = rows.tobytes()
        if key not in self.nodes:
            counts = np.bincount(self.y[rows], weights=self.w[rows], minlength=self.n_classes)
            total = counts.sum()
            share = counts[counts > 0] / total
            self.nodes[key] = (float(total), float(-(share * np.log2(share)).sum()))
        return self.nodes[key]

    def split(self, rows: np.ndarray, j: int) -> tuple[float, list[np.ndarray]]:
        """``Delta i`` of the multiway split of the rows on column j, and the children."""
        key = (rows.tobytes(), j)
        if key not in self.splits:
            weight, impurity = self.node(rows)
            values = self.X[rows, j]
            children = [rows[values == level] for level in np.unique(values)]
            after = sum(self.node(child)[0] * self.node(child)[1] for child in children)
            self.splits[key] = (impurity - after / weight, children)
        return self.splits[key]


def grow_multiway_forest(
    X,
    y,
    sample_weight=None,
    *,
    max_features: int | None = 1,
    n_trees: int = 100,
    random_state: int | None = None,
) -> MultiwayForestMDI:
    """Grow ``n_trees`` fully developed paper-rule trees and return their per-tree MDI.

    See the module docstring for the rule (Louppe et al. 2013, seed 000). The trees are grown
    on all rows (no bootstrap), as the paper's asymptotic analysis assumes.

    Parameters
    ----------
    X : array-like of shape (n, p)
        Categorical inputs (see :func:`categorical_codes`).
    y : array-like of shape (n,)
        Class labels.
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights (probabilities of a population's support rows); ``None``
        gives every row weight 1. Normalised so that ``p(root) = 1``.
    max_features : int or None, default=1
        K, the number of variables drawn at each node among the unused ones; ``None`` means p.
    n_trees : int, default=100
    random_state : int or None
        Seed of the tree construction.

    Returns
    -------
    MultiwayForestMDI

    Raises
    ------
    BadInputError
        For inputs that are not categorical, labels or weights that do not match X.
    InvalidParameterError
        For ``max_features``, ``n_trees`` or ``random_state`` outside their allowed values.
    """
    params = validate_params(
        "grow_multiway_forest",
        _PARAMS,
        {"max_features": max_features, "n_trees": n_trees, "random_state": random_state},
    )
    codes = categorical_codes(X)
    n, p = codes.shape
    y = np.asarray(y)
    if y.shape != (n,):
        raise BadInputError(f"y must be a 1-D array of {n} class labels; got shape {y.shape}.")
    try:
        y_codes = np.unique(y, return_inverse=True)[1].ravel().astype(np.int64)
    except TypeError as exc:
        raise BadInputError(f"y must hold sortable class labels; got {exc}.") from None
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if w.shape != (n,) or not np.all(np.isfinite(w) & (w >= 0)) or w.sum() <= 0:
        raise BadInputError(
            f"sample_weight must be None or {n} finite non-negative numbers with a positive "
            f"sum; got shape {w.shape}."
        )
    k = p if params["max_features"] is None else params["max_features"]
    if k > p:
        raise BadInputError(
            f"max_features must be at most the number of columns of X ({p}); got {k}."
        )
    keep = np.flatnonzero(w > 0)
    table = _Table(codes, y_codes, w / w.sum())
    rng = random.Random(params["random_state"])
    per_tree = np.zeros((params["n_trees"], p))
    per_degree = np.zeros((params["n_trees"], p, p))
    for tree in range(params["n_trees"]):
        _grow_tree(table, keep, k, rng, per_degree[tree])
        per_tree[tree] = per_degree[tree].sum(axis=1)
    return MultiwayForestMDI(per_tree, per_degree)


def _grow_tree(table: _Table, root: np.ndarray, k: int, rng: random.Random,
               out: np.ndarray) -> None:
    """Grow one tree from ``root`` rows, adding ``p(t) Delta i(t)`` to ``out[v(t), depth]``."""
    p = table.X.shape[1]
    stack = [(root, 0)]
    while stack:
        rows, used = stack.pop()
        weight, impurity = table.node(rows)
        if impurity <= 0.0:
            continue  # pure
        pool = [j for j in range(p) if not used >> j & 1]
        values = table.X[rows]
        if not pool or not np.any(values[:, pool].max(axis=0) > values[:, pool].min(axis=0)):
            continue  # every further split would be a no-op of zero decrease
        drawn = rng.sample(pool, min(k, len(pool)))
        gains = [table.split(rows, j)[0] for j in drawn]
        best = max(gains)
        tied = [j for j, gain in zip(drawn, gains) if gain >= best - TIE_TOLERANCE]
        j = tied[0] if len(tied) == 1 else rng.choice(tied)
        gain, children = table.split(rows, j)
        out[j, bin(used).count("1")] += weight * gain
        stack.extend((child, used | 1 << j) for child in children)
