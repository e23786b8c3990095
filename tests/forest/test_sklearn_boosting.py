"""scikit-learn GradientBoosting / HistGradientBoosting through the forest view.

Oracles: the models' own ``decision_function`` / ``predict`` / ``predict_proba`` and
``TreePredictor.predict`` (rows with NaN included), shap's ``TreeExplainer`` (path-dependent
TreeSHAP and Saabas on the margin), scikit-learn's ``feature_importances_`` (MDI of
GradientBoosting), the split gains stored in the HGB predictors, and permutation importance
computed with NumPy from ``predict_proba`` on the same keyed permutations.
"""

from __future__ import annotations

import copy
import importlib.util

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)
from sklearn.linear_model import LinearRegression

import harness
from harness.core.errors import BadInputError, NotInstalledError
from harness.core.outputs import check_output
from harness.forest.flat import leaf_index
from harness.forest.losses import apply_link
from harness.forest.models import MODELS, ModelFamily, ModelSpec, fit_model
from harness.forest.permutations import STREAM_HELD_OUT, draw_seed, keyed_permutation
from harness.forest.view import forest_view
from harness.kernels.paths import saabas_paths
from harness.kernels.treeshap.path_dependent import path_dependent_shap


def _data(task: str, n_classes: int = 2, nan: bool = False, seed: int = 0):
    if task == "regression":
        X, y = make_regression(240, 5, n_informative=3, noise=1.0, random_state=seed)
    else:
        X, y = make_classification(240, 5, n_informative=3, n_redundant=0,
                                   n_classes=n_classes, n_clusters_per_class=1,
                                   random_state=seed)
    if nan:  # missing values in two columns, so HGB learns a direction for them
        rng = np.random.default_rng(seed)
        X[rng.random(len(X)) < 0.15, 1] = np.nan
        X[rng.random(len(X)) < 0.15, 3] = np.nan
    return X, y


CASES = {
    "gb_binary": (lambda: GradientBoostingClassifier(n_estimators=15, max_depth=3,
                                                     subsample=0.8, random_state=0),
                  ("classification", 2, False)),
    "gb_multiclass": (lambda: GradientBoostingClassifier(n_estimators=8, max_depth=3,
                                                         random_state=0),
                      ("classification", 3, False)),
    "gb_regression": (lambda: GradientBoostingRegressor(n_estimators=15, max_depth=3,
                                                        random_state=0),
                      ("regression", 0, False)),
    "hgb_binary": (lambda: HistGradientBoostingClassifier(max_iter=15, max_leaf_nodes=8,
                                                          random_state=0),
                   ("classification", 2, True)),
    "hgb_multiclass": (lambda: HistGradientBoostingClassifier(max_iter=8, max_leaf_nodes=8,
                                                              random_state=0),
                       ("classification", 3, True)),
    "hgb_regression": (lambda: HistGradientBoostingRegressor(max_iter=15, max_leaf_nodes=8,
                                                             random_state=0),
                       ("regression", 0, True)),
}


@pytest.fixture(scope="module")
def fitted():
    models = {}
    for name, (make, (task, n_classes, nan)) in CASES.items():
        X, y = _data(task, n_classes, nan)
        models[name] = (make().fit(X, y), X, y)
    return models


def _finite(X):
    return X[~np.isnan(X).any(axis=1)]


def _raw(model, X):
    if hasattr(model, "classes_"):
        return model.decision_function(X).reshape(len(X), -1)
    return model.predict(X)[:, None]


@pytest.mark.parametrize("name", sorted(CASES))
def test_view_output_is_the_raw_output_and_its_link_predict_proba(name, fitted):
    model, X, _ = fitted[name]
    view = forest_view(model)
    # the NumPy reference of the routing rule on every row, NaN included (HGB)
    coded = view.rows(X)
    reference = np.mean([tree.value[leaf_index(tree, coded)] for tree in view.trees], axis=0)
    np.testing.assert_allclose(reference, _raw(model, X), rtol=1e-12, atol=1e-10)
    # the compiled output on finite rows (the kernels' NaN routing is another change's)
    X = _finite(X)
    ours = view.output(X)
    raw = _raw(model, X)
    # float64 sums in another order (mean of n_trees * leaf + base vs base + Σ leaf)
    np.testing.assert_allclose(ours, raw, rtol=1e-12, atol=1e-10)
    assert view.n_trees == sum(len(stage) for stage in (
        model.estimators_ if name.startswith("gb") else model._predictors))
    if hasattr(model, "classes_"):
        assert view.output_unit == "margin"
        assert view.link == ("logistic" if len(model.classes_) == 2 else "softmax")
        assert ours.shape[1] == (1 if len(model.classes_) == 2 else len(model.classes_))
        np.testing.assert_allclose(apply_link(view.link, ours), model.predict_proba(X),
                                   rtol=0, atol=1e-12)
    else:
        assert (view.output_unit, view.link) == ("prediction", "identity")
    expected = {"node_impurity"} if name.startswith("gb") else set()
    assert view.capabilities == expected
    assert "inbag" not in view.capabilities  # no OOB rows: the OOB family is skipped


