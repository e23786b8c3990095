"""Geurts' XOR example: a weakly relevant feature more important than two strong ones."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.core.dataset import DatasetSource
from harness.core.params import Interval, NoneValue, Param
from harness.core.types import Dataset, GroundTruth, TruthVector, sage_population_truth
from harness.oracle.finite_table import DiscreteDistribution


def xor_population(eps: float):
    """The 8 rows ``(X1, X2, X3)``, ``Y = X1 xor X2`` and their probabilities.

    X1, X2 are fair independent bits and ``X3 = Y`` with probability ``1 - eps``.
    """
    X = ((np.arange(8)[:, None] >> np.array([2, 1, 0])) & 1).astype(np.int64)
    y = X[:, 0] ^ X[:, 1]
    prob = np.where(X[:, 2] == y, 1.0 - eps, eps) / 4.0
    return X, y, prob


class XOR(DatasetSource):
    """``Y = X1 xor X2``, ``X3`` a noisy copy of Y (Geurts 2016, "strongly versus weakly").

    X1 and X2 are strongly relevant, X3 is weakly relevant, yet with ``eps = 0.05`` the
    asymptotic MDI of totally randomized trees (Louppe et al. 2013, Thm 1, Eq. 2) is
    Imp(X1) = Imp(X2) = 0.262 < Imp(X3) = 0.476. The slides print the table with
    ``Y = 1`` when ``X1 == X2`` (``Y = not xor``, with X3 a noisy copy of ``X1 xor X2``);
    relabelling Y is a bijection, which leaves every entropy and hence every importance
    unchanged. Here ``Y = X1 xor X2`` and ``X3 = Y`` with probability ``1 - eps``.
    """

    name = "xor"
    task = "classification"
    summary = "Y = X1 xor X2 with a noisy copy X3 of Y (weak beats strong relevance)"
    parameters = {
        "eps": Param(
            0.05, (Interval(float, 0.0, 0.5, closed="right"),), "probability that X3 != Y"
        ),
        "n_samples": Param(
            None,
            (NoneValue(), Interval(int, 1, None)),
            "None: the 8 rows as an explicit distribution; an int: that many rows drawn",
        ),
    }

    def _load(self, params: dict[str, Any], seed: int) -> Dataset:
        eps, n = params["eps"], params["n_samples"]
        X_pop, y_pop, prob = xor_population(eps)
        weight = None
        if n is None:
            X, y, weight = X_pop, y_pop, prob
        else:
            rng = np.random.default_rng(seed)
            bits = rng.integers(0, 2, size=(n, 2))
            y = bits[:, 0] ^ bits[:, 1]
            x3 = np.where(rng.random(n) < eps, 1 - y, y)
            X = np.column_stack([bits, x3])
        population = DiscreteDistribution(X_pop, y_pop, prob)
        thm1 = population.thm1()
        truth = GroundTruth(
            relevant=np.ones(3, dtype=bool),
            quantities={
                "sage_population": sage_population_truth(thm1),
                "thm1": TruthVector(
                    thm1,
                    unit="bits",
                    description="Asymptotic MDI of totally randomized trees, Louppe et al. "
                    "(2013), Thm 1, Eq. 2",
                    compares_to=("mdi",),
                ),
                "thm2_local": TruthVector(
                    population.local_thm2(X),
                    unit="bits",
                    description="Asymptotic local MDI at each row, Sutera et al. (2021), "
                    "Thm 2, Eq. 10",
                    compares_to=("local_mdi",),
                ),
            },
        )
        return Dataset(
            name=self.name,
            X=X.astype(np.float64),
            y=y.astype(np.int64),
            task="classification",
            feature_names=["X1", "X2", "X3"],
            truth=truth,
            sample_weight=weight,
            population=n is None,
            description="Y = X1 xor X2; X3 = Y with probability 1 - eps",
        )
