"""Friedman #1 regression problem with its exact Sobol indices."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from sklearn.datasets import make_friedman1

from harness.core.dataset import DatasetSource
from harness.core.params import Interval, Param
from harness.core.types import Dataset, GroundTruth

_QUADRATURE_NODES = 200

# Variances of the additive terms for X_j ~ U[0, 1]:
# Var(20 (X3 - 1/2)^2) = 400 (1/80 - 1/144) = 400/180, Var(10 X4) = 100/12, Var(5 X5) = 25/12.
_ADDITIVE_VARIANCES = np.array([400.0 / 180.0, 100.0 / 12.0, 25.0 / 12.0])


@functools.cache
def sine_term_variances() -> tuple[float, float]:
    """``Var(f)`` and ``Var(E[f | X1])`` for ``f = 10 sin(pi X1 X2)``, X1, X2 ~ U[0, 1].

    Gauss-Legendre quadrature with 200 nodes per axis (the integrands are entire functions,
    so the result is exact to rounding). By symmetry ``Var(E[f | X2]) = Var(E[f | X1])``.
    """
    nodes, weights = np.polynomial.legendre.leggauss(_QUADRATURE_NODES)
    t, w = (nodes + 1.0) / 2.0, weights / 2.0
    f = 10.0 * np.sin(np.pi * np.outer(t, t))
    mean = w @ f @ w
    second_moment = w @ (f**2) @ w
    conditional_mean = f @ w  # E[f | X1 = t_i]
    return float(second_moment - mean**2), float(w @ conditional_mean**2 - mean**2)


def friedman1_var_y(noise: float) -> float:
    """``Var(Y) = Var(10 sin(pi X1 X2)) + 400/180 + 100/12 + 25/12 + noise^2`` of Friedman #1."""
    return sine_term_variances()[0] + float(_ADDITIVE_VARIANCES.sum()) + noise**2


def friedman1_sobol(n_features: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """First-order and total Sobol indices of Friedman #1, normalised by ``Var(Y)``.

    ``Y = 10 sin(pi X1 X2) + 20 (X3 - 1/2)^2 + 10 X4 + 5 X5 + noise * N(0, 1)`` (Friedman
    1991), inputs i.i.d. U[0, 1]. ``S_j = Var(E[m(X) | X_j]) / Var(Y)`` and
    ``ST_j = E[Var(m(X) | X_-j)] / Var(Y)`` with ``m = E[Y | X]`` (Sobol 1993; the target of
    Sobol-MDA, Bénard et al. 2022), ``Var(Y) = Var(m(X)) + noise^2``.

    Returns
    -------
    first, total : ndarrays of shape (n_features,)
    """
    var_sine, var_sine_first = sine_term_variances()
    var_y = friedman1_var_y(noise)
    first = np.zeros(n_features)
    total = np.zeros(n_features)
    first[:2] = var_sine_first
    total[:2] = var_sine - var_sine_first  # E[Var(f | X2)] = Var(f) - Var(E[f | X2])
    first[2:5] = total[2:5] = _ADDITIVE_VARIANCES
    return first / var_y, total / var_y


def friedman1_shapley(n_features: int, noise: float) -> np.ndarray:
    """Shapley effects of Friedman #1 (game ``v(U) = Var(E[m(X) | X_U])``) over ``Var(Y)``.

    Inputs are independent, so ``Sh_j = sum_{u contains j} V_u / |u|`` over the ANOVA
    variances V_u (Owen 2014; Song, Nelson & Staum 2016). The sine term has
    ``V_1 = V_2 = Var(E[f | X1])`` and ``V_12 = Var(f) - 2 V_1``, hence
    ``Sh_1 = Sh_2 = V_1 + V_12 / 2 = Var(f) / 2``; X3..X5 enter additively (``Sh_j = V_j``)
    and the other features not at all.

    Returns
    -------
    ndarray of shape (n_features,)
        Sums to ``Var(m(X)) / Var(Y)``.
    """
    var_sine, var_sine_first = sine_term_variances()
    shapley = np.zeros(n_features)
    shapley[:2] = var_sine_first + (var_sine - 2.0 * var_sine_first) / 2.0
    shapley[2:5] = _ADDITIVE_VARIANCES
    return shapley / friedman1_var_y(noise)


class Friedman1(DatasetSource):
    """Friedman #1 from :func:`sklearn.datasets.make_friedman1`, with exact Sobol indices.

    Only X1..X5 enter the response; the other features are irrelevant (indices 0). The truth
    also holds the Shapley effects and, inputs being independent, the Breiman-Cutler /
    train-test and Ishwaran-Kogalur MDA limits ``2 Var(Y) ST_j`` and ``Var(Y) ST_j``
    (Bénard, Da Veiga & Scornet 2022).
    """

    name = "friedman1"
    task = "regression"
    summary = "Friedman #1: sin interaction + quadratic + linear terms; exact Sobol indices"
    parameters = {
        "n_samples": Param(500, (Interval(int, 1, None),), "number of rows"),
        "n_features": Param(10, (Interval(int, 5, None),), "number of features (5 relevant)"),
        "noise": Param(1.0, (Interval(float, 0.0, None),), "standard deviation of the noise"),
    }

    def _load(self, params: dict[str, Any], seed: int) -> Dataset:
        n_features, noise = params["n_features"], params["noise"]
        random_state = int(np.random.default_rng(seed).integers(2**31 - 1))
        X, y = make_friedman1(
            n_samples=params["n_samples"],
            n_features=n_features,
            noise=noise,
            random_state=random_state,
        )
        first, total = friedman1_sobol(n_features, noise)
        truth = GroundTruth.from_sobol(
            np.arange(n_features) < 5, first, total, var_y=friedman1_var_y(noise),
            shapley=friedman1_shapley(n_features, noise),
        )
        return Dataset(
            name=self.name,
            X=np.asarray(X, dtype=np.float64),
            y=np.asarray(y, dtype=np.float64),
            task="regression",
            feature_names=[f"X{j}" for j in range(1, n_features + 1)],
            truth=truth,
            description="Friedman #1: 10 sin(pi X1 X2) + 20 (X3 - .5)^2 + 10 X4 + 5 X5 + noise",
        )
