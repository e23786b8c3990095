"""Saabas and TreeSHAP: additivity, agreement with shap, brute-force Shapley values."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesClassifier, RandomForestRegressor

import harness
from harness.interventional_shap import interventional_shap
from harness.packed import pack_forest
from tests.shapley_by_subsets import shapley_by_subsets

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
    """Shapley values of v(S) = mean_z f(x_S, z_~S) by enumerating all subsets."""
    p = x.size

    def value(subset):
        hybrid = background.copy()
        hybrid[:, list(subset)] = x[list(subset)]
        return model.predict(hybrid).mean()

    return shapley_by_subsets(p, value)


def test_interventional_kernel_equals_brute_force_shapley(diabetes):
    """An independent oracle: subset enumeration through scikit-learn's own predict."""
    X, y = diabetes
    X = X[:, :7]
    model = RandomForestRegressor(4, random_state=0, max_depth=8).fit(X, y)
    background = X[:6]
    ours = interventional_shap(pack_forest(model), X[10:13], background)[:, :, 0]
    for row in range(3):
        expected = _brute_force_interventional(model, X[10 + row], background)
        np.testing.assert_allclose(ours[row], expected, rtol=0, atol=1e-10)


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
