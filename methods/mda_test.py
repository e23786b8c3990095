"""Train/Test MDA: permutation importance on held-out rows (scikit-learn's semantics)."""

from __future__ import annotations

import numpy as np

from harness.core.method import ExplainData
from harness.core.params import Interval, Param
from harness.core.types import Importances
from harness.estimators.oob import LOSS_PARAM, LossMethod
from harness.forest.losses import row_loss_increases, target_codes
from harness.forest.permutations import draw_seed
from harness.forest.view import forest_view
from harness.kernels.reroute.held_out import held_out_permutation_pass


class MDATrainTest(LossMethod):
    """MDA_TT(j) = mean over R repeats of L(forest on rows with column j permuted) − L(forest).

    The semantics of ``sklearn.inspection.permutation_importance`` with a loss as the score:
    column j of the held-out rows is permuted (one permutation per repeat and feature, from
    the keyed source shared with the OOB variants) and the whole forest predicts the permuted
    rows. A row is re-routed only from the first split on j where its permuted value leaves
    its path (:mod:`harness.kernels.reroute.held_out`), tree by tree. For independent inputs and
    squared error, MDA_TT → 2 V[Y] ST_j (Bénard, Da Veiga, Scornet 2022, Prop. 1 (i)).
    ``std`` is the standard deviation over repeats (scikit-learn's ``importances_std``).
    A boosted classifier's permuted margins go through its link (:meth:`Loss.linked`), so its
    loss is that of ``predict_proba`` on the permuted rows.

    Complexity: O(R (n T D + n p + T p)) for R repeats, n rows, T trees of depth D: each
    row's path is walked once per tree and re-walked, per repeat, only below the first split
    on j where its permuted value leaves it; the R (n, p) permutations and output shifts and
    a per-(tree, feature) step grow with p.
    """

    name = "mda_test"
    scope = "global"
    family = "mda"
    rows = "test"
    summary = "Train/Test MDA: permutation importance on held-out rows"
    complexity = {"n": 1, "p": 1, "trees": 1, "depth": None}
    # the limit E[L(Y, m(X_pij))] - E[L(Y, m(X))] of the Bayes model m is >= 0 for each loss
    # offered (2 V[Y] ST_j for squared error and independent inputs)
    value_range = (0.0, None)
    parameters = {
        "loss": LOSS_PARAM,
        "n_repeats": Param(5, (Interval(int, 1, None, "left"),), "permutations per feature"),
    }

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        view = forest_view(model)
        forest = view.packed
        loss = self.forest_loss(model, data.task)
        X32 = view.rows(data.X)
        targets = target_codes(view.classes, data.y)
        seed = draw_seed(rng)
        n_repeats = self.params["n_repeats"]
        # repeats share each tree's path walk; their shifts and permutations are held
        # together, in blocks of at most half the packed forest (the kernels' memory bound)
        repeat_bytes = X32.size * (8 * forest.n_values + 4)
        block = int(np.clip(forest.nbytes // (2 * repeat_bytes), 1, n_repeats))
        rows, ones = np.arange(len(X32)), np.ones(len(X32), dtype=np.int64)
        repeats = []
        for first in range(0, n_repeats, block):
            shift, base = held_out_permutation_pass(view.paths, X32, seed, first,
                                                    min(block, n_repeats - first))
            repeats.extend(row_loss_increases(loss.code, targets, base, one, ones, rows, False)
                           .mean(axis=0) for one in shift)
            del shift, base  # before the next block is allocated
        repeats = np.array(repeats)
        return Importances(
            values=repeats.mean(axis=0), scope="global", feature_names=data.feature_names,
            unit=loss.unit, explains=f"increase of the forest's held-out {loss.name}",
            std=repeats.std(axis=0), extra={"std_of": "repeats"},
        )
