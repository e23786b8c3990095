"""Out-of-bag family: bookkeeping, the three MDA variants and Sobol-MDA against brute force.

The oracles here are written independently of the kernels: scikit-learn's own OOB
predictions; permutation importances recomputed by permuting whole columns and calling each
tree's ``predict`` (no re-routing shortcut); projected trees recomputed with Python sets
following the reference C++ (ranger ``sobol-mda`` fork, ``Tree::predictProjectedTree``).
"""

from __future__ import annotations

import warnings
from collections import defaultdict

import numba
import numpy as np
import pytest
from sklearn.datasets import load_iris, make_classification, make_friedman1
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

import harness
from harness.core.errors import BadInputError, MethodSkipped
from harness.forest.inbag import check_training_rows, oob_predictions
from harness.forest.losses import BRIER, SQUARED_ERROR, TIE_MARGIN
from harness.forest.packed import as_float32_rows
from harness.forest.permutations import STREAM_HELD_OUT, STREAM_OOB, draw_seed, keyed_permutation
from harness.forest.view import forest_view
from harness.kernels.reroute.held_out import held_out_permutation_pass
from harness.kernels.reroute.permutation import oob_permutation_pass
from harness.kernels.reroute.projection import projected_oob_shift
from harness.reports.accuracy import target_table
from harness.run.results import RunResults

warnings.filterwarnings("ignore", message="Some inputs do not have OOB scores")


@pytest.fixture(scope="module")
def regression_forest():
    X, y = make_friedman1(n_samples=160, n_features=5, noise=0.5, random_state=0)
    X = np.column_stack([X, np.full(len(X), 0.5)])  # a constant column is never split on
    model = RandomForestRegressor(n_estimators=15, min_samples_leaf=2, random_state=0)
    return model.fit(X, y), X, y


@pytest.fixture(scope="module")
def classification_forest():
    X, y = load_iris(return_X_y=True)
    X = np.column_stack([X, np.zeros(len(X))])
    model = RandomForestClassifier(n_estimators=15, max_features=2, random_state=1)
    return model.fit(X, y), X, y


# ---------------------------------------------------------------- in-bag bookkeeping


@pytest.mark.parametrize("max_samples", [None, 0.6, 70])
def test_oob_regression_predictions_equal_scikit_learn_exactly(max_samples):
    X, y = make_friedman1(n_samples=200, random_state=1)
    model = RandomForestRegressor(n_estimators=25, oob_score=True, max_samples=max_samples,
                                  random_state=3).fit(X, y)
    prediction, n_oob = oob_predictions(forest_view(model), X)
    scored = n_oob > 0
    assert scored.sum() > 150
    np.testing.assert_array_equal(prediction[scored, 0], model.oob_prediction_[scored])
    assert np.all(np.isnan(prediction[~scored]))
    counts = forest_view(model).inbag.counts
    assert counts.sum(axis=0).tolist() == [model._n_samples_bootstrap] * 25


@pytest.mark.parametrize("forest", [RandomForestClassifier, ExtraTreesClassifier])
def test_oob_class_probabilities_equal_scikit_learn_exactly_with_weights(forest):
    X, y = load_iris(return_X_y=True)
    weight = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    model = forest(n_estimators=30, bootstrap=True, oob_score=True, max_samples=0.7,
                   random_state=2).fit(X, y, sample_weight=weight)
    prediction, n_oob = oob_predictions(forest_view(model), X)
    scored = n_oob > 0
    np.testing.assert_array_equal(prediction[scored], model.oob_decision_function_[scored])


