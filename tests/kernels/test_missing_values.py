"""Trees and forests fitted on data with missing values: every kernel routes a NaN as the
model does (scikit-learn's ``missing_go_to_left``).

Oracles: the model's own ``predict`` / ``predict_proba`` / ``apply`` on rows with NaN, each
tree's own ``predict`` on permuted or imputed rows, brute-force Shapley values by subset
enumeration, scikit-learn's own MDI and OOB predictions, and explicit recursions written
here from scikit-learn's tree arrays (never values copied from our output).
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import harness
from harness.core.errors import BadInputError, MethodSkipped
from harness.forest.flat import leaf_index
from harness.forest.inbag import check_training_rows, oob_predictions
from harness.forest.permutations import STREAM_HELD_OUT, draw_seed, keyed_permutation
from harness.forest.sklearn import fitted_trees, sklearn_routes_nan_as_fitted
from harness.forest.view import forest_view
from harness.kernels.reroute.projection import projected_oob_shift
from harness.kernels.sage.marginal import marginal_curves, marginal_setup
from harness.kernels.sage.path_dependent import path_dependent_curves
from harness.kernels.sage.tables import (
    cover_fractions,
    singleton_sums,
    singleton_tables,
    subtree_masks,
)
from harness.kernels.treeshap.interventional import interventional_shap
from harness.kernels.treeshap.path_dependent import path_dependent_shap
from harness.run.inputs import _check_values
from tests._support.shapley_by_subsets import shapley_by_subsets
from tests.methods import test_oob_family as oob_reference

warnings.filterwarnings("ignore", message="Some inputs do not have OOB scores")

N, P = 160, 4


def _data(seed: int = 0):
    """Rows with NaN in three of four columns (about 20% each), targets from the values."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, P))
    filled = X.copy()
    X[rng.random((N, P)) < 0.2] = np.nan
    X[:, 3] = filled[:, 3]  # one column without NaN
    signal = filled[:, 0] + np.where(np.isnan(X[:, 1]), 1.5, X[:, 1]) + 0.5 * filled[:, 2]
    y_reg = signal + 0.1 * rng.normal(size=N)
    y_cls = np.digitize(signal, [-0.5, 0.7])
    return X, y_reg, y_cls, filled


X_NAN, Y_REG, Y_CLS, X_FILLED = _data()

MODELS = {
    "rf_classifier": lambda: RandomForestClassifier(12, max_depth=6, random_state=0),
    "rf_regressor": lambda: RandomForestRegressor(12, max_depth=6, random_state=0),
    "et_classifier": lambda: ExtraTreesClassifier(10, max_depth=6, random_state=0),
    "et_regressor": lambda: ExtraTreesRegressor(10, max_depth=6, random_state=0),
    "dt_classifier": lambda: DecisionTreeClassifier(max_depth=6, random_state=0),
    "dt_regressor": lambda: DecisionTreeRegressor(max_depth=6, random_state=0),
}


def _fit(name: str, with_nan: bool = True):
    model = MODELS[name]()
    y = Y_CLS if "classifier" in name else Y_REG
    return model.fit(X_NAN if with_nan else X_FILLED, y)


class _Fitted(dict):
    """The fitted models; one whose scikit-learn refuses NaN at fit (ExtraTrees before 1.6,
    RandomForest before 1.4) skips the tests that use it."""

    def __missing__(self, name):
        pytest.skip(f"this scikit-learn does not fit {name} on rows with NaN")


@pytest.fixture(scope="module")
def models():
    if not sklearn_routes_nan_as_fitted():
        pytest.skip("scikit-learn < 1.8 routes NaN at predict elsewhere than fit did: the "
                    "harness refuses rows with NaN there (test_old_scikit_learn_refuses_nan)")
    fitted = _Fitted()
    for name in MODELS:
        try:
            fitted[name] = _fit(name)
        except ValueError as exc:  # "Input X contains NaN" where missing values are refused
            assert "NaN" in str(exc)
    # fitted without NaN, asked about rows with NaN (scikit-learn >= 1.9 routes them)
    fitted["clean_rf_regressor"] = _fit("rf_regressor", with_nan=False)
    return fitted


def test_old_scikit_learn_refuses_nan():
    if sklearn_routes_nan_as_fitted():
        pytest.skip("this scikit-learn routes NaN at predict as at fit")
    try:
        model = _fit("rf_regressor")
    except ValueError:
        pytest.skip("this scikit-learn does not fit a forest on rows with NaN")
    assert not forest_view(model).routes_missing
    with pytest.raises(BadInputError, match="before 1.8"):
        harness.explain("saabas", model, X_NAN)


def _output(model, X):
    return model.predict_proba(X) if hasattr(model, "classes_") else model.predict(X)[:, None]