def test_hgb_rows_with_nan_reach_the_predictors_leaves(fitted):
    """leaf_index (NumPy reference of the routing rule) on the coded rows gives each tree's
    own TreePredictor.predict, on rows with NaN sent both ways."""
    model, X, _ = fitted["hgb_binary"]
    view = forest_view(model)
    coded = view.rows(X)
    assert np.isnan(coded).any(axis=1).sum() > 20
    cats, f_idx_map = model._bin_mapper.make_known_categories_bitsets()
    base = np.asarray(model._baseline_prediction).ravel()
    directions = set()
    predictors = [p for stage in model._predictors for p in stage]
    for tree, predictor in zip(view.trees, predictors):
        leaves = leaf_index(tree, coded)
        ours = (tree.value[leaves, 0] - base[0]) / view.n_trees
        theirs = predictor.predict(X, cats, f_idx_map, 1)
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)
        directions |= set(tree.missing_left[tree.left >= 0].tolist())
    assert directions == {False, True}


def test_hgb_nodes_out_of_parent_first_order_are_renumbered(fitted):
    model, X, _ = fitted["hgb_regression"]
    shuffled = copy.deepcopy(model)
    for stage in shuffled._predictors:
        for predictor in stage:
            nodes = predictor.nodes
            # scikit-learn's depth-first ids reversed after the root: children come first
            order = np.concatenate(([0], np.arange(len(nodes) - 1, 0, -1)))
            new_id = np.empty(len(nodes), dtype=np.int64)
            new_id[order] = np.arange(len(nodes))
            moved = nodes[order].copy()
            internal = moved["is_leaf"] == 0
            moved["left"][internal] = new_id[moved["left"][internal]]
            moved["right"][internal] = new_id[moved["right"][internal]]
            predictor.nodes = moved
    view = forest_view(shuffled)
    for tree in view.trees:
        internal = tree.internal
        assert np.all(tree.left[internal] > internal) and np.all(tree.right[internal] > internal)
    X = _finite(X)
    np.testing.assert_allclose(view.output(X), _raw(model, X), rtol=1e-12,
                               atol=1e-10)


@pytest.mark.parametrize("name", ["gb_binary", "gb_regression", "hgb_binary", "hgb_regression"])
def test_path_dependent_treeshap_equals_shap_on_the_margin(name, fitted):
    shap = pytest.importorskip("shap")
    model, X, _ = fitted[name]
    X = _finite(X)[:40]
    view = forest_view(model)
    explainer = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
    theirs = np.asarray(explainer.shap_values(X, check_additivity=False)).reshape(len(X), -1)
    if name.startswith("gb"):  # through the method (float32 rows, as scikit-learn routes)
        result = harness.explain("treeshap", model, X)
        ours, base = result.values, result.base_values
        assert result.unit == ("margin (raw score)" if "binary" in name else "prediction")
    else:  # the kernel on the view's coded rows
        phi, expected = path_dependent_shap(view.packed, view.rows(X))
        ours, base = phi.reshape(len(X), -1), np.full(len(X), expected[0])
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(base, np.ravel(explainer.expected_value)[0], rtol=1e-12,
                               atol=1e-10)
    np.testing.assert_allclose(base + ours.sum(axis=1), _raw(model, X)[:, 0], atol=1e-10)
    if name.startswith("gb"):  # Saabas equals shap's approximate=True (same node values)
        approx = np.asarray(explainer.shap_values(X, approximate=True, check_additivity=False))
        saabas = harness.explain("saabas", model, X)
        np.testing.assert_allclose(saabas.values, approx.reshape(len(X), -1), atol=1e-10)


@pytest.mark.parametrize("name", ["gb_binary", "gb_multiclass", "hgb_multiclass"])
def test_saabas_and_treeshap_add_up_to_decision_function(name, fitted):
    model, X, _ = fitted[name]
    X = _finite(X)[:40]
    view = forest_view(model)
    raw = _raw(model, X)
    if name.startswith("gb"):
        for method in ("saabas", "treeshap"):
            every = harness.explain(method, model, X, output="all_classes")
            # binary: the one margin column, (n, p); multi-class: (n, p, K)
            total = every.base_values + every.values.sum(axis=1)
            np.testing.assert_allclose(total.reshape(raw.shape), raw, atol=1e-10)
            predicted = harness.explain(method, model, X)  # predicted class, by the margins
            rows = np.arange(len(X))
            pick = raw.argmax(axis=1) if raw.shape[1] > 1 else np.zeros(len(X), int)
            np.testing.assert_allclose(predicted.base_values + predicted.values.sum(axis=1),
                                       raw[rows, pick], atol=1e-10)
            assert predicted.unit == "margin (raw score)"
    else:
        coded = view.rows(X)
        contributions, _, bias = saabas_paths(view.paths, coded, -2)
        np.testing.assert_allclose(bias + contributions.sum(axis=1), raw, atol=1e-10)
        phi, expected = path_dependent_shap(view.packed, coded)
        np.testing.assert_allclose(expected + phi.reshape(len(X), X.shape[1], -1).sum(axis=1),
                                   raw, atol=1e-10)


