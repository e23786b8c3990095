"""Saabas and TreeSHAP: additivity, agreement with shap, brute-force Shapley values."""

from __future__ import annotations

import itertools

import numba
import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier, RandomForestRegressor

import harness
from harness.forest.compact import compact_forest
from harness.forest.packed import PackedForest
from harness.forest.view import forest_view
from harness.kernels.treeshap.interventional import (
    code_background,
    interventional_shap,
    shapley_weights,
)
from tests._support.shapley_by_subsets import shapley_by_subsets

shap = pytest.importorskip("shap")


def _prediction(model, X):
    return model.predict_proba(X) if hasattr(model, "classes_") else model.predict(X)


def _scale(model, X):
    return max(1.0, float(np.abs(_prediction(model, X)).max()))


def test_saabas_bias_plus_contributions_is_prediction(forest_without_bootstrap):
    model, X = forest_without_bootstrap
    params = {"output": "all_classes"} if hasattr(model, "classes_") else {}
    imp = harness.explain("saabas", model, X, **params)
    total = imp.base_values + imp.values.sum(axis=1)
    np.testing.assert_allclose(total, _prediction(model, X), rtol=0,
                               atol=1e-12 * _scale(model, X))


def test_saabas_equals_shap_approximate(forest_without_bootstrap):
    model, X = forest_without_bootstrap
    params = {"output": "all_classes"} if hasattr(model, "classes_") else {}
    ours = harness.explain("saabas", model, X, **params).values
    theirs = shap.TreeExplainer(model).shap_values(X, approximate=True, check_additivity=False)
    np.testing.assert_allclose(ours, np.asarray(theirs).reshape(ours.shape), rtol=0,
                               atol=1e-12 * _scale(model, X))


def test_predicted_class_output_is_the_slice_of_all_classes(iris):
    X, y = iris
    model = ExtraTreesClassifier(10, random_state=0).fit(X, y)
    cls = model.predict_proba(X).argmax(axis=1)
    for name in ("saabas", "treeshap"):
        every = harness.explain(name, model, X, output="all_classes")
        chosen = harness.explain(name, model, X)
        assert chosen.explains == "predicted-class probability"
        np.testing.assert_array_equal(chosen.values, every.values[np.arange(len(X)), :, cls])
        fixed = harness.explain(name, model, X, output=2)
        np.testing.assert_array_equal(fixed.values, every.values[:, :, 2])


@pytest.mark.parametrize("perturbation", ["tree_path_dependent", "interventional"])
def test_treeshap_additivity(forest_without_bootstrap, perturbation):
    model, X = forest_without_bootstrap
    X = X[:60]
    params = {"output": "all_classes"} if hasattr(model, "classes_") else {}
    imp = harness.explain("treeshap", model, X, perturbation=perturbation, n_background=25,
                          **params)
    total = imp.base_values + imp.values.sum(axis=1)
    np.testing.assert_allclose(total, _prediction(model, X), rtol=0,
                               atol=1e-9 * _scale(model, X))


def _brute_force_interventional(model, x, background):
    """Shapley values of v(S) = mean_z f(x_S, z_~S) by enumerating all subsets (every
    coalition's hybrid rows through one call of ``model.predict``)."""
    p = x.size
    masks = np.array(list(itertools.product([False, True], repeat=p)))
    hybrids = np.repeat(background[None], len(masks), axis=0)
    for k, mask in enumerate(masks):
        hybrids[k][:, mask] = x[mask]
    values = model.predict(hybrids.reshape(-1, p)).reshape(len(masks), -1).mean(axis=1)
    by_subset = {tuple(np.flatnonzero(mask)): v for mask, v in zip(masks, values)}
    return shapley_by_subsets(p, by_subset.__getitem__)


def test_shapley_weights_are_a_distribution_over_coalition_sizes():
    """W(a, b) = ``weights[a + 1, b + 1]`` is the Shapley weight of one coalition of a of the
    other n - 1 = a + b players: over the C(n - 1, a) coalitions of each size a, the weights
    of one player sum to 1, for every n the table holds; row and column 0 (the a = -1 and
    b = -1 a leaf reads where it multiplies zeros) are zeros, and the table is read-only."""
    from math import comb

    size = 12
    weights = shapley_weights(size)
    assert weights.shape == (size + 1, size + 1) and not weights.flags.writeable
    assert not weights[0].any() and not weights[:, 0].any()
    for n in range(1, size + 1):
        total = sum(comb(n - 1, a) * weights[a + 1, n - a] for a in range(n))
        assert total == pytest.approx(1.0, abs=1e-13), n
    assert weights[2, 3] == pytest.approx(1 * 2 / 24)  # a = 1, b = 2: 1! 2! / 4!


