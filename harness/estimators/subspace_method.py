"""What ``rs`` and ``srs`` share: their parameters and the call into the tree grower."""

from __future__ import annotations

import functools
import math
from typing import Any, ClassVar

import numpy as np

from harness.core.errors import BadInputError
from harness.core.method import ExplainData, Method
from harness.core.params import Boolean, Interval, Options, Param
from harness.core.types import Importances
from harness.estimators.random_subspace import UPDATES, SubspaceSettings, grow_with_curve

SUBSPACE_PARAMETERS: dict[str, Param] = {
    "n_trees": Param(200, (Interval(int, 1, None),), "T, trees grown"),
    "q": Param(0.3, (Interval(int, 1, None), Interval(float, 0, 1, "right")),
               "features per tree: a count, or a fraction of p (rounded, at least 1)"),
    "max_features": Param("all", (Interval(int, 1, None), Interval(float, 0, 1, "right"),
                                  Options({"all", "sqrt", "log2"})),
                          "K, features tried per node among the tree's q ('all': K = q)"),
    "probe": Param(True, (Boolean(),), "add a permuted probe column to every tree"),
    "min_sampled": Param(5, (Interval(int, 1, None),),
                         "L: a feature must be sampled more than L times to join F"),
    "beta": Param(0.95, (Interval(float, 0, 1),),
                  "β: share of its trees in which a feature must beat the probe"),
    "update": Param("add", (Options(set(UPDATES)),),
                    "how F follows the probe rule: 'add' (seed 004's step 2.3: a feature "
                    "that qualifies joins F for good) or 'recompute' (F = the features that "
                    "qualify now)"),
    "hold_out": Param(0, (Interval(int, 0, None), Interval(float, 0, 1, "neither")),
                      "rows (a count, or a fraction) kept out of the growing to score the "
                      "trees on (seed 004's 'test' rows); 0: grow on every row"),
    "curve_step": Param(0, (Interval(int, 0, None),),
                        "record the importances, |F| and the held-out score after every "
                        "this many trees in extra['curve'] (seed 004's curves); 0: none"),
}


class SubspaceMethod(Method):
    """Base of the random-subspace selectors: they grow their own trees on the training
    rows (the forest passed in only lends its split criterion) and return the accumulated
    MDI, with the selected set F in ``extra``.

    Weighted rows (an explicit distribution's support: the LED and XOR tables) are grown on
    with their weights, so each tree's MDI is that of the distribution (with K = 1 and q = p,
    Louppe et al. 2013, Thm 1, as T grows); they are grown on whole (``hold_out`` 0).
    """

    scope: ClassVar[str] = "global"
    weighted_rows: ClassVar[str | None] = "honoured"
    family: ClassVar[str] = "random subspace"
    needs_y: ClassVar[bool] = True
    rows: ClassVar[str | None] = "train"

    def alpha(self) -> float:
        return 0.0

    def skip(self, model: Any, data: ExplainData) -> str | None:
        reason = super().skip(model, data)
        if reason is None and np.isnan(data.X).any() and not _extra_trees_grow_on_nan():
            reason = (f"{self.name} grows its own ExtraTrees on X, and this scikit-learn's "
                      "ExtraTree refuses NaN (it accepts missing values from 1.6 on)")
        if reason is None and data.weighted and self.params["hold_out"] != 0:
            reason = (f"{self.name} grows on weighted rows (an explicit distribution's "
                      f"support) whole: hold_out={self.params['hold_out']!r} would take part "
                      "of the support away; use hold_out=0.")
        return reason

    def settings(self, p: int, model: Any) -> SubspaceSettings:
        q = self.params["q"]
        q = q if isinstance(q, int) else max(1, round(q * p))
        k = self.params["max_features"]
        return SubspaceSettings(
            n_trees=self.params["n_trees"], q=min(q, p),
            max_features=None if k == "all" else k, alpha=self.alpha(),
            min_sampled=self.params["min_sampled"], beta=self.params["beta"],
            probe=self.params["probe"], criterion=getattr(model, "criterion", None),
            update=self.params["update"])

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        settings = self.settings(data.X.shape[1], model)
        seed = int(rng.integers(np.iinfo(np.int32).max))
        n = len(data.y)
        size = self.params["hold_out"]
        size = size if isinstance(size, int) else round(size * n)
        if size >= n:
            raise BadInputError(f"hold_out must leave rows to grow on: {n} rows given, "
                                f"hold_out={self.params['hold_out']!r}.")
        held_out = np.sort(rng.choice(n, size=size, replace=False))
        step = self.params["curve_step"] or settings.n_trees
        weights = data.sample_weight if data.weighted else None  # equal: as unweighted
        result, curve = grow_with_curve(data.X, data.y, data.task == "classification",
                                        settings, seed, step, held_out, weights)
        extra = {}
        if self.params["curve_step"]:
            extra["curve"] = {
                "n_trees": curve.n_trees, "n_selected": curve.n_selected,
                "held_out_score": curve.held_out_score,
                "held_out_score_of": "accuracy" if data.task == "classification" else "R²",
                "sampled": [list(map(int, v)) for v in curve.sampled],
                "importances": [list(map(float, v)) for v in curve.importances]}
        return Importances(
            values=result.importances, scope="global", feature_names=data.feature_names,
            unit="MDI share per tree", explains="MDI accumulated over the subspace trees",
            extra={"selected": [bool(s) for s in result.selected],
                   "n_selected": int(result.selected.sum()), "q": settings.q,
                   "sampled": [int(s) for s in result.sampled],
                   "beat_probe": [int(s) for s in result.beat_probe],
                   "importance_per_draw": [float(v) for v in result.importance_per_draw],
                   "seed": seed, "n_held_out": int(size), "expected_trees_per_feature":
                   math.floor(settings.n_trees * settings.q / data.X.shape[1]), **extra},
        )


@functools.cache
def _extra_trees_grow_on_nan() -> bool:
    """Whether scikit-learn's ExtraTree fits rows with NaN (random splitter: from 1.6 on),
    asked of the tree itself rather than read from a version table."""
    from sklearn.tree import ExtraTreeRegressor

    try:
        ExtraTreeRegressor(random_state=0).fit([[np.nan], [0.0], [1.0]], [0.0, 1.0, 2.0])
    except ValueError:
        return False
    return True
