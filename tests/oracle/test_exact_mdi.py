"""Exact expected MDI (harness/oracle/exact_mdi.py) against Thm 1, Thm 2, a literal replay of
scikit-learn's RandomSplitter, Monte Carlo forests and the published LED table."""

from __future__ import annotations

import functools
import itertools
import math
from collections import defaultdict

import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesClassifier

from harness.core.errors import BadInputError, InvalidParameterError
from harness.datasets.led import DIGIT_SEGMENTS, led_population
from harness.datasets.xor import xor_population
from harness.oracle.exact_mdi import expected_mdi
from harness.oracle.finite_table import DiscreteDistribution

RULES = ("sklearn", "paper")

# Louppe et al. (2013), LED table, columns K = 1..7 (rows X1..X7), computed by the authors with
# finite forests: their K = 1 column is up to 0.0048 away from the exact Thm 1 values.
PAPER_LED_K = np.array(
    [
        [0.414, 0.362, 0.327, 0.309, 0.304, 0.305, 0.306],
        [0.583, 0.663, 0.715, 0.757, 0.787, 0.801, 0.799],
        [0.532, 0.512, 0.496, 0.489, 0.483, 0.475, 0.475],
        [0.543, 0.525, 0.484, 0.445, 0.414, 0.409, 0.412],
        [0.658, 0.731, 0.778, 0.810, 0.827, 0.831, 0.835],
        [0.221, 0.140, 0.126, 0.122, 0.122, 0.121, 0.120],
        [0.368, 0.385, 0.392, 0.387, 0.382, 0.375, 0.372],
    ]
)


def led():
    return led_population(0.0)


def led_noisy():
    return led_population(0.2)


def xor():
    return xor_population(0.05)