def test_interventional_kernel_equals_brute_force_shapley(diabetes):
    """An independent oracle: subset enumeration through scikit-learn's own predict."""
    X, y = diabetes
    X = X[:, :7]
    model = RandomForestRegressor(4, random_state=0, max_depth=8).fit(X, y)
    background = X[:6]
    ours = interventional_shap(forest_view(model).paths, X[10:13], background)[:, :, 0]
    for row in range(3):
        expected = _brute_force_interventional(model, X[10 + row], background)
        np.testing.assert_allclose(ours[row], expected, rtol=0, atol=1e-10)


def _distinct_features_on_paths(tree, X) -> np.ndarray:
    """For each row of X, the number of distinct features split on its path in ``tree``."""
    on_path = tree.decision_path(X).toarray().astype(bool)
    split = tree.tree_.feature
    return np.array([len(set(split[nodes & (split >= 0)])) for nodes in on_path])


def test_interventional_kernel_past_one_lane_of_path_features():
    """Paths of 9 to 16 distinct features, whose leaf sums run over two lanes of 8 slots
    (one lane below 9, the loop over the path's own features above 16: the 70-split chain
    below), against subset enumeration through scikit-learn's predict."""
    n_features = 12
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, n_features))
    y = np.sin(X).sum(axis=1) + X[:, 0] * X[:, 1]
    model = RandomForestRegressor(3, max_features=None, random_state=0).fit(X, y)
    background = X[:3]
    rows = X[3:5]
    longest = max(_distinct_features_on_paths(tree, rows).max() for tree in model.estimators_)
    assert 8 < longest <= 16, longest
    ours = interventional_shap(forest_view(model).paths, rows, background)[:, :, 0]
    for row, x in enumerate(rows):
        expected = _brute_force_interventional(model, x, background)
        np.testing.assert_allclose(ours[row], expected, rtol=0, atol=1e-10)


def test_interventional_kernel_with_two_words_of_background_rows(wine):
    """70 background rows are walked as two 64-bit words; class probabilities, all classes,
    against subset enumeration through predict_proba; the same values on 1 and 2 threads."""
    X, y = wine
    X = X[:, :6]
    model = ExtraTreesClassifier(5, max_depth=7, random_state=0).fit(X, y)
    background = X[np.random.default_rng(1).choice(len(X), size=70, replace=False)]
    threads = numba.get_num_threads()
    try:
        runs = []
        for n_threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(n_threads)
            runs.append(interventional_shap(forest_view(model).paths, X[:3], background))
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(runs[0], runs[-1])

    for row in range(3):
        def value(subset, x=X[row]):
            hybrid = background.copy()
            hybrid[:, list(subset)] = x[list(subset)]
            return model.predict_proba(hybrid).mean(axis=0)

        expected = shapley_by_subsets(X.shape[1], value)
        np.testing.assert_allclose(runs[0][row], expected, rtol=0, atol=1e-12)


