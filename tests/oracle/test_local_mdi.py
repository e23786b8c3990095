"""The local-MDI oracle (harness/oracle/local_mdi.py) against the published examples of
Sutera et al. (2021, Appendix B), closed forms, brute-force Shapley values and the independent
entropy implementation of harness/oracle/finite_table.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.core.errors import BadInputError, InvalidParameterError
from harness.datasets.led import led_population
from harness.oracle.exact_mdi import expected_mdi
from harness.oracle.finite_table import DiscreteDistribution, shapley_values
from harness.oracle.local_mdi import (
    asymptotic_global_mdi,
    asymptotic_local_mdi,
    example1_table,
    example2_table,
    impurity_of_event,
    local_characteristic,
)

# Seed 003, Appendix B, Example 1: (output, m, conditioning set) -> printed value (3 decimals)
PUBLISHED_CMI = {(1, 0, ()): 0.091, (1, 0, (1,)): 0.269, (1, 1, ()): 0.002,
                 (1, 1, (0,)): 0.180, (2, 0, ()): 0.002, (2, 0, (1,)): 0.243,
                 (2, 1, ()): 0.016, (2, 1, (0,)): 0.258}
PUBLISHED_K2 = {1: (0.091, 0.180), 2: (0.243, 0.016)}
PRINTED_3 = 0.0005  # half a unit of the third decimal: the gallery's printing tolerance


def _h(q: float) -> float:
    return -sum(v * math.log2(v) for v in (q, 1 - q) if v > 0)


def test_table1_conditional_mutual_informations_are_the_published_ones():
    for (output, m, given), published in PUBLISHED_CMI.items():
        dist = DiscreteDistribution(*example1_table(output))
        value = dist.conditional_mutual_information(m, given)
        assert abs(value - published) <= PRINTED_3, (output, m, given, value)
    # a closed form for one of them: I(Y1; X1) = h(0.475) - (h(0.3) + h(0.65)) / 2
    closed = _h(0.475) - (_h(0.3) + _h(0.65)) / 2
    dist = DiscreteDistribution(*example1_table(1))
    assert dist.conditional_mutual_information(0) == pytest.approx(closed, abs=1e-12)


@pytest.mark.parametrize("rule", ["paper", "sklearn"])
def test_table1_k2_importances_follow_the_single_tree(rule):
    """K = 2: Y1's tree splits on X1 first (I = 0.091 > 0.002), Y2's on X2 (0.016 > 0.002)."""
    for output, published in PUBLISHED_K2.items():
        X, y, prob = example1_table(output)
        dist = DiscreteDistribution(X, y, prob)
        k2 = expected_mdi(X, y, prob, max_features=2, rule=rule)
        first = 0 if output == 1 else 1
        expected = np.zeros(2)
        expected[first] = dist.conditional_mutual_information(first)
        expected[1 - first] = dist.conditional_mutual_information(1 - first, (first,))
        np.testing.assert_allclose(k2, expected, atol=1e-12)
        assert np.abs(k2 - published).max() <= PRINTED_3
    # and strong monotonicity fails for X1: more information about Y1 in every context ...
    cmi = {key: DiscreteDistribution(*example1_table(key[0])).conditional_mutual_information(
        key[1], key[2]) for key in PUBLISHED_CMI}
    assert cmi[(1, 0, ())] >= cmi[(2, 0, ())] and cmi[(1, 0, (1,))] >= cmi[(2, 0, (1,))]
    # ... yet less important to Y1 at K = 2, while K = 1 (Shapley values) keeps the order
    k2 = {o: expected_mdi(*example1_table(o), max_features=2, rule=rule) for o in (1, 2)}
    k1 = {o: expected_mdi(*example1_table(o), max_features=1, rule=rule) for o in (1, 2)}
    assert k2[1][0] < k2[2][0] and k1[1][0] >= k1[2][0]


def test_table2_negative_local_mdi():
    X, y, prob = example2_table()
    value = asymptotic_local_mdi(X, y, prob, [[0]])[0, 0]
    assert value == pytest.approx(_h(0.25) - 1.0, abs=1e-12)  # H(Y) - H(Y | X1 = 0)
    assert abs(value - (-0.19)) <= 0.005  # printed with 2 decimals
    assert DiscreteDistribution(X, y, prob).local_thm2([[0]])[0, 0] == pytest.approx(value)


def test_entropy_version_matches_finite_table_on_led():
    X, y, prob = led_population(0.0)
    dist = DiscreteDistribution(X, y, prob)
    ours = asymptotic_local_mdi(X, y, prob, X)
    np.testing.assert_allclose(ours, dist.local_thm2(X), atol=1e-12)
    # Eq. 11: the P(x)-average is the global MDI of Thm 1; efficiency: sums to log2 10
    np.testing.assert_allclose(asymptotic_global_mdi(X, y, prob), dist.thm1(), atol=1e-12)
    np.testing.assert_allclose(ours.sum(axis=1), math.log2(10), atol=1e-12)


def _and_table():
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    return X, (X[:, 0] * X[:, 1]).astype(float), np.full(4, 0.25)


def test_variance_version_closed_form():
    """Y = X1 AND X2, fair independent bits: Var(Y) = 3/16, Var(Y | X1 = 1) = 1/4, the other
    conditional variances at x = (1, 0) are 0, so (Eq. 20, p = 2, weights 1/2)
    Imp(X1, (1,0)) = (3/16 - 1/4 + 0 - 0) / 2 = -1/32 and Imp(X2, (1,0)) = (3/16 + 1/4) / 2."""
    X, y, prob = _and_table()
    local = asymptotic_local_mdi(X, y, prob, [[1, 0], [1, 1]], "variance")
    np.testing.assert_allclose(local[0], [-1 / 32, 7 / 32], atol=1e-15)
    np.testing.assert_allclose(local[1], [3 / 32, 3 / 32], atol=1e-15)
    assert impurity_of_event(X, y, prob, [1, 0], (0,), "variance") == pytest.approx(0.25)


@pytest.mark.parametrize("impurity", ["entropy", "gini", "variance"])
def test_local_mdi_is_the_shapley_value_of_v_loc(impurity):
    """Eq. 13 (entropy) and Eq. 23 (variance): brute force over all p! orderings."""
    rng = np.random.default_rng(3)
    bits = (np.arange(8)[:, None] >> np.arange(3)) & 1
    X = np.repeat(bits, 3, axis=0)
    y = np.tile([0, 1, 2], 8) if impurity != "variance" else rng.normal(size=24)
    prob = rng.dirichlet(np.ones(24))
    local = asymptotic_local_mdi(X, y, prob, bits, impurity)
    for i, x in enumerate(bits):
        phi = shapley_values(3, local_characteristic(X, y, prob, x, impurity))
        np.testing.assert_allclose(local[i], phi, atol=1e-12)
        # efficiency: the values sum to i(Y) - i(Y | X = x)
        total = impurity_of_event(X, y, prob, x, (), impurity) - impurity_of_event(
            X, y, prob, x, (0, 1, 2), impurity)
        assert local[i].sum() == pytest.approx(total, abs=1e-12)


def test_bad_input_is_refused_with_a_clear_message():
    X, y, prob = example2_table()
    with pytest.raises(InvalidParameterError, match="impurity"):
        asymptotic_local_mdi(X, y, prob, [[0]], "mse")
    with pytest.raises(BadInputError, match="not in the support"):
        asymptotic_local_mdi(X, y, prob, [[2]])
    with pytest.raises(BadInputError, match="sum to 1"):
        asymptotic_local_mdi(X, y, prob * 2, [[0]])
    with pytest.raises(InvalidParameterError, match="1 or 2"):
        example1_table(3)
    with pytest.raises(BadInputError, match="finite numbers"):
        asymptotic_local_mdi(X, np.array(["a", "b", "a"]), prob, [[0]], "variance")
