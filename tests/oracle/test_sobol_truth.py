"""Exact Sobol, Shapley and MDA-limit truths of the analytic regression datasets.

Every expected value comes from an oracle written here: tensor Gauss-Legendre quadrature,
enumeration of all subsets with generic linear algebra, or Monte Carlo with a stated
tolerance; never from the code under test.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from harness.core.errors import BadInputError, InvalidParameterError
from harness.core.registry import make_dataset
from harness.core.types import GroundTruth

TRUTH_KEYS = {"sobol_first", "sobol_total", "shapley_effect", "mda_bc_limit", "mda_ik_limit"}


def shapley_by_enumeration(value, p: int) -> np.ndarray:
    """Sh_j = sum over U not containing j of |U|! (p-|U|-1)! / p! (v(U + j) - v(U))."""
    cache = {}

    def v(subset: tuple[int, ...]) -> float:
        key = tuple(sorted(subset))
        if key not in cache:
            cache[key] = value(key)
        return cache[key]

    shapley = np.zeros(p)
    for j in range(p):
        others = [i for i in range(p) if i != j]
        for size in range(p):
            weight = math.factorial(size) * math.factorial(p - size - 1) / math.factorial(p)
            for subset in itertools.combinations(others, size):
                shapley[j] += weight * (v((*subset, j)) - v(subset))
    return shapley


def gaussian_closed_sobol(coef: np.ndarray, sigma: np.ndarray):
    """v(U) = Var(E[coef . X | X_U]) = (Sigma coef)_U' Sigma_UU^-1 (Sigma coef)_U."""
    a = sigma @ coef

    def value(subset: tuple[int, ...]) -> float:
        if not subset:
            return 0.0
        u = list(subset)
        return float(a[u] @ np.linalg.solve(sigma[np.ix_(u, u)], a[u]))

    return value


def block_sigma(p: int, groups: int, rho: float) -> np.ndarray:
    """Sigma built entry by entry: 1 on the diagonal, rho inside a block, 0 across blocks."""
    block = np.arange(p) // (p // groups)
    return np.where(block[:, None] == block[None, :], rho, 0.0) + (1 - rho) * np.eye(p)


# ----------------------------------------------------------------------------- from_sobol

def test_from_sobol_defaults_are_the_independent_input_limits():
    first, total = np.array([0.2, 0.1, 0.0]), np.array([0.3, 0.1, 0.0])
    truth = GroundTruth.from_sobol([True, True, False], first, total, var_y=4.0)
    q = truth.quantities
    assert set(q) == TRUTH_KEYS - {"shapley_effect"} and truth.var_y == 4.0
    np.testing.assert_allclose(q["mda_bc_limit"].values, [2.4, 0.8, 0.0])  # 2 V[Y] ST_j
    np.testing.assert_allclose(q["mda_ik_limit"].values, [1.2, 0.4, 0.0])  # V[Y] ST_j
    assert q["mda_bc_limit"].compares_to == ("mda_bc", "mda_test")
    assert q["mda_ik_limit"].compares_to == ("mda_ik",)
    assert q["sobol_total"].compares_to == ("sobol_mda",)
    assert q["mda_bc_limit"].unit == q["mda_ik_limit"].unit == "squared units of Y"
    for key in ("mda_bc_limit", "mda_ik_limit"):
        assert "Biometrika 2022" in q[key].description or "2022, Biometrika" in (
            q[key].description)


def test_from_sobol_explicit_values_and_errors():
    truth = GroundTruth.from_sobol(
        [True], [0.5], [0.5], var_y=2.0, shapley=[0.5], breiman_limit=[7.0], ik_limit=[3.0]
    )
    q = truth.quantities
    assert q["shapley_effect"].compares_to == ("shaff",)
    assert q["shapley_effect"].unit == "fraction of Var(Y)"
    assert q["mda_bc_limit"].values.tolist() == [7.0]
    assert q["mda_ik_limit"].values.tolist() == [3.0]
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(BadInputError, match="var_y must be a finite float > 0. Got"):
            GroundTruth.from_sobol([True], [0.5], [0.5], var_y=bad)
    assert GroundTruth(relevant=np.array([True])).var_y is None


# ------------------------------------------------------------------------ linear_gaussian

