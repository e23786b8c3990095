"""In-bag bookkeeping: which training rows each tree saw, and how many times.

``inbag_of(model)`` returns the count matrix c[i, t] (times row i was drawn for tree t); it is
computed once per fitted forest and kept beside it (:mod:`harness.forest.view`), so every
out-of-bag method of a run shares it. The counts come from scikit-learn's public
``estimators_samples_`` (the bootstrap indices regenerated from each tree's seed, weighted
draws included), and ``check_training_rows``
proves on the caller's rows that they are the rows the forest was fitted on: it rebuilds the
leaf values of a tree from the in-bag rows and their counts (a tree fitted with counts as
weights stores the count-weighted mean of y, or of the one-hot classes, in each leaf).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.core.errors import BadInputError
from harness.forest.packed import PackedForest, apply_packed, apply_tree, pack_forest
from harness.forest.view import cached_form


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


def _training_size(model) -> int:
    size = getattr(model, "_n_samples", None)  # set by BaseForest.fit
    if size is None:
        size = len(getattr(model, "harness_fit_", {}).get("train_index", ()))
    if not size:
        raise BadInputError(
            f"Cannot tell how many rows this {type(model).__name__} was fitted on; the OOB "
            "methods need a forest fitted by scikit-learn's fit()."
        )
    return int(size)


def inbag_of(model) -> InBag:
    """In-bag counts of ``model``, built once per fitted forest (kept by
    :func:`harness.forest.view.cached_form`, never on ``model``).

    Without bootstrap every tree sees every row once, so there is no out-of-bag row.
    """
    return cached_form(model, "inbag", lambda: _count_inbag(model))


def _count_inbag(model) -> InBag:
    n = _training_size(model)
    counts = np.empty((n, len(model.estimators_)), dtype=np.int32)
    if not getattr(model, "bootstrap", False):
        counts[:] = 1
    else:
        for t, drawn in enumerate(model.estimators_samples_):
            counts[:, t] = np.bincount(drawn, minlength=n)
    return InBag(counts)


def class_codes(model, y: np.ndarray) -> np.ndarray:
    """Targets of a classifier as indices into ``model.classes_`` (clear error otherwise)."""
    classes = np.asarray(model.classes_)
    codes = np.searchsorted(classes, y)
    codes = np.clip(codes, 0, len(classes) - 1)
    unknown = classes[codes] != y
    if np.any(unknown):
        raise BadInputError(
            f"y holds labels the forest was not fitted on: {np.unique(y[unknown])[:5].tolist()}"
            f"; expected labels among {classes.tolist()}."
        )
    return codes.astype(np.int64)


def target_matrix(forest: PackedForest, model, y: np.ndarray) -> np.ndarray:
    """y as the forest's output space: one-hot classes (n, C) or a column (n, 1) of floats."""
    if forest.classifier:
        codes = class_codes(model, np.asarray(y))
        onehot = np.zeros((codes.size, forest.n_values))
        onehot[np.arange(codes.size), codes] = 1.0
        return onehot
    return np.asarray(y, dtype=np.float64).reshape(-1, 1)


def check_training_rows(model, X: np.ndarray, y: np.ndarray, tree: int = 0) -> None:
    """Raise unless ``X, y`` are, in order, the rows ``model`` was fitted on.

    Checks the row count, then recomputes the leaf values of tree ``tree`` as count-weighted
    means of the in-bag targets and compares them with the stored ones. Skipped for forests
    with ``class_weight`` (their trees weight rows by more than the counts).
    """
    inbag = inbag_of(model)
    if X.shape[0] != inbag.n_samples:
        raise BadInputError(
            f"The OOB methods need the training rows the forest was fitted on, in order: it "
            f"was fitted on {inbag.n_samples} rows, got X with {X.shape[0]} rows."
        )
    if y is None:
        raise BadInputError("The OOB methods need the training targets y; got none.")
    if getattr(model, "class_weight", None) is not None:
        return
    forest = pack_forest(model)
    targets = target_matrix(forest, model, y)
    leaves = apply_tree(forest, X, tree)
    weights = inbag.counts[:, tree].astype(np.float64)
    reached = np.unique(leaves[weights > 0])
    totals = np.zeros((forest.offsets[tree + 1] - forest.offsets[tree], forest.n_values))
    np.add.at(totals, leaves, weights[:, None] * targets)
    mass = np.bincount(leaves, weights=weights, minlength=totals.shape[0])
    rebuilt = totals[reached] / mass[reached, None]
    stored = forest.value[forest.offsets[tree] + reached]
    scale = max(1.0, float(np.abs(stored).max(initial=0.0)))
    if not np.allclose(rebuilt, stored, rtol=1e-7, atol=1e-9 * scale):
        # X's column names were checked against the fit before any method ran; a plain
        # array with its columns in another order cannot be told from other rows here
        raise BadInputError(
            "X, y are not the rows this forest was fitted on (or not in the same order, or "
            f"X's columns are not in fit order): the leaf values of tree {tree} rebuilt from "
            "them and the in-bag counts differ from the stored ones. Pass the exact training "
            "rows, columns in fit order, to the OOB methods."
        )


def oob_predictions(model, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-bag forest output rebuilt from the in-bag counts.

    Returns ``(prediction, n_oob_trees)``: the mean over each row's out-of-bag trees of the
    tree outputs, shape (n, n_values) (class probabilities or the regression value), and how
    many trees that mean is over. Rows with no out-of-bag tree get NaN. For training rows this
    equals scikit-learn's ``oob_decision_function_`` / ``oob_prediction_``.
    """
    forest = pack_forest(model)
    inbag = inbag_of(model)
    leaves = apply_packed(forest, X)
    total = np.zeros((X.shape[0], forest.n_values))
    oob = inbag.oob
    for t in range(forest.n_trees):
        rows = np.flatnonzero(oob[:, t])
        total[rows] += forest.value[forest.offsets[t] + leaves[rows, t]]
    n_oob = oob.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        prediction = total / n_oob[:, None]
    return prediction, n_oob
