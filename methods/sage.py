"""SAGE through the sage-importance package (Covert, Lundberg, Lee 2020)."""

from __future__ import annotations

import numpy as np

from harness.core.method import ExplainData
from harness.core.types import Importances
from harness.estimators.sage_method import SAGE_LOSSES, SAGE_PARAMETERS, SAGE_UNITS, SageMethod
from harness.forest.view import forest_view


class SAGE(SageMethod):
    """sage's ``MarginalImputer`` (``n_background`` rows drawn with the seed) and
    ``PermutationEstimator`` (its convergence rule, ``thresh``, capped at
    ``max_permutations`` samples), on the model's ``predict_proba`` / ``predict``.

    Rows with sample weights (explicit finite distributions) are given to sage as a weighted
    resample, since sage samples rows uniformly. ``std`` is sage's standard error.

    Complexity: O(M (p + 1) B · predict) for M sampled (row, permutation) pairs, B background
    rows: every pair evaluates the model on its p + 1 coalitions, each imputed with the B
    background rows (Covert, Lundberg, Lee 2020, Sec. 4: the permutation estimator); a
    scikit-learn predict is O(T D) per row plus a per-call overhead. The rows are only
    sampled (n^0); M follows the convergence rule unless ``thresh`` is never reached.
    """

    name = "sage"
    requires = ("sage",)
    distributions = {"sage": "sage-importance"}
    summary = "SAGE (sage-importance): marginal imputer, permutation estimator"
    complexity = {"n": 0, "p": 1, "trees": 1, "depth": None}
    parameters = SAGE_PARAMETERS

    def skip(self, model, data: ExplainData) -> str | None:
        reason = super().skip(model, data)
        classes = forest_view(model).classes  # None for a regressor
        if reason is None and classes is not None and len(classes) < 2:
            # sage-importance's cross-entropy refuses labels that are not two classes
            only = classes.tolist()[0]
            reason = (f"sage-importance needs at least two classes; this classifier was fitted "
                      f"on one ({only!r}), so no feature can reduce its loss.")
        return reason

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        import sage

        loss = self.loss_name(data.task)
        background = self.background(data, rng)
        X, targets = data.X, self.targets(model, data)
        if data.sample_weight is not None:
            weights = np.asarray(data.sample_weight, dtype=float)
            rows = rng.choice(len(X), size=max(1000, len(X)), p=weights / weights.sum())
            X, targets = X[rows], targets[rows]
        imputer = sage.MarginalImputer(model, background)
        estimator = sage.PermutationEstimator(imputer, SAGE_LOSSES[loss], n_jobs=1,
                                              random_state=int(rng.integers(2**31 - 1)))
        explanation = estimator(X, targets, batch_size=self.params["batch_size"],
                                thresh=self.params["thresh"],
                                n_permutations=self.params["max_permutations"],
                                detect_convergence=True, verbose=False,
                                # sage's own bar would write beside the harness's (the run's
                                # bar, or explain's), and into logs under --no-progress
                                bar=False)
        if data.progress is not None:
            data.progress(1.0)
        return Importances(
            values=np.asarray(explanation.values, dtype=float), scope="global",
            feature_names=data.feature_names, unit=SAGE_UNITS[loss],
            explains="loss reduction (SAGE, marginal imputation)",
            std=np.asarray(explanation.std, dtype=float),
            extra={"std_of": "mean over sampled (row, permutation) pairs",
                   "n_background": len(background)},
        )