def _routes(model) -> bool:
    view = forest_view(model)
    if not view.routes_missing:  # this scikit-learn's predict refuses NaN for this model
        with pytest.raises(ValueError, match="NaN"):
            fitted_trees(model)[0].predict(X_NAN)
    return view.routes_missing


def _go_left(tree, node: int, x) -> bool:
    """scikit-learn's routing (Tree._apply_dense), from its own arrays."""
    value = np.float32(x[tree.feature[node]])
    if np.isnan(value):
        return bool(tree.missing_go_to_left[node])
    return bool(value <= tree.threshold[node])


def test_models_fitted_on_nan_route_it_and_the_trees_did_split_nan_both_ways(models):
    for name in models:
        if name.startswith("clean"):
            continue
        assert forest_view(models[name]).routes_missing, name
        trees = fitted_trees(models[name])
        inner = np.concatenate([t.tree_.missing_go_to_left[t.tree_.children_left >= 0]
                                for t in trees])
        assert 0 < inner.mean() < 1, name  # both directions occur: the check is not vacuous


@pytest.mark.parametrize("name", [*MODELS, "clean_rf_regressor"])
def test_output_and_leaves_equal_the_models_own_on_rows_with_nan(name, models):
    model = models[name]
    if not _routes(model):
        pytest.skip("this scikit-learn refuses NaN at predict for this model")
    view = forest_view(model)
    np.testing.assert_allclose(view.output(X_NAN), _output(model, X_NAN), rtol=0, atol=1e-12)
    leaves = model.apply(X_NAN).reshape(N, -1)
    np.testing.assert_array_equal(view.apply(X_NAN), leaves)
    coded = view.rows(X_NAN)
    for t, tree in enumerate(view.trees):  # the NumPy reference of the routing rule
        np.testing.assert_array_equal(leaf_index(tree, coded), leaves[:, t])
    assert np.isnan(X_NAN).any(axis=1).sum() > N // 3


# ---------------------------------------------------------------- local decompositions


@pytest.mark.parametrize("name", ["rf_classifier", "et_regressor", "dt_classifier",
                                  "clean_rf_regressor"])
def test_saabas_and_both_treeshaps_add_up_to_the_prediction(name, models):
    model = models[name]
    if not _routes(model):
        pytest.skip("this scikit-learn refuses NaN at predict for this model")
    expected = _output(model, X_NAN)
    classifier = hasattr(model, "classes_")
    extra = {"output": "all_classes"} if classifier else {}
    cases = [("saabas", {}), ("treeshap", {}),
             ("treeshap", {"perturbation": "interventional", "n_background": 40})]
    for method, params in cases:
        result = harness.explain(method, model, X_NAN, seed=1, **params, **extra)
        values = result.values if classifier else result.values[:, :, None]
        base = np.asarray(result.base_values).reshape(N, -1)
        total = base + values.sum(axis=1)
        np.testing.assert_allclose(total, expected, rtol=0, atol=1e-12, err_msg=method)


def _cover_expectation(tree, node, x, subset):
    """E[f_t | x_S] of the path-dependent game: features outside S split by the covers,
    those in S routed as scikit-learn routes x (NaN included)."""
    left, right = tree.children_left[node], tree.children_right[node]
    if left < 0:
        value = tree.value[node, 0]
        return value / value.sum() if value.size > 1 else value
    if tree.feature[node] in subset:
        return _cover_expectation(tree, left if _go_left(tree, node, x) else right, x, subset)
    cover = tree.weighted_n_node_samples
    return (cover[left] * _cover_expectation(tree, left, x, subset)
            + cover[right] * _cover_expectation(tree, right, x, subset)) / cover[node]


@pytest.mark.parametrize("name", ["dt_regressor", "rf_classifier"])
def test_path_dependent_treeshap_equals_brute_force_cover_game(name, models):
    model = models[name]
    view = forest_view(model)
    rows = np.flatnonzero(np.isnan(X_NAN).any(axis=1))[:4]
    phi, _ = path_dependent_shap(view.packed, view.rows(X_NAN[rows]))
    for k, row in enumerate(rows):
        x = X_NAN[row]
        expected = shapley_by_subsets(P, lambda s, x=x: np.mean(
            [_cover_expectation(t.tree_, 0, x, set(s)) for t in fitted_trees(model)],
            axis=0))
        np.testing.assert_allclose(phi[k], expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["et_regressor", "rf_classifier"])
def test_interventional_treeshap_equals_brute_force_shapley_of_predict(name, models):
    model = models[name]
    view = forest_view(model)
    rows = np.flatnonzero(np.isnan(X_NAN).any(axis=1))[:3]
    background = X_NAN[5:17]
    assert np.isnan(background).any()
    phi = interventional_shap(view.paths, view.rows(X_NAN[rows]), view.rows(background))
    for k, row in enumerate(rows):
        def value(subset, x=X_NAN[row]):
            hybrid = background.copy()
            hybrid[:, list(subset)] = x[list(subset)]
            return _output(model, hybrid).mean(axis=0)

        np.testing.assert_allclose(phi[k], shapley_by_subsets(P, value), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["et_classifier", "dt_regressor"])
