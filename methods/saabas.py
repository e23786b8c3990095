"""Saabas path contributions (Saabas 2014; Lundberg et al. 2020)."""

from __future__ import annotations

import numpy as np

from harness.core.method import ExplainData, Method
from harness.core.outputs import (
    OUTPUT_PARAM,
    OUTPUT_UNITS,
    check_output,
    explains_of,
    multi_output_explains,
    select_multi_output,
    select_output,
)
from harness.core.types import Importances
from harness.forest.view import forest_view
from harness.kernels.paths import compile_kernels, saabas_paths


class Saabas(Method):
    """Saabas: φ_j(x) = 1/M Σ_T Σ_{t ∋ x, v(t) = j} [v(t_x) - v(t)], bias = mean root value.

    Node values v are class probabilities (classifiers) or means (regressors), so
    bias + Σ_j φ_j(x) equals the forest's ``predict_proba``/``predict`` exactly. Equals
    shap's ``TreeExplainer.shap_values(X, approximate=True)``. Classifiers explain the
    predicted-class probability by default (Sutera et al. 2021); see ``output``. Boosted
    classifiers are explained in their margin (raw score; :mod:`harness.core.outputs`), a
    multi-output regressor's outputs all at once or one by index, a multi-output classifier's
    predicted class of each output (:func:`harness.core.outputs.select_multi_output`). Cost: about
    one ``predict`` (:func:`harness.kernels.paths.saabas_paths`); a single class is
    accumulated as scalars, all classes as one vector per path edge.

    Complexity: O(n (T D C + p)) for n rows, T trees of depth D and C outputs carried (1 for
    one class): one root-to-leaf walk per (row, tree), as a predict (Saabas 2014; Lundberg
    et al. 2020, Sec. 2.4 call it O(T D) per row), plus the (n, p) output, which dominates
    from p ≈ T D on: stated (0, 1) on p, the walks' order and the output's.
    """

    name = "saabas"
    scope = "local"
    family = "path contributions"
    multi_output = True
    summary = "Saabas path contributions; bias + Σ = prediction"
    complexity = {"n": 1, "p": (0, 1), "trees": 1, "depth": 1}
    parameters = {"output": OUTPUT_PARAM}
    rows_independent = True  # each row's path alone: explained in blocks (Method.explain)

    @classmethod
    def prepare(cls) -> None:
        super().prepare()
        compile_kernels()

    def block_row_values(self, model, n_features: int) -> int | None:
        """A classifier's one class (the predicted one, or an index): a value per feature
        and the row's prediction of every class (from which the predicted one is chosen);
        otherwise a value per feature and output (the default, None)."""
        view = forest_view(model)
        if (not view.classifier or view.multi_output
                or self.params["output"] == "all_classes"):
            return super().block_row_values(model, n_features)
        return n_features + view.n_values

    def skip(self, model, data: ExplainData) -> str | None:
        return super().skip(model, data) or check_output(self.params["output"],
                                                               forest_view(model))

    def _explain_rows(self, model, data: ExplainData, context: None) -> Importances:
        view = forest_view(model)
        forest = view.paths
        output = self.params["output"]
        n = data.X.shape[0]
        X32 = view.rows(data.X)  # in the coding of the trees' thresholds
        if view.multi_output:  # packed as several columns (ForestView.packed)
            return self._multi_output(view, X32, output, data)
        if not view.classifier:
            values, _, base = saabas_paths(forest, X32)
            return Importances(
                values=values, scope="local", feature_names=data.feature_names,
                unit="prediction", explains="prediction", base_values=base,
            )
        unit = view.output_unit
        explains = explains_of(output, view.classes, unit)
        if unit == "margin" and len(view.classes) == 2:  # one margin column (log-odds)
            values, _, base = saabas_paths(forest, X32, 0)
            if output == 0:
                values, base = -values, -base
        elif output == "all_classes":
            contributions, prediction, bias = saabas_paths(forest, X32, -2)
            values, base, explains = select_output(
                contributions, np.broadcast_to(bias, (n, bias.size)), prediction, output,
                view.classes, unit)
            base = np.array(base)
        elif output == "predicted_class":
            values, _, base = saabas_paths(forest, X32, -1)
        else:
            values, _, base = saabas_paths(forest, X32, output)
        return Importances(
            values=values, scope="local", feature_names=data.feature_names,
            unit=OUTPUT_UNITS[unit], explains=explains, base_values=base,
        )

    @staticmethod
    def _multi_output(view, X32: np.ndarray, output, data: ExplainData) -> Importances:
        """A multi-output model: a regressor's one output column (its one-column walk), else
        every column (the all-classes walk, :func:`saabas_paths`) reduced to ``output``."""
        n_outputs, per_output = view.n_outputs, view.output_classes
        if isinstance(output, int) and per_output is None:  # skip() checked the index
            values, _, base = saabas_paths(view.paths, X32, output)
            explains = multi_output_explains(output, n_outputs)
        else:
            values, _, bias = saabas_paths(view.paths, X32, -2)
            values, base, explains = select_multi_output(
                values, np.broadcast_to(bias, (X32.shape[0], bias.size)), output, n_outputs,
                per_output)
            base = np.array(base)
        return Importances(
            values=values, scope="local", feature_names=data.feature_names,
            unit="prediction" if per_output is None else OUTPUT_UNITS[view.output_unit],
            explains=explains, base_values=base,
        )
