"""The exact oracle against published values, invariants and naive independent computations."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import pytest

from harness.core.registry import make_dataset
from harness.oracle.finite_table import DiscreteDistribution, shapley_values

# Louppe et al. (2013), LED table, column "Thm. 1" (X1..X7), and its sum.
PAPER_LED_THM1 = np.array([0.412, 0.581, 0.531, 0.542, 0.656, 0.225, 0.372])


# -- naive references: plain dictionaries over the rows, no shared code with the oracle --------


def naive_local_entropy(X, y, prob, S, x) -> float:
    """H(Y | X_S = x_S) in bits, by filtering the rows."""
    counts: dict = defaultdict(float)
    for row, label, p in zip(X, y, prob):
        if all(row[j] == x[j] for j in S):
            counts[label] += p
    total = sum(counts.values())
    return -sum(c / total * math.log2(c / total) for c in counts.values() if c > 0)


def naive_entropy(X, y, prob, S) -> float:
    """H(Y | X_S) in bits, by grouping the rows on their values of X_S."""
    groups: dict = defaultdict(lambda: defaultdict(float))
    for row, label, p in zip(X, y, prob):
        groups[tuple(row[j] for j in S)][label] += p
    h = 0.0
    for counts in groups.values():
        total = sum(counts.values())
        h -= sum(c * math.log2(c / total) for c in counts.values() if c > 0)
    return h


def naive_mi(X, y, prob):
    return lambda S: naive_entropy(X, y, prob, ()) - naive_entropy(X, y, prob, S)


def x_marginal(X, prob):
    """Distinct x rows and their probabilities."""
    totals: dict = defaultdict(float)
    for row, p in zip(map(tuple, X), prob):
        totals[row] += p
    rows = list(totals)
    return np.array(rows, dtype=float), np.array([totals[r] for r in rows])


# -- distributions -----------------------------------------------------------------------------


def led_table(**params):
    ds = make_dataset("led", **params).load(0)
    return ds.X, ds.y, ds.sample_weight


def xor_table(eps=0.05):
    ds = make_dataset("xor", eps=eps).load(0)
    return ds.X, ds.y, ds.sample_weight


def random_table(seed=0, n=60, p=4):
    """A random discrete distribution with 2-3 valued inputs, 3 classes and duplicate rows."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 2 + j % 2, size=n) for j in range(p)])
    y = (X[:, 0] + X[:, 1] * X[:, 2] + (rng.random(n) < 0.3)) % 3
    prob = rng.dirichlet(np.ones(n))
    return X, y, prob


TABLES = {
    "led": led_table,
    "xor": xor_table,
    "random": random_table,
    "led_noisy": lambda: led_table(noise=0.2),
}


def test_led_thm1_matches_the_paper_table():
    dist = DiscreteDistribution(*led_table())
    values = dist.thm1()
    # The table truncates to 3 decimals (e.g. 0.41269 is printed 0.412): truncation matches
    # every entry, rounding would not.
    truncated = np.floor(values * 1000 + 1e-9) / 1000
    np.testing.assert_allclose(truncated, PAPER_LED_THM1, atol=1e-12)
    assert abs(values.sum() - math.log2(10)) < 1e-12


def test_led_dataset_truth_is_the_oracle():
    ds = make_dataset("led").load(0)
    dist = DiscreteDistribution.from_dataset(ds)
    np.testing.assert_allclose(ds.truth.quantities["thm1"].values, dist.thm1(), atol=1e-12)
    np.testing.assert_allclose(
        ds.truth.quantities["thm2_local"].values, dist.local_thm2(ds.X), atol=1e-12
    )


@pytest.mark.parametrize("name", ["led", "xor", "led_noisy"])
def test_thm1_equals_bruteforce_shapley_of_mutual_information(name):
    X, y, prob = TABLES[name]()
    dist = DiscreteDistribution(X, y, prob)
    expected = shapley_values(X.shape[1], naive_mi(X, y, prob))
    np.testing.assert_allclose(dist.thm1(), expected, atol=1e-12, rtol=0)
    np.testing.assert_allclose(dist.shapley_bruteforce(), expected, atol=1e-12, rtol=0)