def test_local_mdi_averages_to_global_mdi_on_training_rows_with_nan(name, models):
    model = models[name]  # no bootstrap: every training row is in every tree's bag
    local = harness.explain("local_mdi", model, X_NAN).values
    expected = np.mean([t.tree_.compute_feature_importances(normalize=False)
                        for t in fitted_trees(model)], axis=0)
    scale = max(1.0, float(np.mean([t.tree_.impurity[0] for t in fitted_trees(model)])))
    np.testing.assert_allclose(local.mean(axis=0), expected, rtol=0, atol=1e-12 * scale)


# ---------------------------------------------------------------- tree SAGE


def _tree_output(estimator, X, classifier):
    return estimator.predict_proba(X) if classifier else estimator.predict(X)[:, None]


@pytest.mark.parametrize("name", ["rf_classifier", "et_regressor"])
def test_tree_sage_curves_and_first_steps_equal_their_definitions_on_rows_with_nan(name,
                                                                                   models):
    """Path-dependent curves against an explicit recursion of the cover game; marginal
    curves against each tree's own predict on the imputed rows; the first-step sums (with
    their NaN cell) against both."""
    model = models[name]
    view, classifier = forest_view(model), hasattr(model, "classes_")
    forest, trees = view.packed, fitted_trees(model)
    rng = np.random.default_rng(4)
    rows = np.flatnonzero(np.isnan(X_NAN).any(axis=1))[:5]
    perms = np.argsort(rng.random((len(rows), P)), axis=1)
    columns = (rng.integers(forest.n_values, size=len(rows)) if classifier
               else np.zeros(len(rows), dtype=np.int64))
    X32 = view.rows(X_NAN)
    background = X_NAN[20:31]
    fraction = cover_fractions(forest)
    tables = singleton_tables(forest, fraction)
    path = path_dependent_curves(forest, fraction, X32, rows, perms, columns, tables,
                                 subtree_masks(forest))
    setup = marginal_setup(forest, view.rows(background))
    marginal = marginal_curves(forest, X32, view.rows(background), rows, perms, columns, setup)

    def imputed(x, coalition, column):
        hybrid = background.copy()
        hybrid[:, coalition] = x[coalition]
        return np.mean([_tree_output(e, hybrid, classifier)[:, column] for e in trees])

    def covered(x, coalition, column):
        return np.mean([_cover_expectation(e.tree_, 0, x, set(coalition))[column]
                        for e in trees])

    for q, row in enumerate(rows):
        for k in range(P + 1):
            coalition = list(perms[q, :k])
            assert abs(path[q, k] - covered(X_NAN[row], coalition, columns[q])) <= 1e-12
            assert abs(marginal[q, k] - imputed(X_NAN[row], coalition, columns[q])) <= 1e-12
    every = np.arange(40)
    cols = every % forest.n_values
    first_path = singleton_sums(tables, X32[every], cols, forest.n_trees) / forest.n_trees
    first_marginal = singleton_sums(setup[3], X32[every], cols, forest.n_trees) / (
        forest.n_trees * len(background))
    for i in every:
        for j in range(P):
            assert abs(first_path[i, j] - covered(X_NAN[i], [j], cols[i])) <= 1e-12, (i, j)
            assert abs(first_marginal[i, j] - imputed(X_NAN[i], [j], cols[i])) <= 1e-12


# ---------------------------------------------------------------- permutations, projections


@pytest.mark.parametrize("name, loss", [("rf_regressor", "squared_error"),
                                        ("rf_classifier", "brier")])
def test_held_out_mda_equals_permuted_predict_on_columns_with_nan(name, loss, models):
    model = models[name]
    classes = getattr(model, "classes_", None)
    y = Y_CLS if classes is not None else Y_REG
    seed = draw_seed(np.random.default_rng(3))
    base_loss = oob_reference._loss(loss, y, _output(model, X_NAN), classes).mean()
    increase = []
    for j in range(P):
        rows = X_NAN.copy()
        rows[:, j] = X_NAN[keyed_permutation(seed, STREAM_HELD_OUT, 0, j, N), j]
        increase.append(oob_reference._loss(loss, y, _output(model, rows), classes).mean()
                        - base_loss)
    ours = harness.explain("mda_test", model, X_NAN, y, seed=3, loss=loss, n_repeats=1)
    np.testing.assert_allclose(ours.values, increase, rtol=1e-9, atol=1e-10)
    assert np.abs(increase[:3]).max() > 0


