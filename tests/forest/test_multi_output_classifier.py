"""Multi-output scikit-learn classifiers (y of shape (n, k), each output with its own classes):
the view, the local methods and their output selection, local MDI and MDI, the checks of y,
and what is skipped.

Oracles: the model's own ``predict_proba`` (one array per output: additivity for every class
of every output) and ``predict`` (the predicted class of each output); shap's TreeExplainer on
the same forest, whose values for a multi-output classifier are the probabilities divided by
the number of outputs k in blocks padded to the most classes (it normalises a node's values
over all outputs at once), so k times its unpadded columns are the exact values; scikit-learn's
``feature_importances_``; node impurities recomputed from the training rows (scikit-learn's
multi-output Gini: the mean over outputs of each output's Gini impurity).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

import harness
from harness.core.errors import BadInputError, MethodSkipped
from harness.forest.view import forest_view
from harness.run.inputs import validate_explain_inputs
from tests.forest.test_multi_output import (
    assert_an_output_index_the_model_lacks_is_skipped,
    assert_only_multi_output_methods_explain,
)

LOCAL = [("saabas", {}), ("treeshap", {}), ("treeshap", {"perturbation": "interventional"})]


def _data(n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three outputs with 2, 3 and 2 classes; the last one's labels are 0 and 2 (a label is
    not its class index)."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 5))
    noise = 0.15 * rng.standard_normal((n, 3))
    first = (X[:, 0] + X[:, 1] + noise[:, 0] > 1).astype(int)
    second = np.digitize(X[:, 2] * X[:, 3] + noise[:, 1], [0.15, 0.35])
    third = np.where(np.sin(6 * X[:, 4]) + noise[:, 2] > 0, 2, 0)
    return X, np.c_[first, second, third]


CLASSES = ([0, 1], [0, 1, 2], [0, 2])
N_OUTPUTS = len(CLASSES)
MODELS = {
    "random_forest": lambda: RandomForestClassifier(n_estimators=12, max_depth=6,
                                                    random_state=0),
    "extra_trees": lambda: ExtraTreesClassifier(n_estimators=12, max_depth=6, random_state=0),
    "decision_tree": lambda: DecisionTreeClassifier(max_depth=6, random_state=0),
}


def _fit(name: str):
    X, Y = _data()
    return MODELS[name]().fit(X, Y), X, Y


@pytest.fixture(scope="module", params=sorted(MODELS))
def fitted(request):
    return _fit(request.param)


@pytest.fixture(scope="module")
def forest():
    return _fit("random_forest")


def _proba(model, X) -> np.ndarray:
    return np.hstack(model.predict_proba(X))


def _blocks() -> list[slice]:
    starts = np.cumsum([0] + [len(c) for c in CLASSES])
    return [slice(a, b) for a, b in zip(starts[:-1], starts[1:], strict=True)]


def test_the_view_has_each_outputs_classes_side_by_side(fitted):
    model, X, _ = fitted
    view = forest_view(model)
    assert view.classifier and view.n_outputs == N_OUTPUTS and view.classes is None
    assert [c.tolist() for c in view.output_classes] == [list(c) for c in CLASSES]
    assert view.n_values == sum(len(c) for c in CLASSES)
    assert view.impurity_unit == f"gini (mean over {N_OUTPUTS} outputs)"
    np.testing.assert_allclose(view.output(X), _proba(model, X), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("method", "params"), LOCAL)
def test_all_classes_add_up_to_every_outputs_predict_proba(fitted, method, params):
    model, X, _ = fitted
    result = harness.explain(method, model, X, output="all_classes", **params)
    n, p = X.shape
    width = sum(len(c) for c in CLASSES)
    assert result.values.shape == (n, p, width) and result.base_values.shape == (n, width)
    assert result.unit == "class probability" and "output 1: [0, 1, 2]" in result.explains
    total = result.values.sum(axis=1) + result.base_values
    np.testing.assert_allclose(total, _proba(model, X), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("method", "params"), LOCAL)
def test_the_default_explains_each_outputs_predicted_class(fitted, method, params):
    model, X, _ = fitted
    result = harness.explain(method, model, X, **params)
    n, p = X.shape
    assert result.values.shape == (n, p, N_OUTPUTS)
    assert result.explains == f"predicted-class probability of each of the {N_OUTPUTS} outputs"
    total = result.values.sum(axis=1) + result.base_values
    predicted = model.predict(X)
    for j, (proba, classes) in enumerate(zip(model.predict_proba(X), model.classes_,
                                             strict=True)):
        column = np.searchsorted(classes, predicted[:, j])  # the class predict() returns
        np.testing.assert_allclose(total[:, j], proba[np.arange(n), column], rtol=0,
                                   atol=1e-12)


@pytest.mark.parametrize(("method", "params"), LOCAL)
def test_an_output_index_is_that_outputs_predicted_class(forest, method, params):
    model, X, _ = forest
    every = harness.explain(method, model, X, **params)
    for j in range(N_OUTPUTS):
        one = harness.explain(method, model, X, output=j, **params)
        assert one.values.shape == X.shape and one.base_values.shape == (X.shape[0],)
        assert one.explains == f"predicted-class probability of output {j} (of {N_OUTPUTS})"
        np.testing.assert_array_equal(one.values, every.values[:, :, j])
        np.testing.assert_array_equal(one.base_values, every.base_values[:, j])


def test_treeshap_and_saabas_equal_shap_times_the_number_of_outputs(fitted):
    shap = pytest.importorskip("shap")
    model, X, _ = fitted
    explainer = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
    padded = max(len(c) for c in CLASSES)
    kept = [j * padded + c for j, classes in enumerate(CLASSES) for c in range(len(classes))]
    exact = N_OUTPUTS * np.asarray(explainer.shap_values(X, check_additivity=False))
    approximate = N_OUTPUTS * np.asarray(
        explainer.shap_values(X, approximate=True, check_additivity=False))
    assert exact.shape == (*X.shape, N_OUTPUTS * padded)
    ours = harness.explain("treeshap", model, X, output="all_classes")
    np.testing.assert_allclose(ours.values, exact[:, :, kept], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.base_values[0],
                               N_OUTPUTS * np.asarray(explainer.expected_value)[kept],
                               rtol=0, atol=1e-12)
    saabas = harness.explain("saabas", model, X, output="all_classes")
    np.testing.assert_allclose(saabas.values, approximate[:, :, kept], rtol=0, atol=1e-12)


def _gini(labels: np.ndarray) -> float:
    _, counts = np.unique(labels, return_counts=True)
    share = counts / counts.sum()
    return 1.0 - float(share @ share)


@pytest.mark.parametrize("name", ["extra_trees", "decision_tree"])  # every row in every tree
def test_local_mdi_decomposes_the_multi_output_gini(name):
    model, X, Y = _fit(name)
    expected = np.zeros(X.shape)
    trees = getattr(model, "estimators_", [model])
    for estimator in trees:
        tree = estimator.tree_
        nodes = estimator.decision_path(X).toarray().astype(bool)
        impurity = np.array([np.mean([_gini(Y[rows, j]) for j in range(N_OUTPUTS)])
                             for rows in nodes.T])
        np.testing.assert_allclose(tree.impurity, impurity, rtol=1e-10, atol=1e-12)
        for t in np.flatnonzero(tree.children_left >= 0):
            for kid in (tree.children_left[t], tree.children_right[t]):
                expected[nodes[:, kid], tree.feature[t]] += impurity[t] - impurity[kid]
    local = harness.explain("local_mdi", model, X)
    assert local.unit == f"gini (mean over {N_OUTPUTS} outputs)"
    np.testing.assert_allclose(local.values, expected / len(trees), rtol=0, atol=1e-12)
    # Sutera et al. 2021, Eq. 9: over the training rows (no bootstrap) it averages to MDI
    global_ = harness.explain("mdi", model, X).values
    np.testing.assert_allclose(local.values.mean(axis=0), global_, rtol=0, atol=1e-12)


def test_mdi_is_scikit_learns_feature_importances(fitted):
    model, X, _ = fitted
    np.testing.assert_allclose(harness.explain("mdi", model, X, normalize=True).values,
                               model.feature_importances_, rtol=0, atol=1e-12)


def test_y_needs_each_outputs_own_labels(forest):
    model, X, Y = forest
    assert validate_explain_inputs(model, X, Y).y.shape == Y.shape
    with pytest.raises(BadInputError, match=rf"y must have shape \({len(X)}, 3\)"):
        validate_explain_inputs(model, X, Y[:, :2])
    wrong = Y.copy()
    wrong[4, 1] = 7  # a class of no output
    with pytest.raises(BadInputError, match=r"output 1 of the classifier was not fitted on: "
                                            r"\[7\].*expected labels among \[0, 1, 2\]"):
        validate_explain_inputs(model, X, wrong)
    swapped = Y.copy()
    swapped[0, 2] = 1  # output 0's label in output 2
    with pytest.raises(BadInputError, match="output 2 of the classifier"):
        validate_explain_inputs(model, X, swapped)


def test_an_output_index_the_model_lacks_is_skipped(forest):
    model, X, _ = forest
    assert_an_output_index_the_model_lacks_is_skipped(model, X, N_OUTPUTS)


def test_methods_defined_for_one_output_skip_and_shap_backend_is_refused(forest):
    model, X, Y = forest
    assert_only_multi_output_methods_explain(model, X, Y, N_OUTPUTS)
    with pytest.raises(MethodSkipped, match="divides a multi-output classifier's"):
        harness.explain("treeshap", model, X, backend="shap")
