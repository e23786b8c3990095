"""Background rows as bits (:mod:`harness.kernels.background_bits`): the words say which
background rows go left at each node, as the model routes them, whatever the number of
threads or of node ranges the work is split into."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.ensemble import RandomForestRegressor

from harness.forest.view import forest_view
from harness.kernels import background_bits
from harness.kernels.background_bits import background_directions
from tests._support.threads import on_threads


def _directions_of_the_trees(model, Z: np.ndarray) -> np.ndarray:
    """Bit b of word b // 64 at node v: background row b goes left at v, by scikit-learn's
    rule on its own tree arrays (float32 rows against the float64 threshold; a NaN goes
    where ``missing_go_to_left`` says), in the forest view's node order (trees one after the
    other). The rule is checked against scikit-learn's ``decision_path`` on the rows that
    reach each node."""
    words = (len(Z) + 63) // 64
    Z32 = Z.astype(np.float32)
    blocks = []
    for estimator in model.estimators_:
        tree = estimator.tree_
        reached = estimator.decision_path(Z).toarray().astype(bool)  # (rows, nodes)
        bits = np.zeros((tree.node_count, words), dtype=np.uint64)
        for node in np.flatnonzero(tree.children_left >= 0):
            x = Z32[:, tree.feature[node]].astype(np.float64)
            left = np.where(np.isnan(x), bool(tree.missing_go_to_left[node]),
                            x <= tree.threshold[node])
            here = reached[:, node]
            assert np.array_equal(left[here], reached[here, tree.children_left[node]])
            for row in np.flatnonzero(left):
                bits[node, row // 64] |= np.uint64(1) << np.uint64(row % 64)
        blocks.append(bits)
    return np.vstack(blocks)


@pytest.mark.parametrize(("tasks", "n_background"), [(1, 130), (7, 130), (16, 130), (7, 50),
                                                     (7, 30)])
def test_directions_are_the_models_routing_on_any_split_of_the_work(monkeypatch, tasks,
                                                                    n_background):
    """130 background rows (three words, the last one of 2 rows), 50 (one word of 64
    compares, partial) and 30 (one word of 32 compares), NaNs among them where this
    scikit-learn routes them (a forest fitted with missing values; the harness refuses NaN
    rows before 1.8, so there the rows are complete); 1, 7 and 16 tree ranges (at most one
    per tree, so 6), on 1 and 2 threads."""
    X, y = make_friedman1(n_samples=400, n_features=5, random_state=0)
    with_nan = X.copy()
    with_nan[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    model = RandomForestRegressor(n_estimators=6, max_depth=7, random_state=0)
    try:
        view = forest_view(model.fit(with_nan, y))
        routed = view.routes_missing
    except ValueError:  # this scikit-learn fits no forest on rows with NaN
        routed = False
    if routed:
        X = with_nan
    else:
        view = forest_view(model.fit(X, y))
    Z = X[:n_background]
    forest = view.packed
    expected = _directions_of_the_trees(model, Z)
    monkeypatch.setattr(background_bits, "DIRECTION_TASKS", tasks)
    for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
        got = on_threads(threads, lambda: background_directions(
            forest.left, forest.feature, forest.threshold, forest.missing_left,
            forest.offsets, view.rows(Z)))
        assert got.shape == expected.shape
        assert np.array_equal(got, expected), (tasks, threads)


@pytest.mark.parametrize("n_background", [1, 30, 130])
def test_background_mean_output_is_the_models_mean_prediction(n_background):
    """E_z f(z) from the bits equals the mean of scikit-learn's own predict_proba over the
    background rows (one row, one partial word, three words), on 1 and 2 threads: a leaf
    counted for rows that do not reach it, or a word's rows mixed up, moves it."""
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    X, y = load_iris(return_X_y=True)
    X = np.vstack([X, X])[:n_background] + 0.01 * (np.arange(n_background) % 7)[:, None]
    X_fit, y_fit = load_iris(return_X_y=True)
    model = RandomForestClassifier(n_estimators=7, max_depth=5, random_state=0)
    view = forest_view(model.fit(X_fit, y_fit))
    forest = view.packed
    Z = view.rows(X)
    expected = model.predict_proba(X).mean(axis=0)
    for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
        directions, got = on_threads(threads, lambda: background_bits.background_routing(
            forest.left, forest.right, forest.feature, forest.threshold, forest.missing_left,
            forest.value, forest.offsets, Z))
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
        assert np.array_equal(directions, background_directions(
            forest.left, forest.feature, forest.threshold, forest.missing_left,
            forest.offsets, Z))