@pytest.mark.parametrize("name, loss", [("rf_regressor", "squared_error"),
                                        ("rf_classifier", "log_loss")])
def test_oob_mdas_equal_each_trees_predict_on_permuted_columns_with_nan(name, loss, models):
    model = models[name]
    y = Y_CLS if hasattr(model, "classes_") else Y_REG
    check_training_rows(forest_view(model), X_NAN, y)  # NaN rows are the training rows
    with pytest.raises(BadInputError, match="not the rows"):
        check_training_rows(forest_view(model), X_NAN[::-1], y[::-1])
    seed = draw_seed(np.random.default_rng(7))
    bc, ik = oob_reference._brute_force_oob_mda(model, X_NAN, y, loss, seed)
    np.testing.assert_allclose(harness.explain("mda_bc", model, X_NAN, y, seed=7,
                                               loss=loss).values, bc, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(harness.explain("mda_ik", model, X_NAN, y, seed=7,
                                               loss=loss).values, ik, rtol=1e-10, atol=1e-12)


def test_oob_predictions_equal_scikit_learn_on_rows_with_nan():
    model = RandomForestRegressor(12, max_depth=6, oob_score=True, random_state=0)
    model.fit(X_NAN, Y_REG)
    prediction, n_oob = oob_predictions(forest_view(model), X_NAN)
    scored = n_oob > 0
    np.testing.assert_allclose(prediction[scored, 0], model.oob_prediction_[scored], rtol=0,
                               atol=1e-12)


class _NanReferenceTree(oob_reference._ReferenceTree):
    """The set-based projection reference of ``test_oob_family``, routing NaN as
    scikit-learn does."""

    def __init__(self, estimator, X32):
        super().__init__(estimator, X32)
        self.tree = estimator.tree_

    def step(self, i: int, node: int) -> int:
        return self.left[node] if _go_left(self.tree, node, self.X32[i]) else self.right[node]


@pytest.mark.parametrize("name", ["rf_regressor", "rf_classifier"])
def test_sobol_mda_projections_equal_the_set_based_reference_on_rows_with_nan(name, models,
                                                                             monkeypatch):
    model = models[name]
    view = forest_view(model)
    targets = (np.eye(3)[Y_CLS] if hasattr(model, "classes_") else Y_REG[:, None]).astype(float)
    ours = projected_oob_shift(view.packed, view.rows(X_NAN), view.inbag.counts, targets)
    monkeypatch.setattr(oob_reference, "_ReferenceTree", _NanReferenceTree)
    reference = oob_reference._reference_projected_shift(model, X_NAN, targets)
    np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-10)
    assert np.abs(reference[np.isnan(X_NAN).any(axis=1)]).max() > 0


# ---------------------------------------------------------------- end to end, validation

FAST = {"tree_sage": {"max_permutations": 64, "batch_size": 32},
        "sage": {"max_permutations": 64, "batch_size": 32, "n_background": 8},
        "rs": {"n_trees": 10}, "srs": {"n_trees": 10}, "shaff": {}}


@pytest.mark.parametrize("name", ["rf_classifier", "rf_regressor"])
def test_every_built_in_method_explains_rows_with_nan_and_inf_is_refused(name, models):
    model = models[name]
    y = Y_CLS if hasattr(model, "classes_") else Y_REG
    methods = harness.list_methods()
    for method in methods.loc[methods["installed"], "name"]:
        params = {k: v for k, v in FAST.get(method, {}).items()
                  if k in harness.list_methods().set_index("name").loc[method, "parameters"]}
        try:
            result = harness.explain(method, model, X_NAN, y, seed=0, **params)
        except MethodSkipped as skipped:  # rs/srs grow ExtraTrees: NaN from scikit-learn 1.6
            expected = {"rs": "refuses NaN", "srs": "refuses NaN",
                        "conditional_permutation": "no missing values"}
            assert method in expected and expected[method] in str(skipped), (method, skipped)
            continue
        assert np.all(np.isfinite(result.values)), method
    inf = X_NAN.copy()
    inf[3, 1] = np.inf
    with pytest.raises(BadInputError, match="got 1 infinite cell"):
        harness.explain("saabas", model, inf)


def test_nan_is_refused_for_a_model_that_does_not_route_it():
    view = types.SimpleNamespace(routes_missing=False, kind="SomeForest", library="lib")
    with pytest.raises(BadInputError, match="X contains 2 NaN cells, but this SomeForest "
                                            r"\(lib\) does not route missing values"):
        _check_values(view, np.array([[np.nan, 1.0], [np.nan, 2.0]]))
    routed = types.SimpleNamespace(routes_missing=True, kind="SomeForest", library="lib")
    _check_values(routed, np.array([[np.nan, 1.0]]))
