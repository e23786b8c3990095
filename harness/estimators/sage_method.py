"""What the two SAGE methods share: parameters, the loss, the labels and the background."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from harness.core.method import ExplainData, Method
from harness.core.params import Interval, Options, Param
from harness.forest.inbag import class_codes
from harness.forest.view import forest_view

SAGE_LOSSES = {"cross_entropy": "cross entropy", "mse": "mse"}  # ours -> sage's names
SAGE_UNITS = {"cross_entropy": "nats (cross-entropy)", "mse": "squared error (units of y squared)"}

SAGE_PARAMETERS: dict[str, Param] = {
    "loss": Param("auto", (Options({"auto", *SAGE_LOSSES}),),
                  "auto: cross_entropy for classification, mse for regression"),
    "n_background": Param(64, (Interval(int, 1, None, "left"),),
                          "background rows of the marginal imputation (drawn with the seed)"),
    "thresh": Param(0.025, (Interval(float, 0, 1, "neither"),),
                    "stop when max std / (max - min) of the values is below this (sage's rule)"),
    "batch_size": Param(256, (Interval(int, 1, None, "left"),),
                        "samples between convergence checks"),
    "max_permutations": Param(20000, (Interval(int, 1, None, "left"),),
                              "cap on sampled (row, permutation) pairs"),
}


class SageMethod(Method):
    """Base of the SAGE estimators (Covert, Lundberg, Lee 2020).

    v(S) = −E[ℓ(f_S(X_S), Y)]; the SAGE value of j is its Shapley value. With cross-entropy
    ℓ and the conditional imputation, v(S) = −H(Y | X_S) + const, so the population SAGE
    values are Shapley values of I(Y; X_S), which for totally randomized trees are Louppe's
    Thm 1 (Sutera et al. 2021, Sec. 5) — in nats here (sage's unit), bits × ln 2.
    """

    scope: ClassVar[str] = "global"
    # the rows are drawn with their weights (sage: a weighted resample; tree_sage: row_weights)
    weighted_rows: ClassVar[str | None] = "honoured"
    family: ClassVar[str] = "sage"
    needs_y: ClassVar[bool] = True

    def skip(self, model: Any, data: ExplainData) -> str | None:
        reason = super().skip(model, data)
        if reason is None:
            loss = self.loss_name(data.task)
            if data.task == "regression" and loss == "cross_entropy":
                reason = "loss=cross_entropy needs class probabilities; for regression use mse."
            elif data.task == "classification" and loss == "mse":
                reason = "loss=mse is for regression here; for classification use cross_entropy."
        return reason

    def loss_name(self, task: str) -> str:
        loss = self.params["loss"]
        return ("cross_entropy" if task == "classification" else "mse") if loss == "auto" else loss

    @staticmethod
    def targets(model: Any, data: ExplainData) -> np.ndarray:
        """Class index per row for classifiers, float y for regressors."""
        if data.task == "classification":
            return class_codes(forest_view(model).classes, np.asarray(data.y))
        return np.asarray(data.y, dtype=np.float64)

    def _reporter(self, progress):
        """on_batch callback turning (samples, convergence ratio) into a fraction done: the
        ratio falls like 1/sqrt(samples), so sage's estimate (ratio / thresh)^2 of the
        samples still needed gives the fraction; the cap on samples bounds it too."""
        thresh, cap = self.params["thresh"], self.params["max_permutations"]

        def report(samples: int, ratio: float) -> None:
            needed = samples * max(ratio / thresh, 1.0) ** 2
            progress(max(samples / min(needed, cap), samples / cap))

        return report

    def background(self, data: ExplainData, rng: np.random.Generator) -> np.ndarray:
        """``n_background`` rows of the explained rows, drawn without replacement (the first
        draw from the cell's generator, so both SAGE methods get the same background)."""
        n = data.X.shape[0]
        size = min(self.params["n_background"], n)
        return data.X[np.sort(rng.choice(n, size=size, replace=False))]
