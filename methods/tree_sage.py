"""Tree SAGE: SAGE with the coalition models computed from the trees themselves."""

from __future__ import annotations

import numpy as np

from harness.core.method import ExplainData
from harness.core.params import Boolean, Options, Param
from harness.core.types import Importances
from harness.estimators.sage import (
    AdditiveSurrogate,
    cross_entropy,
    estimate_sage,
    squared_error,
)
from harness.estimators.sage_method import SAGE_PARAMETERS, SAGE_UNITS, SageMethod
from harness.estimators.warm_up import warm_up
from harness.forest.view import forest_view
from harness.kernels.paths import compile_kernels as compile_path_kernels
from harness.kernels.paths import saabas_paths
from harness.kernels.sage.marginal import marginal_curves, marginal_setup
from harness.kernels.sage.path_dependent import path_dependent_curves
from harness.kernels.sage.tables import (
    cover_fractions,
    singleton_sums,
    singleton_tables,
    subtree_masks,
)

#: Up to this many features, the control variates include the features' positions in each
#: permutation (3p more controls, :func:`harness.estimators.sage.position_terms`); beyond, the
#: per-batch regression on them (a (4p + 1)^2 eigendecomposition) would cost more than it saves.
POSITION_CONTROLS_MAX_FEATURES = 64