def test_binary_margin_outputs_and_their_labels(fitted):
    model, X, _ = fitted["gb_binary"]
    view = forest_view(model)
    one = harness.explain("saabas", model, X[:10], output=1)
    zero = harness.explain("saabas", model, X[:10], output=0)
    np.testing.assert_array_equal(zero.values, -one.values)  # log-odds of class 0
    shap_one = harness.explain("treeshap", model, X[:10], output=1)
    shap_zero = harness.explain("treeshap", model, X[:10], output=0)
    np.testing.assert_array_equal(shap_zero.values, -shap_one.values)
    np.testing.assert_array_equal(shap_zero.base_values, -shap_one.base_values)
    assert one.explains == f"margin (log-odds) of class {model.classes_[1]!r}"
    assert zero.explains == f"margin (log-odds) of class {model.classes_[0]!r}"
    assert check_output(1, view) is None and "2 classes" in check_output(2, view)
    multi = forest_view(fitted["hgb_multiclass"][0])
    assert check_output(2, multi) is None and "3 classes" in check_output(3, multi)


@pytest.mark.parametrize("name", ["gb_regression", "gb_multiclass"])
def test_gradient_boosting_mdi_is_feature_importances(name, fitted):
    model, X, _ = fitted[name]
    mdi = harness.explain("mdi", model, X)
    np.testing.assert_allclose(mdi.values / mdi.values.sum(), model.feature_importances_,
                               rtol=1e-12, atol=1e-15)
    assert "pseudo-residuals" in mdi.unit and mdi.explains == "impurity"


@pytest.mark.parametrize("name", ["hgb_regression", "hgb_multiclass"])
def test_hist_gradient_boosting_mdi_is_the_sum_of_split_gains(name, fitted):
    model, X, _ = fitted[name]
    p = X.shape[1]
    gains = np.zeros(p)
    predictors = [predictor for stage in model._predictors for predictor in stage]
    for predictor in predictors:
        split = predictor.nodes[predictor.nodes["is_leaf"] == 0]
        np.add.at(gains, split["feature_idx"], split["gain"])
    mdi = harness.explain("mdi", model, _finite(X))
    np.testing.assert_allclose(mdi.values, gains / len(predictors), rtol=1e-12, atol=1e-12)
    assert mdi.unit.startswith("gain") and mdi.explains == "split gain"


def _loss(name, y, proba, classes):
    label = np.searchsorted(classes, y)
    rows = np.arange(len(y))
    if name == "log_loss":
        return -np.log(np.maximum(proba[rows, label], 1e-15))
    if name == "brier":
        return ((proba - np.eye(len(classes))[label]) ** 2).sum(axis=1)
    return (np.argmax(proba, axis=1) != label).astype(float)


@pytest.mark.parametrize("name", ["gb_binary", "gb_multiclass"])
@pytest.mark.parametrize("loss", ["log_loss", "brier", "misclassification"])
def test_mda_test_of_a_boosted_classifier_scores_predict_proba(name, loss, fitted):
    model, X, y = fitted[name]
    X, y = X[:120], y[:120]
    seed = draw_seed(np.random.default_rng(3))
    base_loss = _loss(loss, y, model.predict_proba(X), model.classes_).mean()
    repeats = []
    for repeat in range(2):
        increase = []
        for j in range(X.shape[1]):
            rows = X.copy()
            rows[:, j] = X[keyed_permutation(seed, STREAM_HELD_OUT, repeat, j, len(X)), j]
            increase.append(_loss(loss, y, model.predict_proba(rows), model.classes_).mean()
                            - base_loss)
        repeats.append(increase)
    ours = harness.explain("mda_test", model, X, y, seed=3, loss=loss, n_repeats=2)
    np.testing.assert_allclose(ours.values, np.mean(repeats, axis=0), rtol=1e-9, atol=1e-12)
    assert np.abs(ours.values).max() > 0


def test_tree_sage_skips_margin_classifiers_and_oob_methods_skip_boosting(fitted):
    model, X, y = fitted["gb_binary"]
    for method in ("tree_sage", "mda_bc"):
        with pytest.raises(harness.MethodSkipped):
            harness.explain(method, model, X, y)