@pytest.mark.parametrize("forest", [RandomForestRegressor, RandomForestClassifier])
def test_the_permutation_pass_gives_the_oob_output_of_scikit_learn_exactly(forest):
    """``mda_ik`` reads the forest's OOB output from the leaves its permutation pass walks;
    it must be scikit-learn's ``oob_prediction_`` / ``oob_decision_function_`` to the bit
    (each row's OOB trees added in tree order from 0.0), with the OOB tree counts of the
    in-bag bookkeeping, and NaN where no tree left the row out."""
    X, y = load_iris(return_X_y=True)
    model = forest(n_estimators=12, oob_score=True, max_samples=0.9, random_state=4).fit(X, y)
    view = forest_view(model)
    loss = SQUARED_ERROR if view.classes is None else BRIER
    walk = oob_permutation_pass(view.packed, view.rows(X), view.inbag.counts,
                                y.astype(np.float64), loss, 5, True)
    expected = (model.oob_prediction_[:, None] if view.classes is None
                else model.oob_decision_function_)
    scored = walk.n_oob > 0
    assert 0 < (~scored).sum() < 20  # 12 trees: a few rows are in every bag
    np.testing.assert_array_equal(walk.oob_prediction[scored], expected[scored])
    assert np.all(np.isnan(walk.oob_prediction[~scored]))
    np.testing.assert_array_equal(walk.n_oob, (view.inbag.counts == 0).sum(axis=1))
    assert walk.shift.shape == (X.shape[1], len(X), expected.shape[1])


def test_training_rows_are_checked(regression_forest):
    model, X, y = regression_forest
    check_training_rows(forest_view(model), X, y)
    with pytest.raises(BadInputError, match="fitted on 160 rows, got X with 159"):
        check_training_rows(forest_view(model), X[1:], y[1:])
    with pytest.raises(BadInputError, match="not the rows this forest was fitted on"):
        check_training_rows(forest_view(model), X[::-1], y[::-1])
    with pytest.raises(BadInputError, match="not the rows"):
        harness.explain("mda_bc", model, X, y[::-1])


@pytest.mark.parametrize("method", ["mda_bc", "sobol_mda", "mdi_oob"])
def test_a_warm_start_forest_grown_on_other_rows_is_refused(method):
    # trees 20-39 were fitted on rows 2, so the rows 1 are not out of bag for them: the old
    # check rebuilt tree 0 only, passed, and the out-of-bag methods returned values (mda_bc,
    # mdi_oob) or a ZeroDivisionError from an empty in-bag cell (sobol_mda)
    X1, y1 = make_friedman1(n_samples=200, n_features=6, random_state=0)
    X2, y2 = make_friedman1(n_samples=200, n_features=6, random_state=1)
    model = RandomForestRegressor(20, warm_start=True, random_state=0).fit(X1, y1)
    model.set_params(n_estimators=40).fit(X2, y2)
    for X, y in ((X1, y1), (X2, y2)):
        with pytest.raises(BadInputError, match="warm_start forest grown further"):
            harness.explain(method, model, X, y)


@pytest.mark.parametrize("class_weight", ["balanced", {"no": 1.0, "yes": 3.0},
                                          "balanced_subsample"])
def test_a_class_weighted_forest_has_its_training_rows_checked(class_weight):
    # the check was skipped under class_weight, so other rows gave values without a word;
    # it now rebuilds the leaves under the weights the trees were grown with, and the
    # out-of-bag output read from the in-bag counts is scikit-learn's own
    X, codes = make_classification(n_samples=240, n_features=5, weights=[0.75], flip_y=0.2,
                                   random_state=0)
    y = np.array(["no", "yes"])[codes]
    model = RandomForestClassifier(15, min_samples_leaf=8, class_weight=class_weight,
                                   oob_score=True, random_state=0).fit(X, y)
    check_training_rows(forest_view(model), X, y)
    prediction, n_oob = oob_predictions(forest_view(model), X)
    scored = n_oob > 0
    np.testing.assert_allclose(prediction[scored], model.oob_decision_function_[scored],
                               rtol=1e-12)
    with pytest.raises(BadInputError, match="not the rows this forest was fitted on"):
        harness.explain("mda_bc", model, X[::-1], y[::-1])