def test_entropies_match_naive_grouping():
    X, y, prob = random_table()
    dist = DiscreteDistribution(X, y, prob)
    for S in [(), (0,), (1, 3), (0, 1, 2, 3)]:
        assert abs(dist.entropy(S) - naive_entropy(X, y, prob, S)) < 1e-12
    cmi = naive_entropy(X, y, prob, (1,)) - naive_entropy(X, y, prob, (0, 1))
    assert abs(dist.conditional_mutual_information(0, (1,)) - cmi) < 1e-12


@pytest.mark.parametrize("name", ["led", "xor", "random", "led_noisy"])
def test_local_averages_to_global_eq11(name):
    X, y, prob = TABLES[name]()
    dist = DiscreteDistribution(X, y, prob)
    rows, p_x = x_marginal(X, prob)
    np.testing.assert_allclose(p_x @ dist.local_thm2(rows), dist.thm1(), atol=1e-12, rtol=0)


@pytest.mark.parametrize("name", ["led", "xor", "random"])
def test_local_efficiency(name):
    X, y, prob = TABLES[name]()
    dist = DiscreteDistribution(X, y, prob)
    rows, _ = x_marginal(X, prob)
    local = dist.local_thm2(rows)
    all_features = tuple(range(X.shape[1]))
    h_y = naive_entropy(X, y, prob, ())
    for x, values in zip(rows, local):
        expected = h_y - naive_local_entropy(X, y, prob, all_features, x)
        assert abs(values.sum() - expected) < 1e-12


def test_local_equals_bruteforce_shapley_of_local_game_eq13():
    X, y, prob = random_table(seed=3)
    dist = DiscreteDistribution(X, y, prob)
    rows, _ = x_marginal(X, prob)
    h_y = naive_entropy(X, y, prob, ())
    local = dist.local_thm2(rows[:5])
    for x, values in zip(rows[:5], local):
        expected = shapley_values(
            X.shape[1], lambda S, x=x: h_y - naive_local_entropy(X, y, prob, S, x)
        )
        np.testing.assert_allclose(values, expected, atol=1e-12, rtol=0)
    assert (
        abs(dist.local_entropy((0, 2), rows[0]) - naive_local_entropy(X, y, prob, (0, 2), rows[0]))
        < 1e-12
    )


@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_irrelevant_bits_get_zero_and_change_nothing_thm3_thm5(noise):
    base = DiscreteDistribution(*led_table(noise=noise))
    X, y, prob = led_table(noise=noise, n_irrelevant=2)
    extended = DiscreteDistribution(X, y, prob)
    values = extended.thm1()
    assert np.all(np.abs(values[7:]) < 1e-12)
    np.testing.assert_allclose(values[:7], base.thm1(), atol=1e-12, rtol=0)
    local = extended.local_thm2(X[::7])
    assert np.all(np.abs(local[:, 7:]) < 1e-12)
    np.testing.assert_allclose(local[:, :7], base.local_thm2(X[::7, :7]), atol=1e-12, rtol=0)


@pytest.mark.parametrize("name", ["led", "random"])
def test_depth_truncation(name):
    X, y, prob = TABLES[name]()
    dist = DiscreteDistribution(X, y, prob)
    p = X.shape[1]
    np.testing.assert_allclose(dist.thm1(depth=p), dist.thm1(), atol=1e-15, rtol=0)
    mi = naive_mi(X, y, prob)
    np.testing.assert_allclose(
        dist.thm1(depth=1), [mi((m,)) / p for m in range(p)], atol=1e-12, rtol=0
    )
    # depth 2: the k = 0 and k = 1 terms of Eq. 2 written out
    expected = []
    for m in range(p):
        pairs = sum(mi((m, b)) - mi((b,)) for b in range(p) if b != m)
        expected.append(mi((m,)) / p + pairs / (p * (p - 1)))
    np.testing.assert_allclose(dist.thm1(depth=2), expected, atol=1e-12, rtol=0)