class TreeSAGE(SageMethod):
    """SAGE values (Covert, Lundberg, Lee 2020) with f_S computed from the trees.

    ``imputation="path_dependent"``: f_S(x) = E[f(X) | x_S] by the trees' node covers (as
    TreeSHAP's path-dependent mode); ``imputation="marginal"``: the mean over ``n_background``
    background rows z of f(x_S, z_{~S}), exactly sage's MarginalImputer, so the two can be
    compared one to one. All p + 1 coalitions of a permutation come from one pass per tree
    (:mod:`harness.kernels.sage.path_dependent`, :mod:`harness.kernels.sage.marginal`).
    Sampling and the stopping rule are sage's (:mod:`harness.estimators.sage`); with
    ``control_variates`` the mean scores are adjusted by each row's total and first-step loss
    drops, whose exact means over all rows come from per-forest tables (measured on Friedman
    #1: about 3x fewer samples to the same threshold). With the squared loss, also by each
    sample's drops in the additive game of the forest's Saabas contributions, whose exact
    means are closed-form (:class:`harness.estimators.sage.AdditiveSurrogate`; Friedman #1,
    RF 300: 320-365 samples to sage's threshold against 1913-2048). With cross-entropy, whose
    drops that quadratic game follows less (on digits its p more controls cost more than they
    removed), up to POSITION_CONTROLS_MAX_FEATURES features, by each feature's rank in the
    permutation and its products with the first-step drops instead (breast cancer, RF 500:
    407-435 samples against 1176-1280). ``std`` is the standard error; for a score the
    controls fit exactly (a rare feature whose few nonzero scores follow its own first-step
    drop) it is the plain mean's, since no residual is left to estimate it from. A feature
    that matters in a handful of rows is a rare event for any permutation sampler: with one
    or two samples hitting it, its value and std are rough (digits' pixel 48, nonzero in 4
    of 1797 rows, is the largest gap to sage in the bench: 4.8 combined std, the others
    under 2.7).
    Boosted regressors are read like forests (their output is the view's mean over trees);
    boosted classifiers are skipped (their trees sum to a margin, not to probabilities).

    Complexity: O(M T V p) for M sampled (row, permutation) pairs, T trees and V visited nodes
    per pair and tree (all p + 1 coalitions of a pair come from one pass carrying p lanes;
    :mod:`harness.kernels.sage.path_dependent`), plus, with ``control_variates``, O(n T D + n p)
    for every row's first-step drops (:func:`harness.kernels.sage.tables.singleton_sums`)
    and Saabas contributions (:func:`harness.kernels.paths.saabas_paths`), O(M q²) for the
    regression on q = 2p + 1 or 4p + 1 controls, and O(T L (D + p)) tables per forest.
    With M fixed, the rows' part dominates from a few thousand rows on; M follows the
    convergence rule unless ``thresh`` is never reached. Stated (1, 2) on p: the passes'
    and tables' order and the control regression's.
    """

    name = "tree_sage"
    # 2: surrogate (squared loss) or position (cross-entropy) control variates and a last
    #    batch sized to the threshold: other samples, so other estimates, of the same values
    # 3: a batch of few pairs sums its path-dependent curves over chunks of trees, then
    #    chunk by chunk (so that the threads share it): the same values but for rounding
    #    (within 1e-14)
    version = 3
    summary = "SAGE with tree-native coalition models (path-dependent or marginal)"
    complexity = {"n": 1, "p": (1, 2), "trees": 1, "depth": None}
    parameters = {
        "imputation": Param("path_dependent", (Options({"path_dependent", "marginal"}),),
                            "how features outside S are removed"),
        **SAGE_PARAMETERS,
        "control_variates": Param(True, (Boolean(),),
                                  "adjust by each row's total and first-step loss drops, and "
                                  "by each sample's drops in the additive game of the "
                                  "forest's Saabas contributions (squared loss) or its "
                                  "features' ranks (cross-entropy), whose exact means are "
                                  "known (regression estimator)"),
        "antithetic": Param(False, (Boolean(),),
                            "pair each permutation with its reverse (measured on diabetes and "
                            "Friedman #1: no lower variance per forest pass, so off)"),
    }

    #: settings whose kernels differ, compiled by prepare() on a tiny forest
    warm_up_params = tuple(
        {"imputation": imputation, "control_variates": control_variates,
         "max_permutations": 32, "n_background": 4, "batch_size": 16}
        for imputation in ("path_dependent", "marginal") for control_variates in (True, False))

    @classmethod
    def prepare(cls) -> None:
        super().prepare()
        warm_up(cls)
        # every walk of the Saabas module: the surrogate calls saabas_paths, which names them
        # all (one per output kind), so the cache check of a fresh process reads them all
        compile_path_kernels()

    def skip(self, model, data: ExplainData) -> str | None:
        reason = super().skip(model, data)
        if reason is None and data.task == "classification":
            view = forest_view(model)
            if view.output_unit == "margin":
                # the trees' coalition models f_S average margins, and the probability of
                # an average margin is not the average probability sage's imputers compute
                reason = (f"tree_sage scores class probabilities; this {view.kind} sums its "
                          "trees to a margin, whose coalition models do not give them "
                          "exactly. Use sage (model-agnostic) on it.")
        return reason

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        loss_name = self.loss_name(data.task)
        loss = cross_entropy if loss_name == "cross_entropy" else squared_error
        view = forest_view(model)
        forest = view.packed
        X32 = view.rows(data.X)
        targets = self.targets(model, data)
        marginal = self.params["imputation"] == "marginal"
        classifier = data.task == "classification"
        columns = targets.astype(np.int64) if classifier else np.zeros(len(X32), np.int64)
        p = data.X.shape[1]
        if marginal:
            background = view.rows(self.background(data, rng))
            setup = marginal_setup(forest, background)
            _, _, tree_sums, tables = setup  # sums over the background rows
            scale = forest.n_trees * len(background)
            empty = tree_sums.sum(axis=0) / scale
        else:
            fraction = cover_fractions(forest)
            tables = singleton_tables(forest, fraction)
            masks = subtree_masks(forest)
            scale = forest.n_trees
            empty = forest.value[forest.offsets[:-1]].sum(axis=0) / scale

        def curves(rows: np.ndarray, perms: np.ndarray) -> np.ndarray:
            if marginal:
                return marginal_curves(forest, X32, background, rows, perms, columns[rows],
                                       setup)
            return path_dependent_curves(forest, fraction, X32, rows, perms, columns[rows],
                                         tables, masks)

        controls = surrogate = None
        if self.params["control_variates"]:
            controls = self._controls(view, data, loss, targets, columns, empty,
                                      singleton_sums(tables, X32, columns, forest.n_trees),
                                      scale)
            if loss is squared_error:  # the surrogate's own loss (class docstring)
                surrogate = self._surrogate(view, X32, empty, targets)

        estimate = estimate_sage(
            curves, loss, targets.astype(np.float64), p, rng,
            thresh=self.params["thresh"], batch_size=self.params["batch_size"],
            max_permutations=self.params["max_permutations"],
            antithetic=self.params["antithetic"], row_weights=data.sample_weight,
            controls=controls, surrogate=surrogate,
            position_controls=surrogate is None and p <= POSITION_CONTROLS_MAX_FEATURES,
            on_batch=None if data.progress is None else self._reporter(data.progress))
        return Importances(
            values=estimate.values, scope="global", feature_names=data.feature_names,
            unit=SAGE_UNITS[loss_name],
            explains=f"loss reduction (SAGE, {self.params['imputation']} imputation)",
            std=estimate.std,
            extra={"std_of": "mean over sampled (row, permutation) pairs",
                   "n_samples": estimate.n_samples, "converged": estimate.converged,
                   "mean_total_drop": estimate.mean_total_drop,
                   "control_variates": bool(self.params["control_variates"])},
        )

    @staticmethod
    def _surrogate(view, X32: np.ndarray, empty: np.ndarray,
                   targets: np.ndarray) -> AdditiveSurrogate:
        """The forest's Saabas path contributions as an additive stand-in for the coalition
        values under the squared loss against y (:class:`AdditiveSurrogate`)."""
        contributions = saabas_paths(view.paths, X32)[0]
        return AdditiveSurrogate(contributions, empty[0] - targets.astype(np.float64))

    @staticmethod
    def _controls(view, data: ExplainData, loss, targets: np.ndarray, columns: np.ndarray,
                  empty: np.ndarray, first_sums: np.ndarray, scale: float) -> np.ndarray:
        """Control variates of every row: the total drop ℓ(f_∅) − ℓ(f_all), then the
        first-step drops ℓ(f_∅) − ℓ(f_{j}) (``first_sums`` / ``scale`` is f_{j}), filled in
        place a block of rows at a time (few temporaries of shape (n, p))."""
        n = len(columns)
        full = view.output(data.X)[np.arange(n), columns]
        y = targets.astype(np.float64)
        empty_loss = loss(empty[columns][:, None], y)[:, 0]
        controls = np.empty((n, first_sums.shape[1] + 1))
        controls[:, 0] = empty_loss - loss(full[:, None], y)[:, 0]
        for start in range(0, n, 1024):
            rows = slice(start, start + 1024)
            controls[rows, 1:] = empty_loss[rows, None] - loss(first_sums[rows] / scale, y[rows])
        return controls