def test_categorical_hist_gradient_boosting_is_refused_naming_the_feature():
    X, y = _data("classification")
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(5)])
    frame["colour"] = pd.Categorical(np.where(X[:, 0] > 0, "red", "blue"))
    model = HistGradientBoostingClassifier(max_iter=3, categorical_features="from_dtype")
    model.fit(frame, y)
    with pytest.raises(BadInputError, match=r"categorical features \('colour' \(column 5\)\)"):
        forest_view(model)


def test_unreadable_boosted_models_are_refused():
    X, y = _data("regression")
    varying = GradientBoostingRegressor(n_estimators=3, init=LinearRegression()).fit(X, y)
    with pytest.raises(BadInputError, match="init estimator LinearRegression .* varies"):
        forest_view(varying)
    stratified = GradientBoostingClassifier(
        n_estimators=3, init=DummyClassifier(strategy="stratified")).fit(*_data("classification"))
    with pytest.raises(BadInputError, match=r"DummyClassifier\(strategy='stratified'\)"):
        forest_view(stratified)
    poisson = HistGradientBoostingRegressor(max_iter=3, loss="poisson").fit(X, np.abs(y))
    with pytest.raises(BadInputError, match="loss='poisson' is not read"):
        forest_view(poisson)
    Xc, yc = _data("classification")
    exponential = GradientBoostingClassifier(n_estimators=3, loss="exponential").fit(Xc, yc)
    with pytest.raises(BadInputError, match="loss='exponential'"):
        forest_view(exponential)
    zero = GradientBoostingRegressor(n_estimators=3, init="zero").fit(X, y)
    view = forest_view(zero)
    np.testing.assert_allclose(view.output(X)[:, 0], zero.predict(X), atol=1e-10)


# ---------------------------------------------------------------- model specs

NEW_MODELS = {
    "decision_tree": {"max_depth": 4},
    "gradient_boosting": {"n_estimators": 5},
    "hist_gradient_boosting": {"n_estimators": 5},
    "xgboost": {"n_estimators": 5, "max_depth": 3},
    "lightgbm": {"n_estimators": 5, "max_depth": 3},
}


@pytest.mark.parametrize("name", sorted(NEW_MODELS))
@pytest.mark.parametrize("dataset", ["iris", "diabetes"])
def test_every_model_name_fits(name, dataset):
    if not MODELS[name].installed():
        pytest.skip(f"{name} is not installed")
    data = harness.load_dataset(dataset)
    model = fit_model({"forest": name, **NEW_MODELS[name]}, data, seed=0)
    stem = {"decision_tree": "DecisionTree", "gradient_boosting": "GradientBoosting",
            "hist_gradient_boosting": "HistGradientBoosting", "xgboost": "XGB",
            "lightgbm": "LGBM"}[name]
    kind = "Classifier" if data.task == "classification" else "Regressor"
    assert type(model).__name__ == stem + kind
    assert model.harness_fit_["score"] > (0.5 if dataset == "iris" else 0.0)
    if name in ("decision_tree", "gradient_boosting", "hist_gradient_boosting"):
        view = forest_view(model)
        X = data.X[model.harness_fit_["test_index"]]
        reference = (model.predict_proba(X) if view.output_unit == "probability" else
                     _raw(model, X))
        np.testing.assert_allclose(view.output(X), reference, atol=1e-10)


def test_model_spec_keys_of_forests_are_unchanged():
    """Stored run keys hold the spec's name and full parameter dict: they must not move."""
    spec = ModelSpec.from_any("random_forest[max_features=all,n_estimators=10]")
    assert repr(spec) == "random_forest[max_features=all,n_estimators=10]"
    assert spec.params == {"n_estimators": 10, "max_features": "all", "max_depth": None,
                           "max_leaf_nodes": None, "min_samples_leaf": 1, "criterion": "auto",
                           "bootstrap": None, "max_samples": None, "test_size": 0.25}
    assert repr(ModelSpec.from_any({"forest": "extra_trees"})) == "extra_trees"
    assert repr(ModelSpec.from_any("hist_gradient_boosting[learning_rate=0.05]")) == \
        "hist_gradient_boosting[learning_rate=0.05]"


def test_missing_library_names_its_extra(monkeypatch):
    family = ModelFamily("phantom", {"classification": "no_such_library_21:Model",
                                     "regression": "no_such_library_21:Model"},
                         {}, MODELS["xgboost"].build, "test", extra="phantom")
    assert not family.installed()
    with pytest.raises(NotInstalledError, match=r"pip install 'harness\[phantom\]'"):
        family.estimator_class("regression")
    if importlib.util.find_spec("xgboost") is None:
        with pytest.raises(NotInstalledError, match=r"harness\[xgboost\]"):
            ModelSpec.from_any("xgboost").estimator("regression", 0)
