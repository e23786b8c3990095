"""What the loss-based importances share: the loss parameter and the out-of-bag inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from harness.core.method import ExplainData, Method
from harness.core.params import Options, Param
from harness.estimators.warm_up import warm_up
from harness.forest.inbag import InBag, check_training_rows
from harness.forest.losses import LOSSES, Loss, loss_mismatch, resolve_loss, target_codes
from harness.forest.packed import PackedForest
from harness.forest.permutations import draw_seed
from harness.forest.view import ForestView, forest_view
from harness.kernels.reroute.permutation import PermutationPass, oob_permutation_pass

LOSS_PARAM = Param(
    "auto", (Options({"auto", *LOSSES}),),
    "auto: squared_error for regression, misclassification (Breiman) for classification",
)


class LossMethod(Method):
    """A method with a ``loss`` parameter that must fit the task."""

    needs_y: ClassVar[bool] = True

    @classmethod
    def prepare(cls) -> None:
        """Import the optional packages and compile the kernels on a tiny forest."""
        super().prepare()
        warm_up(cls)

    def skip(self, model: Any, data: ExplainData) -> str | None:
        reason = super().skip(model, data)
        if reason is None and "loss" in self.params:
            reason = loss_mismatch(self.params["loss"], data.task)
        return reason

    def loss(self, task: str) -> Loss:
        """The loss of the method's parameters, for a model's own predictions."""
        return resolve_loss(self.params["loss"], task)

    def forest_loss(self, model: Any, task: str) -> Loss:
        """The loss for the forest view's outputs, which the kernels score: through the view's
        link, so that a boosted classifier's margins are scored as its ``predict_proba``."""
        return self.loss(task).linked(forest_view(model).link)


@dataclass
class OOBInputs:
    """A forest with its training rows, checked, in the form the kernels take."""

    view: ForestView
    X32: np.ndarray  # the training rows coded by the view (ForestView.rows)
    targets: np.ndarray  # float y, or class index as float

    @property
    def forest(self) -> PackedForest:
        return self.view.packed

    @property
    def inbag(self) -> InBag:
        return self.view.inbag


class OOBMethod(LossMethod):
    """Base of the out-of-bag methods: they take the training rows, in fit order."""

    rows: ClassVar[str | None] = "train"
    model_needs: ClassVar[tuple[str, ...]] = ("inbag",)

    @classmethod
    def share(cls, model: Any) -> None:
        forest_view(model).build("inbag", "packed")

    def permutation_pass(self, inputs: OOBInputs, loss: Loss, rng: np.random.Generator,
                         ensemble: bool) -> PermutationPass:
        """The shared OOB permutation pass (one seed drawn from the cell's generator, so the
        MDA variants permute identically): per-tree loss increases or, if ``ensemble``,
        per-row output shifts and the OOB output (:func:`oob_permutation_pass`)."""
        return oob_permutation_pass(inputs.forest, inputs.X32, inputs.inbag.counts,
                                    inputs.targets, loss.code, draw_seed(rng), ensemble)

    def oob_inputs(self, model: Any, data: ExplainData) -> OOBInputs:
        """Check that ``data`` holds the training rows and pack everything for the kernels."""
        view = forest_view(model)
        rows = view.rows(data.X)
        check_training_rows(view, data.X, data.y, rows=rows)
        return OOBInputs(view=view, X32=rows, targets=target_codes(view.classes, data.y))
