"""One forest view per fitted model, kept beside the user's estimator, never on it."""

from __future__ import annotations

import gc
import pickle
import weakref

import numpy as np
import pytest
from sklearn.ensemble import AdaBoostRegressor, RandomForestRegressor

import harness
from harness.core.errors import BadInputError
from harness.forest import view as view_module
from harness.forest.view import forest_view


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
    view = forest_view(model)
    packed, paths, inbag = view.packed, view.paths, view.inbag
    again = forest_view(model)
    assert again is view
    assert again.packed is packed and again.paths is paths and again.inbag is inbag
    model.set_params(n_estimators=6).fit(X, y)
    refit = forest_view(model)
    assert refit is not view and refit.n_trees == 6 and refit.packed.n_trees == 6
    assert refit.inbag.counts.shape[1] == 6
    assert refit.paths.packed is refit.packed


def test_the_view_reads_what_the_estimator_says(diabetes):
    """Every scalar field against scikit-learn's own attributes, and the derived forms
    against the model's own routing and prediction."""
    X, y = diabetes
    model = RandomForestRegressor(n_estimators=3, max_depth=4, random_state=0).fit(X, y)
    view = forest_view(model)
    assert (view.library, view.kind) == ("scikit-learn", "RandomForestRegressor")
    assert not view.classifier and view.classes is None
    assert view.n_features == X.shape[1] and view.n_trees == 3
    assert view.impurity_unit == "variance" and view.bootstrap and view.class_weight is None
    assert view.packed.max_depth == 4
    np.testing.assert_array_equal(view.apply(X), model.apply(X))
    np.testing.assert_allclose(view.output(X)[:, 0], model.predict(X), rtol=0, atol=1e-12)
    drawn = np.bincount(model.estimators_samples_[1], minlength=len(X))
    np.testing.assert_array_equal(view.inbag.counts[:, 1], drawn)


def test_the_views_go_with_the_model(diabetes):
    X, y = diabetes
    model = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y)
    packed = weakref.ref(forest_view(model).packed)
    assert model in view_module._VIEWS
    del model
    gc.collect()
    assert packed() is None  # the cache kept nothing of a model that is gone


def test_a_model_no_adapter_reads_is_refused_with_the_models_that_are_read(diabetes):
    X, y = diabetes
    model = AdaBoostRegressor(n_estimators=3).fit(X, y)
    with pytest.raises(BadInputError, match=r"RandomForestClassifier.*"
                                            r"HistGradientBoostingRegressor.*got "
                                            r"AdaBoostRegressor\."):
        forest_view(model)
