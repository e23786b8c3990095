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
from numba import njit, prange

from harness.method import ExplainData
from harness.oob import target_matrix
from harness.oob_method import OOBMethod
from harness.packed import child
from harness.types import Importances


@njit(cache=True)
def _node_sums(left, right, feature, threshold, start, size, X32, weights, targets):
    """Weight and weighted target sum of the rows reaching every node of one tree."""
    n_values = targets.shape[1]
    weight = np.zeros(size)
    total = np.zeros((size, n_values))
    for i in range(X32.shape[0]):
        w = weights[i]
        if w == 0.0:
            continue
        node = 0
        while True:
            weight[node] += w
            for k in range(n_values):
                total[node, k] += w * targets[i, k]
            if left[start + node] == -1:
                break
            node = child(left, right, feature, threshold, start, node, X32, i)
    return weight, total


@njit(parallel=True, cache=True)
def debiased_mdi_terms(left, right, feature, threshold, value, offsets, X32, counts,
                       targets, inbag):
    """Per-tree MDI-oob and UFI terms, shape (n_trees, p) each, and each tree's W_0.

    Parameters
    ----------
    counts : ndarray (n, n_trees)
        In-bag counts of the training rows.
    targets : ndarray (n, n_values)
        y as a column, or the one-hot classes.
    inbag : bool
        Score with the in-bag rows, weighted by their counts (the MDI identity), instead of
        the out-of-bag rows (weight one each). scikit-learn >= 1.7 draws a weighted
        bootstrap in proportion to ``sample_weight`` and fits each tree with the bare
        counts, so counts are the trees' only row weights.
    """
    n, p = X32.shape
    n_trees = offsets.size - 1
    n_values = value.shape[1]
    mdi_oob = np.zeros((n_trees, p))
    ufi = np.zeros((n_trees, p))
    root_weight = np.zeros(n_trees)
    for t in prange(n_trees):
        start = offsets[t]
        size = offsets[t + 1] - start
        weights = np.empty(n)
        for i in range(n):
            if inbag:
                weights[i] = counts[i, t]
            else:
                weights[i] = 1.0 if counts[i, t] == 0 else 0.0
        weight, total = _node_sums(left, right, feature, threshold, start, size, X32,
                                   weights, targets)
        root_weight[t] = weight[0]
        if weight[0] == 0.0:
            continue
        for node in range(size):
            if left[start + node] == -1 or weight[node] == 0.0:
                continue
            j = feature[start + node]
            for side in range(2):
                c = left[start + node] if side == 0 else right[start + node]
                if weight[c] == 0.0:
                    continue
                share = weight[c] / weight[node]
                for k in range(n_values):
                    drop = value[start + c, k] - value[start + node, k]
                    mdi_oob[t, j] += total[c, k] * drop
                    ufi[t, j] += (total[c, k] - share * total[node, k]) * drop
        for j in range(p):
            mdi_oob[t, j] /= weight[0]
            ufi[t, j] /= weight[0]
    return mdi_oob, ufi, root_weight


class DebiasedMDI(OOBMethod):
    """Shared body of ``mdi_oob`` and ``ufi``: one kernel pass, a mean over trees."""

    term: ClassVar[int] = 0  # 0: MDI-oob, 1: UFI (the kernel's output order)
    explains: ClassVar[str] = ""

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        inputs = self.oob_inputs(model, data)
        forest = inputs.forest
        targets = target_matrix(forest, model, data.y)
        terms = debiased_mdi_terms(forest.left, forest.right, forest.feature,
                                   forest.threshold, forest.value, forest.offsets,
                                   inputs.X32, inputs.inbag.counts, targets, False)
        per_tree, scored = terms[self.term], terms[2] > 0
        per_tree = per_tree[scored]
        n_scored = per_tree.shape[0]
        std = per_tree.std(axis=0, ddof=1) / np.sqrt(n_scored) if n_scored > 1 else None
        unit = "Gini decrease" if forest.classifier else "variance of Y"
        return Importances(
            values=per_tree.mean(axis=0), scope="global", feature_names=data.feature_names,
            unit=unit, explains=self.explains, std=std,
            extra={"std_of": "mean over trees", "n_trees_scored": int(n_scored)},
        )
