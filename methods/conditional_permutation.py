"""Conditional permutation importance (CPI) of the fitted model, through hidimstat's CFI."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.core.method import ExplainData
from harness.core.params import Interval, Options, Param
from harness.core.types import Importances
from harness.estimators.oob import LOSS_PARAM, LossMethod
from harness.forest.losses import loss_rows, target_codes
from harness.forest.view import forest_view


class ConditionalPermutation(LossMethod):
    """CPI(j) = mean over R draws of L(model on rows with X_j resampled given X_-j) − L(model).

    Chamma, Engemann & Thirion (2023, NeurIPS, "Statistically valid variable importance
    assessment through conditional permutations"), as implemented by hidimstat's ``CFI``:
    for each feature j a model of E[X_j | X_-j] (``RidgeCV``; with ``feature_types="auto"``,
    ``LogisticRegressionCV`` for a feature with at most 10 distinct values, which hidimstat
    0.4 fits only when those values are integers: diabetes' scaled ``sex`` is refused) is
    fitted on the given rows, and X_j is replaced by that prediction plus a permutation of
    its residuals; the fitted model (not refitted) predicts the perturbed rows. Unlike the marginal
    permutation of ``mda_test``, the perturbed rows stay near the joint distribution of X,
    so that for squared error, the Bayes model m and exact conditional draws X'_j ~ X_j | X_-j,
    CPI(j) → E[(m(X) − m(X'))²] = 2 E[Var(m(X) | X_-j)] = 2 Var(Y) ST_j, also for dependent
    inputs (the conditional counterpart of Bénard et al. 2022, Prop. 1). The loss is the
    harness's (:mod:`harness.forest.losses`) on the model's ``predict`` (regression) or
    ``predict_proba`` (classification). ``std`` is the standard deviation over the R draws.

    Rows: the held-out rows (``rows = "test"``), like ``mda_test``; the conditional models are
    fitted on those same rows (hidimstat's ``fit_importance`` on one sample).

    Complexity: O(R p n T D) for the model's predictions of R conditional draws of each of p
    features on n rows (T trees of depth D), plus p ridge fits of E[X_j | X_-j], O(n p²)
    each (Chamma et al. 2023, Algorithm 1): linear in p while the predictions dominate, i.e.
    while p² < R T D (p ≲ 130 at R = 20, T = 100, D = 8), cubic beyond. Each of the R p
    predictions also has a fixed cost (scikit-learn's dispatch), which hides the growth in
    n and T below about 10³ rows.
    """

    name = "conditional_permutation"
    scope = "global"
    family = "mda"
    rows = "test"
    requires = ("hidimstat",)
    summary = "Conditional permutation importance (hidimstat CFI) on held-out rows"
    complexity = {"n": 1, "p": 1, "trees": 1, "depth": 1}
    # as for mda_test: the limit for the Bayes model is >= 0 for each loss offered
    value_range = (0.0, None)
    parameters = {
        "loss": LOSS_PARAM,
        "n_permutations": Param(20, (Interval(int, 1, None, "left"),),
                                "conditional draws per feature"),
        "feature_types": Param("continuous", (Options({"auto", "continuous"}),),
                               "continuous: every feature by ridge; auto: features with "
                               "<= 10 integer values by logistic regression"),
    }

    def skip(self, model, data: ExplainData) -> str | None:
        reason = super().skip(model, data)
        if reason is None and np.isnan(data.X).any():
            reason = ("conditional_permutation models each feature from the others with "
                      "hidimstat's regressions, which take no missing values; these rows hold "
                      f"{int(np.isnan(data.X).sum())} NaN cells.")
        return reason

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        from hidimstat import CFI

        view = forest_view(model)
        loss = self.loss(data.task)
        classes = view.classes if data.task == "classification" else None
        targets = target_codes(classes, data.y)
        target_of = dict(zip(np.asarray(data.y).tolist(), targets.tolist()))

        def harness_loss(y: np.ndarray, prediction: np.ndarray) -> float:
            # hidimstat passes back the labels it was given; the harness's kernel wants codes
            codes = np.array([target_of[v] for v in np.asarray(y).tolist()], dtype=float)
            rows = np.asarray(prediction, dtype=np.float64).reshape(len(codes), -1)
            return float(loss_rows(loss.code, codes, np.ascontiguousarray(rows)).mean())

        X = data.X
        if getattr(model, "feature_names_in_", None) is not None:
            X = pd.DataFrame(X, columns=list(model.feature_names_in_))
        cfi = CFI(model, method="predict" if classes is None else "predict_proba",
                  loss=harness_loss, n_permutations=self.params["n_permutations"],
                  feature_types=self.params["feature_types"],
                  random_state=int(rng.integers(0, 2**32 - 1)))
        values = np.asarray(cfi.fit_importance(X, data.y), dtype=float)
        draws = np.array([cfi.loss_[j] - cfi.loss_reference_ for j in range(len(values))])
        return Importances(
            values=values, scope="global", feature_names=data.feature_names, unit=loss.unit,
            explains=f"increase of the model's held-out {loss.name} under conditional "
                     "permutation",
            std=draws.std(axis=1), extra={"std_of": "conditional draws",
                                          "conditional_model": "hidimstat CFI default"},
        )
