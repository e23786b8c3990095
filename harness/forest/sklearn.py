"""Shared tree kernels: a forest flattened once into arrays, and path accumulations.

scikit-learn stores each tree as parallel arrays in which a node's children always have larger
ids than the node itself. The functions here use that order to accumulate, for every node, the
sum over the edges of its root path of a per-edge quantity credited to the feature split on at
the parent. Evaluating a decomposition at ``x`` is then a gather at the leaf that ``x`` reaches
(one ``apply``), which is what makes local MDI and Saabas cost about one ``predict``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

from harness.core.errors import BadInputError

FOREST_TYPES = (
    RandomForestClassifier,
    RandomForestRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
)


@dataclass
class FlatTree:
    """One fitted tree as contiguous arrays (leaves have ``left == -1``).

    ``value`` is (n_nodes, n_values): class probabilities for classifiers (rows sum to one,
    whatever scikit-learn version stored counts or fractions), the node mean for regressors.
    """

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    impurity: np.ndarray
    weighted_n: np.ndarray
    value: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.left.shape[0])

    @property
    def internal(self) -> np.ndarray:
        return np.flatnonzero(self.left >= 0)


def is_classifier(model) -> bool:
    return hasattr(model, "classes_")


def check_forest(model) -> None:
    """Raise a clear error unless ``model`` is a fitted single-output RF/ExtraTrees forest."""
    if not isinstance(model, FOREST_TYPES):
        allowed = ", ".join(cls.__name__ for cls in FOREST_TYPES)
        raise BadInputError(
            f"Expected a fitted scikit-learn forest ({allowed}); got {type(model).__name__}."
        )
    if not hasattr(model, "estimators_"):
        raise BadInputError(f"The {type(model).__name__} is not fitted; call fit() first.")
    if getattr(model, "n_outputs_", 1) != 1:
        raise BadInputError(
            f"Only single-output forests are supported; got n_outputs_={model.n_outputs_}."
        )


def flatten_tree(estimator, classifier: bool) -> FlatTree:
    """Copy the arrays of one fitted scikit-learn tree into a :class:`FlatTree`."""
    tree = estimator.tree_
    if classifier:
        value = np.asarray(tree.value[:, 0, :], dtype=float)
        value = value / value.sum(axis=1, keepdims=True)
    else:
        value = np.asarray(tree.value[:, 0, :1], dtype=float)
    return FlatTree(
        left=np.asarray(tree.children_left),
        right=np.asarray(tree.children_right),
        feature=np.asarray(tree.feature),
        threshold=np.asarray(tree.threshold),
        impurity=np.asarray(tree.impurity, dtype=float),
        weighted_n=np.asarray(tree.weighted_n_node_samples, dtype=float),
        value=value,
    )


def flatten_forest(model) -> list[FlatTree]:
    """All trees of a fitted forest, flattened (checked with :func:`check_forest`)."""
    check_forest(model)
    classifier = is_classifier(model)
    return [flatten_tree(est, classifier) for est in model.estimators_]


def tree_mdi(tree: FlatTree, n_features: int) -> np.ndarray:
    """Unnormalised MDI of one tree: sum over its nodes split on j of p(t) Δi(t).

    Louppe et al. 2013, Eq. 1 (one tree): p(t) is the weighted fraction of the tree's training
    samples that reach t, Δi(t) = i(t) - p_L i(t_L) - p_R i(t_R).
    """
    nodes = tree.internal
    w, imp = tree.weighted_n, tree.impurity
    decrease = (
        w[nodes] * imp[nodes]
        - w[tree.left[nodes]] * imp[tree.left[nodes]]
        - w[tree.right[nodes]] * imp[tree.right[nodes]]
    )
    return np.bincount(tree.feature[nodes], weights=decrease, minlength=n_features) / w[0]


def path_accumulate(tree: FlatTree, node_quantity: np.ndarray, n_features: int,
                    sign: float) -> np.ndarray:
    """Per node, the root-path sum of edge terms, credited to the parent's split feature.

    For every edge (t -> child) the term is ``sign * (q[child] - q[t])`` added to feature
    ``v(t)``. With ``q = impurity`` and ``sign = -1`` this gives local MDI (Sutera et al. 2021,
    Eq. 8: i(t) - i(t_x)); with ``q = value`` and ``sign = +1`` the Saabas contributions.

    Parameters
    ----------
    tree : FlatTree
    node_quantity : ndarray of shape (n_nodes,) or (n_nodes, k)
    n_features : int
    sign : float

    Returns
    -------
    ndarray of shape (n_nodes, n_features) or (n_nodes, n_features, k)
    """
    q = np.asarray(node_quantity, dtype=float)
    cum = np.zeros((tree.n_nodes, n_features) + q.shape[1:])
    frontier = np.array([0])
    while frontier.size:
        parents = frontier[tree.left[frontier] >= 0]
        if parents.size == 0:
            break
        split_on = tree.feature[parents]
        for children in (tree.left[parents], tree.right[parents]):
            cum[children] = cum[parents]
            cum[children, split_on] += sign * (q[children] - q[parents])
        frontier = np.concatenate((tree.left[parents], tree.right[parents]))
    return cum


def _quietly(call, X):
    # a forest fitted on a DataFrame warns about plain arrays; the columns were checked already
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        return call(X)


def apply_leaves(model, X: np.ndarray) -> np.ndarray:
    """Leaf id reached by every row in every tree, shape (n, n_trees) (scikit-learn routing)."""
    return _quietly(model.apply, np.asarray(X, dtype=np.float32))


def predict_output(model, X: np.ndarray) -> np.ndarray:
    """``predict_proba`` for classifiers, ``predict`` for regressors."""
    return _quietly(model.predict_proba if is_classifier(model) else model.predict, X)


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
    """Unit of the forest's node impurities (scikit-learn's entropy is in bits)."""
    return IMPURITY_UNITS.get(str(model.criterion), str(model.criterion))


def leaf_values(trees: list[FlatTree], leaves: np.ndarray) -> np.ndarray:
    """Forest prediction rebuilt from leaf values: mean over trees, shape (n, n_values)."""
    total = np.zeros((leaves.shape[0], trees[0].value.shape[1]))
    for t, tree in enumerate(trees):
        total += tree.value[leaves[:, t]]
    return total / len(trees)
