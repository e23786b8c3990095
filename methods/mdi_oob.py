"""MDI-oob: MDI re-scored on out-of-bag rows (Li, Wang, Basu, Kumbier, Yu 2019)."""

from __future__ import annotations

from harness.estimators.debiased_mdi import DebiasedMDI


class MDIOob(DebiasedMDI):
    """MDI-oob(j) = 1/M Σ_T 1/|O_T| Σ_{i ∈ O_T} Σ_k f_{T,j,k}(x_i) y_{ik}.

    Li et al. 2019 ("A debiased MDI feature importance measure for random forests", Eq. 5):
    f_{T,j} is tree T's Saabas contribution of feature j (the in-bag node-value changes met
    along the path at splits on j), y the response (one-hot classes for a classifier), O_T the
    out-of-bag rows of T. On in-bag rows the same sum is the tree's unnormalised MDI with the
    squared-error / Gini criterion, which is why the OOB version removes the split-selection
    bias toward high-cardinality features. For classifiers it measures a Gini-type decrease
    whatever the forest's criterion. ``std`` is the standard error of the mean over trees.
    See :mod:`harness.estimators.debiased_mdi`.

    Complexity: O(T (n D + N_t C) + n p) for T trees of depth D and N_t nodes, n training
    rows of p features and C outputs: each row is routed down each tree once and the
    per-node sums are combined once (:mod:`harness.kernels.debiased`); coding the rows for
    the kernel (and reading rows that span many cache lines) grows with n p and dominates
    the growth in p from p ≈ 10³ on (at n = 1000, T = 100, D = 8).
    """

    name = "mdi_oob"
    scope = "global"
    family = "mdi"
    summary = "MDI-oob: Saabas contribution × y on out-of-bag rows (Li et al. 2019)"
    complexity = {"n": 1, "p": 1, "trees": 1, "depth": 1}
    parameters = {}
    term = 0
    explains = "out-of-bag MDI (Li et al. 2019)"
