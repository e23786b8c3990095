"""Sobol-MDA: projected out-of-bag forests (Bénard, Da Veiga, Scornet, Biometrika 2022)."""

from __future__ import annotations

import numpy as np

from harness.core.method import ExplainData
from harness.core.types import Importances
from harness.estimators.oob import OOBMethod
from harness.forest.inbag import oob_predictions, target_matrix, target_variance
from harness.forest.losses import BRIER, SQUARED_ERROR, oob_increase_summary
from harness.kernels.reroute.projection import projected_oob_shift


class SobolMDA(OOBMethod):
    """S-MDA(j) = [1/|I| Σ_i (Y_i − m^OOB_{−j}(X_i))² − 1/|I| Σ_i (Y_i − m^OOB(X_i))²] / σ²_Y.

    Bénard, Da Veiga, Scornet 2022 (Biometrika), Sec. 3: m^OOB_{−j} averages, over each row's
    out-of-bag trees, the tree projected along j (its splits on j ignored; the projected
    cell's value is the in-bag-count-weighted mean of the in-bag targets sharing it, see
    :mod:`harness.kernels.reroute.projection`). It converges to the total Sobol index
    ST_j = E[V(m(X) | X_{−j})] / V[Y], also for dependent inputs (Thm 1).

    The projected cells and their fallback are those of the reference C++ (ranger
    ``sobol-mda`` fork). One deviation: both means run over I, the rows with at least one
    out-of-bag tree (the reference divides by n, leaving rows without an OOB tree at 0/0, and
    subtracts ranger's OOB error). σ²_Y is the sample variance (ddof=1) of all training
    targets, as in the reference.

    Classification (our extension; no reference exists): the class-probability vectors are
    projected (cell value = count-weighted class frequencies) and the loss is the Brier score
    Σ_k (1[Y=k] − p_k)²; the estimate targets Σ_k E[V(P(Y=k|X) | X_{−j})] / Σ_k V(1[Y=k]),
    the total Sobol index of the class-probability vector normalised by the total variance
    of the one-hot target. ``std`` is the standard error of the mean over the rows of I.

    Complexity: O(T n (D + Σ_{j on the path} 2^{s_j})) for T trees of depth D, n training rows
    (out-of-bag and in-bag rows are both dropped through the projected tree), s_j the splits
    on j below the first one met: a projected descent per (row, feature on its path), keyed
    in a hash table per tree (:mod:`harness.kernels.reroute.projection`); features a tree
    does not split on cost nothing, so the walks do not grow with p (wide rows are walked
    on each tree's own columns, :mod:`harness.kernels.tree_columns`). Plus O(n p) for the
    (n, p) shifts and per-(row, feature) loss increases whose spread gives the standard
    error, which dominates the growth in p from p ≈ 10³ on at n = 1000, T = 100, D = 8:
    stated (0, 1) on p, the walks' order and the shifts'.
    """

    name = "sobol_mda"
    scope = "global"
    family = "sobol_mda"
    summary = "Sobol-MDA: total Sobol index by projected OOB forests"
    complexity = {"n": 1, "p": (0, 1), "trees": 1, "depth": None}
    # ST_j = E[V(m(X) | X_-j)] / V[Y] lies in [0, 1]; so does the classification form,
    # since sum_k E[V(P_k | X_-j)] <= sum_k V(P_k) <= sum_k V(1[Y = k])
    value_range = (0.0, 1.0)
    parameters = {}

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        inputs = self.oob_inputs(model, data)
        targets = target_matrix(inputs.view, data.y)
        variance = target_variance(targets, self.name)  # 0/0 would be NaN for every feature
        shift = projected_oob_shift(inputs.forest, inputs.X32, inputs.inbag.counts, targets)
        prediction, n_oob = oob_predictions(inputs.view, data.X)
        # Σ_k (target_k − output_k)²: the Brier score of the class probabilities, or the
        # squared error of the regression
        code = BRIER if inputs.forest.classifier else SQUARED_ERROR
        mean, std, n_rows = oob_increase_summary(code, inputs.targets, prediction, shift, n_oob,
                                                 False, variance)
        explains = ("total Sobol index of the regression function" if not inputs.forest.classifier
                    else "total Sobol index of the class-probability vector (Brier)")
        return Importances(
            values=mean, scope="global", feature_names=data.feature_names,
            unit="fraction of Var(Y)", explains=explains, std=std,
            extra={"std_of": "mean over rows", "n_rows_scored": int(n_rows),
                   "var_y": variance},
        )
