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
    A multi-output regressor's node impurity is scikit-learn's multi-output one, the mean over
    outputs of each output's impurity, so its local MDI (and its unit) is of that mean.
    Cost: one compiled walk of each row's path per tree, about one ``predict``
    (:func:`harness.kernels.paths.local_mdi_paths`).

    Complexity: O(n (T D + p)) for n rows, T trees of depth D: one root-to-leaf walk per
    (row, tree), the cost of a predict (Sutera et al. 2021, Sec. 4), plus the (n, p) output,
    which dominates from p ≈ T D on (p = 800 at the bench's base point): stated (0, 1)
    on p, the walks' order and the output's.
    """

    name = "local_mdi"
    model_needs = ("node_impurity",)
    scope = "local"
    family = "mdi"
    multi_output = True  # of the impurity the trees were grown with (see above)
    summary = "local MDI (Sutera et al. 2021, Eq. 8), impurity units per sample"
    complexity = {"n": 1, "p": (0, 1), "trees": 1, "depth": 1}
    parameters = {}
    rows_independent = True  # each row's path alone: explained in blocks (Method.explain)

    @classmethod
    def prepare(cls) -> None:
        super().prepare()
        compile_kernels()

    def block_row_values(self, model, n_features: int) -> int:
        """A value per feature, whatever the model's outputs (one impurity per node)."""
        return n_features

    def _explain_rows(self, model, data: ExplainData, context: None) -> Importances:
        view = forest_view(model)
        return Importances(
            values=local_mdi_paths(view.paths, view.rows(data.X)), scope="local",
            feature_names=data.feature_names,
            unit=view.impurity_unit, explains="impurity",
        )
