"""Local MDI (Sutera et al. 2021, Definition 1, Eq. 8)."""

from __future__ import annotations

import numpy as np

from harness.forest import apply_leaves, flatten_forest, impurity_unit, path_accumulate
from harness.method import ExplainData, Method
from harness.types import Importances


class LocalMDI(Method):
    """Local MDI: Imp(X_m, x) = 1/N_T Σ_T Σ_{t ∋ x, v(t) = X_m} [i(t) - i(t_x)].

    Sutera et al. 2021, Definition 1 (Eq. 8): the impurity drops met along the path of ``x``,
    credited to the feature split on. Class-agnostic (one vector per sample). Identities:
    Σ_m Imp(X_m, x) = mean_T [i(root) - i(leaf_T(x))], and the mean over the training rows is
    the global MDI (Eq. 9; with bootstrap, the in-bag-count-weighted mean per tree).
    Cost: one ``apply`` plus a gather per tree.
    """

    name = "local_mdi"
    scope = "local"
    family = "mdi"
    summary = "local MDI (Sutera et al. 2021, Eq. 8), impurity units per sample"
    parameters = {}

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        trees = flatten_forest(model)
        p = model.n_features_in_
        leaves = apply_leaves(model, data.X)
        total = np.zeros((data.X.shape[0], p))
        for t, tree in enumerate(trees):
            total += path_accumulate(tree, tree.impurity, p, sign=-1.0)[leaves[:, t]]
        return Importances(
            values=total / len(trees), scope="local", feature_names=data.feature_names,
            unit=impurity_unit(model), explains="impurity",
        )
