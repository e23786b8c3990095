"""One tree as flat node arrays: what every library's adapter produces.

Node ids are such that a node's children have larger ids than the node itself (scikit-learn's
order; other adapters renumber to it), which lets a root-path sum be accumulated level by
level. :func:`tree_mdi` and :func:`path_accumulate` are the NumPy reference forms of the tree
quantities that the compiled kernels compute.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.core.errors import BadInputError


def as_float32_rows(X: np.ndarray) -> np.ndarray:
    """Rows as C-contiguous float32, the precision scikit-learn routes with.

    A finite value beyond float32's range is refused, as scikit-learn's predict refuses it:
    cast, it would become infinite and be routed as the largest value.
    """
    with np.errstate(over="raise"):
        try:
            return np.ascontiguousarray(X, dtype=np.float32)
        except FloatingPointError:
            pass
    values = np.asarray(X, dtype=float)
    rows, columns = np.nonzero(np.abs(values) > np.finfo(np.float32).max)
    raise BadInputError(
        f"X must hold values within float32's range (|x| <= 3.4e38), in which scikit-learn's "
        f"trees route rows and its predict refuses the others; got {rows.size} cell"
        f"{'s' * (rows.size > 1)} beyond it (the first: {values[rows[0], columns[0]]:g} in row "
        f"{rows[0]}, column {columns[0]}).")


@dataclass
class FlatTree:
    """One fitted tree as contiguous arrays (leaves have ``left == -1``).

    ``value`` is (n_nodes, n_values): class probabilities for classifiers (rows sum to one,
    whatever scikit-learn version stored counts or fractions), the node mean for regressors
    (one column per output of a multi-output regressor); for a boosted model, the tree's
    share of the margin in the view's convention (the model's output is the *mean* over trees
    of their values; see :class:`harness.forest.view.ForestView`).

    Routing (every kernel, every library): a row goes left at node t when
    ``x[feature[t]] <= threshold[t]`` or when ``x[feature[t]]`` is NaN and
    ``missing_left[t]``; ``x`` is the row as coded by the view (:meth:`ForestView.rows`), and
    ``threshold`` is in that coding. ``missing_left`` is None when NaN goes right everywhere.
    """

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    impurity: np.ndarray
    weighted_n: np.ndarray
    value: np.ndarray
    max_depth: int
    missing_left: np.ndarray | None = None

    @property
    def n_nodes(self) -> int:
        return int(self.left.shape[0])

    @property
    def internal(self) -> np.ndarray:
        return np.flatnonzero(self.left >= 0)


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


def leaf_index(tree: FlatTree, X: np.ndarray) -> np.ndarray:
    """Leaf reached by every coded row (NumPy reference of the routing rule in
    :class:`FlatTree`, NaN included), shape (n,)."""
    X = np.asarray(X)
    node = np.zeros(X.shape[0], dtype=np.int64)
    missing = (np.zeros(tree.n_nodes, dtype=bool) if tree.missing_left is None
               else np.asarray(tree.missing_left, dtype=bool))
    active = tree.left[node] >= 0
    while active.any():
        rows = np.flatnonzero(active)
        at = node[rows]
        x = X[rows, tree.feature[at]]
        go_left = (x <= tree.threshold[at]) | (np.isnan(x) & missing[at])
        node[rows] = np.where(go_left, tree.left[at], tree.right[at])
        active[rows] = tree.left[node[rows]] >= 0
    return node
