"""A single scikit-learn decision tree is explained as the forest of one tree it is."""

from __future__ import annotations

import numpy as np
import pytest
import shap
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import harness
from harness.core.errors import BadInputError, MethodSkipped
from harness.forest.view import forest_view

LOCAL = ("local_mdi", "saabas", "treeshap")


def _forest_and_its_first_tree(task, data):
    X, y = data
    grow = RandomForestRegressor if task == "regression" else RandomForestClassifier
    forest = grow(n_estimators=1, bootstrap=False, max_features=None, max_depth=6,
                  random_state=0).fit(X, y)
    return forest, forest.estimators_[0], X, y


@pytest.mark.parametrize(("task", "data"), [("regression", "diabetes"),
                                            ("classification", "wine")])
@pytest.mark.parametrize("method", [*LOCAL, "mdi", "tree_sage"])
def test_a_tree_gets_what_the_forest_of_that_one_tree_gets(task, data, method, request):
    """Oracle: the same fitted tree, alone and as the only tree of a forest (whose values are
    checked against shap, treeinterpreter and the authors' code elsewhere)."""
    forest, tree, X, y = _forest_and_its_first_tree(task, request.getfixturevalue(data))
    rows = X[:40]
    alone = harness.explain(method, tree, rows, y[:40], seed=0)
    in_forest = harness.explain(method, forest, rows, y[:40], seed=0)
    np.testing.assert_allclose(alone.values, in_forest.values, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("grow", "data"), [(DecisionTreeRegressor, "diabetes"),
                                            (DecisionTreeClassifier, "iris")])
def test_treeshap_of_a_tree_equals_shap_and_adds_up_to_its_prediction(grow, data, request):
    X, y = request.getfixturevalue(data)
    tree = grow(max_depth=5, random_state=0).fit(X, y)
    ours = harness.explain("treeshap", tree, X[:30], seed=0)
    theirs = shap.TreeExplainer(tree).shap_values(X[:30])
    predicted = tree.predict(X[:30]) if grow is DecisionTreeRegressor \
        else tree.predict_proba(X[:30])
    if grow is DecisionTreeRegressor:
        np.testing.assert_allclose(ours.values, theirs, atol=1e-9)
        np.testing.assert_allclose(ours.values.sum(axis=1) + ours.base_values, predicted,
                                   atol=1e-9)
    else:  # ours explains the probability of the predicted class
        chosen = predicted.argmax(axis=1)
        theirs = np.asarray(theirs)
        per_row = theirs[np.arange(30), :, chosen] if theirs.ndim == 3 and \
            theirs.shape[-1] == 3 else np.stack([theirs[c][i] for i, c in enumerate(chosen)])
        np.testing.assert_allclose(ours.values, per_row, atol=1e-9)


def test_a_tree_has_one_tree_and_no_out_of_bag_rows(diabetes):
    X, y = diabetes
    tree = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    view = forest_view(tree)
    assert (view.kind, view.n_trees, view.bootstrap) == ("DecisionTreeRegressor", 1, False)
    np.testing.assert_allclose(view.output(X)[:, 0], tree.predict(X), atol=1e-12)
    with pytest.raises(MethodSkipped, match="not single trees"):
        harness.explain("mda_bc", tree, X, y, seed=0)


def test_an_unfitted_tree_is_refused(diabetes):
    with pytest.raises(BadInputError, match="DecisionTreeRegressor is not fitted"):
        forest_view(DecisionTreeRegressor())
