"""Dataset plugins: shapes, names, seeding, parameter errors and exactness of their truth."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.core.dataset import DatasetSource
from harness.core.errors import InvalidParameterError
from harness.core.registry import BUILTIN_DATASETS, get_dataset_class, make_dataset
from harness.oracle.finite_table import DiscreteDistribution

# name -> (params, expected shape, task, first feature names)
CASES = {
    "led": ({}, (10, 7), "classification", ["X1", "X2"]),
    "xor": ({}, (8, 3), "classification", ["X1", "X2", "X3"]),
    "digits": ({}, (1797, 64), "classification", ["pixel_0_0", "pixel_0_1"]),
    "iris": ({}, (150, 4), "classification", ["sepal length (cm)"]),
    "wine": ({}, (178, 13), "classification", ["alcohol"]),
    "breast_cancer": ({}, (569, 30), "classification", ["mean radius"]),
    "diabetes": ({}, (442, 10), "regression", ["age", "sex", "bmi"]),
    "friedman1": ({}, (500, 10), "regression", ["X1", "X2"]),
    "linear_gaussian": ({}, (500, 6), "regression", ["X1", "X2"]),
    "ishigami": ({}, (1000, 3), "regression", ["X1", "X2", "X3"]),
}

# sampled configurations: a different seed must give different rows
SAMPLED = {
    "led": {"n_samples": 50, "noise": 0.1, "n_irrelevant": 2},
    "xor": {"n_samples": 50},
    "digits": {"n_samples": 40},
    "iris": {"n_samples": 40},
    "wine": {"n_samples": 40},
    "breast_cancer": {"n_samples": 40},
    "diabetes": {"n_samples": 40},
    "friedman1": {"n_samples": 40},
    "linear_gaussian": {"n_samples": 40},
    "ishigami": {"n_samples": 40},
}


def test_every_builtin_dataset_is_a_dataset_source():
    for name in BUILTIN_DATASETS:
        cls = get_dataset_class(name)
        assert issubclass(cls, DatasetSource) and cls.name == name and cls.summary


@pytest.mark.parametrize("name", sorted(CASES))
def test_shapes_types_and_names(name):
    params, shape, task, first_names = CASES[name]
    ds = make_dataset(name, **params).load(0)
    assert ds.X.shape == shape and ds.X.dtype == np.float64
    assert ds.y.shape == (shape[0],)
    assert ds.task == task
    if task == "classification":
        assert np.issubdtype(ds.y.dtype, np.integer)
    else:
        assert ds.y.dtype == np.float64
    assert len(ds.feature_names) == shape[1] and ds.feature_names[: len(first_names)] == (
        first_names
    )
    assert np.all(np.isfinite(ds.X)) and np.all(np.isfinite(ds.y))
    if ds.truth is not None:
        assert ds.truth.relevant.shape == (shape[1],) and ds.truth.relevant.dtype == bool
        for quantity in ds.truth.quantities.values():
            expected = (shape[1],) if quantity.scope == "global" else shape
            assert quantity.values.shape == expected


@pytest.mark.parametrize("name", sorted(SAMPLED))
def test_seeded_determinism(name):
    source = make_dataset(name, **SAMPLED[name])
    a, b, c = source.load(1), source.load(1), source.load(2)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert a.X.shape[0] == SAMPLED[name]["n_samples"]
    assert not np.array_equal(a.X, c.X)
    assert not a.population and a.sample_weight is None


def test_led_population_modes():
    ds = make_dataset("led").load(0)
    assert ds.population and len(np.unique(ds.X, axis=0)) == 10
    np.testing.assert_array_equal(ds.sample_weight, np.full(10, 0.1))
    np.testing.assert_array_equal(np.sort(ds.y), np.arange(10))
    noisy = make_dataset("led", noise=0.1, n_irrelevant=1).load(0)
    assert noisy.X.shape == (10 * 2**7 * 2, 8) and noisy.population
    assert abs(noisy.sample_weight.sum() - 1) < 1e-12 and np.all(noisy.sample_weight > 0)
    assert noisy.feature_names[-1] == "R1"
    np.testing.assert_array_equal(noisy.truth.relevant, [True] * 7 + [False])
    # digit 8 with no segment flipped and R1 = 0
    row = np.flatnonzero((noisy.y == 8) & np.all(noisy.X == [1] * 7 + [0], axis=1))
    assert math.isclose(noisy.sample_weight[row[0]], 0.1 * 0.9**7 / 2)
    half = make_dataset("led", noise=0.5).load(0)  # segments independent of the digit
    assert np.all(np.abs(half.truth.quantities["thm1"].values) < 1e-12)


def test_led_sampled_truth_is_the_population_truth_at_each_row():
    sampled = make_dataset("led", n_samples=30, noise=0.2, n_irrelevant=1).load(3)
    population = make_dataset("led", noise=0.2, n_irrelevant=1).load(0)
    dist = DiscreteDistribution.from_dataset(population)
    np.testing.assert_allclose(
        sampled.truth.quantities["thm2_local"].values, dist.local_thm2(sampled.X), atol=1e-12
    )
    np.testing.assert_allclose(sampled.truth.quantities["thm1"].values, dist.thm1(), atol=1e-12)
    # Sutera et al. (2021), Eq. 11 on the dataset's own truth
    local = population.truth.quantities["thm2_local"].values
    np.testing.assert_allclose(
        population.sample_weight @ local, population.truth.quantities["thm1"].values, atol=1e-12
    )


def test_xor_population_and_sampling():
    ds = make_dataset("xor", eps=0.1).load(0)
    np.testing.assert_array_equal(ds.y, np.logical_xor(ds.X[:, 0], ds.X[:, 1]))
    agree = ds.X[:, 2] == ds.y
    np.testing.assert_allclose(ds.sample_weight, np.where(agree, 0.9, 0.1) / 4)
    big = make_dataset("xor", eps=0.1, n_samples=20000).load(0)
    np.testing.assert_array_equal(big.y, np.logical_xor(big.X[:, 0], big.X[:, 1]))
    assert abs(np.mean(big.X[:, 2] != big.y) - 0.1) < 0.01  # about 4.7 standard errors


@pytest.mark.parametrize(
    "name, params, message",
    [
        ("led", {"n_samples": 0}, "The 'n_samples' parameter of led must be "),
        ("led", {"noise": 0.6}, "The 'noise' parameter of led must be a float in [0, 0.5]"),
        ("led", {"n_irrelevant": -1}, "The 'n_irrelevant' parameter of led must be"),
        ("led", {"noise": 0.1, "n_irrelevant": 20}, "must be an int in [0, 10] when"),
        ("led", {"colour": 1}, "led has no parameter 'colour'"),
        ("xor", {"eps": 0.0}, "The 'eps' parameter of xor must be a float in (0, 0.5]"),
        ("friedman1", {"n_features": 4}, "The 'n_features' parameter of friedman1 must be"),
        ("friedman1", {"noise": -1.0}, "The 'noise' parameter of friedman1 must be"),
        ("linear_gaussian", {"rho": -0.5}, "must be a float in (-0.2, 1) with 6 coefficients"),
        ("linear_gaussian", {"rho": 1.0}, "The 'rho' parameter of linear_gaussian must be"),
        ("linear_gaussian", {"coef": []}, "The 'coef' parameter of linear_gaussian must be"),
        ("linear_gaussian", {"n_samples": 1}, "The 'n_samples' parameter of linear_gaussian"),
        ("iris", {"n_samples": 0}, "The 'n_samples' parameter of iris must be"),
    ],
)
def test_parameter_validation(name, params, message):
    with pytest.raises(InvalidParameterError) as info:
        make_dataset(name, **params)
    text = str(info.value)
    assert message in text
    assert "Got" in text or "Allowed parameters:" in text


def test_subsample_larger_than_the_dataset_is_rejected():
    with pytest.raises(InvalidParameterError, match=r"in \[1, 150\].*Got 151"):
        make_dataset("iris", n_samples=151).load(0)


def test_linear_gaussian_sobol_by_regression_on_a_large_sample():
    """Monte Carlo on 400 000 rows, atol 0.01 (more than 5 standard errors of each estimate).

    First order: ``Var(E[Y|X_j]) = Cov(X_j, Y)^2 / Var(X_j)`` (Gaussian: E[Y|X_j] is linear).
    Total: ``E[Var(m(X) | X_-j)]`` = residual variance of the least-squares regression of
    ``m(X) = coef . X`` on the other features (no use of Sigma or its inverse).
    """
    coef = (1.0, -0.5, 2.0, 0.0)
    for rho in (0.0, 0.5, -0.2):
        ds = make_dataset(
            "linear_gaussian", n_samples=400_000, coef=coef, rho=rho, noise=0.7
        ).load(11)
        X, y = ds.X, ds.y
        var_y = y.var()
        first = np.array([np.cov(X[:, j], y)[0, 1] ** 2 / X[:, j].var() for j in range(4)])
        m = X @ np.array(coef)
        total = []
        for j in range(4):
            others = np.column_stack([np.ones(len(X)), np.delete(X, j, axis=1)])
            residual = m - others @ np.linalg.lstsq(others, m, rcond=None)[0]
            total.append(residual.var())
        truth = ds.truth.quantities
        np.testing.assert_allclose(first / var_y, truth["sobol_first"].values, atol=0.01)
        np.testing.assert_allclose(np.array(total) / var_y, truth["sobol_total"].values, atol=0.01)
        np.testing.assert_array_equal(ds.truth.relevant, [True, True, True, False])
        assert truth["sobol_total"].compares_to == ("sobol_mda",)


def test_linear_gaussian_independent_inputs_first_order_sum():
    coef = np.array([1.0, 1.0, 0.5, 0.5, 0.0, 0.0])
    ds = make_dataset("linear_gaussian", rho=0.0, noise=0.5).load(0)
    var_y = np.sum(coef**2) + 0.25
    first = ds.truth.quantities["sobol_first"].values
    total = ds.truth.quantities["sobol_total"].values
    assert abs(first.sum() - (1 - 0.25 / var_y)) < 1e-12
    np.testing.assert_allclose(first, total, atol=1e-12)  # additive, independent inputs


def friedman_function(X):
    return (
        10 * np.sin(np.pi * X[:, 0] * X[:, 1])
        + 20 * (X[:, 2] - 0.5) ** 2
        + 10 * X[:, 3]
        + 5 * X[:, 4]
    )


def test_friedman_function_is_the_generator():
    ds = make_dataset("friedman1", n_samples=50, noise=0.0).load(0)
    np.testing.assert_allclose(ds.y, friedman_function(ds.X), atol=1e-12)


def test_friedman_sobol_by_pick_freeze():
    """Saltelli (2010) first-order and Jansen (1999) total estimators on 200 000 pairs.

    Tolerance: 5 standard errors of the Monte-Carlo mean of each estimator's terms, plus 2 %
    of the value for the estimated Var(Y) in the denominator.
    """
    noise = 1.0
    truth = make_dataset("friedman1", n_features=7, noise=noise).load(0).truth
    rng = np.random.default_rng(2024)
    n = 200_000
    A, B = rng.random((n, 5)), rng.random((n, 5))
    f_a, f_b = friedman_function(A), friedman_function(B)
    var_y = np.concatenate([f_a, f_b]).var() + noise**2
    centred_b = f_b - np.concatenate([f_a, f_b]).mean()
    for j in range(5):
        AB = A.copy()
        AB[:, j] = B[:, j]
        f_ab = friedman_function(AB)
        first_terms = centred_b * (f_ab - f_a)
        total_terms = (f_a - f_ab) ** 2 / 2
        for terms, key in ((first_terms, "sobol_first"), (total_terms, "sobol_total")):
            expected = truth.quantities[key].values[j]
            tolerance = 5 * terms.std() / math.sqrt(n) / var_y + 0.02 * expected
            assert abs(terms.mean() / var_y - expected) < tolerance, (key, j)
    for key in ("sobol_first", "sobol_total"):
        np.testing.assert_array_equal(truth.quantities[key].values[5:], 0.0)
    np.testing.assert_array_equal(truth.relevant, [True] * 5 + [False] * 2)