def random_binary(seed=1, n=24, p=4):
    """Binary inputs, repeated x with different classes, unequal weights."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, p))
    y = (X[:, 0] & X[:, 1]) + (rng.random(n) < 0.25) + X[:, 2] * (rng.random(n) < 0.5)
    return X, y, rng.random(n) + 0.1


def multilevel(seed=2):
    """Unequally spaced levels and a duplicated column (ties between features)."""
    rng = np.random.default_rng(seed)
    x1 = rng.choice([0.0, 1.0, 3.0], size=9)
    x2 = rng.choice([0.0, 2.0], size=9)
    x4 = rng.choice([-1.0, 0.5, 1.0], size=9)
    X = np.column_stack([x1, x2, x1, x4])
    y = (x1 > 0.5).astype(int) + (x4 > 0) + (rng.random(9) < 0.3)
    return X, y, rng.random(9) + 0.2


TABLES = {"led": led, "xor": xor, "led_noisy": led_noisy, "random_binary": random_binary}


# -- an independent replay of the tree growers, enumerating every random choice ------------------


def naive_node(X, y, w, rows):
    """Weight of the rows and entropy of Y among them in bits, with plain dictionaries."""
    counts: dict = defaultdict(float)
    for i in rows:
        counts[y[i]] += w[i]
    total = sum(counts.values())
    return total, -sum(c / total * math.log2(c / total) for c in counts.values() if c > 0)


def naive_gain(X, y, w, rows, children):
    total, h = naive_node(X, y, w, rows)
    return h - sum(naive_node(X, y, w, c)[0] / total * naive_node(X, y, w, c)[1] for c in children)


def replay_sklearn(X, y, w, K, max_depth):
    """Expected MDI following ``node_split_random`` line by line (sklearn 1.9).

    Tracks known constants from ancestors, counts every draw in ``n_visited``, loops while
    ``f_i > n_total_constants and (n_visited < K or n_visited <= n_found + n_drawn)``, draws a
    uniform threshold and keeps a candidate only if strictly better.
    """
    X = np.asarray(X, dtype=np.float32).astype(float)
    w = np.asarray(w, dtype=float) / np.sum(w)
    p = X.shape[1]

    @functools.cache
    def node(rows, known, depth):
        out = np.zeros(p)
        weight, h = naive_node(X, y, w, rows)
        if (max_depth is not None and depth >= max_depth) or h <= np.finfo(float).eps:
            return out

        def search(undrawn, n_visited, n_const, found, best, prob):
            nonlocal out
            unknown_left = any(f not in known and f not in found for f in undrawn)
            if not (unknown_left and (n_visited < K or n_visited <= n_const)):
                if best is not None:
                    gain, f, left, right = best
                    out = out + prob * weight * gain * np.eye(p)[f]
                    for child in (left, right):
                        out = out + prob * node(child, known | found, depth + 1)
                return
            for f in undrawn:
                rest, q = tuple(g for g in undrawn if g != f), prob / len(undrawn)
                if f in known:
                    search(rest, n_visited + 1, n_const + 1, found, best, q)
                    continue
                values = X[list(rows), f]
                if values.max() - values.min() <= 1e-7:
                    search(rest, n_visited + 1, n_const + 1, found | {f}, best, q)
                    continue
                levels = sorted(set(values))
                for a, b in zip(levels[:-1], levels[1:]):
                    left = tuple(i for i in rows if X[i, f] <= a)
                    right = tuple(i for i in rows if X[i, f] > a)
                    gain = naive_gain(X, y, w, rows, (left, right))
                    better = best is None or gain > best[0] + 1e-12
                    new = (gain, f, left, right) if better else best
                    chance = q * (b - a) / (levels[-1] - levels[0])
                    search(rest, n_visited + 1, n_const, found, new, chance)

        search(tuple(range(p)), 0, 0, frozenset(), None, 1.0)
        return out

    return node(tuple(range(len(y))), frozenset(), 0)


def replay_paper(X, y, w, K, max_depth):
    """Expected MDI of the paper's trees: every ordered draw of min(K, #unused) unused variables,
    the first strictly best one splits multiway; no shortcut for constant variables."""
    X = np.asarray(X, dtype=float)
    w = np.asarray(w, dtype=float) / np.sum(w)
    p = X.shape[1]

    @functools.cache
    def node(rows, used, depth):
        out = np.zeros(p)
        weight, h = naive_node(X, y, w, rows)
        unused = [f for f in range(p) if f not in used]
        deep = max_depth is not None and depth >= max_depth
        if not unused or h <= np.finfo(float).eps or deep:
            return out
        draws = list(itertools.permutations(unused, min(K, len(unused))))
        for order in draws:
            best = None
            for f in order:
                children = [
                    tuple(i for i in rows if X[i, f] == v) for v in sorted(set(X[list(rows), f]))
                ]
                gain = naive_gain(X, y, w, rows, children)
                if best is None or gain > best[0] + 1e-12:
                    best = (gain, f, children)
            gain, f, children = best
            out = out + weight * gain * np.eye(p)[f] / len(draws)
            for child in children:
                out = out + node(child, used | {f}, depth + 1) / len(draws)
        return out

    return node(tuple(range(len(y))), frozenset(), 0)


# -- theorems -------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("name", ["led", "xor", "led_noisy", "random_binary"])
def test_k1_equals_thm1(name, rule):
    X, y, prob = TABLES[name]()
    thm1 = DiscreteDistribution(X, y, prob / prob.sum()).thm1()
    np.testing.assert_allclose(expected_mdi(X, y, prob, 1, rule=rule), thm1, atol=1e-12, rtol=0)


@pytest.mark.parametrize("name", ["led", "xor", "led_noisy"])
def test_depth_limited_k1_paper_rule_is_truncated_thm1(name):
    X, y, prob = TABLES[name]()
    dist = DiscreteDistribution(X, y, prob)
    for depth in range(1, X.shape[1] + 1):
        got = expected_mdi(X, y, prob, 1, depth, rule="paper")
        np.testing.assert_allclose(got, dist.thm1(depth), atol=1e-12, rtol=0)


def test_depth_limited_k1_sklearn_rule_is_truncated_thm1_only_without_constant_splits():
    # XOR lists all 8 inputs: no unused variable is ever constant in a node, so sklearn's depth
    # (real splits only) is the branch size k of Eq. 2.
    X, y, prob = xor()
    dist = DiscreteDistribution(X, y, prob)
    for depth in range(1, 4):
        np.testing.assert_allclose(
            expected_mdi(X, y, prob, 1, depth), dist.thm1(depth), atol=1e-12, rtol=0
        )
    # On LED, sklearn skips the constant segments that the paper's trees spend a level on.
    X, y, prob = led()
    gap = np.abs(expected_mdi(X, y, prob, 1, 2) - DiscreteDistribution(X, y, prob).thm1(2))
    assert gap.max() > 0.01


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("name", ["led", "xor", "led_noisy", "random_binary"])
def test_fully_grown_sum_is_mutual_information_thm2(name, rule):
    X, y, prob = TABLES[name]()
    mi = DiscreteDistribution(X, y, prob / prob.sum()).mutual_information(range(X.shape[1]))
    if name == "led":
        assert abs(mi - math.log2(10)) < 1e-12
    for k in range(1, X.shape[1] + 1):
        assert abs(expected_mdi(X, y, prob, k, rule=rule).sum() - mi) < 1e-12


@pytest.mark.parametrize("name", ["led", "xor", "led_noisy", "random_binary"])
def test_rules_agree_at_k_equals_p(name):
    X, y, prob = TABLES[name]()
    p = X.shape[1]
    np.testing.assert_allclose(
        expected_mdi(X, y, prob, p), expected_mdi(X, y, prob, p, rule="paper"), atol=1e-12
    )
    np.testing.assert_allclose(expected_mdi(X, y, prob, None), expected_mdi(X, y, prob, p))


# -- the recursion against a literal replay of the growers --------------------------------------


@pytest.mark.parametrize("max_depth", [None, 2])
@pytest.mark.parametrize("name", ["multilevel", "random_binary", "xor"])
@pytest.mark.parametrize("rule", RULES)
def test_matches_literal_replay_of_the_grower(rule, name, max_depth):
    X, y, prob = {"multilevel": multilevel, "random_binary": random_binary, "xor": xor}[name]()
    replay = replay_sklearn if rule == "sklearn" else replay_paper
    for k in range(1, X.shape[1] + 1):
        got = expected_mdi(X, y, prob, k, max_depth, rule=rule)
        np.testing.assert_allclose(got, replay(X, y, prob, k, max_depth), atol=1e-12, rtol=0)


def test_weights_act_as_repeated_rows_and_zero_weight_rows_are_dropped():
    X, y, _ = random_binary(seed=4, n=12)
    counts = np.arange(12) % 3  # 0, 1 or 2 copies
    weighted = expected_mdi(X, y, counts, 2)
    repeated = expected_mdi(np.repeat(X, counts, axis=0), np.repeat(y, counts), None, 2)
    np.testing.assert_allclose(weighted, repeated, atol=1e-12)
    order = np.random.default_rng(0).permutation(12)
    np.testing.assert_allclose(expected_mdi(X[order], y[order], counts[order], 2), weighted)


# -- Monte Carlo against scikit-learn ----------------------------------------------------------


def per_tree_mdi(forest, p: int) -> np.ndarray:
    """Unnormalised MDI of each tree, ``sum_t p(t) Delta i(t)`` in bits, from ``tree_``."""
    out = np.zeros((len(forest.estimators_), p))
    for i, estimator in enumerate(forest.estimators_):
        tree = estimator.tree_
        left, right = tree.children_left, tree.children_right
        weight, impurity = tree.weighted_n_node_samples, tree.impurity
        split = left >= 0
        decrease = (
            weight[split] * impurity[split]
            - weight[left[split]] * impurity[left[split]]
            - weight[right[split]] * impurity[right[split]]
        )
        np.add.at(out[i], tree.feature[split], decrease / weight[0])
    return out


def chi2_per_dof(cases) -> float:
    """Mean of ``((MC mean - exact) / SE)**2`` over every (case, variable)."""
    z2 = []
    for X, y, k, max_depth, n_trees, seed in cases:
        forest = ExtraTreesClassifier(
            n_estimators=n_trees,
            max_features=k,
            max_depth=max_depth,
            criterion="entropy",
            bootstrap=False,
            random_state=seed,
        ).fit(X, y)
        mdi = per_tree_mdi(forest, X.shape[1])
        exact = expected_mdi(X, y, None, k, max_depth)
        se = mdi.std(axis=0, ddof=1) / math.sqrt(n_trees)
        varying = se > 0
        np.testing.assert_allclose(mdi.mean(axis=0)[~varying], exact[~varying], atol=1e-12)
        z2.extend(((mdi.mean(axis=0) - exact)[varying] / se[varying]) ** 2)
    return float(np.mean(z2))


# Under a correct exact value each z is N(0, 1) by the CLT over thousands of i.i.d. trees, so
# the statistic has mean 1; with 14-21 terms (one of each 7 is redundant as the MDI of a fully
# grown LED tree sums to log2 10) it exceeds 3 with probability ~1e-5. The nearest wrong laws
# give far more on the same forests: the paper's rule ~5, K counted among the non-constant
# features only ~17, cut points equally likely instead of proportional to gaps ~150.


@pytest.mark.slow
def test_monte_carlo_extra_trees_led():
    X, y = DIGIT_SEGMENTS.astype(float), np.arange(10)
    chi2 = chi2_per_dof([(X, y, k, None, 3000, k) for k in (2, 3, 5)])
    print(f"LED, K = 2, 3, 5, 3000 trees each: chi2/dof = {chi2:.3f} (21 terms)")
    assert chi2 < 3


@pytest.mark.slow
def test_monte_carlo_extra_trees_multilevel_thresholds_and_depth():
    # Levels 0 < 1 < 3 < 20: the cut after 3 is 17 times likelier than the one after 0. Each row
    # its own class with equal weights, so sklearn's floating-point ties are exact ties.
    Xm = np.array(
        [
            [0, 0, 0],
            [1, 0, 1],
            [3, 0.25, 0],
            [20, 2, 1],
            [0, 2, 1],
            [1, 0.25, 0],
            [3, 2, 1],
            [20, 0, 0],
        ],
        dtype=float,
    )
    led_X = DIGIT_SEGMENTS.astype(float)
    cases = [(Xm, np.arange(8), 2, None, 2000, 1), (led_X, np.arange(10), 3, 3, 2000, 2)]
    chi2 = chi2_per_dof(cases)
    print(f"multilevel K = 2 and LED K = 3, max_depth = 3, 2000 trees: chi2/dof = {chi2:.3f}")
    assert chi2 < 3


def test_paper_rule_reproduces_the_published_led_table_within_its_noise():
    # Tolerance 0.005: the published K = 1 column is itself up to 0.0048 from exact Thm 1.
    X, y, prob = led()
    columns = np.column_stack([expected_mdi(X, y, prob, k, rule="paper") for k in range(1, 8)])
    assert np.abs(columns - PAPER_LED_K).max() < 0.005


# -- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "X, y, weights, match",
    [
        (np.array([["a", "b"], ["c", "d"]]), [0, 1], None, "real numbers.*dtype <U1"),
        (np.array([0.0, 1.0]), [0, 1], None, "2-D array.*shape \\(2,\\)"),
        (np.array([[0.0], [np.nan]]), [0, 1], None, "finite"),
        (np.array([[0.0], [1.0]]), [0, 1, 1], None, "1-D array of 2 finite class labels"),
        (np.array([[0.0], [1.0]]), [0, 1], [1.0, -1.0], "non-negative"),
        (np.array([[0.0], [1e-9]]), [0, 1], None, "FEATURE_THRESHOLD"),
    ],
)
def test_bad_input_names_what_is_allowed(X, y, weights, match):
    with pytest.raises(BadInputError, match=match):
        expected_mdi(X, y, weights)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_features": 3}, "'max_features'.*\\[1, 2\\].*Got 3"),
        ({"max_features": 0}, "'max_features'.*Got 0"),
        ({"max_depth": 0}, "'max_depth'.*Got 0"),
        ({"rule": "breiman"}, "'rule'.*'paper', 'sklearn'.*Got 'breiman'"),
    ],
)
def test_bad_parameters_name_what_is_allowed(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        expected_mdi([[0, 1], [1, 0]], [0, 1], **kwargs)


def test_levels_closer_than_the_sklearn_threshold_are_fine_for_the_paper_rule():
    got = expected_mdi([[0.0], [1e-9]], [0, 1], rule="paper")
    np.testing.assert_allclose(got, [1.0], atol=1e-12)
