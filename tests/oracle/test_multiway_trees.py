"""The paper-rule multiway tree grower (harness.oracle.multiway_trees): invariants.

Oracles: Thm 2 of Louppe et al. (2013) (each fully grown tree's MDI sums to I(X; Y)), Thm 1
(the K = 1 expectation, computed from conditional mutual informations by
:class:`~harness.oracle.finite_table.DiscreteDistribution`) and the exact expected MDI of the
same rule (:func:`harness.oracle.exact_mdi.expected_mdi`, ``rule="paper"``), which shares no
code with the grower.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from harness.core.errors import BadInputError, InvalidParameterError
from harness.datasets.led import led_population
from harness.oracle.exact_mdi import expected_mdi
from harness.oracle.finite_table import DiscreteDistribution
from harness.oracle.multiway_trees import MAX_LEVELS, grow_multiway_forest


def _mutual_information(X, y, w) -> float:
    distribution = DiscreteDistribution(X, y, w / w.sum())
    return distribution.mutual_information(range(X.shape[1]))


@pytest.mark.parametrize("noise", [0.0, 0.1])
@pytest.mark.parametrize("k", [1, 3, 7])
def test_every_tree_sums_to_the_mutual_information(noise, k):
    """Thm 2, per tree: a fully grown tree's impurity decreases telescope to
    H(Y) − H(Y | X) on the population, whatever K (exact up to rounding)."""
    X, y, w = led_population(noise)
    forest = grow_multiway_forest(X, y, w, max_features=k, n_trees=30, random_state=1)
    target = _mutual_information(X, y, w)
    np.testing.assert_allclose(forest.per_tree.sum(axis=1), target, rtol=0, atol=1e-12)
    np.testing.assert_allclose(forest.per_tree_degree.sum(axis=2), forest.per_tree, atol=1e-15)


def _z_bound(n: int) -> float:
    """Two-sided normal bound with a 1e-3 false-alarm chance over n comparisons."""
    return float(norm.ppf(1 - 1e-3 / (2 * n)))


def test_k1_expectation_is_thm1():
    """K = 1 (totally randomized trees): the forest mean converges to Thm 1 (Eq. 2);
    each |z| within the Bonferroni bound."""
    X, y, w = led_population(0.0)
    thm1 = DiscreteDistribution(X, y, w).thm1()
    forest = grow_multiway_forest(X, y, w, max_features=1, n_trees=4000, random_state=2)
    z = (forest.mean - thm1) / forest.se
    assert np.all(np.abs(z) < _z_bound(len(z))), z
    # degree by degree, too: E[part at depth k] = the k-th term of Eq. 2
    from harness.oracle.exact_mdi import degree_terms, expected_mdi_terms

    degrees = degree_terms(expected_mdi_terms(X, y, w, max_features=1))
    se = np.where(forest.degree_se > 0, forest.degree_se, np.inf)
    z = ((forest.degree_mean - degrees) / se).ravel()
    assert np.all(np.abs(z) < _z_bound(z.size)), z


@pytest.mark.parametrize("k", [2, 4, 7])
def test_forest_mean_converges_to_the_exact_paper_rule(k):
    X, y, w = led_population(0.0)
    exact = expected_mdi(X, y, w, max_features=k, rule="paper")
    forest = grow_multiway_forest(X, y, w, max_features=k, n_trees=4000, random_state=k)
    z = (forest.mean - exact) / forest.se
    assert np.all(np.abs(z) < _z_bound(len(z))), z


def test_an_irrelevant_column_gets_exactly_zero():
    """Thm 3 on the population: a fair bit independent of (X, Y) never decreases impurity."""
    X, y, w = led_population(0.0, n_irrelevant=2)
    forest = grow_multiway_forest(X, y, w, max_features=1, n_trees=200, random_state=3)
    assert np.abs(forest.per_tree[:, 7:]).max() < 1e-12
    assert forest.per_tree[:, 7:].max() >= 0 and forest.mean[:7].min() > 0


def test_same_seed_same_forest():
    X, y, w = led_population(0.0)
    first = grow_multiway_forest(X, y, w, max_features=3, n_trees=50, random_state=4)
    again = grow_multiway_forest(X, y, w, max_features=3, n_trees=50, random_state=4)
    np.testing.assert_array_equal(first.per_tree, again.per_tree)


def test_refuses_non_categorical_input():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=50)
    with pytest.raises(BadInputError, match="non-integer value"):
        grow_multiway_forest(rng.normal(size=(50, 3)), y)
    many = np.arange(2 * (MAX_LEVELS + 1)).reshape(-1, 1)  # one more level than allowed
    with pytest.raises(BadInputError, match=f"at most {MAX_LEVELS} levels"):
        grow_multiway_forest(many, np.arange(len(many)) % 2)
    with pytest.raises(BadInputError, match="categorical codes"):
        grow_multiway_forest(np.array([["a", "b"]] * 50), y)
    with pytest.raises(BadInputError, match="1-D array of 50"):
        grow_multiway_forest(np.zeros((50, 2)), y[:10])
    with pytest.raises(InvalidParameterError, match="max_features"):
        grow_multiway_forest(np.zeros((50, 2)), y, max_features=0)
