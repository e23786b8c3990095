"""Global Mean Decrease of Impurity (Louppe et al. 2013, Eq. 1)."""

from __future__ import annotations

import numpy as np

from harness.core.method import ExplainData, Method
from harness.core.params import Boolean, Param
from harness.core.types import Importances, standard_error_of_mean
from harness.forest.flat import tree_mdi
from harness.forest.view import forest_view


class MDI(Method):
    """Global MDI: Imp(X_j) = 1/M Σ_trees Σ_{t: v(t)=j} p(t) Δi(t).

    Louppe et al. 2013, Eq. 1, with p(t) the weighted fraction of the tree's training samples
    reaching t. Reported in impurity units (bits for entropy) and unnormalised, so that Thm 1
    (and Σ_j Imp(X_j) = I(X; Y), Thm 2) can be checked. ``normalize=True`` gives
    scikit-learn's ``feature_importances_`` instead (each tree normalised to sum 1, single-node
    trees dropped, the mean renormalised). ``std`` is the standard error of the mean over trees.
    Boosting libraries store no node impurity: their adapters fill pseudo-impurities whose
    decreases are the split gains, so MDI is then the mean over trees of each feature's summed
    gains (``unit`` the view's ``impurity_unit``, ``explains`` "split gain").

    Complexity: O(T (N_t + p)) for T trees of N_t nodes (one vectorised pass over each
    tree's internal nodes, Louppe et al. 2013, Eq. 1, and a count of length p per tree); no
    row is read (n^0). Per tree it is a sum over nodes, N_t ~ 2^D for depth D (no power of D);
    in p, stated (0, 1): the nodes' pass, then the count of length p.
    """

    name = "mdi"
    scope = "global"
    family = "mdi"
    multi_output = True  # of the multi-output impurity the trees were grown with
    weighted_rows = "irrelevant"  # read from the model alone (its fit weighted the rows)
    summary = "global MDI (Louppe et al. 2013, Eq. 1), impurity units"
    complexity = {"n": 0, "p": (0, 1), "trees": 1, "depth": None}
    # a sum of weighted impurity decreases, each >= 0 (also in the normalised form)
    value_range = (0.0, None)
    parameters = {
        "normalize": Param(False, (Boolean(),), "scikit-learn's feature_importances_ form"),
    }

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        view = forest_view(model)
        trees, p = view.trees, view.n_features
        per_tree = np.array([tree_mdi(tree, p) for tree in trees])
        unit = view.impurity_unit
        if self.params["normalize"]:
            grown = np.array([tree.n_nodes > 1 for tree in trees])
            per_tree = per_tree[grown]
            if per_tree.size == 0:
                per_tree = np.zeros((1, p))
            per_tree = per_tree / np.where(per_tree.sum(1, keepdims=True) > 0,
                                           per_tree.sum(1, keepdims=True), 1.0)
            total = per_tree.mean(axis=0).sum()
            per_tree = per_tree / (total if total > 0 else 1.0)
            unit = "fraction of total MDI"
        values = per_tree.mean(axis=0)
        std = standard_error_of_mean(per_tree)
        return Importances(
            values=values, scope="global", feature_names=data.feature_names, unit=unit,
            explains="impurity" if "node_impurity" in view.capabilities else "split gain",
            std=std,
        )
