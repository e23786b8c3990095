"""In-bag bookkeeping: which training rows each tree saw, and how many times.

A forest view's ``inbag`` holds the count matrix c[i, t] (times row i was drawn for tree t);
it is read once per fitted forest by the model's adapter (:mod:`harness.forest.view`), so every
out-of-bag method of a run shares it. ``check_training_rows``
proves on the caller's rows that they are the rows the forest was fitted on: it rebuilds the
leaf values of a spread of trees (the first and the last among them) from the in-bag rows and
their counts (a tree fitted with counts as weights stores the count-weighted mean of y, or of
the one-hot classes, in each leaf; class weights multiply the counts where they apply).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.core.errors import BadInputError
from harness.forest.packed import apply_tree, packed_oob_output

if TYPE_CHECKING:
    from harness.forest.view import ForestView


@dataclass
class InBag:
    """In-bag counts of a fitted forest, shape (n_training_rows, n_trees)."""

    counts: np.ndarray

    @property
    def n_samples(self) -> int:
        return int(self.counts.shape[0])

    @property
    def n_trees(self) -> int:
        return int(self.counts.shape[1])

    @property
    def oob(self) -> np.ndarray:
        """Boolean (n, n_trees): row i is out of bag for tree t."""
        return self.counts == 0

    @property
    def n_oob_trees(self) -> np.ndarray:
        """Number of trees for which each row is out of bag, shape (n,)."""
        return self.oob.sum(axis=1)


def class_codes(classes: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Labels as indices into a classifier's ``classes`` (clear error otherwise)."""
    classes = np.asarray(classes)
    codes = np.searchsorted(classes, y)
    codes = np.clip(codes, 0, len(classes) - 1)
    unknown = classes[codes] != y
    if np.any(unknown):
        raise BadInputError(
            f"y holds labels the forest was not fitted on: {np.unique(y[unknown])[:5].tolist()}"
            f"; expected labels among {classes.tolist()}."
        )
    return codes.astype(np.int64)


def target_matrix(view: ForestView, y: np.ndarray) -> np.ndarray:
    """y as the forest's output space: one-hot classes (n, C) or a column (n, 1) of floats."""
    if view.classifier:
        codes = class_codes(view.classes, np.asarray(y))
        onehot = np.zeros((codes.size, len(view.classes)))
        onehot[np.arange(codes.size), codes] = 1.0
        return onehot
    return np.asarray(y, dtype=np.float64).reshape(-1, 1)


def target_variance(targets: np.ndarray, method: str) -> float:
    """Σ_k V(target_k), the sample variance (ddof=1) of the :func:`target_matrix` columns: the
    denominator of a share of Var(Y). Raises :class:`BadInputError` where it is 0 (y constant
    on the rows), since every share would then be 0/0."""
    variance = float(targets.var(axis=0, ddof=1).sum()) if len(targets) > 1 else 0.0
    if not variance > 0:
        raise BadInputError(
            f"{method} divides by the variance of y on the rows it is given: it is {variance} "
            "here (y is constant), so the share of it that a feature explains is undefined.")
    return variance


TREES_CHECKED = 8


def checked_trees(n_trees: int, most: int = TREES_CHECKED) -> np.ndarray:
    """The trees :func:`check_training_rows` rebuilds: the first, the last and evenly spaced
    ones between, ``most`` in all (every tree of a smaller forest). The last one catches a
    ``warm_start`` forest whose later trees were fitted on other rows of the same size."""
    return np.unique(np.linspace(0, n_trees - 1, min(most, n_trees)).round().astype(np.int64))


