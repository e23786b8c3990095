"""The scikit-learn adapter: how a fitted RandomForest/ExtraTrees or a single decision tree
stores its trees.

This is the one module that reads scikit-learn's tree arrays (``estimator.tree_``), its
bootstrap draws (``estimators_samples_``) and its criterion names; everything else sees the
model through :class:`harness.forest.view.ForestView`. A single ``DecisionTreeClassifier`` /
``DecisionTreeRegressor`` is read as a forest of one tree grown on every training row, which is
what it is (a one-tree forest with ``bootstrap=False`` and ``max_features=None`` grows the same
tree), so every kernel explains it unchanged; it has no out-of-bag rows. Another tree library
is added by writing one more adapter like :class:`SklearnForestAdapter` and listing it in
:data:`harness.forest.view.ADAPTERS`.

Missing values: scikit-learn >= 1.3 stores per node ``tree_.missing_go_to_left`` and routes a
NaN left exactly where it is set (``Tree._apply_dense``: a NaN goes to the left child if
``missing_go_to_left``, else to the right one; the other values by ``x <= threshold``); it is
read into :attr:`FlatTree.missing_left`. Whether ``predict`` accepts NaN at all depends on the
version, the splitter, the criterion and ``monotonic_cst`` (DecisionTree since 1.3,
RandomForest since 1.4, ExtraTrees since 1.6; in 1.9 also trees fitted without NaN, which then
send it to the child that saw more samples), so the adapter asks the model's own input check
(:func:`predict_accepts_nan`) rather than keeping a table of versions.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from harness.core.errors import BadInputError
from harness.forest.flat import FlatTree, as_float32_rows

FOREST_TYPES = (
    RandomForestClassifier,
    RandomForestRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
)
TREE_TYPES = (DecisionTreeClassifier, DecisionTreeRegressor)


def fitted_trees(model) -> list:
    """The fitted trees of a forest, or the tree itself (a forest of one)."""
    return [model] if isinstance(model, TREE_TYPES) else list(model.estimators_)


def flatten_tree(estimator, classifier: bool, n_classes: tuple[int, ...] = ()) -> FlatTree:
    """Copy the arrays of one fitted scikit-learn tree into a :class:`FlatTree`.

    A regressor's ``tree_.value`` is (n_nodes, n_outputs, 1): the node mean of each output,
    which becomes one value column per output (one column for a single-output regressor).
    A classifier's is (n_nodes, n_outputs, max_n_classes), class weights or fractions: output
    j's first ``n_classes[j]`` entries (the rest are padding), normalised to the class
    probabilities of that output, become its block of value columns, the blocks side by side
    in output order (one block for a single-output classifier).
    """
    tree = estimator.tree_
    if classifier:
        widths = n_classes or (tree.value.shape[2],)
        blocks = [np.asarray(tree.value[:, j, :width], dtype=float)
                  for j, width in enumerate(widths)]
        value = np.hstack([block / block.sum(axis=1, keepdims=True) for block in blocks])
    else:
        value = np.asarray(tree.value[:, :, 0], dtype=float)
    # scikit-learn < 1.3 has no missing-value routing (and its predict refuses NaN)
    missing = getattr(tree, "missing_go_to_left", None)
    return FlatTree(
        left=np.asarray(tree.children_left),
        right=np.asarray(tree.children_right),
        feature=np.asarray(tree.feature),
        threshold=np.asarray(tree.threshold),
        impurity=np.asarray(tree.impurity, dtype=float),
        weighted_n=np.asarray(tree.weighted_n_node_samples, dtype=float),
        value=value,
        max_depth=int(tree.max_depth),
        missing_left=None if missing is None else np.asarray(missing, dtype=bool),
    )


def quietly(call, X):
    """``call(X)`` without the warning of a model fitted on a DataFrame about plain arrays
    (the columns were checked already)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        return call(X)


def predict_output(model, X: np.ndarray) -> np.ndarray:
    """``predict_proba`` for classifiers, ``predict`` for regressors; a multi-output
    classifier's per-output probability arrays side by side, (n, sum of its class counts), in
    the order of the view's value columns (:func:`flatten_tree`)."""
    if not hasattr(model, "classes_"):
        return quietly(model.predict, X)
    proba = quietly(model.predict_proba, X)
    return np.hstack(proba) if isinstance(proba, list) else proba


def output_classes(model) -> tuple[np.ndarray, ...] | None:
    """Each output's classes of a multi-output classifier (``classes_`` is then a list), else
    None."""
    if hasattr(model, "classes_") and int(getattr(model, "n_outputs_", 1)) > 1:
        return tuple(np.asarray(classes) for classes in model.classes_)
    return None


#: From this version on, a scikit-learn tree routes a missing value at predict where fit sent
#: it. Measured with tests/kernels/test_missing_values.py: with 1.4, 1.5, 1.6 and 1.7, trees
#: fitted on rows with NaN send some of their own training rows to other leaves at predict
#: than fit did (local MDI off global MDI by up to 1e-2, the OOB leaf check failing); 1.8 and
#: 1.9 agree everywhere. Before it, rows with NaN are refused rather than explained wrongly.
MISSING_VALUES_SINCE = (1, 8)


def sklearn_routes_nan_as_fitted() -> bool:
    """Whether the installed scikit-learn routes NaN at predict as at fit."""
    import sklearn

    release = tuple(int(part) for part in re.findall(r"\d+", sklearn.__version__)[:2])
    return release >= MISSING_VALUES_SINCE