def test_a_warm_start_forest_grown_on_the_same_rows_is_the_forest_grown_at_once():
    # scikit-learn draws the added trees' seeds after the first ones': 20 + 20 trees are the
    # 40 trees of one fit, and so are their out-of-bag importances
    X, y = make_friedman1(n_samples=200, n_features=6, random_state=0)
    grown = RandomForestRegressor(20, warm_start=True, random_state=0).fit(X, y)
    grown.set_params(n_estimators=40).fit(X, y)
    at_once = RandomForestRegressor(40, random_state=0).fit(X, y)
    np.testing.assert_array_equal(harness.explain("mda_bc", grown, X, y).values,
                                  harness.explain("mda_bc", at_once, X, y).values)


def test_methods_without_bootstrap_are_skipped_with_a_reason():
    X, y = make_friedman1(n_samples=60, random_state=0)
    model = ExtraTreesRegressor(n_estimators=5, random_state=0).fit(X, y)
    for name in ("mda_bc", "mda_ik", "sobol_mda"):
        with pytest.raises(MethodSkipped, match="bootstrap=True"):
            harness.explain(name, model, X, y)
    with pytest.raises(MethodSkipped, match="loss=brier applies to classification"):
        harness.explain("mda_test", model, X, y, loss="brier")


# ---------------------------------------------------------------- permutation brute force


def _loss(name: str, y: np.ndarray, output: np.ndarray, classes: np.ndarray | None):
    if name == "squared_error":
        return (y - output[:, 0]) ** 2
    label = np.searchsorted(classes, y)
    if name == "misclassification":  # first class within the tie margin wins
        predicted = np.argmax(output >= output.max(axis=1, keepdims=True) - TIE_MARGIN, axis=1)
        return (predicted != label).astype(float)
    if name == "brier":
        onehot = np.eye(output.shape[1])[label]
        return ((output - onehot) ** 2).sum(axis=1)
    return -np.log(np.maximum(output[np.arange(len(y)), label], 1e-15))


def _tree_output(estimator, X, classifier: bool) -> np.ndarray:
    return estimator.predict_proba(X) if classifier else estimator.predict(X)[:, None]


def _brute_force_oob_mda(model, X, y, loss: str, seed: int):
    """Both OOB MDAs by permuting whole OOB columns and calling each tree's predict."""
    classifier = hasattr(model, "classes_")
    classes = model.classes_ if classifier else None
    counts = forest_view(model).inbag.counts
    n, p = X.shape
    per_tree = []
    permuted_sum = np.zeros((n, p, model.n_classes_ if classifier else 1))
    for t, estimator in enumerate(model.estimators_):
        oob = np.flatnonzero(counts[:, t] == 0)
        base = _tree_output(estimator, X[oob], classifier)
        base_loss = _loss(loss, y[oob], base, classes).mean()
        increase = np.zeros(p)
        for j in range(p):
            rows = X[oob].copy()
            rows[:, j] = X[oob][keyed_permutation(seed, STREAM_OOB, t, j, len(oob)), j]
            output = _tree_output(estimator, rows, classifier)
            increase[j] = _loss(loss, y[oob], output, classes).mean() - base_loss
            permuted_sum[oob, j] += output
        per_tree.append(increase)
    prediction, n_oob = oob_predictions(forest_view(model), X)
    scored = n_oob > 0
    base_loss = _loss(loss, y[scored], prediction[scored], classes)
    ik = np.array([(_loss(loss, y[scored], permuted_sum[scored, j] / n_oob[scored, None],
                          classes) - base_loss).mean() for j in range(p)])
    return np.mean(per_tree, axis=0), ik