def check_training_rows(view: ForestView, X: np.ndarray, y: np.ndarray,
                        trees: np.ndarray | None = None,
                        rows: np.ndarray | None = None) -> None:
    """Raise unless ``X, y`` are, in order, the rows the model of ``view`` was fitted on.

    Checks the row count, then recomputes the leaf values of each of ``trees`` (default
    :func:`checked_trees`) as count-weighted means of the in-bag targets and compares them
    with the stored ones, under each weighting :func:`fit_weightings` allows for the
    model's ``class_weight``. Rows are routed as the model routes them (NaN included, by each
    node's missing-value direction), so a NaN in X matches the NaN the model was fitted on:
    the check compares leaf values, never X itself. ``rows``: X as ``view.rows`` codes it,
    where the caller has it already.
    """
    inbag = view.inbag
    if X.shape[0] != inbag.n_samples:
        raise BadInputError(
            f"The OOB methods need the training rows the forest was fitted on, in order: it "
            f"was fitted on {inbag.n_samples} rows, got X with {X.shape[0]} rows."
        )
    if y is None:
        raise BadInputError("The OOB methods need the training targets y; got none.")
    forest = view.packed
    targets = target_matrix(view, y)
    rows = view.rows(X) if rows is None else rows
    weightings = fit_weightings(y, view.class_weight)
    for tree in checked_trees(inbag.n_trees) if trees is None else trees:
        leaves = apply_tree(forest, rows, int(tree))
        if not any(_leaf_values_match(forest, leaves, targets, weights, int(tree))
                   for weights in weightings(inbag.counts[:, tree])):
            # X's column names were checked against the fit before any method ran; a plain
            # array with its columns in another order cannot be told from other rows here
            raise BadInputError(
                "X, y are not the rows this forest was fitted on (or not in the same order, "
                f"or X's columns are not in fit order): the leaf values of tree {tree} of "
                f"{inbag.n_trees} rebuilt from them and the in-bag counts differ from the "
                "stored ones (a warm_start forest grown further on other rows has trees "
                "fitted on each). Pass the exact training rows, columns in fit order, to the "
                "OOB methods."
            )


def fit_weightings(y: np.ndarray,
                   class_weight: Any) -> Callable[[np.ndarray], list[np.ndarray]]:
    """The row weights a bagged tree with given in-bag counts may have been grown with, as a
    function of the counts (what depends on ``y`` alone is computed once).

    Without ``class_weight``, the counts. With ``"balanced_subsample"``, the counts times the
    classes' balanced weights in the drawn sample. With ``"balanced"`` or a dict, either the
    counts (scikit-learn >= 1.9 draws the bootstrap with the class weights, so they are in
    the counts already) or the counts times the class weights of ``y`` (earlier releases).
    """
    if class_weight is None:
        return lambda counts: [counts.astype(np.float64)]
    from sklearn.utils.class_weight import compute_sample_weight

    if isinstance(class_weight, str) and class_weight == "balanced_subsample":
        def subsample(counts: np.ndarray) -> list[np.ndarray]:
            drawn = np.repeat(np.arange(len(counts)), counts)
            return [counts * compute_sample_weight("balanced", y, indices=drawn)]
        return subsample
    by_class = compute_sample_weight(class_weight, y)
    return lambda counts: [counts.astype(np.float64), counts * by_class]


def _leaf_values_match(forest, leaves: np.ndarray, targets: np.ndarray, weights: np.ndarray,
                       tree: int) -> bool:
    """Whether tree ``tree``'s stored leaf values are the ``weights``-weighted means of
    ``targets`` over the rows in each leaf (``leaves``: each row's, as the tree routes it)."""
    reached = np.unique(leaves[weights > 0])
    totals = np.zeros((forest.offsets[tree + 1] - forest.offsets[tree], forest.n_values))
    np.add.at(totals, leaves, weights[:, None] * targets)
    mass = np.bincount(leaves, weights=weights, minlength=totals.shape[0])
    rebuilt = totals[reached] / mass[reached, None]
    stored = forest.value[forest.offsets[tree] + reached]
    scale = max(1.0, float(np.abs(stored).max(initial=0.0)))
    return bool(np.allclose(rebuilt, stored, rtol=1e-7, atol=1e-9 * scale))


def oob_predictions(view: ForestView, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-bag forest output rebuilt from the in-bag counts.

    Returns ``(prediction, n_oob_trees)``: the mean over each row's out-of-bag trees of the
    tree outputs, shape (n, n_values) (class probabilities or the regression value), and how
    many trees that mean is over. Rows with no out-of-bag tree get NaN. For training rows this
    equals scikit-learn's ``oob_decision_function_`` / ``oob_prediction_``.
    """
    # one compiled pass, parallel over rows, each row's OOB trees summed in order
    total, n_oob = packed_oob_output(view.packed, view.rows(X), view.inbag.counts)
    return oob_mean(total, n_oob), n_oob


def oob_mean(total: np.ndarray, n_oob: np.ndarray) -> np.ndarray:
    """``total`` (n, n_values), each row's sum over its ``n_oob`` out-of-bag trees, as the
    mean over those trees; NaN for a row that no tree left out."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / n_oob[:, None]
