"""Out-of-bag corrections of MDI: MDI-oob (Li et al. 2019) and UFI (Zhou & Hooker 2021).

Both re-score every split of a tree with rows the tree did not see. For a node t split on
feature j with children c, write mu(.) for the in-bag node values (the tree's own ``value``:
the mean of y, or the class frequencies) and, over the evaluation rows of the tree, W(.) for
their weight in a node, S(.) for their weighted target sum and mu'(.) = S(.) / W(.). Per tree,
with W_0 the evaluation weight at the root,

* MDI-oob:  (1 / W_0) Σ_c Σ_k S_k(c) (mu_k(c) − mu_k(t)),
  i.e. the mean over the rows of Σ_j (Saabas contribution of j) × y (Li et al. 2019, Eq. 5);
* UFI:      (1 / W_0) Σ_c W(c) Σ_k (mu'_k(c) − mu'_k(t)) (mu_k(c) − mu_k(t)),
  the in-bag/out-of-bag cross product of the node deviations that replaces the square in
  the variance / Gini decrease (Zhou & Hooker 2021, Sec. 3), centred on the node's OOB
  mean, so a split on a feature independent of y given the node gets exactly zero
  expectation.

Evaluated on the in-bag rows (weights = in-bag counts) both equal the tree's unnormalised
MDI with the squared-error or Gini criterion, term by term: Σ_c W(c) (mu(c) − mu(t))² is the
weighted impurity decrease. That identity is what the tests check; on out-of-bag rows the
split-selection bias of MDI (Strobl et al. 2007) disappears.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from harness.core.method import ExplainData
from harness.core.types import Importances, standard_error_of_mean
from harness.estimators.oob import OOBMethod
from harness.forest.inbag import target_matrix
from harness.kernels.debiased import debiased_mdi_terms


class DebiasedMDI(OOBMethod):
    """Shared body of ``mdi_oob`` and ``ufi``: one kernel pass, a mean over trees."""

    term: ClassVar[int] = 0  # 0: MDI-oob, 1: UFI (the kernel's output order)
    explains: ClassVar[str] = ""

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        inputs = self.oob_inputs(model, data)
        forest = inputs.forest
        targets = target_matrix(inputs.view, data.y)
        terms = debiased_mdi_terms(forest, inputs.X32, inputs.inbag.counts, targets, False)
        per_tree, scored = terms[self.term], terms[2] > 0
        per_tree = per_tree[scored]
        n_scored = per_tree.shape[0]
        std = standard_error_of_mean(per_tree)
        unit = "Gini decrease" if forest.classifier else "variance of Y"
        return Importances(
            values=per_tree.mean(axis=0), scope="global", feature_names=data.feature_names,
            unit=unit, explains=self.explains, std=std,
            extra={"std_of": "mean over trees", "n_trees_scored": int(n_scored)},
        )
