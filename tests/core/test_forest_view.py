"""Derived forms of a forest live beside the user's estimator, never on it."""

from __future__ import annotations

import gc
import pickle
import weakref

import numpy as np
from sklearn.ensemble import RandomForestRegressor

import harness
from harness.forest import view
from harness.forest.inbag import inbag_of
from harness.forest.packed import pack_forest
from harness.kernels.paths import path_forest


def test_explaining_leaves_the_users_estimator_as_it_was(diabetes):
    X, y = diabetes
    model = RandomForestRegressor(n_estimators=5, random_state=0).fit(X, y)
    before = set(vars(model))
    pickled = pickle.dumps(model)
    for method in ("local_mdi", "saabas", "treeshap", "mda_bc", "sobol_mda"):
        harness.explain(method, model, X, y, seed=0)
    assert set(vars(model)) == before
    assert pickle.dumps(model) == pickled


def test_each_form_is_built_once_per_fitted_forest_and_again_after_a_refit(diabetes):
    X, y = diabetes
    model = RandomForestRegressor(n_estimators=4, random_state=0).fit(X, y)
    packed, paths, inbag = pack_forest(model), path_forest(model), inbag_of(model)
    assert pack_forest(model) is packed and path_forest(model) is paths
    assert inbag_of(model) is inbag
    model.set_params(n_estimators=6).fit(X, y)
    assert pack_forest(model) is not packed and pack_forest(model).n_trees == 6
    assert inbag_of(model).counts.shape[1] == 6
    assert np.array_equal(path_forest(model).packed.offsets, pack_forest(model).offsets)


def test_the_forms_go_with_the_model(diabetes):
    X, y = diabetes
    model = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y)
    packed = weakref.ref(pack_forest(model))
    assert model in view._FORMS
    del model
    gc.collect()
    assert packed() is None  # the cache kept nothing of a model that is gone
