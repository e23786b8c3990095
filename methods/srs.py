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
    """

    name = "srs"
    # 2: F follows the slides' step 2.3 (features are added and stay); L is strict
    version = 2
    summary = "sequential random subspace: RS seeded with the features found relevant"
    parameters = {
        **SUBSPACE_PARAMETERS,
        "alpha": Param(0.5, (Interval(float, 0, 1),),
                       "α: share of each tree's q features taken from those found relevant"),
    }

    def alpha(self) -> float:
        return self.params["alpha"]
