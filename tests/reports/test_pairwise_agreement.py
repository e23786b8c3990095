"""The report's all-pairs rank agreement equals scipy's spearmanr and kendalltau pair by pair
(ties, constant and non-finite profiles included), on both sides of the matrix-Kendall limit."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy import stats

from harness.reports.correlation import MATRIX_KENDALL_MAX_FEATURES, _pairwise_agreement


@pytest.mark.parametrize("p", [1, 2, 7, MATRIX_KENDALL_MAX_FEATURES + 3])
def test_all_pairs_equal_scipy_pair_by_pair(p):
    rng = np.random.default_rng(p)
    matrix = rng.normal(size=(9, p))
    matrix[1] = np.round(matrix[1])  # ties
    matrix[2] = np.round(matrix[2] * 0.3)
    matrix[3] = 0.25  # constant
    matrix[4] = matrix[0]  # identical to another
    matrix[5, 0] = np.nan  # non-finite
    ours = _pairwise_agreement(matrix)
    for (a, b), (rho, tau, l1) in zip(itertools.combinations(range(len(matrix)), 2), ours):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected_rho = stats.spearmanr(matrix[a], matrix[b]).statistic
            expected_tau = stats.kendalltau(matrix[a], matrix[b]).statistic
        np.testing.assert_allclose([rho, tau], [expected_rho, expected_tau], rtol=0, atol=1e-12,
                                   equal_nan=True, err_msg=f"{a}, {b}")
        np.testing.assert_allclose(l1, np.abs(matrix[a] - matrix[b]).sum(), rtol=1e-14,
                                   equal_nan=True)
