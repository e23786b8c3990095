"""Tree SAGE: SAGE with the coalition models computed from the trees themselves."""

from __future__ import annotations

import numpy as np

from harness.method import ExplainData
from harness.packed import as_float32_rows, pack_forest
from harness.params import Boolean, Options, Param
from harness.sage_estimator import cross_entropy, estimate_sage, squared_error
from harness.sage_kernels import (
    cover_fractions,
    marginal_curves,
    marginal_setup,
    path_dependent_curves,
    singleton_tables,
    subtree_masks,
)
from harness.sage_method import SAGE_PARAMETERS, SAGE_UNITS, SageMethod
from harness.types import Importances


class TreeSAGE(SageMethod):
    """SAGE values (Covert, Lundberg, Lee 2020) with f_S computed from the trees.

    ``imputation="path_dependent"``: f_S(x) = E[f(X) | x_S] by the trees' node covers (as
    TreeSHAP's path-dependent mode); ``imputation="marginal"``: the mean over ``n_background``
    background rows z of f(x_S, z_{~S}), exactly sage's MarginalImputer, so the two can be
    compared one to one. All p + 1 coalitions of a permutation come from one pass per tree
    (:mod:`harness.sage_kernels`); sampling and the stopping rule are sage's, with antithetic
    permutation pairs as an option (:mod:`harness.sage_estimator`). ``std`` is the standard error.
    """

    name = "tree_sage"
    summary = "SAGE with tree-native coalition models (path-dependent or marginal)"
    parameters = {
        "imputation": Param("path_dependent", (Options({"path_dependent", "marginal"}),),
                            "how features outside S are removed"),
        **SAGE_PARAMETERS,
        "antithetic": Param(False, (Boolean(),),
                            "pair each permutation with its reverse (measured on diabetes and "
                            "Friedman #1: no lower variance per forest pass, so off)"),
    }

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        loss_name = self.loss_name(data.task)
        forest = pack_forest(model)
        X32 = as_float32_rows(data.X)
        targets = self.targets(model, data)
        arrays = (forest.left, forest.right, forest.feature, forest.threshold, forest.value)
        marginal = self.params["imputation"] == "marginal"
        background = as_float32_rows(self.background(data, rng)) if marginal else None
        classifier = data.task == "classification"
        if marginal:
            setup = marginal_setup(*arrays, forest.offsets, data.X.shape[1], background)
        else:
            fraction = cover_fractions(forest.left, forest.right, forest.cover, forest.offsets)
            tables = singleton_tables(*arrays, fraction, forest.offsets, data.X.shape[1])
            masks = subtree_masks(forest.left, forest.right, forest.feature, forest.offsets,
                                  data.X.shape[1])

        def curves(rows: np.ndarray, perms: np.ndarray) -> np.ndarray:
            columns = targets[rows].astype(np.int64) if classifier else np.zeros(
                len(rows), dtype=np.int64)
            if marginal:
                return marginal_curves(*arrays, forest.offsets, forest.max_depth, X32,
                                       background, rows, perms, columns, setup)
            return path_dependent_curves(*arrays, fraction, forest.offsets, forest.max_depth,
                                         X32, rows, perms, columns, tables, masks)

        estimate = estimate_sage(
            curves, cross_entropy if loss_name == "cross_entropy" else squared_error,
            targets.astype(np.float64), data.X.shape[1], rng,
            thresh=self.params["thresh"], batch_size=self.params["batch_size"],
            max_permutations=self.params["max_permutations"],
            antithetic=self.params["antithetic"], row_weights=data.sample_weight,
            on_batch=None if data.progress is None else self._reporter(data.progress))
        return Importances(
            values=estimate.values, scope="global", feature_names=data.feature_names,
            unit=SAGE_UNITS[loss_name],
            explains=f"loss reduction (SAGE, {self.params['imputation']} imputation)",
            std=estimate.std,
            extra={"std_of": "mean over sampled (row, permutation) pairs",
                   "n_samples": estimate.n_samples, "converged": estimate.converged,
                   "mean_total_drop": estimate.mean_total_drop},
        )
