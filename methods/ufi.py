"""UFI: unbiased feature importance with out-of-bag node statistics (Zhou & Hooker 2021)."""

from __future__ import annotations

from harness.estimators.debiased_mdi import DebiasedMDI


class UFI(DebiasedMDI):
    """UFI(j) = 1/M Σ_T Σ_{t: v(t)=j} Σ_c W'(c)/W'_0 Σ_k (μ'_k(c) − μ'_k(t)) (μ_k(c) − μ_k(t)).

    Zhou & Hooker 2021 ("Unbiased measurement of feature importance in tree-based methods",
    ACM TKDD 15(2), Sec. 3): the impurity decrease of each split, with the square of the
    in-bag node deviations μ(c) − μ(t) replaced by their product with the out-of-bag ones
    μ'(c) − μ'(t) (W' are out-of-bag weights, μ' out-of-bag means of y or of the one-hot
    classes). A split on a feature independent of y within the node then has expectation
    exactly 0; on in-bag rows the formula is the unnormalised squared-error / Gini MDI. Nodes
    without out-of-bag rows contribute 0. ``std`` is the standard error of the mean over
    trees. See :mod:`harness.estimators.debiased_mdi`.

    Complexity: O(T (n D + N_t C) + n p) for T trees of depth D and N_t nodes, n training
    rows of p features and C outputs: each row is routed down each tree once and the
    per-node sums are combined once (:mod:`harness.kernels.debiased`); coding the rows for
    the kernel (and reading rows that span many cache lines) grows with n p and dominates
    the growth in p from p ≈ 10³ on (at n = 1000, T = 100, D = 8).
    """

    name = "ufi"
    scope = "global"
    family = "mdi"
    summary = "UFI: impurity decrease with out-of-bag node means (Zhou & Hooker 2021)"
    complexity = {"n": 1, "p": 1, "trees": 1, "depth": 1}
    parameters = {}
    term = 1
    explains = "out-of-bag impurity decrease (Zhou & Hooker 2021)"
