"""SHAFF's projection tables grow with the cells they hold: whatever their first size, the
projected predictions are the same bits (a table too small is refilled at twice the size)."""

from __future__ import annotations

import dataclasses

import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.ensemble import RandomForestRegressor

from harness.forest.inbag import target_matrix
from harness.forest.view import forest_view
from harness.kernels.reroute.subset_projection import SubsetProjector


def test_projections_do_not_depend_on_the_tables_first_size():
    X, y = make_friedman1(n_samples=400, n_features=12, noise=0.5, random_state=0)
    model = RandomForestRegressor(n_estimators=8, min_samples_leaf=2, random_state=0)
    view = forest_view(model.fit(X, y))
    projector = SubsetProjector.build(view.packed, view.rows(X), view.inbag.counts,
                                      target_matrix(view, y))
    rng = np.random.default_rng(1)
    keep = rng.random((24, 12)) < rng.random((24, 1))
    keep[0], keep[1] = True, False
    results = {}
    for first_size in (2, 16, projector.capacity, 1 << 16):  # 2: refilled at every tree
        sized = dataclasses.replace(projector, capacity=first_size)
        results[first_size] = sized.predictions(keep, n_groups=3)
    # the set of all variables opens a cell per node its in-bag rows reach: more than 2
    assert projector.capacity >= np.diff(view.packed.offsets).max()
    total, walked = results[1 << 16]
    assert np.abs(total).max() > 0
    for first_size, (other_total, other_walked) in results.items():
        np.testing.assert_array_equal(other_total, total, err_msg=f"first size {first_size}")
        np.testing.assert_array_equal(other_walked, walked)
