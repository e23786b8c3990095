"""The compiled path walks against the plain definition, walked in Python over ``est.tree_``."""

from __future__ import annotations

import dataclasses

import numba
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

import harness
from harness.forest.view import forest_view
from harness.kernels import paths as path_kernels
from harness.kernels.paths import local_mdi_paths, saabas_paths

ATOL = 1e-12


def _plain_walk(model, X, quantity):
    """Mean over trees of Σ_{edges t -> c on the path of x, v(t) = j} (q(c) - q(t)), plus the
    mean leaf quantity: the definitions of Sutera et al. 2021 Eq. 8 and Saabas, routed as
    scikit-learn routes (float32 rows, left when x <= threshold)."""
    X32 = np.asarray(X, dtype=np.float32)
    trees = [est.tree_ for est in model.estimators_]
    width = quantity(trees[0]).shape[1]
    out = np.zeros((X32.shape[0], X32.shape[1], width))
    at_leaf = np.zeros((X32.shape[0], width))
    for tree in trees:
        q = quantity(tree)
        for i, x in enumerate(X32):
            node = 0
            while tree.children_left[node] != -1:
                f = tree.feature[node]
                go_left = float(x[f]) <= tree.threshold[node]
                child = tree.children_left[node] if go_left else tree.children_right[node]
                out[i, f] += q[child] - q[node]
                node = child
            at_leaf[i] += q[node]
    return out / len(trees), at_leaf / len(trees)


def _impurity(tree):
    return np.asarray(tree.impurity, dtype=float)[:, None]


def _value(tree):
    value = np.asarray(tree.value[:, 0, :], dtype=float)
    if value.shape[1] == 1:  # regression: the node mean
        return value
    return value / value.sum(axis=1, keepdims=True)


def _digits():
    X, y = load_digits(return_X_y=True)
    return X[:300], y[:300]


FORESTS = {
    "et_digits_max_features_1": (_digits, ExtraTreesClassifier(
        12, max_features=1, criterion="entropy", random_state=0)),
    "rf_breast_cancer": (lambda: load_breast_cancer(return_X_y=True),
                         RandomForestClassifier(8, random_state=1)),
    "et_diabetes_max_features_1": (lambda: load_diabetes(return_X_y=True),
                                   ExtraTreesRegressor(8, max_features=1, random_state=2)),
    "rf_diabetes": (lambda: load_diabetes(return_X_y=True),
                    RandomForestRegressor(8, max_depth=10, random_state=3)),
}