def test_linear_gaussian_default_draws_are_unchanged():
    """The pre-``groups`` generator, re-implemented: identical rows for groups = 1."""
    for params, seed in (({}, 0), ({"rho": 0.3, "n_samples": 50, "noise": 1.5}, 5)):
        ds = make_dataset("linear_gaussian", **params).load(seed)
        coef = np.array([1.0, 1.0, 0.5, 0.5, 0.0, 0.0])
        rho, n, noise = params.get("rho", 0.0), params.get("n_samples", 500), params.get(
            "noise", 0.5)
        rng = np.random.default_rng(seed)
        sigma = (1.0 - rho) * np.eye(6) + rho * np.ones((6, 6))
        X = rng.standard_normal((n, 6)) @ np.linalg.cholesky(sigma).T
        y = X @ coef + noise * rng.standard_normal(n)
        np.testing.assert_array_equal(ds.X, X)
        np.testing.assert_array_equal(ds.y, y)


@pytest.mark.parametrize(
    "coef, groups, rho",
    [
        ((1.0, 1.0, -0.5, 2.0, 0.0, 2.0), 2, 0.5),  # mixed, with ties inside the blocks
        ((1.0, 2.0, 3.0, -1.0, 0.5, 0.0, 0.0, 2.0), 1, -0.1),  # one block, negative rho
        ((0.3, -0.7, 1.2, 0.0, 0.9, 1.1), 3, 0.8),  # blocks of 2
    ],
)
def test_linear_gaussian_shapley_by_brute_force(coef, groups, rho):
    noise = 0.4
    ds = make_dataset("linear_gaussian", coef=coef, groups=groups, rho=rho, noise=noise,
                      n_samples=10).load(0)
    coef = np.array(coef)
    sigma = block_sigma(len(coef), groups, rho)
    var_m = float(coef @ sigma @ coef)
    var_y = var_m + noise**2
    expected = shapley_by_enumeration(gaussian_closed_sobol(coef, sigma), len(coef)) / var_y
    q = ds.truth.quantities
    np.testing.assert_allclose(q["shapley_effect"].values, expected, rtol=1e-10, atol=1e-13)
    assert math.isclose(q["shapley_effect"].values.sum(), var_m / var_y, rel_tol=1e-12)
    assert math.isclose(ds.truth.var_y, var_y, rel_tol=1e-12)
    # Sobol indices from generic conditional variances of the same Sigma
    value = gaussian_closed_sobol(coef, sigma)
    p = len(coef)
    first = [value((j,)) / var_y for j in range(p)]
    total = [(var_m - value(tuple(i for i in range(p) if i != j))) / var_y for j in range(p)]
    np.testing.assert_allclose(q["sobol_first"].values, first, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(q["sobol_total"].values, total, rtol=1e-10, atol=1e-13)


def test_linear_gaussian_mda_limits_from_conditional_moments():
    """BC: E[(m(X) - m(X_pi_j))^2] by Monte Carlo; IK: V ST_j + MDA3_j by linear algebra.

    Monte Carlo on 100 000 rows (X_pi_j: column j from an independent second draw), tolerance
    5 standard errors of the mean of the squared differences.
    """
    coef, groups, rho = (1.0, -2.0, 0.5, 0.0, 1.5, 0.7), 2, 0.6
    source = make_dataset("linear_gaussian", coef=coef, groups=groups, rho=rho,
                          n_samples=100_000)
    ds, other = source.load(1), source.load(2)
    coef = np.array(coef)
    q = ds.truth.quantities
    for j in range(6):
        permuted = ds.X.copy()
        permuted[:, j] = other.X[:, j]
        squares = (ds.X @ coef - permuted @ coef) ** 2
        tolerance = 5 * squares.std() / math.sqrt(len(squares)) + 1e-12
        assert abs(squares.mean() - q["mda_bc_limit"].values[j]) < tolerance, j
    sigma = block_sigma(6, groups, rho)
    for j in range(6):
        rest = [i for i in range(6) if i != j]
        explained = sigma[j, rest] @ np.linalg.solve(sigma[np.ix_(rest, rest)], sigma[rest, j])
        v_st = coef[j] ** 2 * (sigma[j, j] - explained)  # E[Var(m | X_-j)]
        mda3 = coef[j] ** 2 * explained  # E[(coef_j E[X_j | X_-j])^2]
        assert math.isclose(v_st, ds.truth.var_y * q["sobol_total"].values[j], abs_tol=1e-12)
        assert math.isclose(q["mda_ik_limit"].values[j], v_st + mda3, abs_tol=1e-12)


def test_linear_gaussian_independent_inputs():
    coef = np.array([1.0, -2.0, 0.5, 0.0, 3.0, 1.0])
    noise = 0.3
    for groups in (1, 2, 3, 6):
        q = make_dataset("linear_gaussian", coef=tuple(coef), groups=groups, rho=0.0,
                         noise=noise).load(0).truth.quantities
        expected = coef**2 / (np.sum(coef**2) + noise**2)
        for key in ("sobol_first", "sobol_total", "shapley_effect"):
            np.testing.assert_allclose(q[key].values, expected, rtol=1e-12, atol=1e-15)


def test_linear_gaussian_noise_fraction():
    coef, rho, groups = (1.0, 0.5, -1.0, 2.0), 0.4, 2
    ds = make_dataset("linear_gaussian", coef=coef, rho=rho, groups=groups, noise=5.0,
                      noise_fraction=0.25, n_samples=10).load(0)
    var_m = float(np.array(coef) @ block_sigma(4, groups, rho) @ np.array(coef))
    assert math.isclose(ds.truth.var_y, var_m / 0.75, rel_tol=1e-12)  # 'noise' is overridden
    assert math.isclose(ds.truth.quantities["shapley_effect"].values.sum(), 0.75, rel_tol=1e-12)
    zero = make_dataset("linear_gaussian", coef=coef, noise_fraction=0.0, n_samples=10).load(0)
    np.testing.assert_allclose(zero.y, zero.X @ np.array(coef), atol=1e-12)


def benard_block_shapley_by_counts(rho: float, coef: float, size: int) -> tuple[float, float]:
    """Shapley effects of one active feature and of one inactive one in an equicorrelated block.

    v(U) only depends on whether the active feature is in U and on the number k of inactive
    ones; the C(size-1, k) subsets of k inactive features have weight k! (size-k-1)! / size!
    each (the active feature's game), so each k has total weight 1 / size.
    """
    c = np.zeros(size)
    c[0] = coef
    value = gaussian_closed_sobol(c, block_sigma(size, 1, rho))
    active = sum(value((0, *range(1, k + 1))) - value(tuple(range(1, k + 1)))
                 for k in range(size)) / size
    inactive = (coef**2 - active) / (size - 1)  # efficiency and exchangeability
    return active, inactive


def test_benard2022_setting():
    from harness.datasets.linear_gaussian import benard2022_params

    params = benard2022_params()
    assert params["n_samples"] == 1000 and len(params["coef"]) == 200
    ds = make_dataset("linear_gaussian", **params).load(0)
    assert ds.X.shape == (1000, 200)
    rho, var_y = 0.9, 8.0 / 0.9
    assert math.isclose(ds.truth.var_y, var_y, rel_tol=1e-12)
    coef = np.zeros(200)
    coef[[0, 40, 80, 120, 160]] = [2.0, 1.0, 1.0, 1.0, 1.0]
    np.testing.assert_array_equal(params["coef"], coef)
    np.testing.assert_array_equal(ds.truth.relevant, coef != 0)
    q = ds.truth.quantities
    # equicorrelated block of 40: 1 / (Sigma^-1)_jj = (1 - rho)(1 + 39 rho) / (1 + 38 rho)
    st_1 = 4 * (1 - rho) * (1 + 39 * rho) / (1 + 38 * rho) / var_y
    assert math.isclose(q["sobol_total"].values[0], st_1, rel_tol=1e-10)
    assert math.isclose(st_1, 0.046150568, rel_tol=1e-8)
    assert math.isclose(q["sobol_total"].values[40], st_1 / 4, rel_tol=1e-10)
    assert np.all(q["sobol_total"].values[coef == 0] == 0)
    np.testing.assert_allclose(q["sobol_first"].values[[0, 1, 40, 41]],
                               np.array([4, 4 * rho**2, 1, rho**2]) / var_y, rtol=1e-12)
    np.testing.assert_allclose(q["mda_bc_limit"].values, 2 * coef**2, rtol=1e-12)
    np.testing.assert_allclose(q["mda_ik_limit"].values, coef**2, rtol=1e-12)
    for start, c in ((0, 2.0), (40, 1.0)):
        active, inactive = benard_block_shapley_by_counts(rho, c, 40)
        sh = q["shapley_effect"].values
        assert math.isclose(sh[start], active / var_y, rel_tol=1e-9)
        np.testing.assert_allclose(sh[start + 1:start + 40], inactive / var_y, rtol=1e-9)
    assert math.isclose(q["shapley_effect"].values.sum(), 0.9, rel_tol=1e-12)


def test_benard2022_sample_moments():
    """50 000 rows: Var(Y) within 5 standard errors, correlations within 6 standard errors.

    Standard errors: Var sqrt(2/n) for a Gaussian sample variance, (1 - rho^2)/sqrt(n) for a
    sample correlation. Correlations are checked on every other feature (100 features,
    about 1 000 within-block and 4 000 between-block pairs, hence 6) to keep the test fast.
    """
    from harness.datasets.linear_gaussian import benard2022_params

    n = 50_000
    params = {**benard2022_params(), "n_samples": n}
    ds = make_dataset("linear_gaussian", **params).load(7)
    var_y = 8.0 / 0.9
    assert abs(ds.y.var() - var_y) < 5 * var_y * math.sqrt(2 / n)
    assert np.abs(ds.X.var(axis=0) - 1).max() < 6 * math.sqrt(2 / n)
    noise = ds.y - ds.X @ np.array(params["coef"])
    assert abs(noise.var() / var_y - 0.1) < 5 * 0.1 * math.sqrt(2 / n)
    columns = np.arange(0, 200, 2)
    corr = np.corrcoef(ds.X[:, columns], rowvar=False)
    block = columns // 40
    same = (block[:, None] == block[None, :]) & ~np.eye(len(columns), dtype=bool)
    assert np.abs(corr[same] - 0.9).max() < 6 * (1 - 0.81) / math.sqrt(n)
    assert np.abs(corr[block[:, None] != block[None, :]]).max() < 6 / math.sqrt(n)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"groups": 4}, "The 'groups' parameter of linear_gaussian must be an int in [1, 6] "
                        "that divides the number of coefficients (6). Got 4 instead."),
        ({"groups": 0}, "The 'groups' parameter of linear_gaussian must be an int in [1, inf)"),
        ({"groups": 2, "rho": -0.6}, "must be a float in (-0.5, 1) with 6 coefficients in 2 "
                                     "blocks of 3 (Sigma must be positive definite). Got -0.6"),
        ({"noise_fraction": 1.0}, "The 'noise_fraction' parameter of linear_gaussian must be "
                                  "None or a float in [0, 1). Got 1.0 instead."),
        ({"coef": (0.0, 0.0), "noise_fraction": 0.1}, "needs Var(Y) > 0"),
        ({"coef": (0.0, 0.0), "noise": 0.0}, "needs Var(Y) > 0"),
    ],
)
def test_linear_gaussian_parameter_errors(params, message):
    with pytest.raises(InvalidParameterError) as info:
        make_dataset("linear_gaussian", **params)
    assert message in str(info.value)