def test_interventional_kernel_beyond_one_word_of_rows(wine):
    """70 rows are walked as two blocks of at most 64: rows of either block against subset
    enumeration through predict_proba (impure leaves: several classes per leaf), and a row
    of the second block explained alone gets the same bits."""
    X, y = wine
    X = X[:, :6]
    model = RandomForestClassifier(6, max_depth=6, min_samples_leaf=3,
                                   random_state=0).fit(X, y)
    background = X[np.random.default_rng(2).choice(len(X), size=20, replace=False)]
    paths = forest_view(model).paths
    values = interventional_shap(paths, X[:70], background)
    for row in (5, 63, 64, 69):
        def value(subset, x=X[row]):
            hybrid = background.copy()
            hybrid[:, list(subset)] = x[list(subset)]
            return model.predict_proba(hybrid).mean(axis=0)

        expected = shapley_by_subsets(X.shape[1], value)
        np.testing.assert_allclose(values[row], expected, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(interventional_shap(paths, X[66:67], background)[0],
                                  values[66])
    coded = code_background(paths, background)  # once per explain, shared by its blocks
    np.testing.assert_array_equal(interventional_shap(paths, X[:70], coded), values)
    other = RandomForestClassifier(6, max_depth=6, min_samples_leaf=3, random_state=1)
    with pytest.raises(ValueError, match="another forest"):
        interventional_shap(forest_view(other.fit(X, y)).paths, X[:3], coded)


def _chain_forest(depth: int) -> PackedForest:
    """One tree of ``depth`` splits in a chain: node 2d splits feature d at 0.5, its left
    child is a leaf of value d + 1 and its right child the next split (the last: 100)."""
    n_nodes = 2 * depth + 1
    left, right = np.full(n_nodes, -1), np.full(n_nodes, -1)
    feature, threshold = np.full(n_nodes, -2), np.full(n_nodes, -2.0)
    value = np.zeros((n_nodes, 1))
    for d in range(depth):
        left[2 * d], right[2 * d], feature[2 * d], threshold[2 * d] = 2 * d + 1, 2 * d + 2, d, 0.5
        value[2 * d + 1] = d + 1
    value[-1] = 100
    return PackedForest(left=left, right=right, feature=feature, threshold=threshold,
                        value=value, cover=np.ones(n_nodes), impurity=np.zeros(n_nodes),
                        offsets=np.array([0, n_nodes]), max_depth=depth, n_features=depth,
                        classifier=False)


def test_interventional_kernel_past_64_features_on_a_path():
    """A chain of 70 splits on 70 features: the leaves past the 64th split hold more distinct
    features than one word of bits. The row and the background row differ on five features
    (the others are dummies, Shapley value 0), whose values come from subset enumeration of
    the hybrid point routed through the tree's own arrays."""
    forest = _chain_forest(70)
    x, z = np.ones(70), np.ones(70)
    z[[3, 30, 66, 67]] = 0.0  # the background row stops early ...
    x[68] = 0.0  # ... and the row at split 68
    players = [3, 30, 66, 67, 68]

    def value(subset):
        point = z.copy()
        point[[players[k] for k in subset]] = x[[players[k] for k in subset]]
        node = 0
        while forest.left[node] >= 0:
            f = forest.feature[node]
            node = forest.left[node] if point[f] <= forest.threshold[node] else forest.right[node]
        return forest.value[node, 0]

    expected = np.zeros(70)
    expected[players] = shapley_by_subsets(len(players), value)
    phi = interventional_shap(compact_forest(forest), x[None], z[None])[0, :, 0]
    np.testing.assert_allclose(phi, expected, rtol=0, atol=1e-12)
    assert np.all(expected[[66, 67, 68]] != 0)


def test_interventional_kernel_routes_as_scikit_learn_next_to_a_threshold():
    """x = 0.1127 lies above the float64 threshold 0.11269999668 (scikit-learn sends it
    right) but equals the threshold rounded to float32, which is what shap 0.51's
    interventional code compares with (shap issue 5116): the exact value is f(x) − f(z)."""
    model = RandomForestRegressor(1, bootstrap=False, random_state=0).fit(
        [[0.1085], [0.1169]], [0.0, 1.0])
    x, z = np.array([[0.1127]]), np.array([[0.1085]])
    phi = interventional_shap(forest_view(model).paths, x, z)
    assert model.predict(x)[0] - model.predict(z)[0] == 1.0
    assert phi[0, 0, 0] == 1.0


def test_interventional_kernel_agrees_with_shap_where_shap_is_accurate(iris):
    """shap's interventional code is single precision: agreement to 1e-6 only."""
    X, y = iris
    model = ExtraTreesClassifier(20, random_state=0).fit(X, y)
    ours = harness.explain("treeshap", model, X, perturbation="interventional",
                           n_background=30, output="all_classes", seed=3)
    theirs = harness.explain("treeshap", model, X, perturbation="interventional",
                             n_background=30, output="all_classes", seed=3, backend="shap")
    np.testing.assert_allclose(ours.values, theirs.values, rtol=0, atol=1e-6)


def test_treeshap_path_dependent_equals_shap(iris):
    X, y = iris
    model = ExtraTreesClassifier(10, random_state=0).fit(X, y)
    ours = harness.explain("treeshap", model, X, output="all_classes").values
    theirs = shap.TreeExplainer(model).shap_values(X, check_additivity=False)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=0, atol=1e-12)