def predict_accepts_nan(model) -> bool:
    """Whether the model's own ``predict`` accepts NaN in X (and routes it as fit did: see
    :data:`MISSING_VALUES_SINCE`).

    A forest's ``predict`` checks its rows with its first tree's rule
    (``BaseForest._validate_X_predict`` calls ``estimators_[0]._support_missing_values``), a
    tree's with its own, so one tree's ``predict`` on one all-NaN row answers for the model:
    it raises ``ValueError`` ("Input X contains NaN") exactly when NaN is refused.
    """
    if not sklearn_routes_nan_as_fitted():
        return False
    tree = fitted_trees(model)[0]
    row = np.full((1, int(model.n_features_in_)), np.nan, dtype=np.float32)
    try:
        quietly(tree.predict, row)
    except ValueError:
        return False
    return getattr(tree.tree_, "missing_go_to_left", None) is not None


IMPURITY_UNITS = {
    "entropy": "bits",
    "log_loss": "bits",
    "gini": "gini",
    "squared_error": "variance",
    "friedman_mse": "variance",
    "absolute_error": "mean absolute deviation",
    "poisson": "half Poisson deviance",
}


def impurity_unit(model) -> str:
    """Unit of the forest's node impurities (scikit-learn's entropy is in bits).

    A multi-output regressor's node impurity is the mean over its outputs of each output's
    impurity (every regression criterion of scikit-learn's ``_criterion.pyx`` divides its sum
    over outputs by ``n_outputs`` in ``node_impurity``), and the unit says so.
    """
    unit = IMPURITY_UNITS.get(str(model.criterion), str(model.criterion))
    n_outputs = int(getattr(model, "n_outputs_", 1))
    return unit if n_outputs == 1 else f"{unit} (mean over {n_outputs} outputs)"


class SklearnForestAdapter:
    """Reads fitted scikit-learn RandomForest/ExtraTrees and DecisionTree classifiers and
    regressors, multi-output ones included (a regressor's outputs are its value columns; a
    multi-output classifier's value columns are each output's classes, output after output)."""

    library = "scikit-learn"
    package = "sklearn"
    description = "scikit-learn " + ", ".join(cls.__name__ for cls in FOREST_TYPES + TREE_TYPES)

    @classmethod
    def accepts(cls, model) -> bool:
        return isinstance(model, FOREST_TYPES + TREE_TYPES)

    @classmethod
    def check(cls, model) -> None:
        fitted = "tree_" if isinstance(model, TREE_TYPES) else "estimators_"
        if not hasattr(model, fitted):
            raise BadInputError(f"The {type(model).__name__} is not fitted; call fit() first.")

    @classmethod
    def describe(cls, model) -> dict:
        classifier = hasattr(model, "classes_")
        per_output = output_classes(model)
        return {
            "library": cls.library, "kind": type(model).__name__, "classifier": classifier,
            "n_features": int(model.n_features_in_), "n_trees": len(fitted_trees(model)),
            "classes": np.asarray(model.classes_) if classifier and per_output is None else None,
            "output_classes": per_output,
            "impurity_unit": impurity_unit(model),
            "n_outputs": int(getattr(model, "n_outputs_", 1)),
            "bootstrap": bool(getattr(model, "bootstrap", False)),
            "class_weight": getattr(model, "class_weight", None),
            "output_unit": "probability" if classifier else "prediction",
            "link": "identity",
            "capabilities": frozenset(
                {"node_impurity"} | ({"inbag"} if getattr(model, "bootstrap", False) else set())
            ),
            "routes_missing": predict_accepts_nan(model),
        }

    @classmethod
    def flat_trees(cls, model) -> list[FlatTree]:
        classifier = hasattr(model, "classes_")
        per_output = output_classes(model) or ()
        n_classes = tuple(len(classes) for classes in per_output)
        return [flatten_tree(est, classifier, n_classes) for est in fitted_trees(model)]

    @classmethod
    def inbag_counts(cls, model) -> np.ndarray:
        """From the public ``estimators_samples_`` (the bootstrap indices regenerated from each
        tree's seed, weighted draws included)."""
        n = getattr(model, "_n_samples", None)  # the training size, set by BaseForest.fit
        if not n:  # or recorded by harness.fit_model
            n = len(getattr(model, "harness_fit_", {}).get("train_index", ()))
        if not n:
            raise BadInputError(
                f"Cannot tell how many rows this {type(model).__name__} was fitted on; the OOB "
                "methods need a forest fitted by scikit-learn's fit()."
            )
        counts = np.empty((n, len(fitted_trees(model))), dtype=np.int32)
        if not getattr(model, "bootstrap", False):
            counts[:] = 1
        else:
            for t, drawn in enumerate(model.estimators_samples_):
                counts[:, t] = np.bincount(drawn, minlength=n)
        return counts

    @classmethod
    def trees_signature(cls, model) -> tuple:
        # each fit makes a new tree_, also where the model is its own only tree (a list
        # comprehension: 14 us on 500 trees, where a generator took 25)
        return tuple([tree.tree_ for tree in fitted_trees(model)])

    @classmethod
    def predict_output(cls, model, X: np.ndarray) -> np.ndarray:
        return predict_output(model, X)

    @classmethod
    def encode_rows(cls, model, X: np.ndarray) -> np.ndarray:
        """The float32 cast scikit-learn's trees route with (thresholds stay as stored; NaN
        stays NaN)."""
        return as_float32_rows(X)
