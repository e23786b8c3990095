"""SRS: sequential random subspace (Sutera et al., AISTATS 2018; seed 004, part 3)."""

from __future__ import annotations

from harness.core.params import Interval, Param
from harness.estimators.subspace_method import SUBSPACE_PARAMETERS, SubspaceMethod


class SequentialRandomSubspace(SubspaceMethod):
    """SRS: like RS, but each tree takes min(αq, |F|) of its q features from F, the features
    found relevant so far (seed 004, "Sequential Random Subspace").

    For a PC distribution, every relevant feature can be reached through a chain of
    conditionings on relevant features, so seeding trees with F finds features of degree
    k in about k p/q trees instead of (p/q)^k; with fewer than q relevant features SRS keeps
    RS's guarantee whatever α, and α < 1 keeps exploring. α = 0 is RS, draw for draw.

    Complexity: O(n_trees q n log n) for n training rows and q ∝ p features per tree (the
    scikit-learn ExtraTree fit, fully grown, on its q features and a probe); the given
    forest's trees and depth play no part.
    """

    name = "srs"
    # 2: F follows the slides' step 2.3 (features are added and stay); L is strict
    # 3: weighted rows are grown on with their weights, where they were declined
    version = 3
    summary = "sequential random subspace: RS seeded with the features found relevant"
    complexity = {"n": 1, "p": 1, "trees": 0, "depth": 0}
    parameters = {
        **SUBSPACE_PARAMETERS,
        "alpha": Param(0.5, (Interval(float, 0, 1),),
                       "α: share of each tree's q features taken from those found relevant"),
    }

    def alpha(self) -> float:
        return self.params["alpha"]
