"""Ishwaran-Kogalur MDA: ensemble-level out-of-bag permutation importance."""

from __future__ import annotations

import numpy as np

from harness.core.method import ExplainData
from harness.core.types import Importances
from harness.estimators.oob import LOSS_PARAM, OOBMethod
from harness.forest.losses import oob_increase_summary


class MDAIshwaranKogalur(OOBMethod):
    """MDA_IK(j) = 1/|I| Σ_{i∈I} [L(Y_i, m^OOB_πj(X_i)) − L(Y_i, m^OOB(X_i))].

    Ishwaran and Kogalur (randomForestSRC), as written in Bénard, Da Veiga, Scornet 2022:
    the same per-tree permutations as ``mda_bc`` (keyed by tree and feature), but each row's
    permuted outputs are averaged over its out-of-bag trees before the loss. I holds the rows
    with at least one out-of-bag tree. For independent inputs and squared error, MDA_IK →
    V[Y] ST_j as M → ∞ (Prop. 1 (iii); the ``mda_ik_limit`` truth in general). ``std`` is the
    standard error of the mean over the rows of I.

    Complexity: as ``mda_bc``, O(T n_oob D (1 + F_D)) re-routing (the forest's OOB output is
    read from the leaves that walk reaches), plus O(n p) for the (p, n) output shifts and the
    per-(row, feature) OOB losses (``oob_increase_summary``), which dominates the growth in p from
    p ≈ 10³ on (at n = 1000, T = 100, D = 8): stated (0, 1) on p, the walks' order and the
    output's.
    """

    name = "mda_ik"
    scope = "global"
    family = "mda"
    summary = "Ishwaran-Kogalur MDA: OOB ensemble permutation importance"
    complexity = {"n": 1, "p": (0, 1), "trees": 1, "depth": None}
    parameters = {"loss": LOSS_PARAM}

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        inputs = self.oob_inputs(model, data)
        loss = self.forest_loss(model, data.task)
        walk = self.permutation_pass(inputs, loss, rng, ensemble=True)
        mean, std, n_rows = oob_increase_summary(loss.code, inputs.targets, walk.oob_prediction,
                                                 walk.shift, walk.n_oob, True)
        return Importances(
            values=mean, scope="global", feature_names=data.feature_names,
            unit=loss.unit, explains=f"increase of the forest's OOB {loss.name}", std=std,
            extra={"std_of": "mean over rows", "n_rows_scored": int(n_rows)},
        )