@pytest.fixture(scope="module", params=sorted(FORESTS))
def fitted(request):
    data, forest = FORESTS[request.param]
    X, y = data()
    rows = np.random.default_rng(0).permutation(len(X))
    train, explain = rows[: len(X) // 2], rows[::7]  # explained rows: half unseen
    return forest.fit(X[train], y[train]), X[explain]


#: how the walks schedule rows in each tree (``PathForest.refill``): the forest's own choice,
#: lockstep groups of four everywhere, a finished lane refilled everywhere, and both in turn
SCHEDULES = {"own": None, "lockstep": 0, "refill": 1, "alternating": 2}


@pytest.fixture(autouse=True)
def _refill_any_block(monkeypatch):
    """Blocks of every size refill their lanes where the forest says so (the walks take
    blocks of a few dozen rows here, below the threshold of REFILL_MIN_ROWS)."""
    monkeypatch.setattr(path_kernels, "REFILL_MIN_ROWS", 4)


def _scheduled(model, schedule: str):
    forest = forest_view(model).paths
    choice = SCHEDULES[schedule]
    if choice is None:
        return forest
    refill = np.full(forest.packed.n_trees, choice, dtype=np.uint8)
    if choice == 2:
        refill = (np.arange(forest.packed.n_trees) % 2).astype(np.uint8)
    return dataclasses.replace(forest, refill=refill)


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_local_mdi_equals_the_plain_path_walk(fitted, schedule):
    model, X = fitted
    expected, _ = _plain_walk(model, X, _impurity)
    np.testing.assert_allclose(local_mdi_paths(_scheduled(model, schedule), X),
                               -expected[:, :, 0], rtol=0, atol=ATOL)


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_saabas_equals_the_plain_path_walk_for_every_output(fitted, schedule):
    model, X = fitted
    expected, prediction = _plain_walk(model, X, _value)
    forest = _scheduled(model, schedule)
    bias = np.mean([_value(est.tree_)[0] for est in model.estimators_], axis=0)
    if not hasattr(model, "classes_"):
        values, _, base = saabas_paths(forest, X)
        np.testing.assert_allclose(values, expected[:, :, 0], rtol=0, atol=ATOL)
        np.testing.assert_allclose(base, bias[0], rtol=0, atol=ATOL)
        return
    every, proba, base = saabas_paths(forest, X, -2)
    np.testing.assert_allclose(every, expected, rtol=0, atol=ATOL)
    np.testing.assert_allclose(proba, prediction, rtol=0, atol=ATOL)
    np.testing.assert_allclose(base, bias, rtol=0, atol=ATOL)
    cls = np.argmax(proba, axis=1)
    rows = np.arange(len(X))
    chosen, _, base = saabas_paths(forest, X, -1)
    np.testing.assert_array_equal(chosen, every[rows, :, cls])  # same sums, same order
    np.testing.assert_array_equal(base, bias[cls])
    fixed, _, _ = saabas_paths(forest, X, 1)
    np.testing.assert_array_equal(fixed, every[:, :, 1])


def test_predicted_class_is_right_when_the_guess_from_the_first_trees_is_wrong(monkeypatch):
    X, y = load_iris(return_X_y=True)
    model = ExtraTreesClassifier(15, max_features=1, max_depth=3, random_state=0).fit(X, y)
    first = model.estimators_[0].predict_proba(X.astype(np.float32)).argmax(axis=1)
    assert np.sum(first != model.predict_proba(X).argmax(axis=1)) > 5  # the case is exercised
    monkeypatch.setattr(path_kernels, "GUESS_TREES", 1)
    forest = forest_view(model).paths
    chosen, proba, _ = saabas_paths(forest, X, -1)
    every, _, _ = saabas_paths(forest, X, -2)
    np.testing.assert_array_equal(chosen, every[np.arange(len(X)), :, proba.argmax(axis=1)])


def test_ties_go_to_the_first_class_as_in_argmax():
    X, y = load_iris(return_X_y=True)
    model = ExtraTreesClassifier(2, max_features=1, random_state=0).fit(X[::2], y[::2])
    _, proba, _ = saabas_paths(forest_view(model).paths, X, -2)
    assert np.any(proba.max(axis=1) == 0.5)  # two trees that disagree: exact ties
    imp = harness.explain("saabas", model, X)
    every = harness.explain("saabas", model, X, output="all_classes")
    cls = proba.argmax(axis=1)
    np.testing.assert_array_equal(imp.values, every.values[np.arange(len(X)), :, cls])
    np.testing.assert_array_equal(imp.base_values, every.base_values[np.arange(len(X)), cls])


def test_rows_on_a_threshold_are_routed_as_scikit_learn_routes():
    """Rows whose float32 value equals a split threshold, or lies just above it in float64."""
    X, y = load_diabetes(return_X_y=True)
    model = RandomForestRegressor(5, max_depth=6, random_state=0).fit(X[:200], y[:200])
    tree = model.estimators_[0].tree_
    inner = tree.children_left >= 0
    probes = np.repeat(X[:1], inner.sum() * 2, axis=0)
    for k, (f, t) in enumerate(zip(tree.feature[inner], tree.threshold[inner])):
        probes[2 * k, f] = np.float32(t)  # may round up above the float64 threshold
        probes[2 * k + 1, f] = np.nextafter(np.float32(t), np.float32(np.inf))
    values, _, base = saabas_paths(forest_view(model).paths, probes)
    np.testing.assert_allclose(base + values.sum(axis=1), model.predict(probes), rtol=0,
                               atol=1e-9)
    expected, _ = _plain_walk(model, probes, _value)
    np.testing.assert_allclose(values, expected[:, :, 0], rtol=0, atol=ATOL)


def test_results_do_not_depend_on_the_number_of_threads():
    threads = min(2, numba.config.NUMBA_NUM_THREADS)
    if threads < 2:
        pytest.skip("numba has a single thread here")
    X, y = _digits()
    model = ExtraTreesClassifier(10, max_features=1, random_state=0).fit(X, y)
    forest = forest_view(model).paths
    before = numba.get_num_threads()
    try:
        runs = []
        for count in (1, threads):
            numba.set_num_threads(count)
            runs.append((local_mdi_paths(forest, X), saabas_paths(forest, X, -1)[0],
                         saabas_paths(forest, X, -2)[0]))
    finally:
        numba.set_num_threads(before)
    for one, many in zip(*runs):
        np.testing.assert_array_equal(one, many)


def test_saabas_equals_shap_approximate_to_1e_9(fitted):
    shap = pytest.importorskip("shap")
    model, X = fitted
    params = {"output": "all_classes"} if hasattr(model, "classes_") else {}
    ours = harness.explain("saabas", model, X, **params).values
    theirs = shap.TreeExplainer(model).shap_values(X, approximate=True, check_additivity=False)
    np.testing.assert_allclose(ours, np.asarray(theirs).reshape(ours.shape), rtol=0, atol=1e-9)


@pytest.mark.parametrize("output", [None, -2, -1])
def test_the_schedule_changes_no_bit(fitted, output):
    """Each row's path is walked and added in the same order under either schedule, and in
    trees of either kind in one forest, so every result is the same to the last bit (the
    predicted class included: its leaves are recorded by the lane that walked the row)."""
    model, X = fitted
    X = np.concatenate([X] * 3)[: 4 * (len(X) // 4) + 3]  # a remainder of three rows
    results = {}
    for schedule in ("lockstep", "refill", "alternating"):
        forest = _scheduled(model, schedule)
        if output is None:
            results[schedule] = (local_mdi_paths(forest, X),)
        elif hasattr(model, "classes_"):
            results[schedule] = saabas_paths(forest, X, output)
        else:
            results[schedule] = saabas_paths(forest, X)[:1]
    for schedule in ("refill", "alternating"):
        for ours, lockstep in zip(results[schedule], results["lockstep"], strict=True):
            np.testing.assert_array_equal(ours, lockstep)


def test_node_depths_are_scikit_learns_and_uneven_trees_are_the_deep_ones():
    """Node depths against a walk down scikit-learn's trees from each root; trees capped at
    depth 4 are even (every leaf at depth 4 but pure ones), fully grown trees of 1000 rows
    are uneven (leaf depths 5 to 20)."""
    from sklearn.datasets import make_friedman1

    from harness.forest.compact import node_depths, uneven_trees

    X, y = make_friedman1(1000, 10, random_state=0)
    for depth, kind in ((4, 0), (None, 1)):
        model = RandomForestRegressor(6, max_depth=depth, random_state=0).fit(X, y)
        packed = forest_view(model).packed
        ours = node_depths(packed)
        for t, tree in enumerate(model.estimators_):
            expected = np.zeros(tree.tree_.node_count, dtype=np.int64)
            below = [(0, 0)]
            while below:
                node, d = below.pop()
                expected[node] = d
                if tree.tree_.children_left[node] >= 0:
                    below += [(tree.tree_.children_left[node], d + 1),
                              (tree.tree_.children_right[node], d + 1)]
            np.testing.assert_array_equal(ours[packed.offsets[t]:packed.offsets[t + 1]],
                                          expected)
        np.testing.assert_array_equal(uneven_trees(packed), np.full(6, kind))


def _plain_first_nodes(tree, X32, skipped):
    """Per feature j not skipped, the (row position, node) of the first split on j on each
    row's path, rows in order; and each row's leaf."""
    firsts = {j: [] for j in range(X32.shape[1]) if not skipped[j]}
    leaves = []
    for a, x in enumerate(X32):
        node, seen = 0, set()
        while tree.children_left[node] != -1:
            f = int(tree.feature[node])
            if f not in seen and not skipped[f]:
                firsts[f].append((a, node))
            seen.add(f)
            go_left = float(x[f]) <= tree.threshold[node]
            node = tree.children_left[node] if go_left else tree.children_right[node]
        leaves.append(node)
    return firsts, leaves


def test_path_pairs_are_the_first_split_on_each_feature_and_skip_what_they_are_told(fitted):
    """``path_pairs`` (the first node of each feature on each row's path, Sobol-MDA's and
    the permutation MDAs' descents): every pair of a feature not skipped, in row order, as
    the plain walk finds them; a skipped feature has an empty bucket and changes no other
    pair (Sobol-MDA's groups of features skip each other's features)."""
    from harness.kernels.reroute.permutation import path_pairs

    model, X = fitted
    packed = forest_view(model).packed
    X32 = np.asarray(X, dtype=np.float32)
    p = X32.shape[1]
    rows = np.arange(len(X32))[::-1].copy()  # any order of rows: pairs follow it
    every = np.zeros(p, dtype=np.bool_)
    half = np.random.default_rng(4).random(p) < 0.5
    for t in (0, packed.n_trees - 1):
        for skipped in (every, half):
            leaves, pair_row, pair_node, order, bucket = path_pairs(
                packed.left, packed.right, packed.feature, packed.threshold,
                packed.missing_left, packed.offsets[t], X32, rows, p,
                len(rows) * (packed.max_depth + 1), skipped)
            firsts, plain_leaves = _plain_first_nodes(model.estimators_[t].tree_, X32[rows],
                                                      skipped)
            np.testing.assert_array_equal(leaves, plain_leaves)
            for j in range(p):
                found = [(int(pair_row[k]), int(pair_node[k]))
                         for k in order[bucket[j]:bucket[j + 1]]]
                assert found == firsts.get(j, []), (t, j)
        assert half.any() and not half.all()