@pytest.mark.parametrize("case, loss", [
    ("regression", "squared_error"), ("classification", "misclassification"),
    ("classification", "brier"), ("classification", "log_loss"),
])
def test_oob_mda_equal_brute_force_permutations(case, loss, request):
    model, X, y = request.getfixturevalue(f"{case}_forest")
    seed = draw_seed(np.random.default_rng(7))
    bc, ik = _brute_force_oob_mda(model, X, y, loss, seed)
    ours_bc = harness.explain("mda_bc", model, X, y, seed=7, loss=loss)
    ours_ik = harness.explain("mda_ik", model, X, y, seed=7, loss=loss)
    np.testing.assert_allclose(ours_bc.values, bc, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours_ik.values, ik, rtol=1e-10, atol=1e-12)
    assert np.abs(bc).max() > 0 and np.abs(ik).max() > 0  # the check is not vacuous


@pytest.mark.parametrize("case, loss", [("regression", "squared_error"),
                                        ("classification", "brier")])
def test_held_out_mda_equals_permuted_predict(case, loss, request):
    model, X, y = request.getfixturevalue(f"{case}_forest")
    classifier = case == "classification"
    classes = model.classes_ if classifier else None
    predict = model.predict_proba if classifier else (lambda rows: model.predict(rows)[:, None])
    seed = draw_seed(np.random.default_rng(3))
    base_loss = _loss(loss, y, predict(X), classes).mean()
    repeats = []
    for repeat in range(3):
        increase = []
        for j in range(X.shape[1]):
            rows = X.copy()
            rows[:, j] = X[keyed_permutation(seed, STREAM_HELD_OUT, repeat, j, len(X)), j]
            increase.append(_loss(loss, y, predict(rows), classes).mean() - base_loss)
        repeats.append(increase)
    ours = harness.explain("mda_test", model, X, y, seed=3, loss=loss, n_repeats=3)
    np.testing.assert_allclose(ours.values, np.mean(repeats, axis=0), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(ours.std, np.std(repeats, axis=0), rtol=1e-7, atol=1e-10)


def test_held_out_repeats_do_not_depend_on_their_blocks(classification_forest):
    """Repeats walked together (one path walk per tree) give the shifts of repeats walked one
    at a time on one thread, to the last bit, and the base output is predict_proba's."""
    model, X, _ = classification_forest
    walk = (forest_view(model).paths, as_float32_rows(X), 11)
    together, base = held_out_permutation_pass(*walk, 0, 3)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        for repeat in range(3):  # one thread; features are walked in parallel otherwise
            alone, _ = held_out_permutation_pass(*walk, repeat, 1)
            np.testing.assert_array_equal(together[repeat], alone[0])
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_allclose(base, model.predict_proba(X), rtol=0, atol=1e-12)


def test_trees_that_never_split_on_a_feature_contribute_exactly_zero(regression_forest):
    model, X, y = regression_forest
    forest = forest_view(model).packed
    increase = oob_permutation_pass(forest, as_float32_rows(X), forest_view(model).inbag.counts,
                                    y, 0, 123, False).tree_increase
    unused = 0
    for t in range(forest.n_trees):
        absent = np.setdiff1d(np.arange(X.shape[1]), forest.tree_features(t))
        assert np.all(increase[t, absent] == 0.0)
        unused += absent.size
    assert unused >= forest.n_trees  # at least the constant column in every tree
    constant = X.shape[1] - 1
    for name in ("mda_bc", "mda_ik", "mda_test", "sobol_mda"):
        assert harness.explain(name, model, X, y, seed=0).values[constant] == 0.0, name


def test_permutation_methods_share_one_permutation_source(regression_forest):
    model, X, y = regression_forest
    first = harness.explain("mda_bc", model, X, y, seed=5).values
    np.testing.assert_array_equal(first, harness.explain("mda_bc", model, X, y, seed=5).values)
    assert not np.array_equal(first, harness.explain("mda_bc", model, X, y, seed=6).values)


# ---------------------------------------------------------------- projected trees


class _ReferenceTree:
    """One tree's projected descents, keyed by Python sets of node ids."""

    def __init__(self, estimator, X32: np.ndarray) -> None:
        tree = estimator.tree_
        self.left, self.right = tree.children_left, tree.children_right
        self.feature, self.threshold, self.X32 = tree.feature, tree.threshold, X32

    def step(self, i: int, node: int) -> int:
        go_left = self.X32[i, self.feature[node]] <= self.threshold[node]
        return self.left[node] if go_left else self.right[node]

    def first_splits(self, i: int) -> dict[int, int]:
        node, seen = 0, {}
        while self.left[node] != -1:
            seen.setdefault(self.feature[node], node)
            node = self.step(i, node)
        return seen

    def levels(self, i: int, u: int, j: int):
        keys, frontier, leaves = [frozenset([u])], [u], set()
        while True:
            following = []
            for node in frontier:
                if self.left[node] == -1:
                    leaves.add(node)
                elif self.feature[node] == j:
                    following += [self.left[node], self.right[node]]
                else:
                    following.append(self.step(i, node))
            if not following:
                return keys
            keys.append(frozenset(leaves) | frozenset(following))
            frontier = following


def _reference_projected_shift(model, X, targets) -> np.ndarray:
    """Sum over OOB trees of projected minus tree output, with Python sets as cell keys."""
    counts = forest_view(model).inbag.counts
    X32 = X.astype(np.float32)
    n, p = X.shape
    shift = np.zeros((n, p, targets.shape[1]))
    for t, estimator in enumerate(model.estimators_):
        tree = _ReferenceTree(estimator, X32)
        value = _tree_output(estimator, X, hasattr(model, "classes_"))
        table = defaultdict(lambda: [0.0, 0.0])
        for i in np.flatnonzero(counts[:, t] > 0):
            for j, u in tree.first_splits(i).items():
                for key in tree.levels(i, u, j):
                    table[j, key][0] += counts[i, t]
                    table[j, key][1] = table[j, key][1] + counts[i, t] * targets[i]
        for i in np.flatnonzero(counts[:, t] == 0):
            for j, u in tree.first_splits(i).items():
                keys = tree.levels(i, u, j)
                cell = keys[0]
                for key in keys:
                    if (j, key) not in table:
                        break
                    cell = key
                mass, total = table[j, cell]
                shift[i, j] += total / mass - value[i]
    return shift


@pytest.mark.parametrize("case", ["regression", "classification"])
def test_projected_trees_equal_the_set_based_reference(case, request):
    model, X, y = request.getfixturevalue(f"{case}_forest")
    forest = forest_view(model).packed
    targets = (np.eye(3)[y] if case == "classification" else y[:, None]).astype(float)
    ours = projected_oob_shift(forest, as_float32_rows(X), forest_view(model).inbag.counts,
                               targets)
    reference = _reference_projected_shift(model, X, targets)
    np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-10)
    assert np.abs(reference).max() > 0


