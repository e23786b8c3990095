"""A subclass that redefines its library model's prediction is refused, not explained as the
library's model; one that changes only how it is fitted is read (and adds up to its predict)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import (
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

import harness
from harness.core.errors import BadInputError
from harness.forest.view import forest_view


class ExpForest(RandomForestRegressor):
    """Predicts exp of the trees' average: no longer the average that the trees explain."""

    def predict(self, X):
        return np.exp(super().predict(X))


class SharpenedForest(RandomForestClassifier):
    def predict_proba(self, X):
        proba = super().predict_proba(X) ** 2
        return proba / proba.sum(axis=1, keepdims=True)


class ShiftedBoosting(HistGradientBoostingRegressor):
    def _raw_predict(self, X, n_threads=None):  # what predict calls
        return super()._raw_predict(X, n_threads) + 1.0


class CountingForest(RandomForestRegressor):
    """Changes fit (it counts the fits) and adds a method: its prediction is the library's."""

    fits = 0

    def fit(self, X, y, sample_weight=None):
        type(self).fits += 1
        return super().fit(X, y, sample_weight)

    def predict_interval(self, X):  # a method of its own, not a redefinition
        every = np.stack([tree.predict(X) for tree in self.estimators_])
        return every.min(axis=0), every.max(axis=0)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    return X, X[:, 0] - X[:, 1]


@pytest.mark.parametrize(("model", "redefined"), [
    (ExpForest(n_estimators=5, random_state=0), "predict"),
    (SharpenedForest(n_estimators=5, random_state=0), "predict_proba"),
    (ShiftedBoosting(max_iter=5), "_raw_predict"),
], ids=["predict", "predict_proba", "_raw_predict"])
def test_a_subclass_that_redefines_the_prediction_is_refused(data, model, redefined):
    X, y = data
    model.fit(X, y > 0 if isinstance(model, RandomForestClassifier) else y)
    with pytest.raises(BadInputError, match=rf"{type(model).__name__} derives from "
                                            rf"scikit-learn's \w+ and redefines {redefined}"):
        harness.explain("saabas", model, X[:5])


def test_a_subclass_that_changes_only_fit_is_read_as_its_library_model(data):
    X, y = data
    model = CountingForest(n_estimators=5, random_state=0).fit(X, y)
    result = harness.explain("saabas", model, X[:10])
    np.testing.assert_allclose(result.values.sum(axis=1) + np.ravel(result.base_values),
                               model.predict(X[:10]), rtol=0, atol=1e-10)
    assert forest_view(model).kind == "CountingForest"


def test_an_xgboost_subclass_that_redefines_predict_is_refused(data):
    xgboost = pytest.importorskip("xgboost")

    class Doubled(xgboost.XGBRegressor):
        def predict(self, X, **kwargs):
            return 2 * super().predict(X, **kwargs)

    X, y = data
    model = Doubled(n_estimators=3, max_depth=2).fit(X, y)
    # (the XGBoost adapter reads XGBoost's own classes only: refused as a model it does not
    # read, which names it)
    with pytest.raises(BadInputError, match="got Doubled"):
        harness.explain("saabas", model, X[:5])
