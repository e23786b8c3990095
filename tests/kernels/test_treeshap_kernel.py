"""The path-dependent TreeSHAP kernel: shap, brute-force Shapley values, additivity, threads."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

from harness.forest.view import forest_view
from harness.kernels.treeshap.path_dependent import LANES, NARROW, path_dependent_shap
from tests._support.shapley_by_subsets import shapley_by_subsets

shap = pytest.importorskip("shap")


def _prediction(model, X):
    if hasattr(model, "classes_"):
        return model.predict_proba(X)
    return model.predict(X)[:, None]


def _shap_reference(model, X):
    explainer = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
    phi = np.asarray(explainer.shap_values(X, check_additivity=False), dtype=float)
    return phi.reshape(X.shape[0], X.shape[1], -1), np.atleast_1d(explainer.expected_value)


def _path_features(tree) -> list[list[int]]:
    """The features split on along every root-to-leaf path of a scikit-learn tree."""
    paths, stack = [], [(0, [])]
    while stack:
        node, features = stack.pop()
        if tree.children_left[node] < 0:
            paths.append(features)
            continue
        below = features + [int(tree.feature[node])]
        stack += [(tree.children_left[node], below), (tree.children_right[node], below)]
    return paths


def _digits():
    from sklearn.datasets import load_digits

    return load_digits(return_X_y=True)


CASES = {
    "binary_rf": lambda: (RandomForestClassifier(30, random_state=0), "breast"),
    "multiclass_et_deep": lambda: (
        ExtraTreesClassifier(8, max_features=1, criterion="entropy", random_state=0),
        "digits"),
    "regressor_rf_repeats": lambda: (RandomForestRegressor(10, random_state=0), "friedman"),
    "regressor_et_weighted": lambda: (ExtraTreesRegressor(10, random_state=1), "friedman_w"),
}


def _fit(case):
    model, data = CASES[case]()
    weight = None
    if data == "breast":
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True)
    elif data == "digits":
        X, y = _digits()
    else:
        from sklearn.datasets import make_friedman1

        X, y = make_friedman1(n_samples=300, n_features=5, random_state=0)
        if data == "friedman_w":
            weight = np.random.default_rng(0).uniform(0.1, 3.0, size=y.size)
    return model.fit(X, y, sample_weight=weight), X[:300]  # shap is slow on deep trees


@pytest.fixture(scope="module", params=sorted(CASES))
def fitted(request):
    return request.param, *_fit(request.param)


def test_equals_shap_path_dependent(fitted):
    case, model, X = fitted
    phi, base = path_dependent_shap(forest_view(model).packed, X)
    theirs, their_base = _shap_reference(model, X)
    np.testing.assert_allclose(phi, theirs, rtol=0, atol=1e-9)
    np.testing.assert_allclose(base, their_base, rtol=0, atol=1e-12)


def test_additivity(fitted):
    case, model, X = fitted
    phi, base = path_dependent_shap(forest_view(model).packed, X)
    scale = max(1.0, float(np.abs(_prediction(model, X)).max()))
    np.testing.assert_allclose(base + phi.sum(axis=1), _prediction(model, X), rtol=0,
                               atol=1e-12 * scale)


def test_cases_cover_deep_trees_repeated_features_and_weights(fitted):
    """Guard that the fixtures exercise what the kernel must get right."""
    case, model, X = fitted
    trees = [est.tree_ for est in model.estimators_]
    if case == "multiclass_et_deep":
        assert max(tree.max_depth for tree in trees) > 20
    if case.startswith("regressor"):
        assert any(len(set(path)) < len(path) for tree in trees for path in _path_features(tree))
    if case == "binary_rf":  # the kernel loads only the features a tree splits on
        assert any(len(set(tree.feature[tree.feature >= 0])) < X.shape[1] for tree in trees)
    if case == "regressor_et_weighted":
        root = trees[0].weighted_n_node_samples[0]
        assert root != trees[0].n_node_samples[0]


def test_threads_do_not_change_results():
    model, X = _fit("multiclass_et_deep")
    forest = forest_view(model).packed
    one, _ = path_dependent_shap(forest, X[:101], threads=1)
    two, _ = path_dependent_shap(forest, X[:101], threads=2)
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("case", ["multiclass_et_deep", "regressor_rf_repeats"])
def test_a_rows_values_do_not_depend_on_its_batch(case):
    """Rows go by batches of LANES, and at most NARROW rows by one batch of NARROW lanes:
    lanes never mix, so a row's values are the same bits whichever batch (and width) it
    lands in. Rows 32-36 fall in a full-width tail batch of 5 rows out of 37 and of 13 out of
    45, and, alone, in one narrow batch."""
    assert 32 == 2 * LANES and 37 - 32 <= NARROW < 45 - 32
    model, X = _fit(case)
    forest = forest_view(model).packed
    short, _ = path_dependent_shap(forest, X[:37], threads=1)
    long, _ = path_dependent_shap(forest, X[:45], threads=1)
    tail, _ = path_dependent_shap(forest, X[32:37], threads=1)
    np.testing.assert_array_equal(short, long[:37])
    np.testing.assert_array_equal(tail, short[32:])
    reference, _ = _shap_reference(model, X[32:37])
    np.testing.assert_allclose(tail, reference, atol=1e-10)


def test_single_node_tree_adds_only_to_the_base():
    """A bootstrap sample that misses the rare class grows a tree with no split."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = np.r_[np.zeros(19), 1]
    model = RandomForestClassifier(20, random_state=0).fit(X, y)
    assert any(est.tree_.node_count == 1 for est in model.estimators_)
    phi, base = path_dependent_shap(forest_view(model).packed, X)
    theirs, their_base = _shap_reference(model, X)
    np.testing.assert_allclose(phi, theirs, rtol=0, atol=1e-12)
    np.testing.assert_allclose(base, their_base, rtol=0, atol=1e-12)
    np.testing.assert_allclose(base + phi.sum(axis=1), model.predict_proba(X), rtol=0,
                               atol=1e-12)