def test_a_tree_projected_along_a_feature_off_the_path_keeps_the_prediction():
    X, y = make_friedman1(n_samples=120, n_features=6, random_state=4)
    for seed in range(3):
        model = RandomForestRegressor(n_estimators=1, random_state=seed).fit(X, y)
        forest = forest_view(model).packed
        shift = projected_oob_shift(forest, as_float32_rows(X),
                                    forest_view(model).inbag.counts, y[:, None])[:, :, 0]
        path = model.decision_path(X.astype(np.float32))[0].toarray().astype(bool)
        tree = model.estimators_[0].tree_
        for j in range(X.shape[1]):
            meets = (path & (tree.feature == j)[None, :] & (tree.children_left >= 0)).any(1)
            assert np.all(shift[~meets, j] == 0.0)
            oob = forest_view(model).inbag.counts[:, 0] == 0
            if np.any(meets & oob):
                assert np.any(shift[meets & oob, j] != 0.0)


# ---------------------------------------------------------------- through the runner


def test_runner_gives_oob_methods_the_training_rows_and_mda_test_the_held_out_ones(tmp_path):
    summary = harness.compare(
        datasets=["linear_gaussian[n_samples=120]"],
        models=[{"forest": "random_forest", "n_estimators": 10},
                {"forest": "extra_trees", "n_estimators": 10}],
        methods=["mda_bc", "mda_ik", "sobol_mda", "mda_test"], out=tmp_path / "run",
        executor="inprocess", max_explain=20, reports=False)
    assert summary.line() == "cells: 8 total, 5 done (0 reused), 3 skipped, 0 error, 0 timeout"
    cells = harness.load_results(tmp_path / "run", kind="cells").set_index("method")
    forest = cells[cells["model_name"] == "random_forest"]
    assert forest.loc[["mda_bc", "mda_ik", "sobol_mda"], "n_explained"].tolist() == [90] * 3
    assert forest.loc["mda_test", "n_explained"] == 30
    skipped = cells[cells["status"] == "skipped"]
    assert set(skipped.index) == {"mda_bc", "mda_ik", "sobol_mda"}
    assert skipped["reason"].str.contains("bootstrap=True").all()

    # the accuracy report puts each estimate next to its own target, feature by feature
    targets = target_table(RunResults.open(tmp_path / "run"))
    truth = harness.load_dataset("linear_gaussian", n_samples=120).truth.quantities
    assert set(zip(targets["method_name"], targets["target"])) == {
        ("mda_bc", "mda_bc_limit"), ("mda_test", "mda_bc_limit"), ("mda_ik", "mda_ik_limit"),
        ("sobol_mda", "sobol_total")}
    for (_, target, _), rows in targets.groupby(["method_name", "target", "model"]):
        np.testing.assert_array_equal(rows["target_value"], truth[target].values)
        key = rows["key"].iloc[0]
        np.testing.assert_array_equal(
            rows["estimate"], RunResults.open(tmp_path / "run").arrays(key)["values"])


