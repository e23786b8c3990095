"""RS: random-subspace feature selection (Ho 1998; Sutera et al. 2018; seed 004, part 3)."""

from __future__ import annotations

from harness.estimators.subspace_method import SUBSPACE_PARAMETERS, SubspaceMethod


class RandomSubspace(SubspaceMethod):
    """RS: T extremely randomized trees, each on q features drawn uniformly at random.

    Imp_{q,T}(X_m) is the MDI accumulated over the trees. With K = 1 and T → ∞ it equals
    the depth-q truncated Louppe sum Σ_{k<q} 1/(C(p,k)(p−k)) Σ_{B ⊂ V^{-m}, |B|=k}
    I(X_m; Y | B) (seed 004, "RS for feature selection: correctness"), positive iff X_m is
    relevant when every relevant feature has degree < q. ``extra["selected"]`` is the set F
    of the practical rule (probe, L, β); see :mod:`harness.estimators.random_subspace`.

    Complexity: O(n_trees q n log n) for n training rows and q ∝ p features per tree (the
    scikit-learn ExtraTree fit, fully grown, on its q features and a probe); the given
    forest's trees and depth play no part.
    """

    name = "rs"
    # 2: 'sampled more than L times' (strictly); per-draw importance and sampled counts
    # 3: weighted rows are grown on with their weights, where they were declined
    version = 3
    summary = "random subspace: accumulated MDI of trees grown on q random features"
    complexity = {"n": 1, "p": 1, "trees": 0, "depth": 0}
    parameters = SUBSPACE_PARAMETERS
