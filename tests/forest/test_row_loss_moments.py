"""row_loss_moments: NumPy's mean and variance of the row loss increases, without the array."""

import numpy as np
import pytest

from harness.forest.losses import BRIER, SQUARED_ERROR, row_loss_increases, row_loss_moments


def _problem(rng, n, p, n_values, feature_major):
    shape = (p, n, n_values) if feature_major else (n, p, n_values)
    shift = rng.normal(size=shape) * (rng.random(shape) < 0.3)  # mostly exact zeros
    base = rng.random((n, n_values))
    targets = (rng.integers(0, n_values, n).astype(float) if n_values > 1
               else rng.normal(size=n))
    n_oob = rng.integers(1, 30, n).astype(float)
    rows = np.sort(rng.choice(n, size=int(rng.integers(2, n + 1)), replace=False))
    code = SQUARED_ERROR if n_values == 1 else BRIER
    return code, targets, base, shift, n_oob, rows


@pytest.mark.parametrize("feature_major", [False, True])
@pytest.mark.parametrize("n_values", [1, 3])
@pytest.mark.parametrize("p", [2, 7, 5000])
def test_moments_are_numpys_mean_and_variance_to_the_bit(feature_major, n_values, p):
    rng = np.random.default_rng(p + 10 * n_values + feature_major)
    # a block of the (n, p) layout holds 2**15 increases: at p = 5000, several blocks of 6
    code, targets, base, shift, n_oob, rows = _problem(rng, 40, p, n_values, feature_major)
    scale = 0.37
    increase = row_loss_increases(code, targets, base, shift, n_oob, rows, feature_major) / scale
    mean, squares = row_loss_moments(code, targets, base, shift, n_oob, rows, feature_major,
                                     scale)
    np.testing.assert_array_equal(mean, increase.mean(axis=0))
    np.testing.assert_array_equal(squares / (rows.size - 1), increase.var(axis=0, ddof=1))


def test_one_feature_agrees_to_rounding():
    # NumPy sums a single column pairwise, the moments row after row
    rng = np.random.default_rng(3)
    code, targets, base, shift, n_oob, rows = _problem(rng, 500, 1, 1, False)
    increase = row_loss_increases(code, targets, base, shift, n_oob, rows, False)
    mean, squares = row_loss_moments(code, targets, base, shift, n_oob, rows, False, 1.0)
    np.testing.assert_allclose(mean, increase.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(squares / (rows.size - 1), increase.var(axis=0, ddof=1),
                               rtol=1e-12)


def test_unshifted_features_have_zero_mean_and_spread():
    rng = np.random.default_rng(4)
    code, targets, base, shift, n_oob, rows = _problem(rng, 30, 4, 1, True)
    shift[2] = 0.0
    mean, squares = row_loss_moments(code, targets, base, shift, n_oob, rows, True, 1.0)
    assert mean[2] == 0.0 and squares[2] == 0.0
    assert np.all(squares[[0, 1, 3]] > 0)
