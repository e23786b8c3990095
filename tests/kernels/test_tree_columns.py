"""Walks on each tree's own columns (harness.kernels.tree_columns) read the same values as
walks on the rows, so Sobol-MDA's projections give the same bits either way."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from harness.forest.inbag import target_matrix
from harness.forest.view import forest_view
from harness.kernels import tree_columns
from harness.kernels.reroute import projection


def _wide_forest(classifier: bool, n_features: int = 80):
    X, y = make_friedman1(n_samples=300, n_features=n_features, noise=1.0, random_state=3)
    if classifier:
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
        model = RandomForestClassifier(n_estimators=15, max_depth=6, random_state=0)
    else:
        model = RandomForestRegressor(n_estimators=15, max_depth=6, random_state=0)
    return model.fit(X, y), X, y


def test_each_trees_columns_are_the_features_it_splits_on():
    model, X, _ = _wide_forest(classifier=False)
    forest = forest_view(model).packed
    local, columns, start = tree_columns.tree_columns(forest.left, forest.feature,
                                                      forest.offsets, forest.n_features)
    assert start[0] == 0 and start[-1] == columns.size
    for t in range(forest.n_trees):
        own = columns[start[t]:start[t + 1]]
        assert len(set(own.tolist())) == own.size  # each feature once
        np.testing.assert_array_equal(np.sort(own), forest.tree_features(t))
        nodes = np.arange(forest.offsets[t], forest.offsets[t + 1])
        split = nodes[forest.left[nodes] >= 0]
        np.testing.assert_array_equal(own[local[split]], forest.feature[split])


def test_gathered_rows_are_the_trees_columns_of_every_row():
    rng = np.random.default_rng(0)
    X32 = rng.normal(size=(37, 50)).astype(np.float32)
    columns = np.array([7, 3, 49, 0, 21], dtype=np.int64)
    buffer = np.full(37 * 5 + 11, np.nan, dtype=np.float32)
    rows = tree_columns.gather_tree_rows(np.ascontiguousarray(X32.T), columns, 1, 4, buffer)
    np.testing.assert_array_equal(rows, X32[:, [3, 49, 0]])
    assert rows.flags.c_contiguous


def test_only_wide_rows_of_few_used_features_are_walked_on_columns():
    wide = np.zeros((1000, 2000), dtype=np.float32)  # 8 MB, 100 trees of ~100 columns each
    assert tree_columns.compact_walks(wide, 100 * 100, 100)
    narrow = np.zeros((1000, 100), dtype=np.float32)  # fits the caches
    assert not tree_columns.compact_walks(narrow, 100 * 60, 100)
    tall = np.zeros((10**6, 10), dtype=np.float32)  # every tree splits on every feature
    assert not tree_columns.compact_walks(tall, 100 * 10, 100)


@pytest.mark.parametrize("classifier", [False, True])
@pytest.mark.parametrize("split", [(1, False), (4, False), (4, True)])
def test_sobol_projections_on_columns_give_the_bits_of_the_rows(classifier, split, monkeypatch):
    model, X, y = _wide_forest(classifier)
    view = forest_view(model)
    inputs = (view.packed, view.rows(X), view.inbag.counts, target_matrix(view, y))
    monkeypatch.setattr(projection, "work_split", lambda *sizes: split)
    monkeypatch.setattr(tree_columns, "COMPACT_BYTES", 1 << 40)
    on_rows = projection.projected_oob_shift(*inputs)
    monkeypatch.setattr(tree_columns, "COMPACT_BYTES", 0)
    monkeypatch.setattr(tree_columns, "COMPACT_SHARE", 1.0)
    on_columns = projection.projected_oob_shift(*inputs)
    assert np.count_nonzero(on_rows) > 0.01 * on_rows.size
    np.testing.assert_array_equal(on_columns, on_rows)