def _conditional_expectation(tree, x, subset, node=0):
    """E[f(X) | X_S = x_S] of one tree, absent features split by the covers (Lundberg 2020)."""
    left, right = tree.children_left[node], tree.children_right[node]
    if left < 0:
        value = tree.value[node, 0]
        return value / value.sum() if value.size > 1 else value
    if tree.feature[node] in subset:
        goes_left = np.float32(x[tree.feature[node]]) <= tree.threshold[node]
        return _conditional_expectation(tree, x, subset, left if goes_left else right)
    cover = tree.weighted_n_node_samples
    return (cover[left] * _conditional_expectation(tree, x, subset, left)
            + cover[right] * _conditional_expectation(tree, x, subset, right)) / cover[node]


def _brute_force(model, x):
    """Shapley values of v(S) = mean over trees of E[f_t | x_S], every subset enumerated."""
    p = x.size

    def value(subset):
        return np.atleast_1d(np.mean([_conditional_expectation(est.tree_, x, set(subset))
                                      for est in model.estimators_], axis=0))

    return shapley_by_subsets(p, value)


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_equals_brute_force_shapley_values(kind):
    """An oracle independent of shap and of the kernel's algebra, on tiny trees."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 5))
    y = X[:, 0] * X[:, 1] + np.sin(3 * X[:, 2]) + 0.5 * X[:, 3]
    if kind == "regressor":
        model = RandomForestRegressor(3, max_depth=6, max_features=2, random_state=0)
    else:
        y = np.digitize(y, [-0.5, 0.5])
        model = ExtraTreesClassifier(3, max_depth=6, max_features=2, random_state=0)
    model.fit(X, y)
    assert any(len(set(path)) < len(path)
               for est in model.estimators_ for path in _path_features(est.tree_))
    phi, _ = path_dependent_shap(forest_view(model).packed, X[:4])
    for row in range(4):
        np.testing.assert_allclose(phi[row], _brute_force(model, X[row]), rtol=0, atol=1e-12)
