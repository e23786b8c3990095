"""TreeSHAP (Lundberg et al. 2020): the harness's float64 kernels, or shap's TreeExplainer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core.method import ExplainData, Method
from harness.core.outputs import (
    OUTPUT_PARAM,
    OUTPUT_UNITS,
    check_output,
    select_multi_output,
    select_output,
)
from harness.core.params import Interval, Options, Param
from harness.core.types import Importances
from harness.forest.view import forest_view, predict_output
from harness.kernels.treeshap.interventional import (
    CodedBackground,
    code_background,
    compile_kernel,
    interventional_shap,
)
from harness.kernels.treeshap.path_dependent import compile_kernel as compile_path_dependent_kernel
from harness.kernels.treeshap.path_dependent import path_dependent_shap


@dataclass
class _Context:
    """What every block of rows shares (:meth:`TreeSHAP._rows_context`): shap's explainer,
    the expected output, the interventional background rows raw and made ready for the
    forest (coded by the view, routed at every node)."""

    explainer: Any = None
    expected: np.ndarray | None = None
    background: np.ndarray | None = None
    coded_background: CodedBackground | None = None


class TreeSHAP(Method):
    """Exact TreeSHAP values of the forest's prediction (Lundberg et al. 2020).

    ``perturbation="tree_path_dependent"`` uses the node covers as the conditional
    distribution (Alg. 1-2, shap's TreeExplainer). ``"interventional"`` integrates absent
    features over a background of ``n_background`` rows drawn with the seed from the explained
    rows. By default (``backend="auto"``, same as ``"harness"``) both run the harness's
    double-precision kernels. Path-dependent: :mod:`harness.kernels.treeshap.path_dependent`,
    exact by
    Gauss-Legendre quadrature of the Shapley integral; it equals shap's values to rounding
    (< 1e-12) and brute-force Shapley values of the cover game to 1e-12; it is faster than
    shap on one thread on every benchmark forest, most on deep ones (``python -m harness
    bench`` measures the ratio). Interventional:
    :mod:`harness.kernels.treeshap.interventional`, which walks each tree once for 64 rows
    and 64 background rows at a time, as bits; shap's interventional code rounds thresholds
    to float32 (shap issue 5116), so a row next to a threshold can take the other branch than
    in scikit-learn (measured: 3.6e-4 off on breast cancer, 1.7e-4 off brute force on its
    first 10 features), while ours matches brute-force Shapley values of ``model.predict``
    to 1e-13.
    ``backend="shap"`` forces shap for both. base + Σ_j φ_j(x) = prediction; classifiers
    explain the predicted-class probability by default (Sutera et al. 2021), boosted
    classifiers their margin (raw score; :mod:`harness.core.outputs`); a multi-output
    regressor's outputs are explained all at once (default) or one by index, a multi-output
    classifier's predicted class of each output (default) or of one output by index.

    Complexity: path-dependent (the default), O(n T (N_t + L_t D) ⌈D/2⌉) for n rows and T
    trees of N_t nodes, L_t leaves and depth D: one preorder pass per (row, tree) updating
    ⌈D/2⌉ quadrature nodes at each node, and at each leaf one sum over them per feature of
    its path (:mod:`harness.kernels.treeshap.path_dependent`; shap's Algorithm 2 is
    O(T L D²) per row, Lundberg et al. 2020, Sec. 2.4); N_t ~ 2^D is no power of D. Plus
    O(n p) for the (n, p) output (zeroed, summed over the tree groups, divided by T), which
    dominates the growth in p from p ≈ 10³ on at n = 1000, T = 100, D = 8 (a tree loads only
    the features it splits on, so the walks do not grow with p): stated (0, 1) on p, the
    walks' order and the output's. Plus, once per call, O(T N_t ⌈D/2⌉) for each tree's
    row-independent tables (about 100 ns per node on this 2-core machine): on one row they
    are most of the time, so one row is explained at 0.4-1.8x shap's speed (breast cancer /
    RF 500: 0.36x, Friedman #1 / RF 300: 0.71x, digits / ExtraTrees K = 1: 1.76x), and ten
    at 3-14x (measured on one thread). Interventional: O(n T B L D) at
    most for B background rows and L leaves (Lundberg et al. 2020, "Interventional Tree
    SHAP", is O(n T B L) walks of a row and a background row); here one walk of a tree for
    64 rows and 64 background rows enters only the nodes that a pair with no feature failed
    by both reaches, and adds each leaf once per row, over the row's pairs that reach it.
    """

    name = "treeshap"
    scope = "local"
    family = "shapley"
    # shap only for backend="shap" (needed_packages: imported before the timed explain):
    # the harness's kernels need it not, and its import was 1.4 s of this method's first call
    multi_output = True
    summary = "TreeSHAP, path-dependent or interventional (float64 kernels, or shap)"
    complexity = {"n": 1, "p": (0, 1), "trees": 1, "depth": None}
    parameters = {
        "perturbation": Param(
            "tree_path_dependent",
            (Options({"tree_path_dependent", "interventional"}),),
            "how absent features are integrated out",
        ),
        "n_background": Param(100, (Interval(int, 1, None, "left"),),
                              "background rows (interventional only)"),
        "backend": Param("auto", (Options({"auto", "shap", "harness"}),),
                         "auto/harness: the harness's float64 kernels; shap: shap's"),
        "output": OUTPUT_PARAM,
    }
    rows_independent = True  # each row alone, given the background: explained in blocks

    def needed_packages(self) -> tuple[str, ...]:
        return self.requires + (("shap",) if self.params["backend"] == "shap" else ())

    @classmethod
    def prepare(cls) -> None:
        super().prepare()
        compile_kernel()
        compile_path_dependent_kernel()

    def skip(self, model, data: ExplainData) -> str | None:
        reason = super().skip(model, data) or check_output(self.params["output"],
                                                           forest_view(model))
        if reason is None and self.params["backend"] == "shap" and np.isnan(data.X).any():
            # shap 0.51 reads a scikit-learn tree's default child as its left child
            # (TreeEnsemble, children_default = children_left), not missing_go_to_left
            reason = ("backend='shap' sends a missing value left at every scikit-learn split "
                      "(it ignores missing_go_to_left), so it cannot explain rows with NaN; "
                      "use backend='harness'")
        if (reason is None and self.params["backend"] == "shap"
                and forest_view(model).output_classes is not None):
            # shap 0.51 normalises a node's values over all outputs' class blocks at once
            # (each probability divided by k) and pads each block to the most classes
            reason = ("backend='shap' divides a multi-output classifier's probabilities by "
                      "its number of outputs and pads each output's classes, so its values "
                      "are not the model's; use backend='harness'")
        return reason

    def _rows_context(self, model, data: ExplainData,
                      rng: np.random.Generator) -> _Context:
        """Drawn once from all the rows: the interventional background (and its expected
        output), or shap's explainer, which every block then shares."""
        view = forest_view(model)
        shap_backend = self.params["backend"] == "shap"
        if self.params["perturbation"] == "interventional":
            n = data.X.shape[0]
            size = min(self.params["n_background"], n)
            background = data.X[np.sort(rng.choice(n, size=size, replace=False))]
            if shap_backend:
                import shap

                explainer = shap.TreeExplainer(model, data=background,
                                               feature_perturbation="interventional")
                expected = np.atleast_1d(np.mean(predict_output(model, background), axis=0))
                return _Context(explainer, expected, background)
            coded = code_background(view.paths, view.rows(background))
            return _Context(None, coded.mean_output, background, coded)
        if shap_backend:
            import shap

            explainer = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
            return _Context(explainer,
                            np.atleast_1d(np.asarray(explainer.expected_value, dtype=float)))
        return _Context()

    def _explain_rows(self, model, data: ExplainData, context: _Context) -> Importances:
        view = forest_view(model)
        X = np.asarray(data.X, dtype=float)
        n = X.shape[0]
        expected = context.expected
        if context.explainer is not None:
            phi = np.asarray(context.explainer.shap_values(X, check_additivity=False),
                             dtype=float)
        elif context.background is not None:
            phi = interventional_shap(view.paths, view.rows(X), context.coded_background)
        else:
            phi, expected = path_dependent_shap(view.packed, view.rows(X))
        phi = phi.reshape(n, X.shape[1], -1)
        base = np.broadcast_to(expected, (n, expected.size))
        background = context.background
        extra = {"n_background": 0 if background is None else int(background.shape[0])}
        if view.multi_output:  # value columns: the outputs, or every output's classes
            per_output = view.output_classes
            values, base, explains = select_multi_output(
                phi, base, self.params["output"], view.n_outputs, per_output)
            return Importances(
                values=values, scope="local", feature_names=data.feature_names,
                unit="prediction" if per_output is None else OUTPUT_UNITS[view.output_unit],
                explains=explains, base_values=np.array(base), extra=extra,
            )
        if not view.classifier:
            return Importances(
                values=phi[:, :, 0], scope="local", feature_names=data.feature_names,
                unit="prediction", explains="prediction", base_values=base[:, 0].copy(),
                extra=extra,
            )
        values, base, explains = select_output(
            phi, base, base + phi.sum(axis=1), self.params["output"], view.classes,
            view.output_unit,
        )
        return Importances(
            values=values, scope="local", feature_names=data.feature_names,
            unit=OUTPUT_UNITS[view.output_unit], explains=explains, base_values=np.array(base),
            extra=extra,
        )
