"""Scornet's MDI experiment: ``Y = Σ_j √j X_j + ε`` with correlated ``(X1, X2)``."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.core.dataset import DatasetSource
from harness.core.params import Interval, Param
from harness.core.types import Dataset, GroundTruth, TruthVector
from harness.datasets.linear_gaussian import equicorrelated_shapley


def sqrt_weights_covariance(p: int, rho: float) -> np.ndarray:
    """Σ of the slides: unit variances, ``corr(X1, X2) = rho``, every other pair independent."""
    sigma = np.eye(p)
    sigma[0, 1] = sigma[1, 0] = rho
    return sigma


def explained_variance(p: int, rho: float) -> float:
    """``V[m(X)]`` for ``m(X) = Σ_j √j X_j``: ``Σ_j j + 2 rho √1 √2 = p (p + 1) / 2 + 2√2 rho``.

    This is the limit of Σ_j MDI_j for early-stopped trees in the additive model with
    independent inputs (Scornet 2022, additive-model theorem, summed over j); with fully grown
    trees the sum tends to ``V[m(X)] + σ²`` instead (Scornet 2022, first proposition).
    """
    return p * (p + 1) / 2.0 + 2.0 * np.sqrt(2.0) * rho


def sqrt_weights_truth(p: int, rho: float, noise_var: float) -> GroundTruth:
    """Exact Sobol indices, Shapley effects, MDA limits and, for rho = 0, the MDI limit.

    With coefficients ``a_j = √j`` and Σ of :func:`sqrt_weights_covariance`:
    ``S_j = (Σ a)_j² / V[Y]``, ``ST_j = a_j² / (Σ⁻¹)_jj / V[Y]`` (so ``(1 - rho²)/V[Y]`` and
    ``2 (1 - rho²)/V[Y]`` for X1 and X2), Shapley effects of the (X1, X2) block from
    :func:`harness.datasets.linear_gaussian.equicorrelated_shapley` and ``a_j²`` elsewhere;
    BC / train-test MDA limit ``2 a_j²`` and IK limit ``a_j²`` (Bénard, Da Veiga & Scornet
    2022; see ``linear_gaussian``). For independent inputs (rho = 0) the quantity
    ``mdi_limit = V[m_j(X_j)] = j`` is the limit of the MDI of early-stopped CART trees and
    forests (Scornet 2022, additive-model theorem); for rho ≠ 0 no limit is known ("MDI
    targets a quantity which is currently unknown", seed 002) and it is left out.
    """
    coef = np.sqrt(np.arange(1, p + 1, dtype=float))
    sigma = sqrt_weights_covariance(p, rho)
    var_y = explained_variance(p, rho) + noise_var
    first = (sigma @ coef) ** 2 / var_y
    total = coef**2 / np.diag(np.linalg.inv(sigma)) / var_y
    shapley = np.concatenate([equicorrelated_shapley(coef[:2], rho), coef[2:] ** 2]) / var_y
    truth = GroundTruth.from_sobol(np.ones(p, dtype=bool), first, total, var_y=var_y,
                                   shapley=shapley, breiman_limit=2.0 * coef**2,
                                   ik_limit=coef**2)
    if rho == 0.0:
        truth.quantities["mdi_limit"] = TruthVector(
            coef**2, unit="variance",
            description="V[m_j(X_j)] = j: limit of the MDI of early-stopped trees/forests in "
                        "the additive model with independent inputs (Scornet 2022)",
            compares_to=("mdi",))
    return truth


class ScornetSqrt(DatasetSource):
    """``Y = Σ_{j=1}^p √j X_j + ε``, X ~ N(0, Σ), ``corr(X1, X2) = rho``, ε ~ N(0, σ²).

    The MDI experiments of Scornet's slides (seed 002, "Experiments": p = 3, ``α_j = √j`` so
    that the importance of X_j is j when rho = 0; σ² = 3 for the bias of MDI(X1), σ² = 12 for
    the percent of correct rankings); Scornet, "Trees, forests, and impurity-based variable
    importance", Ann. IHP 2022. The true ranking is X_p > ... > X1 for every rho in (-1, 1)
    under the total Sobol index, the coefficients and the Shapley effects. Exact truth: see
    :func:`sqrt_weights_truth`.
    """

    name = "sqrt_weights"
    task = "regression"
    summary = "Y = Σ √j X_j + noise, corr(X1, X2) = rho (Scornet's MDI experiments)"
    parameters = {
        "n_samples": Param(1000, (Interval(int, 2, None),), "number of rows"),
        "p": Param(3, (Interval(int, 2, None),), "number of features"),
        "rho": Param(0.0, (Interval(float, -1.0, 1.0, closed="neither"),),
                     "correlation of X1 and X2"),
        "noise_var": Param(3.0, (Interval(float, 0.0, None),), "noise variance σ²"),
    }

    def _load(self, params: dict[str, Any], seed: int) -> Dataset:
        n, p, rho, noise_var = (params["n_samples"], params["p"], float(params["rho"]),
                                float(params["noise_var"]))
        rng = np.random.default_rng(seed)
        chol = np.linalg.cholesky(sqrt_weights_covariance(p, rho))
        X = rng.standard_normal((n, p)) @ chol.T
        y = X @ np.sqrt(np.arange(1, p + 1)) + np.sqrt(noise_var) * rng.standard_normal(n)
        return Dataset(
            name=self.name, X=X, y=y, task="regression",
            feature_names=[f"X{j}" for j in range(1, p + 1)],
            truth=sqrt_weights_truth(p, rho, noise_var),
            description=f"Y = sum_j sqrt(j) X_j + N(0, {noise_var:g}), p = {p}, "
                        f"corr(X1, X2) = {rho:g}",
        )
