"""The exact conditional law of linear_gaussian's inputs, against Gaussian conditioning by
linear solves, and the Monte-Carlo game V(E[f(X) | X_U]) it gives, against the closed form
of a linear f (the fitted-forest game of docs/experiments/shaff_p200.py rests on both)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.datasets.linear_gaussian import (
    block_equicorrelation,
    conditional_completions,
    conditional_variance,
)

P, GROUPS = 10, 2  # two blocks of 5


def _schur(sigma: np.ndarray, keep: np.ndarray, x: np.ndarray):
    """Mean and covariance of X_{-U} given X_U = x_U, by linear solves."""
    kept, drawn = np.flatnonzero(keep), np.flatnonzero(~keep)
    solve = np.linalg.solve(sigma[np.ix_(kept, kept)], sigma[np.ix_(kept, drawn)])
    mean = x[kept] @ solve
    cov = sigma[np.ix_(drawn, drawn)] - sigma[np.ix_(drawn, kept)] @ solve
    return mean, cov


@pytest.mark.parametrize("rho", [0.9, 0.3, -0.2])  # -1/4 < rho < 1 for blocks of 5
def test_completions_follow_gaussian_conditioning(rho):
    """Block 1 keeps 2 of 5, block 2 none (its law is then the marginal one). Tolerances:
    a conditional variance is at most 1, so a mean of N draws has standard error at most
    1/√N and a covariance entry at most √(2/N); 5 of them each (N = 200 000)."""
    sigma = block_equicorrelation(P, rho, GROUPS)
    rng = np.random.default_rng(0)
    x = rng.multivariate_normal(np.zeros(P), sigma, size=1)
    keep = np.zeros(P, dtype=bool)
    keep[[1, 3]] = True
    n_draws = 200_000
    rows = conditional_completions(x, keep, rho, GROUPS, rng.standard_normal((1, n_draws, P)))
    assert rows.shape == (1, n_draws, P)
    np.testing.assert_array_equal(rows[0][:, keep], np.broadcast_to(x[0, keep], (n_draws, 2)))
    mean, cov = _schur(sigma, keep, x[0])
    drawn = rows[0][:, ~keep]
    np.testing.assert_allclose(drawn.mean(axis=0), mean, rtol=0, atol=5 / np.sqrt(n_draws))
    np.testing.assert_allclose(np.cov(drawn, rowvar=False), cov, rtol=0,
                               atol=5 * np.sqrt(2 / n_draws))


def test_completions_of_draws_have_the_joint_law():
    """Rows of the law completed from a kept set are draws of the law again: their
    covariance is Sigma (the same 5-standard-error bound, N = 100 000 rows)."""
    rho = 0.9
    sigma = block_equicorrelation(P, rho, GROUPS)
    rng = np.random.default_rng(1)
    n = 100_000
    X = rng.multivariate_normal(np.zeros(P), sigma, size=n)
    keep = np.array([True, False, False, True, False, False, False, True, True, True])
    rows = conditional_completions(X, keep, rho, GROUPS, rng.standard_normal((n, 1, P)))[:, 0]
    np.testing.assert_allclose(np.cov(rows, rowvar=False), sigma, rtol=0,
                               atol=5 * np.sqrt(2 / n))


def test_conditional_variance_of_a_linear_function_is_the_closed_form():
    """For f(x) = cᵀx, E[f | X_U] is linear with variance v(U) = a_Uᵀ Σ_UU⁻¹ a_U (a = Σ c)
    and each completion adds Var(f | X_U) = e(U) = cᵀ_{-U} S c_{-U} (S the Schur complement).
    The estimate's standard deviation: the variance of n means of r completions, each of
    variance v + e/r, has sd (v + e/r) √(2/(n−1)); the removed share e/r has sd
    (e/r) √(2/(n (r−1))). Asserted within 5 such sd, on 6 random sets (n = 40 000, r = 4)."""
    rho = 0.9
    sigma = block_equicorrelation(P, rho, GROUPS)
    coef = np.array([2.0, 0, 0, 0.5, 0, 1.0, 0, 0, -1.0, 0])
    a = sigma @ coef
    rng = np.random.default_rng(2)
    n, r = 40_000, 4
    X = rng.multivariate_normal(np.zeros(P), sigma, size=n)
    normals = rng.standard_normal((n, r, P))
    for _ in range(6):
        keep = rng.random(P) < 0.5
        keep[rng.integers(P)] = True
        keep[rng.integers(P)] = False
        kept = np.flatnonzero(keep)
        exact = a[kept] @ np.linalg.solve(sigma[np.ix_(kept, kept)], a[kept])
        _, schur = _schur(sigma, keep, np.zeros(P))
        spread = coef[~keep] @ schur @ coef[~keep]
        sd = np.hypot((exact + spread / r) * np.sqrt(2 / (n - 1)),
                      spread / r * np.sqrt(2 / (n * (r - 1))))
        estimate = conditional_variance(lambda rows: rows @ coef, X, keep, rho, GROUPS,
                                        normals)
        assert abs(estimate - exact) < 5 * sd, (keep, estimate, exact, sd)
    assert conditional_variance(lambda rows: rows @ coef, X, np.zeros(P, bool), rho, GROUPS,
                                normals) == 0.0
    full = conditional_variance(lambda rows: rows @ coef, X, np.ones(P, bool), rho, GROUPS,
                                normals)
    assert full == pytest.approx(np.var(X @ coef, ddof=1), rel=1e-12)


def test_one_completion_per_row_is_refused():
    X = np.zeros((3, P))
    with pytest.raises(ValueError, match="at least 2 completions per row.*got r = 1"):
        conditional_variance(lambda rows: rows.sum(axis=1), X, np.eye(P, dtype=bool)[0],
                             0.5, GROUPS, np.zeros((3, 1, P)))
