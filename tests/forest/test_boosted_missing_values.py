"""Boosted models fitted on rows with NaN: harness.explain takes rows with NaN and every
decomposition adds up to the model's own raw output on them (the kernels route NaN by each
library's missing-value direction through the view's coding)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingClassifier

import harness
from harness.forest.view import forest_view

RNG = np.random.default_rng(3)
X = RNG.normal(size=(300, 5))
Y_REG = X[:, 0] + np.where(X[:, 1] > 0, 1.0, -1.0) + 0.1 * RNG.normal(size=300)
Y_CLS = (Y_REG > 0).astype(np.int64)
X[RNG.random(X.shape) < 0.2] = np.nan  # in training and in the explained rows


def _models():
    models = {"hist_gradient_boosting": HistGradientBoostingClassifier(max_iter=15)
              .fit(X, Y_CLS)}
    xgboost = pytest.importorskip("xgboost")
    lightgbm = pytest.importorskip("lightgbm")
    models["xgboost"] = xgboost.XGBClassifier(n_estimators=15, max_depth=3, n_jobs=1).fit(
        X, Y_CLS)
    models["lightgbm"] = lightgbm.LGBMRegressor(n_estimators=15, num_leaves=7, n_jobs=1,
                                                verbose=-1).fit(X, Y_REG)
    return models


def _raw(model, rows):
    if hasattr(model, "decision_function"):
        return model.decision_function(rows)
    if type(model).__module__.startswith("xgboost"):
        return model.predict(rows, output_margin=True)
    return model.predict(rows, raw_score=True)


@pytest.mark.parametrize("method", ["treeshap", "saabas"])
def test_decompositions_of_rows_with_nan_add_up_to_the_raw_output(method):
    for name, model in _models().items():
        assert forest_view(model).routes_missing, name
        result = harness.explain(method, model, X[:40])
        total = result.values.sum(axis=1) + result.base_values
        np.testing.assert_allclose(total, _raw(model, X[:40]), rtol=0, atol=2e-5,
                                   err_msg=name)


def test_a_model_whose_predict_refuses_nan_is_refused_nan():
    model = GradientBoostingRegressor(n_estimators=5).fit(np.nan_to_num(X), Y_REG)
    if forest_view(model).routes_missing:  # a scikit-learn whose GradientBoosting takes NaN
        pytest.skip("this scikit-learn's GradientBoosting accepts NaN")
    with pytest.raises(harness.BadInputError, match="NaN"):
        harness.explain("saabas", model, X[:5])
