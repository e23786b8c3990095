"""LOCO: leave a covariate (or a group) out, refit the same model spec, compare held-out loss."""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from harness.core.method import ExplainData
from harness.core.params import Boolean, Interval, NoneValue, Param
from harness.core.types import Importances
from harness.estimators.loco import FeatureGroups, fold_rows, loco, resolve_groups
from harness.estimators.oob import LOSS_PARAM, LossMethod
from harness.forest.losses import target_codes
from harness.forest.view import forest_view


class LOCO(LossMethod):
    """Cross-fitted LOCO: psi_g = (1/K) Σ_k [L_k(f_{k,-g}) − L_k(f_k)] (Eq. 1-2 of
    :mod:`harness.estimators.loco`), with influence-function standard errors (Eq. 3).

    Williamson, Gilbert, Simon & Carone (2021, JASA); Lei, G'Sell, Rinaldo, Tibshirani &
    Wasserman (2018, JASA, Sec. 6). The given rows are split into ``n_folds`` folds; on each,
    the model's spec (``sklearn.base.clone``: the same hyperparameters and ``random_state``;
    a model with ``random_state=None`` gets one drawn from the cell's seed, the same for
    every refit) is refitted on the other folds with every column and without each group,
    and the held-out loss increase is averaged. The fitted model itself is not used beyond
    its spec, so any scikit-learn compatible estimator works. ``std`` is the standard error
    of Eq. (3). With ``normalise=True`` the values are divided by the loss of the best
    constant prediction (Eq. 4): for squared error that is Var(Y), and the value estimates
    the total Sobol index ST_j = E[Var(m(X) | X_-j)] / Var(Y).

    Rows: the runner gives LOCO the training rows (``rows = "train"``), the rows the spec was
    fitted on, so each refit sees (K-1)/K of the model's own sample and the held-out test rows
    stay untouched, as for the OOB methods it is compared with. Any labelled rows are valid
    (cross-fitting never scores a refit on its own rows).
    Rows with weights that are not all equal (the support of an explicit distribution) are
    declined: the refits and the held-out means treat the rows as equally likely.

    ``groups`` (feature-name lists, disjoint) are left out together; every feature of a
    group carries the group's value (the result has one value per feature), features in no
    group are left out alone; ``extra["groups"]`` lists the groups with their values.
    (p or #groups + 1) x ``n_folds`` models are fitted; progress is reported after each.

    Complexity: (G + 1) K refits of the model's spec for G groups (p by default) and K folds,
    each O(T m n D) for T trees of depth D grown on (K-1)/K n rows trying m features per split
    (Williamson et al. 2021 refit once per group): with m = sqrt(p) (the bench's forests),
    O(K T n D p^1.5); with a fixed fraction of p, p².
    """

    name = "loco"
    scope = "global"
    family = "retrain"
    rows = "train"
    summary = "LOCO: refit without each feature (cross-fitted), increase of held-out loss"
    # 2: rows with equal weights are explained (the uniform distribution on them), where any
    # weights were declined; weights that differ are declined (Method.weighted_rows: None)
    version = 2
    complexity = {"n": 1, "p": 1.5, "trees": 1, "depth": 1}
    # E L(Y, m_-g(X_-g)) >= E L(Y, m(X)) for the Bayes models of each loss offered, and
    # normalised it is at most 1 (m_-g is no worse than a constant)
    value_range = (0.0, None)
    parameters = {
        "loss": LOSS_PARAM,
        "n_folds": Param(5, (Interval(int, 2, None, "left"),), "K of the cross-fitting"),
        "normalise": Param(False, (Boolean(),),
                           "divide by the loss of a constant prediction (Var(Y): total "
                           "Sobol index for squared error)"),
        "groups": Param(None, (NoneValue(), FeatureGroups()),
                        "features left out together (lists of feature names)"),
        "n_jobs": Param(1, (Interval(int, 1, None, "left"),), "threads for the refits"),
    }

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        view = forest_view(model)
        loss = self.loss(data.task)
        classification = data.task == "classification"
        groups = resolve_groups(self.params["groups"], data.feature_names)
        # scikit-learn seeds (KFold, random_state) must be in [0, 2**32 - 1]
        seed = int(rng.integers(0, 2**32 - 1))
        if "random_state" in model.get_params() and model.get_params()["random_state"] is None:
            model = clone(model).set_params(random_state=seed)
        folds = fold_rows(data.y, self.params["n_folds"], classification, seed)
        classes = view.classes if classification else None
        result = loco(model, data.X, data.y, target_codes(classes, data.y), loss, groups,
                      folds, classes, self.params["normalise"], self.params["n_jobs"],
                      data.progress)
        values, std = np.empty(len(data.feature_names)), np.empty(len(data.feature_names))
        for g, group in enumerate(groups):
            values[list(group.columns)] = result.values[g]
            std[list(group.columns)] = result.std[g]
        unit = "fraction of the constant prediction's loss" if self.params["normalise"] \
            else loss.unit
        if self.params["normalise"] and loss.name == "squared_error":
            unit = "fraction of Var(Y)"
        return Importances(
            values=values, scope="global", feature_names=data.feature_names, unit=unit,
            explains=f"increase of held-out {loss.name} when refitted without the feature",
            std=std,
            extra={"std_of": "influence function (cross-fitted)",
                   "n_folds": self.params["n_folds"], "null_loss": result.null_loss,
                   "groups": {group.label: [data.feature_names[j] for j in group.columns]
                              for group in groups},
                   "group_values": result.values.tolist(),
                   "group_std": result.std.tolist()},
        )
