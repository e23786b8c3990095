"""Saabas path contributions (Saabas 2014; Lundberg et al. 2020)."""

from __future__ import annotations

import numpy as np

from harness.forest import apply_leaves, flatten_forest, is_classifier, path_accumulate
from harness.method import ExplainData, Method
from harness.outputs import OUTPUT_PARAM, check_output, select_output
from harness.types import Importances


class Saabas(Method):
    """Saabas: φ_j(x) = 1/M Σ_T Σ_{t ∋ x, v(t) = j} [v(t_x) - v(t)], bias = mean root value.

    Node values v are class probabilities (classifiers) or means (regressors), so
    bias + Σ_j φ_j(x) equals the forest's ``predict_proba``/``predict`` exactly. Equals
    shap's ``TreeExplainer.shap_values(X, approximate=True)``. Classifiers explain the
    predicted-class probability by default (Sutera et al. 2021); see ``output``.
    """

    name = "saabas"
    scope = "local"
    family = "path contributions"
    summary = "Saabas path contributions; bias + Σ = prediction"
    parameters = {"output": OUTPUT_PARAM}

    def skip(self, model, data: ExplainData) -> str | None:
        return super().skip(model, data) or check_output(self.params["output"], model)

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        trees = flatten_forest(model)
        p = model.n_features_in_
        leaves = apply_leaves(model, data.X)
        n = data.X.shape[0]
        width = trees[0].value.shape[1]
        contributions = np.zeros((n, p, width))
        prediction = np.zeros((n, width))
        bias = np.zeros(width)
        for t, tree in enumerate(trees):
            contributions += path_accumulate(tree, tree.value, p, sign=1.0)[leaves[:, t]]
            prediction += tree.value[leaves[:, t]]
            bias += tree.value[0]
        contributions /= len(trees)
        prediction /= len(trees)
        base = np.broadcast_to(bias / len(trees), (n, width))
        if not is_classifier(model):
            return Importances(
                values=contributions[:, :, 0], scope="local", feature_names=data.feature_names,
                unit="prediction", explains="prediction", base_values=base[:, 0].copy(),
            )
        values, base, explains = select_output(
            contributions, base, prediction, self.params["output"], model.classes_
        )
        return Importances(
            values=values, scope="local", feature_names=data.feature_names,
            unit="class probability", explains=explains, base_values=np.array(base),
        )
