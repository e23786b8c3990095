"""Local MDI (Sutera et al. 2021, Definition 1, Eq. 8)."""

from __future__ import annotations

from harness.core.method import ExplainData, Method
from harness.core.types import Importances
from harness.forest.view import forest_view
from harness.kernels.paths import compile_kernels, local_mdi_paths


class LocalMDI(Method):
    """Local MDI: Imp(X_m, x) = 1/N_T Σ_T Σ_{t ∋ x, v(t) = X_m} [i(t) - i(t_x)].

    Sutera et al. 2021, Definition 1 (Eq. 8): the impurity drops met along the path of ``x``,
    credited to the feature split on. Class-agnostic (one vector per sample). Identities:
    Σ_m Imp(X_m, x) = mean_T [i(root) - i(leaf_T(x))], and the mean over the training rows is
    the global MDI (Eq. 9; with bootstrap, the in-bag-count-weighted mean per tree).
    Cost: one compiled walk of each row's path per tree, about one ``predict``
    (:func:`harness.kernels.paths.local_mdi_paths`).
    """

    name = "local_mdi"
    model_needs = ("node_impurity",)
    scope = "local"
    family = "mdi"
    summary = "local MDI (Sutera et al. 2021, Eq. 8), impurity units per sample"
    parameters = {}
    rows_independent = True  # each row's path alone: explained in blocks (Method.explain)

    @classmethod
    def prepare(cls) -> None:
        super().prepare()
        compile_kernels()

    def _explain_rows(self, model, data: ExplainData, context: None) -> Importances:
        view = forest_view(model)
        return Importances(
            values=local_mdi_paths(view.paths, view.rows(data.X)), scope="local",
            feature_names=data.feature_names,
            unit=view.impurity_unit, explains="impurity",
        )
