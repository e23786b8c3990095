"""Ishigami function: a classic sensitivity-analysis benchmark with closed-form indices."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.core.dataset import DatasetSource
from harness.core.params import Interval, Param
from harness.core.types import Dataset, GroundTruth


def ishigami_function(X: np.ndarray, a: float, b: float) -> np.ndarray:
    """``m(X) = sin X1 + a sin^2 X2 + b X3^4 sin X1`` (Ishigami & Homma 1990)."""
    X = np.asarray(X, dtype=float)
    return np.sin(X[:, 0]) + a * np.sin(X[:, 1]) ** 2 + b * X[:, 2] ** 4 * np.sin(X[:, 0])


def ishigami_anova(a: float, b: float) -> dict[str, float]:
    """The non-zero ANOVA (Hoeffding) variances of the Ishigami function, X ~ U[-pi, pi]^3.

    Closed forms (Ishigami & Homma 1990; Sobol & Levitan 1999):
    ``V1 = (1 + b pi^4 / 5)^2 / 2``, ``V2 = a^2 / 8``, ``V13 = b^2 pi^8 (1/18 - 1/50)``,
    ``V3 = V12 = V23 = V123 = 0``, and
    ``Var(m) = a^2 / 8 + b pi^4 / 5 + b^2 pi^8 / 18 + 1/2 = V1 + V2 + V13``.

    Returns
    -------
    dict
        Keys ``"1"``, ``"2"``, ``"13"`` and ``"total"`` (``Var(m(X))``).
    """
    pi4 = np.pi**4
    return {
        "1": 0.5 * (1.0 + b * pi4 / 5.0) ** 2,
        "2": a**2 / 8.0,
        "13": b**2 * pi4**2 * (1.0 / 18.0 - 1.0 / 50.0),
        "total": a**2 / 8.0 + b * pi4 / 5.0 + b**2 * pi4**2 / 18.0 + 0.5,
    }


def ishigami_indices(a: float, b: float, noise: float) -> dict[str, np.ndarray | float]:
    """Sobol indices and Shapley effects of Ishigami, normalised by ``Var(Y)``.

    ``Var(Y) = Var(m) + noise^2``. From the ANOVA variances of :func:`ishigami_anova`:
    ``S = (V1, V2, 0)``, ``ST = (V1 + V13, V2, V13)`` (Sobol 1993) and, inputs being
    independent, the Shapley effects ``Sh_j = sum_{u contains j} V_u / |u|``
    ``= (V1 + V13/2, V2, V13/2)`` (Owen 2014, Song, Nelson & Staum 2016), all over Var(Y).

    Returns
    -------
    dict
        ``"first"``, ``"total"``, ``"shapley"`` (ndarrays of shape (3,)) and ``"var_y"``.
    """
    v = ishigami_anova(a, b)
    var_y = v["total"] + noise**2
    return {
        "first": np.array([v["1"], v["2"], 0.0]) / var_y,
        "total": np.array([v["1"] + v["13"], v["2"], v["13"]]) / var_y,
        "shapley": np.array([v["1"] + v["13"] / 2.0, v["2"], v["13"] / 2.0]) / var_y,
        "var_y": var_y,
    }


class Ishigami(DatasetSource):
    """``Y = sin X1 + a sin^2 X2 + b X3^4 sin X1 + noise * eps``, X ~ U[-pi, pi]^3.

    A strongly non-linear, non-monotonic model with an interaction between X1 and X3 although
    X3 has no first-order effect (Ishigami & Homma 1990). Exact truth: first-order and total
    Sobol indices, Shapley effects and, inputs being independent, the Breiman-Cutler /
    train-test and Ishwaran-Kogalur MDA limits ``2 Var(Y) ST_j`` and ``Var(Y) ST_j``
    (Bénard, Da Veiga & Scornet 2022). Relevant features are those with ``ST_j > 0``.
    """

    name = "ishigami"
    task = "regression"
    summary = "Ishigami: sin X1 + a sin^2 X2 + b X3^4 sin X1; closed-form Sobol and Shapley"
    parameters = {
        "n_samples": Param(1000, (Interval(int, 1, None),), "number of rows"),
        "a": Param(7.0, (Interval(float),), "weight of sin^2 X2"),
        "b": Param(0.1, (Interval(float),), "weight of the X3^4 sin X1 interaction"),
        "noise": Param(0.0, (Interval(float, 0.0, None),), "standard deviation of the noise"),
    }

    def _load(self, params: dict[str, Any], seed: int) -> Dataset:
        a, b, noise, n = params["a"], params["b"], params["noise"], params["n_samples"]
        rng = np.random.default_rng(seed)
        X = rng.uniform(-np.pi, np.pi, size=(n, 3))
        y = ishigami_function(X, a, b) + noise * rng.standard_normal(n)
        indices = ishigami_indices(a, b, noise)
        truth = GroundTruth.from_sobol(
            indices["total"] > 0, indices["first"], indices["total"],
            var_y=indices["var_y"], shapley=indices["shapley"],
        )
        return Dataset(
            name=self.name,
            X=X,
            y=y,
            task="regression",
            feature_names=["X1", "X2", "X3"],
            truth=truth,
            description=f"Ishigami: sin X1 + {a} sin^2 X2 + {b} X3^4 sin X1 + {noise} eps, "
            "X ~ U[-pi, pi]^3",
        )