def test_xor_values_of_geurts_slides():
    X, y, prob = xor_table(eps=0.05)
    dist = DiscreteDistribution(X, y, prob)
    np.testing.assert_array_equal(np.round(dist.thm1(), 3), [0.262, 0.262, 0.476])
    assert round(dist.mutual_information((2,)), 3) == 0.714
    assert round(dist.conditional_mutual_information(0, (1, 2)), 3) == 0.286
    assert abs(dist.conditional_mutual_information(0, (2,))) < 1e-12
    # The slides' table has Y = not (X1 xor X2): relabelling Y changes nothing.
    flipped = DiscreteDistribution(X, 1 - y, prob)
    np.testing.assert_allclose(flipped.thm1(), dist.thm1(), atol=1e-15)


def test_duplicate_rows_are_merged():
    X, y, prob = led_table()
    dist = DiscreteDistribution(X, y, prob)
    split = DiscreteDistribution(
        np.vstack([X, X[:3]]),
        np.concatenate([y, y[:3]]),
        np.concatenate([prob[:3] / 2, prob[3:], prob[:3] / 2]),
    )
    assert split.support_size == 10
    np.testing.assert_allclose(split.thm1(), dist.thm1(), atol=1e-14)


def test_from_dataset_uses_uniform_weights_without_sample_weight():
    ds = make_dataset("xor", n_samples=300).load(4)
    dist = DiscreteDistribution.from_dataset(ds)
    n = len(ds.y)
    assert abs(dist.entropy(()) - naive_entropy(ds.X, ds.y, np.full(n, 1 / n), ())) < 1e-12


@pytest.mark.parametrize(
    "X, y, prob, match",
    [
        (np.zeros((2, 1)), [0, 1], [1.2, -0.2], "finite and >= 0"),
        (np.zeros((2, 1)), [0, 1], [0.5, 0.6], "must sum to 1"),
        (np.zeros((2, 1)), [0, 1, 1], [0.5, 0.5], r"shape \(2,\)"),
        (np.zeros((2, 1)), [0, 1], [0.5, 0.5, 0.0], r"shape \(2,\)"),
        (np.zeros(2), [0, 1], [0.5, 0.5], "2-D"),
        (np.zeros((2, 1)), [0, 1], [np.nan, 1.0], "finite"),
    ],
)
def test_bad_distributions_are_rejected(X, y, prob, match):
    with pytest.raises(ValueError, match=match):
        DiscreteDistribution(X, y, prob)


def test_bad_queries_are_rejected():
    dist = DiscreteDistribution(*xor_table(eps=0.5))
    with pytest.raises(ValueError, match="not in the support"):
        dist.local_thm2([[0, 0, 2]])
    with pytest.raises(ValueError, match=r"shape \(q, 3\)"):
        dist.local_thm2([[0, 0]])
    with pytest.raises(ValueError, match="depth must be None or an int >= 1"):
        dist.thm1(depth=0)
    with pytest.raises(ValueError, match=r"Feature indices must be in \[0, 2\]"):
        dist.entropy((3,))
    with pytest.raises(ValueError, match="1 <= p <= 8"):
        shapley_values(9, lambda S: 0.0)


def test_zero_probability_rows_are_outside_the_support():
    X = np.array(list(itertools.product([0, 1], repeat=2)))
    dist = DiscreteDistribution(X, X[:, 0], [0.5, 0.5, 0.0, 0.0])
    with pytest.raises(ValueError, match="probability 0"):
        dist.local_thm2([[1, 0]])
    np.testing.assert_allclose(dist.thm1(), [0.0, 0.0], atol=1e-15)