def test_max_samples_needs_bootstrap():
    with pytest.raises(BadInputError, match="needs bootstrap=true"):
        harness.fit_model("extra_trees[max_samples=0.5]", harness.load_dataset("iris"))


def test_binary_classification_extension_equals_the_regression_estimators():
    """With two classes, Σ_k (1[y=k] − p_k)² = 2 (y − p_1)² and Σ_k Var(1[Y=k]) = 2 Var(Y);
    a Gini classifier and a squared-error regressor on the 0/1 target grow the same trees
    from the same seed. So the Brier-based classification Sobol-MDA must equal the regression
    Sobol-MDA, and Brier MDAs must be twice the squared-error ones."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(300, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.standard_normal(300) > 0.8).astype(int)
    params = {"n_estimators": 30, "max_features": 2, "min_samples_leaf": 3, "random_state": 0}
    classifier = RandomForestClassifier(criterion="gini", **params).fit(X, y)
    regressor = RandomForestRegressor(**params).fit(X, y.astype(float))
    assert [e.tree_.node_count for e in classifier.estimators_] == [
        e.tree_.node_count for e in regressor.estimators_]
    np.testing.assert_allclose(harness.explain("sobol_mda", classifier, X, y).values,
                               harness.explain("sobol_mda", regressor, X, y * 1.0).values,
                               rtol=1e-10, atol=1e-12)
    for name in ("mda_bc", "mda_ik", "mda_test"):
        brier = harness.explain(name, classifier, X, y, seed=1, loss="brier").values
        squared = harness.explain(name, regressor, X, y * 1.0, seed=1).values
        np.testing.assert_allclose(brier, 2 * squared, rtol=1e-10, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", ["sobol_mda", "shaff"])
def test_a_share_of_var_y_is_refused_where_y_is_constant(name):
    """Sobol-MDA and SHAFF are fractions of Var(Y); with y constant on the training rows both
    would be 0/0 (Sobol-MDA returned NaN for every feature without a word)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.full(60, 2.0)
    model = RandomForestRegressor(n_estimators=5, random_state=0).fit(X, y)
    with pytest.raises(BadInputError, match=rf"{name} divides by the variance of y on the "
                                            r"rows it is given: it is 0\.0 here"):
        harness.explain(name, model, X, y)
