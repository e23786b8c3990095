"""Multi-output scikit-learn regressors (y of shape (n, k)): the view, the local methods and
their output selection, MDI, the checks of y, and what is skipped (multi-output classifiers:
test_multi_output_classifier.py).

Oracles: the model's own ``predict`` (additivity for every output), shap's TreeExplainer on
the same multi-output forest (exact and approximate), scikit-learn's ``feature_importances_``,
and node impurities recomputed from the training rows (scikit-learn's multi-output impurity:
the mean over outputs of each output's variance).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor

import harness
from harness.core import registry
from harness.core.dataset import DatasetSource
from harness.core.errors import BadInputError, MethodSkipped
from harness.core.types import Dataset
from harness.forest.models import fit_model
from harness.forest.view import forest_view
from harness.run.inputs import validate_explain_inputs
from harness.run.protocol import missing_capability
from harness.run.results import RunResults
from harness.run.runner import compare

N_OUTPUTS = 3
LOCAL = [("saabas", {}), ("treeshap", {}), ("treeshap", {"perturbation": "interventional"})]


def _data(n: int = 160, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 5))
    noise = 0.1 * rng.standard_normal((n, N_OUTPUTS))
    Y = np.c_[X[:, 0] + 2 * X[:, 1], 3 * X[:, 2] * X[:, 3], np.sin(6 * X[:, 4]) + X[:, 0]]
    return X, Y + noise


MODELS = {
    "random_forest": lambda: RandomForestRegressor(n_estimators=12, max_depth=6,
                                                   random_state=0),
    "extra_trees": lambda: ExtraTreesRegressor(n_estimators=12, max_depth=6, random_state=0),
    "decision_tree": lambda: DecisionTreeRegressor(max_depth=6, random_state=0),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def fitted(request):
    X, Y = _data()
    return MODELS[request.param]().fit(X, Y), X, Y


@pytest.fixture(scope="module")
def forest():
    X, Y = _data()
    return MODELS["random_forest"]().fit(X, Y), X, Y


def test_the_view_has_one_value_column_per_output(fitted):
    model, X, _ = fitted
    view = forest_view(model)
    assert view.n_outputs == N_OUTPUTS and view.multi_output and not view.classifier
    assert view.impurity_unit == f"variance (mean over {N_OUTPUTS} outputs)"
    assert all(tree.value.shape[1] == N_OUTPUTS for tree in view.trees)
    np.testing.assert_allclose(view.output(X), model.predict(X), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("method", "params"), LOCAL)
def test_local_values_add_up_to_every_output_of_predict(fitted, method, params):
    model, X, _ = fitted
    result = harness.explain(method, model, X, **params)
    n, p = X.shape
    assert result.values.shape == (n, p, N_OUTPUTS)
    assert result.base_values.shape == (n, N_OUTPUTS)
    assert result.unit == "prediction" and str(N_OUTPUTS) in result.explains
    total = result.values.sum(axis=1) + result.base_values
    np.testing.assert_allclose(total, model.predict(X), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("method", "params"), LOCAL)
def test_an_output_index_is_that_column_of_all_outputs(forest, method, params):
    model, X, _ = forest
    every = harness.explain(method, model, X, **params)
    for j in range(N_OUTPUTS):
        one = harness.explain(method, model, X, output=j, **params)
        assert one.values.shape == X.shape and one.base_values.shape == (X.shape[0],)
        assert one.explains.startswith(f"prediction of output {j} ")
        # the one-column walk is another kernel than the every-column one: equal to rounding
        np.testing.assert_allclose(one.values, every.values[:, :, j], rtol=0, atol=1e-13)
        np.testing.assert_allclose(one.base_values, every.base_values[:, j], rtol=0,
                                   atol=1e-13)
        np.testing.assert_allclose(one.values.sum(axis=1) + one.base_values,
                                   model.predict(X)[:, j], rtol=0, atol=1e-12)


def test_treeshap_and_saabas_equal_shap_on_every_output(fitted):
    shap = pytest.importorskip("shap")
    model, X, _ = fitted
    explainer = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
    exact = np.asarray(explainer.shap_values(X, check_additivity=False))
    approximate = np.asarray(explainer.shap_values(X, approximate=True, check_additivity=False))
    assert exact.shape == (*X.shape, N_OUTPUTS)
    ours = harness.explain("treeshap", model, X)
    np.testing.assert_allclose(ours.values, exact, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.base_values[0], explainer.expected_value, rtol=0,
                               atol=1e-12)
    np.testing.assert_allclose(harness.explain("saabas", model, X).values, approximate,
                               rtol=0, atol=1e-12)


def _impurity_from_rows(model, X, Y):
    """Each tree, the training rows reaching each of its nodes, and its node impurities
    recomputed from them: scikit-learn's multi-output squared error, the mean over outputs
    of each output's variance."""
    for estimator in getattr(model, "estimators_", [model]):
        nodes = estimator.decision_path(X).toarray().astype(bool)
        impurity = np.array([Y[rows].var(axis=0).mean() for rows in nodes.T])
        yield estimator.tree_, nodes, impurity