def test_linear_gaussian_block_rho_bound_uses_the_block_size():
    make_dataset("linear_gaussian", groups=2, rho=-0.4)  # > -1/2, though < -1/5
    make_dataset("linear_gaussian", groups=6, rho=-0.9)  # blocks of one feature


# ----------------------------------------------------------------------------- ishigami

def gauss_legendre(n: int, low: float, high: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and probability weights of the uniform law on [low, high]."""
    nodes, weights = np.polynomial.legendre.leggauss(n)
    return low + (high - low) * (nodes + 1) / 2, weights / 2


def ishigami(x1, x2, x3, a, b):
    return np.sin(x1) + a * np.sin(x2) ** 2 + b * x3**4 * np.sin(x1)


def value_grid(F: np.ndarray, w: np.ndarray, subset: tuple[int, ...]) -> np.ndarray:
    """E[F | X_U] on the grid of the axes in U (in increasing order)."""
    G = F
    for axis in sorted(set(range(F.ndim)) - set(subset), reverse=True):
        G = np.tensordot(G, w, axes=([axis], [0]))
    return G


def _weighted_var(G: np.ndarray, w: np.ndarray) -> float:
    second, first = G**2, G
    for _ in range(G.ndim):
        second = np.tensordot(second, w, axes=([0], [0]))
        first = np.tensordot(first, w, axes=([0], [0]))
    return float(second - first**2)


@pytest.mark.parametrize("a, b, noise", [(7.0, 0.1, 0.0), (5.0, 0.05, 0.5), (-2.0, 0.0, 0.1)])
def test_ishigami_closed_forms_by_quadrature(a, b, noise):
    """Every closed form against 30-node tensor Gauss-Legendre quadrature, 1e-10 relative."""
    from harness.datasets.ishigami import ishigami_anova

    t, w = gauss_legendre(30, -np.pi, np.pi)
    F = ishigami(t[:, None, None], t[None, :, None], t[None, None, :], a, b)

    def value(subset):
        return 0.0 if not subset else _weighted_var(value_grid(F, w, subset), w)
    var_m = value((0, 1, 2))
    var_y = var_m + noise**2
    anova = ishigami_anova(a, b)
    assert math.isclose(anova["total"], var_m, rel_tol=1e-10)
    assert math.isclose(anova["1"], value((0,)), rel_tol=1e-10)
    assert math.isclose(anova["2"], value((1,)), rel_tol=1e-10, abs_tol=1e-14)
    assert abs(value((2,))) < 1e-10 * var_m  # V3 = 0
    v13 = value((0, 2)) - value((0,)) - value((2,))
    assert math.isclose(anova["13"], v13, rel_tol=1e-10, abs_tol=1e-12 * var_m)

    ds = make_dataset("ishigami", a=a, b=b, noise=noise, n_samples=5).load(0)
    q, scale = ds.truth.quantities, 1e-10 * var_m / var_y
    assert math.isclose(ds.truth.var_y, var_y, rel_tol=1e-10)
    first = [value((j,)) / var_y for j in range(3)]
    total = [(var_m - value(tuple(i for i in range(3) if i != j))) / var_y for j in range(3)]
    shapley = shapley_by_enumeration(value, 3) / var_y
    np.testing.assert_allclose(q["sobol_first"].values, first, rtol=1e-10, atol=scale)
    np.testing.assert_allclose(q["sobol_total"].values, total, rtol=1e-10, atol=scale)
    np.testing.assert_allclose(q["shapley_effect"].values, shapley, rtol=1e-10, atol=scale)

    # BC limit E[(m(X) - m(X_pi_j))^2] on the 4-d grid (X, X'_j); IK: E[Var(m | X_-j)]
    for j in range(3):
        G = np.moveaxis(F, j, 0)
        diff = (G[:, None] - G[None, :]) ** 2
        bc = np.einsum("abcd,a,b,c,d->", diff, w, w, w, w)
        conditional_var = np.einsum("acd,a->cd", G**2, w) - np.einsum("acd,a->cd", G, w) ** 2
        ik = np.einsum("cd,c,d->", conditional_var, w, w)
        assert math.isclose(q["mda_bc_limit"].values[j], bc, rel_tol=1e-10, abs_tol=1e-10 * var_m)
        assert math.isclose(q["mda_ik_limit"].values[j], ik, rel_tol=1e-10, abs_tol=1e-10 * var_m)
    np.testing.assert_array_equal(ds.truth.relevant, np.array(total) > 1e-10 * var_m / var_y)


def test_ishigami_monte_carlo_mean_and_variance():
    """200 000 rows: mean a/2 and Var(Y) within 5 standard errors (estimated from the sample)."""
    n, a, b, noise = 200_000, 7.0, 0.1, 0.5
    ds = make_dataset("ishigami", n_samples=n, a=a, b=b, noise=noise).load(4)
    assert ds.X.min() >= -np.pi and ds.X.max() <= np.pi
    y = ds.y
    assert abs(y.mean() - a / 2) < 5 * y.std() / math.sqrt(n)
    centred_sq = (y - y.mean()) ** 2
    assert abs(y.var() - ds.truth.var_y) < 5 * centred_sq.std() / math.sqrt(n)
    residual = y - ishigami(ds.X[:, 0], ds.X[:, 1], ds.X[:, 2], a, b)
    assert abs(residual.std() - noise) < 5 * noise / math.sqrt(2 * n)


# ----------------------------------------------------------------------------- friedman1

def test_friedman_shapley_by_enumeration():
    """v(U) from 80-node quadrature of the sine term plus the additive variances."""
    noise, n_features = 1.0, 7
    t, w = gauss_legendre(80, 0.0, 1.0)
    sine = 10 * np.sin(np.pi * np.outer(t, t))
    additive = [_weighted_var(20 * (t - 0.5) ** 2, w), _weighted_var(10 * t, w),
                _weighted_var(5 * t, w)]

    def value(subset):
        pair = tuple(j for j in subset if j < 2)
        v = _weighted_var(value_grid(sine, w, pair), w) if pair else 0.0
        return v + sum(additive[j - 2] for j in subset if 2 <= j < 5)

    var_m = value(tuple(range(5)))
    var_y = var_m + noise**2
    truth = make_dataset("friedman1", n_features=n_features, noise=noise).load(0).truth
    sh = truth.quantities["shapley_effect"].values
    expected = shapley_by_enumeration(value, n_features) / var_y
    np.testing.assert_allclose(sh, expected, rtol=1e-10, atol=1e-14)
    assert math.isclose(sh.sum(), var_m / var_y, rel_tol=1e-12)  # efficiency
    assert sh[0] == sh[1] and np.all(sh[5:] == 0)  # symmetry, null players
    assert math.isclose(truth.var_y, var_y, rel_tol=1e-10)
    # the sine term interacts: BC limit 2 E[Var(m | X_-1)] on the grid (X1, X1', X2)
    bc = np.einsum("abc,a,b,c->", (sine[:, None, :] - sine[None, :, :]) ** 2, w, w, w)
    assert math.isclose(truth.quantities["mda_bc_limit"].values[0], bc, rel_tol=1e-10)
