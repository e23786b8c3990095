"""Breiman-Cutler MDA: tree-level out-of-bag permutation importance."""

from __future__ import annotations

import numpy as np

from harness.core.method import ExplainData
from harness.core.types import Importances, standard_error_of_mean
from harness.estimators.oob import LOSS_PARAM, OOBMethod


class MDABreimanCutler(OOBMethod):
    """MDA_BC(j) = 1/M Σ_t (e_tj − e_t) (Breiman 2001; Louppe's thesis, Eq. mda).

    e_t is the loss of tree t on its out-of-bag rows O_t and e_tj the same after permuting
    column j within O_t (one permutation per tree and feature, from the keyed source shared
    with ``mda_ik``). Trees that never split on j contribute exactly 0 and still count in
    1/M; only rows whose path meets j are re-routed. For independent inputs and squared
    error, MDA_BC → 2 V[Y] ST_j (Bénard, Da Veiga, Scornet 2022, Prop. 1; the ``mda_bc_limit``
    truth gives the general limit E[(m(X) − m(X_πj))²] where known). ``std`` is the standard
    error of the mean over trees.

    Complexity: O(T n_oob D (1 + F_D)) for T trees of depth D, n_oob ≈ 0.37 n out-of-bag rows
    per tree and F_D ≤ D features on a path: each OOB row's path is walked once per tree and
    re-routed, for each feature on it, from its first split on that feature
    (:mod:`harness.kernels.reroute.permutation`); features a tree never splits on cost
    nothing, so the walks do not grow with p. Plus O(n p) for coding the rows and checking
    them against the training rows, below the walks up to p = 10⁴ at n = 1000, T = 100,
    D = 8: stated (0, 1) on p, the slope of such a sum lying between its terms' orders.
    """

    name = "mda_bc"
    scope = "global"
    family = "mda"
    summary = "Breiman-Cutler MDA: per-tree OOB permutation importance"
    complexity = {"n": 1, "p": (0, 1), "trees": 1, "depth": None}
    # the limit E[L(Y, m(X_pij))] - E[L(Y, m(X))] of the Bayes model m is >= 0 for each loss
    # offered (2 V[Y] ST_j for squared error and independent inputs)
    value_range = (0.0, None)
    parameters = {"loss": LOSS_PARAM}

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        inputs = self.oob_inputs(model, data)
        loss = self.forest_loss(model, data.task)
        increase = self.permutation_pass(inputs, loss, rng, ensemble=False).tree_increase
        grown = inputs.inbag.oob.any(axis=0)  # a tree without OOB row cannot be scored
        increase = increase[grown]
        std = standard_error_of_mean(increase)
        return Importances(
            values=increase.mean(axis=0), scope="global", feature_names=data.feature_names,
            unit=loss.unit, explains=f"increase of the trees' OOB {loss.name}", std=std,
            extra={"std_of": "mean over trees", "n_trees_scored": int(grown.sum())},
        )
