"""A model refitted in place is read again: its explanations add up to its new predictions.

The harness reads a fitted model once (:func:`harness.forest.view.forest_view`) and keeps
that reading while the fit is the same. The oracle is additivity: Saabas contributions plus
the base value equal the model's own prediction (its raw output), so an explanation of the
previous fit fails it. A scikit-learn tree refitted in place kept its ``id`` and was explained
with its previous fit.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from sklearn.ensemble import (
    GradientBoostingRegressor,
    HistGradientBoostingRegressor,
    RandomForestRegressor,
)
from sklearn.tree import DecisionTreeRegressor

import harness
from harness.forest.view import forest_view, predict_output


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    return X, X[:, 0] + 0.5 * X[:, 1], 10.0 * X[:, 2] - X[:, 3]


def _assert_adds_up_to_its_prediction(model, X: np.ndarray) -> None:
    result = harness.explain("saabas", model, X[:20])
    total = result.values.sum(axis=1) + np.ravel(result.base_values)
    predicted = np.ravel(predict_output(model, X[:20]))
    # XGBoost adds its trees' outputs in float32: a few of its roundings of the largest one
    rounding = 64 * np.finfo(predicted.dtype).eps * np.abs(predicted).max()
    np.testing.assert_allclose(total, predicted, rtol=0, atol=max(1e-8, rounding))


@pytest.mark.parametrize("model", [
    DecisionTreeRegressor(max_depth=4, random_state=0),
    RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0),
    GradientBoostingRegressor(n_estimators=5, max_depth=3, random_state=0),
    HistGradientBoostingRegressor(max_iter=5, random_state=0),
], ids=lambda model: type(model).__name__)
def test_a_model_refitted_in_place_is_explained_with_its_new_fit(data, model):
    X, first, second = data
    model.fit(X, first)
    _assert_adds_up_to_its_prediction(model, X)
    model.fit(X, second)
    _assert_adds_up_to_its_prediction(model, X)


def test_a_forest_whose_tree_is_refitted_in_place_is_read_again(data):
    X, first, second = data
    model = RandomForestRegressor(n_estimators=4, max_depth=4, random_state=0).fit(X, first)
    _assert_adds_up_to_its_prediction(model, X)
    model.estimators_[2].fit(X, second)  # the same estimator object, a new fit
    _assert_adds_up_to_its_prediction(model, X)


def test_an_unchanged_model_keeps_its_reading(data):
    X, first, _ = data
    model = RandomForestRegressor(n_estimators=4, max_depth=4, random_state=0).fit(X, first)
    assert forest_view(model) is forest_view(model)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_a_booster_refitted_in_place_is_read_again_and_its_reading_does_not_keep_it(
        data, library):
    module = pytest.importorskip(library)
    X, first, second = data
    wrapper = (module.XGBRegressor(n_estimators=5, max_depth=3) if library == "xgboost"
               else module.LGBMRegressor(n_estimators=5, num_leaves=8, verbose=-1))
    wrapper.fit(X, first)
    _assert_adds_up_to_its_prediction(wrapper, X)
    wrapper.fit(X, second)
    _assert_adds_up_to_its_prediction(wrapper, X)
    # a Booster is its own fitted state: the reading, kept weakly by the booster, must not
    # hold it
    booster = wrapper.get_booster() if library == "xgboost" else wrapper.booster_
    del wrapper
    forest_view(booster)
    gone = weakref.ref(booster)
    del booster
    gc.collect()
    assert gone() is None


def test_one_explain_checks_the_fit_once_and_the_next_explain_sees_a_refit(data, monkeypatch):
    """The explain protocol reads the view once per call (one_reading), not once per
    forest_view call, and the pin ends with the call: a refit between two explains is read."""
    from harness.forest.sklearn import SklearnForestAdapter

    X, first, second = data
    model = RandomForestRegressor(n_estimators=4, max_depth=4, random_state=0).fit(X, first)
    signature = SklearnForestAdapter.trees_signature.__func__
    reads = []

    def counted(cls, fitted):
        reads.append(fitted)
        return signature(cls, fitted)

    monkeypatch.setattr(SklearnForestAdapter, "trees_signature", classmethod(counted))
    for method in ("saabas", "treeshap", "local_mdi"):
        reads.clear()
        harness.explain(method, model, X[:20])
        assert reads == [model], method  # without the pin: 5 to 8 reads
    model.fit(X, second)
    _assert_adds_up_to_its_prediction(model, X)


def test_a_pinned_reading_is_of_its_model_only(data):
    from harness.forest.view import one_reading

    X, first, second = data
    model = RandomForestRegressor(n_estimators=4, max_depth=4, random_state=0).fit(X, first)
    other = RandomForestRegressor(n_estimators=4, max_depth=4, random_state=1).fit(X, second)
    with one_reading(model):
        pinned = forest_view(model)
        other.estimators_[0].fit(X, first)  # another model's refit is still seen
        assert forest_view(other)._signature[0] is other.estimators_[0].tree_
        assert forest_view(model) is pinned
    model.fit(X, second)
    assert forest_view(model) is not pinned
