"""Linear model with equicorrelated Gaussian inputs and its exact Sobol indices."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.dataset import DatasetSource
from harness.errors import InvalidParameterError
from harness.params import FloatVector, Interval, Param
from harness.types import Dataset, GroundTruth


def equicorrelation(p: int, rho: float) -> np.ndarray:
    """Unit variances, every off-diagonal entry ``rho``."""
    return (1.0 - rho) * np.eye(p) + rho * np.ones((p, p))


def linear_gaussian_sobol(
    coef: np.ndarray, rho: float, noise: float
) -> tuple[np.ndarray, np.ndarray]:
    """First-order and total Sobol indices of ``Y = coef . X + noise * eps``, X ~ N(0, Sigma).

    ``S_j = Var(E[Y | X_j]) / Var(Y) = (Sigma coef)_j^2 / Var(Y)`` (unit variances) and
    ``ST_j = E[Var(m(X) | X_-j)] / Var(Y) = coef_j^2 / (Sigma^-1)_jj / Var(Y)``, the total
    index of Sobol (1993) as targeted by Sobol-MDA (Benard et al. 2022), both normalised by
    ``Var(Y) = coef' Sigma coef + noise^2`` (noise included).
    """
    sigma = equicorrelation(len(coef), rho)
    var_y = float(coef @ sigma @ coef) + noise**2
    first = (sigma @ coef) ** 2 / var_y
    total = coef**2 / np.diag(np.linalg.inv(sigma)) / var_y
    return first, total


class LinearGaussian(DatasetSource):
    """``Y = coef . X + noise * eps`` with X ~ N(0, Sigma), Sigma equicorrelated.

    Sigma has unit variances and off-diagonal ``rho``; it is positive definite iff
    ``-1/(p-1) < rho < 1``. Relevant features are those with a non-zero coefficient.
    """

    name = "linear_gaussian"
    task = "regression"
    summary = "Linear model, equicorrelated Gaussian inputs; exact Sobol indices"
    parameters = {
        "n_samples": Param(500, (Interval(int, 2, None),), "number of rows"),
        "coef": Param(
            (1.0, 1.0, 0.5, 0.5, 0.0, 0.0), (FloatVector(),), "coefficients (one per feature)"
        ),
        "rho": Param(
            0.0,
            (Interval(float, -1.0, 1.0, closed="neither"),),
            "correlation between any two features, in (-1/(p-1), 1)",
        ),
        "noise": Param(0.5, (Interval(float, 0.0, None),), "standard deviation of the noise"),
    }

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        p, rho = len(self.params["coef"]), self.params["rho"]
        low = -1.0 / (p - 1) if p > 1 else -1.0
        if not rho > low:
            raise InvalidParameterError(
                f"The 'rho' parameter of linear_gaussian must be a float in ({low:.6g}, 1) "
                f"with {p} coefficients (Sigma must be positive definite). Got {rho!r} instead."
            )

    def _load(self, params: dict[str, Any], seed: int) -> Dataset:
        coef = np.asarray(params["coef"], dtype=np.float64)
        rho, noise, n = params["rho"], params["noise"], params["n_samples"]
        p = len(coef)
        rng = np.random.default_rng(seed)
        chol = np.linalg.cholesky(equicorrelation(p, rho))
        X = rng.standard_normal((n, p)) @ chol.T
        y = X @ coef + noise * rng.standard_normal(n)
        first, total = linear_gaussian_sobol(coef, rho, noise)
        truth = GroundTruth.from_sobol(coef != 0, first, total)
        return Dataset(
            name=self.name,
            X=X,
            y=y,
            task="regression",
            feature_names=[f"X{j}" for j in range(1, p + 1)],
            truth=truth,
            description=f"Y = coef . X + {noise} eps, X ~ N(0, equicorrelated rho={rho})",
        )