@pytest.mark.parametrize("name", ["extra_trees", "decision_tree"])  # every row in every tree
def test_local_mdi_decomposes_the_multi_output_impurity(name):
    X, Y = _data()
    model = MODELS[name]().fit(X, Y)
    expected = np.zeros(X.shape)
    trees = 0
    for tree, nodes, impurity in _impurity_from_rows(model, X, Y):
        np.testing.assert_allclose(tree.impurity, impurity, rtol=1e-10, atol=1e-12)
        for t in np.flatnonzero(tree.children_left >= 0):
            for kid in (tree.children_left[t], tree.children_right[t]):
                expected[nodes[:, kid], tree.feature[t]] += impurity[t] - impurity[kid]
        trees += 1
    local = harness.explain("local_mdi", model, X)
    assert local.unit == f"variance (mean over {N_OUTPUTS} outputs)"
    np.testing.assert_allclose(local.values, expected / trees, rtol=0, atol=1e-12)
    # Sutera et al. 2021, Eq. 9: over the training rows (no bootstrap) it averages to MDI
    global_ = harness.explain("mdi", model, X).values
    np.testing.assert_allclose(local.values.mean(axis=0), global_, rtol=0, atol=1e-12)


def test_mdi_is_scikit_learns_feature_importances(fitted):
    model, X, _ = fitted
    trees = getattr(model, "estimators_", [model])
    unnormalised = np.mean([t.tree_.compute_feature_importances(normalize=False)
                            for t in trees], axis=0)
    np.testing.assert_allclose(harness.explain("mdi", model, X).values, unnormalised,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(harness.explain("mdi", model, X, normalize=True).values,
                               model.feature_importances_, rtol=0, atol=1e-12)


def assert_an_output_index_the_model_lacks_is_skipped(model, X, n_outputs: int) -> None:
    """saabas and treeshap skip ``output=n_outputs``, naming it (shared with
    test_multi_output_classifier.py)."""
    for method in ("saabas", "treeshap"):
        with pytest.raises(MethodSkipped, match=f"output={n_outputs} is not an output index"):
            harness.explain(method, model, X, output=n_outputs)


def test_an_output_index_the_model_lacks_is_skipped(forest):
    model, X, _ = forest
    assert_an_output_index_the_model_lacks_is_skipped(model, X, N_OUTPUTS)


def test_y_must_have_one_column_per_output(forest):
    model, X, Y = forest
    assert validate_explain_inputs(model, X, Y).y.shape == Y.shape
    for wrong in (Y[:, :2], Y[:, 0], np.c_[Y, Y[:, 0]]):
        with pytest.raises(BadInputError, match=rf"y must have shape \({len(X)}, 3\)"):
            harness.explain("mda_test", model, X, wrong)
    bad = Y.copy()
    bad[7, 2] = np.nan
    with pytest.raises(BadInputError, match="first at row 7"):
        validate_explain_inputs(model, X, bad)
    single = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, Y[:, 0])
    with pytest.raises(BadInputError, match=rf"y must have shape \({len(X)},\)"):
        validate_explain_inputs(single, X, Y)


def assert_only_multi_output_methods_explain(model, X, Y, n_outputs: int) -> None:
    """mdi, local_mdi, saabas and treeshap explain the multi-output model; every other
    method skips it, naming it (shared with test_multi_output_classifier.py)."""
    data = validate_explain_inputs(model, X, Y)
    explained = set()
    for name in registry.method_names():
        method = registry.make_method(name)
        reason = missing_capability(method, model) or method.skip(model, data)
        if reason is None:
            explained.add(name)
        else:
            assert f"multi-output model with {n_outputs} outputs" in reason, (name, reason)
    assert explained == {"mdi", "local_mdi", "saabas", "treeshap"}


def test_methods_defined_for_one_output_skip_multi_output_models(forest):
    model, X, Y = forest
    assert_only_multi_output_methods_explain(model, X, Y, N_OUTPUTS)
    with pytest.raises(MethodSkipped, match="single-output models only"):
        harness.explain("mda_test", model, X, Y)


class _MultiOutputData(DatasetSource):
    """A multi-output regression dataset given to the runner as a plugin instance."""

    name = "multi_output_test"
    task = "regression"

    def _load(self, params, seed: int) -> Dataset:
        X, Y = _data(120, seed)
        return Dataset(self.name, X, Y, "regression", [f"x{j}" for j in range(X.shape[1])])


def test_the_runner_explains_multi_output_models_and_skips_the_rest(tmp_path):
    spec = {"forest": "random_forest", "n_estimators": 8, "max_depth": 5}
    summary = compare(datasets=[_MultiOutputData()], models=[spec],
                      methods=["saabas", "treeshap[output=1]", "mda_test"], seeds=[0],
                      out=tmp_path, executor="inprocess", reports=False)
    assert (summary.done, summary.skipped, summary.error) == (2, 1, 0)
    run = RunResults.open(tmp_path)
    cells = run.cells.set_index("method_name")
    assert "multi-output model with 3 outputs" in cells.loc["mda_test", "reason"]
    dataset = _MultiOutputData().load(0)
    prediction = fit_model(spec, dataset, seed=0).predict(dataset.X)  # the run's own fit
    for method, column in (("saabas", slice(None)), ("treeshap", 1)):
        stored = run.arrays(cells.loc[method, "key"])
        rows = stored["sample_index"]
        total = stored["values"].sum(axis=1) + stored["base_values"]
        np.testing.assert_allclose(total, prediction[rows][:, column], rtol=0, atol=1e-12)
    run.close()
