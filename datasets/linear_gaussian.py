"""Linear model with block-equicorrelated Gaussian inputs and its exact importances."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.linalg import block_diag

from harness.core.dataset import DatasetSource
from harness.core.errors import InvalidParameterError
from harness.core.params import FloatVector, Interval, NoneValue, Options, Param
from harness.core.spec import format_spec
from harness.core.types import Dataset, GroundTruth


def equicorrelation(p: int, rho: float) -> np.ndarray:
    """Unit variances, every off-diagonal entry ``rho``."""
    return (1.0 - rho) * np.eye(p) + rho * np.ones((p, p))


def block_equicorrelation(p: int, rho: float, groups: int = 1) -> np.ndarray:
    """Block-diagonal Sigma: ``groups`` contiguous blocks of ``p / groups`` features.

    Each block is :func:`equicorrelation` with ``rho``; features in different blocks are
    uncorrelated (hence independent, being jointly Gaussian). ``groups = 1`` gives exactly
    ``equicorrelation(p, rho)``.
    """
    block = equicorrelation(p // groups, rho)
    return block if groups == 1 else block_diag(*[block] * groups)


def noise_std(coef: np.ndarray, rho: float, groups: int, noise: float,
              noise_fraction: float | None) -> float:
    """The noise standard deviation: ``noise``, or the one giving ``noise_fraction`` of Var(Y).

    With ``f = noise_fraction``, ``noise^2 = f / (1 - f) Var(m(X))`` so that
    ``noise^2 / Var(Y) = f`` with ``Var(m(X)) = coef' Sigma coef`` (Bénard, Da Veiga & Scornet
    2022 use ``f = 0.1``).
    """
    if noise_fraction is None:
        return float(noise)
    coef = np.asarray(coef, dtype=float)
    var_m = float(coef @ block_equicorrelation(len(coef), rho, groups) @ coef)
    return float(np.sqrt(noise_fraction / (1.0 - noise_fraction) * var_m))


def linear_gaussian_sobol(
    coef: np.ndarray, rho: float, noise: float, groups: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """First-order and total Sobol indices of ``Y = coef . X + noise * eps``, X ~ N(0, Sigma).

    ``S_j = Var(E[Y | X_j]) / Var(Y) = (Sigma coef)_j^2 / Var(Y)`` (unit variances) and
    ``ST_j = E[Var(m(X) | X_-j)] / Var(Y) = coef_j^2 / (Sigma^-1)_jj / Var(Y)``, the total
    index of Sobol (1993) as targeted by Sobol-MDA (Bénard et al. 2022), both normalised by
    ``Var(Y) = coef' Sigma coef + noise^2`` (noise included); Sigma is
    :func:`block_equicorrelation`.
    """
    coef = np.asarray(coef, dtype=float)
    p = len(coef)
    sigma = block_equicorrelation(p, rho, groups)
    var_y = float(coef @ sigma @ coef) + noise**2
    first = (sigma @ coef) ** 2 / var_y
    # every block has the same inverse
    inverse_diagonal = np.tile(np.diag(np.linalg.inv(equicorrelation(p // groups, rho))), groups)
    total = coef**2 / inverse_diagonal / var_y
    return first, total


def equicorrelated_shapley(coef: np.ndarray, rho: float) -> np.ndarray:
    """Exact Shapley effects of ``m(X) = coef . X``, X ~ N(0, equicorrelation(b, rho)).

    The game is ``v(U) = Var(E[m(X) | X_U])`` (Owen 2014; Song, Nelson & Staum 2016), not
    normalised. With ``a = Sigma coef`` (``a_i = (1 - rho) c_i + rho sum(c)``) the Gaussian
    conditional expectation gives ``v(U) = a_U' Sigma_UU^-1 a_U``. For ``s = |U|``,
    ``Sigma_UU^-1 = (I - rho / (1 + (s-1) rho) 11') / (1 - rho)``, and since
    ``a_i - a_k = (1 - rho)(c_i - c_k)``,

        v(U) = (1 - rho) (sum_U c_i^2 - (sum_U c_i)^2 / s) + (sum_U a_i)^2 / (s (1 + (s-1) rho)),

    a function of ``s`` and of the sums of ``c``, ``c^2`` and ``a`` over U only (free of the
    cancellation in ``1 / (1 - rho)`` as rho nears 1). The Shapley weights
    ``s! (b-s-1)! / b!`` give every size ``s`` a total weight ``1/b``, shared equally by the
    subsets of that size, so ``Sh_j = (1/b) sum_s E_s[v(U + j) - v(U)]`` with U a uniform
    random s-subset of the ``N = b - 1`` other features. These expectations only need the
    mean ``s mu`` and variance ``s (N-s)/(N-1) sigma^2`` of sums drawn without replacement
    (mu, sigma^2: mean and population variance of the N values), so the result is exact in
    O(b^2) operations for any coefficients, where enumerating count vectors over the classes
    of equal coefficients would grow with the product of the class sizes.

    Parameters
    ----------
    coef : ndarray of shape (b,)
        Coefficients of the block.
    rho : float
        Correlation of any two features, in ``(-1/(b-1), 1)``.

    Returns
    -------
    ndarray of shape (b,)
        Sums to ``v(all) = coef' Sigma coef`` (efficiency).
    """
    c = np.asarray(coef, dtype=float)
    b = len(c)
    if b == 1:
        return c**2
    a = (1.0 - rho) * c + rho * c.sum()
    n_others = b - 1
    s = np.arange(b, dtype=float)[None, :]  # |U|, U among the others of feature j (rows)
    shrink = s * (n_others - s) / (n_others - 1) if n_others > 1 else np.zeros_like(s)

    def sum_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of sum_U x over a uniform s-subset U of the others of j."""
        mean = (x.sum() - x) / n_others
        centred = x - x.mean()  # against cancellation in the variance
        variance = ((np.sum(centred**2) - centred**2) / n_others
                    - ((centred.sum() - centred) / n_others) ** 2)
        return s * mean[:, None], shrink * variance[:, None]

    mean_c, var_c = sum_moments(c)
    mean_a, var_a = sum_moments(a)
    sum_c2 = s * ((np.sum(c**2) - c**2) / n_others)[:, None]
    cj, aj = c[:, None], a[:, None]

    size = s + 1.0  # U + j
    with_j = ((1.0 - rho) * (sum_c2 + cj**2 - (var_c + (mean_c + cj) ** 2) / size)
              + (var_a + (mean_a + aj) ** 2) / (size * (1.0 + s * rho)))
    safe_s = np.maximum(s, 1.0)  # v(empty set) = 0
    without_j = np.where(
        s > 0,
        (1.0 - rho) * (sum_c2 - (var_c + mean_c**2) / safe_s)
        + (var_a + mean_a**2) / (safe_s * (1.0 + (safe_s - 1.0) * rho)),
        0.0,
    )
    return (with_j - without_j).mean(axis=1)


def linear_gaussian_shapley(coef: np.ndarray, rho: float, groups: int = 1) -> np.ndarray:
    """Shapley effects (not normalised) of ``coef . X`` with block-equicorrelated inputs.

    The blocks are independent and ``m`` is additive across them, so the game
    ``v(U) = Var(E[m(X) | X_U])`` is the sum of the block games and the Shapley value of a
    feature is its value in the game of its own block (additivity and null players of the
    Shapley value; Owen 2014), given by :func:`equicorrelated_shapley`.

    Parameters
    ----------
    coef : ndarray of shape (p,)
    rho : float
        Correlation inside a block.
    groups : int
        Number of contiguous blocks of ``p / groups`` features.

    Returns
    -------
    ndarray of shape (p,)
        Sums to ``coef' Sigma coef``; divide by ``Var(Y)`` for the normalised effects.
    """
    coef = np.asarray(coef, dtype=float)
    blocks = coef.reshape(groups, len(coef) // groups)
    return np.concatenate([equicorrelated_shapley(block, rho) for block in blocks])


def conditional_completions(X: np.ndarray, keep: np.ndarray, rho: float, groups: int,
                            normals: np.ndarray) -> np.ndarray:
    """Rows that keep ``X``'s columns in ``keep`` and draw the others from their exact law
    given them, X ~ N(0, Sigma) with Sigma :func:`block_equicorrelation`.

    In a block of ``b`` features where ``k`` are kept with sum ``s``, the others are
    Gaussian given them with mean ``rho s / (1 - rho + k rho)`` each and covariance
    ``(1 - rho) (I + g 11')``, ``g = rho / (1 - rho + k rho)`` (Gaussian conditioning with
    the equicorrelated inverse, Sherman-Morrison); a draw is ``sqrt(1 - rho) (e + d (1'e) 1)``
    with ``d = (sqrt(1 + g m) - 1) / m`` for the ``m = b - k`` drawn features (the symmetric
    square root of ``I + g 11'``), so every rho of the valid range (negative ones too) works.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        The rows whose kept columns are conditioned on.
    keep : ndarray of bool, shape (p,)
        The set U kept.
    rho, groups : float, int
        The distribution (``groups`` contiguous blocks of ``p / groups`` features).
    normals : ndarray of shape (n, r, p)
        Standard normal draws, ``r`` completions per row (the caller's: the same draws for
        every set give common random numbers).

    Returns
    -------
    ndarray of shape (n, r, p)
    """
    n, p = X.shape
    block = p // groups
    kept = keep.reshape(groups, block)
    k = kept.sum(axis=1).astype(float)  # (groups,)
    sums = (X.reshape(n, groups, block) * kept).sum(axis=2)  # (n, groups)
    denominator = 1.0 - rho + k * rho
    mean = rho * sums / denominator
    drawn = normals.reshape(n, -1, groups, block) * ~kept
    m = np.maximum(block - k, 1.0)
    shift = (np.sqrt(1.0 + rho / denominator * m) - 1.0) / m
    noise = np.sqrt(1.0 - rho) * (drawn + (shift * drawn.sum(axis=3))[..., None])
    completed = mean[:, None, :, None] + noise
    rows = np.where(kept, X.reshape(n, 1, groups, block), completed)
    return rows.reshape(n, -1, p)


def conditional_variance(predict, X: np.ndarray, keep: np.ndarray, rho: float, groups: int,
                         normals: np.ndarray) -> float:
    """``Var(E[f(X) | X_U])`` by Monte Carlo under the block-equicorrelated law: the variance
    over the rows of ``X`` (draws of the law) of the mean of ``f`` over ``r`` completions
    (:func:`conditional_completions`), less the completions' own share, the mean of their
    variance over ``r`` (so the estimate is unbiased; the closed form for ``f`` linear is
    ``a_U' Sigma_UU^-1 a_U`` with ``a = Sigma coef``, :func:`equicorrelated_shapley`).

    ``predict`` maps (m, p) rows to (m,) values (a fitted model's ``predict``); ``normals``
    is (n, r, p) with r >= 2; ``keep`` empty gives 0 and ``keep`` full the variance of ``f``
    over the rows.
    """
    if not keep.any():
        return 0.0
    if keep.all():
        return float(np.var(predict(X), ddof=1))
    n, r = normals.shape[:2]
    if r < 2:
        raise ValueError(f"normals must hold at least 2 completions per row (shape (n, r, p) "
                         f"with r >= 2) to remove their own variance; got r = {r}.")
    values = predict(conditional_completions(X, keep, rho, groups, normals)
                     .reshape(n * r, -1)).reshape(n, r)
    within = values.var(axis=1, ddof=1).mean() / r
    return float(values.mean(axis=1).var(ddof=1) - within)


def benard2022_params() -> dict[str, Any]:
    """Dataset parameters of the Sobol-MDA experiment of Bénard, Da Veiga & Scornet (2022).

    ``p = 200`` features in 5 independent blocks of 40 with correlation 0.9 inside a block
    (after Archer & Kimes 2008; Gregorutti et al. 2017), ``m(X) = 2 X1 + X41 + X81 + X121 +
    X161``, noise variance 10 % of Var(Y) (so ``Var(Y) = 8 / 0.9``), ``n = 1000`` rows::

        LinearGaussian(**benard2022_params())
    """
    coef = [0.0] * 200
    coef[0] = 2.0
    for j in (40, 80, 120, 160):
        coef[j] = 1.0
    return {"n_samples": 1000, "coef": tuple(coef), "rho": 0.9, "groups": 5,
            "noise_fraction": 0.1}


class LinearGaussian(DatasetSource):
    """``Y = coef . X + noise * eps`` with X ~ N(0, Sigma), Sigma block-equicorrelated.

    The p features form ``groups`` contiguous independent blocks of ``p / groups`` features;
    inside a block every pair has correlation ``rho`` (unit variances), which is positive
    definite iff ``-1/(b-1) < rho < 1`` for blocks of ``b`` features. ``noise_fraction``, when
    given, replaces ``noise`` by the standard deviation making the noise that fraction of
    Var(Y) (:func:`noise_std`). Relevant features are those with a non-zero coefficient.

    Exact truth (all normalised by ``Var(Y) = coef' Sigma coef + noise^2`` except the MDA
    limits): first-order and total Sobol indices (:func:`linear_gaussian_sobol`), Shapley
    effects (:func:`linear_gaussian_shapley`), and the limits of the permutation MDAs
    (Bénard, Da Veiga & Scornet 2022). With ``X_pi_j`` = X with ``X_j`` replaced by an
    independent copy ``X'_j``, ``m(X_pi_j) - m(X) = coef_j (X'_j - X_j)``, so for any Sigma

    - Breiman-Cutler / train-test: ``E[(m(X) - m(X_pi_j))^2] = coef_j^2 E[(X'_j - X_j)^2]
      = 2 coef_j^2 Var(X_j) = 2 coef_j^2``;
    - Ishwaran-Kogalur: ``V[Y] ST_j + MDA3_j = coef_j^2 / (Sigma^-1)_jj + coef_j^2
      Var(E[X_j | X_-j]) = coef_j^2``, because ``E[m(X_pi_j) | X_-j] - E[m(X) | X_-j] =
      -coef_j E[X_j | X_-j]`` and ``Var(E[X_j | X_-j]) = 1 - 1/(Sigma^-1)_jj``.

    The p = 200 setting of Bénard et al. (2022) is ``linear_gaussian[preset=benard2022]``
    (``LinearGaussian(preset="benard2022")``; parameters given explicitly override the
    preset's, and the run key lists only those): ``coef`` (a list of floats, one per
    feature) is 2 at X1, 1 at X41, X81, X121, X161 and 0
    elsewhere, ``groups=5``, ``rho=0.9``, ``noise_fraction=0.1``, ``n_samples=1000``.
    """

    name = "linear_gaussian"
    task = "regression"
    summary = "Linear model, block-equicorrelated Gaussian inputs; exact Sobol and Shapley"
    parameters = {
        "preset": Param("none", (Options({"none", "benard2022"}),),
                        "benard2022: the p = 200 grouped setting of Bénard et al. (2022)"),
        "n_samples": Param(500, (Interval(int, 2, None),), "number of rows"),
        "coef": Param(
            (1.0, 1.0, 0.5, 0.5, 0.0, 0.0), (FloatVector(),), "coefficients (one per feature)"
        ),
        "rho": Param(
            0.0,
            (Interval(float, -1.0, 1.0, closed="neither"),),
            "correlation between two features of a block, in (-1/(b-1), 1) for blocks of b",
        ),
        "noise": Param(0.5, (Interval(float, 0.0, None),), "standard deviation of the noise"),
        "groups": Param(
            1, (Interval(int, 1, None),),
            "number of independent equicorrelated blocks (must divide the number of features)",
        ),
        "noise_fraction": Param(
            None,
            (NoneValue(), Interval(float, 0.0, 1.0, closed="left")),
            "None: use 'noise'; a float f: noise variance f Var(Y) (overrides 'noise')",
        ),
    }

    def __init__(self, **params: Any) -> None:
        self._preset = benard2022_params() if params.get("preset") == "benard2022" else {}
        super().__init__(**{**self._preset, **params})
        coef, rho = self.params["coef"], self.params["rho"]
        p, groups = len(coef), self.params["groups"]
        if p % groups:
            raise InvalidParameterError(
                f"The 'groups' parameter of linear_gaussian must be an int in [1, {p}] that "
                f"divides the number of coefficients ({p}). Got {groups!r} instead."
            )
        block = p // groups
        low = -1.0 / (block - 1) if block > 1 else -1.0
        if not rho > low:
            blocks = f" in {groups} blocks of {block}" if groups > 1 else ""
            raise InvalidParameterError(
                f"The 'rho' parameter of linear_gaussian must be a float in ({low:.6g}, 1) "
                f"with {p} coefficients{blocks} (Sigma must be positive definite). "
                f"Got {rho!r} instead."
            )
        noise, fraction = self.params["noise"], self.params["noise_fraction"]
        if not any(coef) and (fraction is not None or noise == 0):
            raise InvalidParameterError(
                "linear_gaussian needs Var(Y) > 0: with every coefficient 0, 'noise' must be "
                f"> 0 and 'noise_fraction' None. Got noise={noise!r}, "
                f"noise_fraction={fraction!r} instead."
            )

    def __repr__(self) -> str:
        baseline = {name: param.default for name, param in self.parameters.items()}
        baseline.update(self._preset)
        return format_spec(self.name, {k: v for k, v in self.params.items()
                                       if v != baseline[k]})

    def _load(self, params: dict[str, Any], seed: int) -> Dataset:
        coef = np.asarray(params["coef"], dtype=np.float64)
        rho, n, groups = params["rho"], params["n_samples"], params["groups"]
        noise = noise_std(coef, rho, groups, params["noise"], params["noise_fraction"])
        p = len(coef)
        rng = np.random.default_rng(seed)
        # Sigma is block diagonal with equal blocks: one Cholesky factor per block (for one
        # block this is the full factor, as before groups existed, so the draws are unchanged)
        block = p // groups
        chol = np.linalg.cholesky(equicorrelation(block, rho))
        Z = rng.standard_normal((n, p))
        X = np.empty_like(Z)
        for start in range(0, p, block):
            X[:, start:start + block] = Z[:, start:start + block] @ chol.T
        y = X @ coef + noise * rng.standard_normal(n)
        first, total = linear_gaussian_sobol(coef, rho, noise, groups)
        var_y = float(coef @ block_equicorrelation(p, rho, groups) @ coef) + noise**2
        truth = GroundTruth.from_sobol(
            coef != 0, first, total, var_y=var_y,
            shapley=linear_gaussian_shapley(coef, rho, groups) / var_y,
            breiman_limit=2.0 * coef**2, ik_limit=coef**2,
        )
        return Dataset(
            name=self.name,
            X=X,
            y=y,
            task="regression",
            feature_names=[f"X{j}" for j in range(1, p + 1)],
            truth=truth,
            description=f"Y = coef . X + {noise:.6g} eps, X ~ N(0, Sigma), Sigma: {groups} "
            f"independent equicorrelated block(s) with rho={rho}",
        )
