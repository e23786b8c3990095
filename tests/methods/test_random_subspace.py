"""RS and SRS: scikit-learn's own forests as the oracle, α = 0 as RS, the madelon design."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.ensemble import ExtraTreesClassifier, ExtraTreesRegressor

import harness
from harness.api import load_dataset
from harness.estimators.random_subspace import (
    SubspaceResult,
    SubspaceSettings,
    grow_subspace_trees,
    grow_with_curve,
    predict_subspace,
    qualifies,
)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_rs_with_q_equal_p_grows_scikit_learns_extra_trees(task):
    X, y = make_friedman1(n_samples=200, n_features=7, noise=0.5, random_state=0)
    if task == "classification":
        y = (y > np.median(y)).astype(int)
        forest = ExtraTreesClassifier(n_estimators=25, max_features=3, criterion="entropy",
                                      random_state=11).fit(X, y)
    else:
        forest = ExtraTreesRegressor(n_estimators=25, max_features=3, random_state=11).fit(X, y)
    settings = SubspaceSettings(n_trees=25, q=7, max_features=3, probe=False,
                                criterion=forest.criterion)
    result = grow_subspace_trees(X, y, task == "classification", settings, seed=11,
                                 keep_trees=True)
    expected = np.mean([tree.tree_.compute_feature_importances(normalize=False)
                        for tree in forest.estimators_], axis=0)
    np.testing.assert_allclose(result.importances, expected, rtol=0, atol=1e-12)
    reference = forest.predict_proba(X) if task == "classification" else forest.predict(X)
    np.testing.assert_allclose(predict_subspace(result, X, task == "classification"),
                               reference, rtol=0, atol=1e-12)


def test_srs_with_alpha_zero_is_rs_draw_for_draw():
    dataset = load_dataset("madelon_like", seed=0, n_samples=300, n_irrelevant=40)
    model = ExtraTreesClassifier(5, random_state=0).fit(dataset.X, dataset.y)
    common = dict(n_trees=40, q=10, seed=4)
    rs = harness.explain("rs", model, dataset.X, dataset.y, **common)
    srs = harness.explain("srs", model, dataset.X, dataset.y, alpha=0.0, **common)
    np.testing.assert_array_equal(rs.values, srs.values)
    assert rs.extra["selected"] == srs.extra["selected"]
    seeded = harness.explain("srs", model, dataset.X, dataset.y, alpha=0.5, **common)
    assert not np.array_equal(seeded.values, rs.values)


def test_srs_reuses_what_it_found_and_predicts_better_when_q_over_p_is_small():
    """Madelon-like, p = 1000 (20 relevant), q = 20, 300 trees, 600 learning rows: SRS draws
    the relevant features it found far more often than RS's q/p × T = 6 and predicts
    better (F may also hold irrelevant features that passed the probe rule by chance)."""
    dataset = load_dataset("madelon_like", seed=1, n_samples=900, n_irrelevant=980)
    learn, test = slice(0, 600), slice(600, None)
    scores = {}
    for alpha in (0.0, 0.5):
        settings = SubspaceSettings(n_trees=300, q=20, alpha=alpha)
        result = grow_subspace_trees(dataset.X[learn], dataset.y[learn], True, settings,
                                     seed=1, keep_trees=True)
        predicted = predict_subspace(result, dataset.X[test], True).argmax(axis=1)
        scores[alpha] = np.mean(predicted == dataset.y[test])
        if alpha > 0:
            found = result.selected & dataset.truth.relevant
            assert found.any()
            assert result.sampled[found].min() > 3 * 300 * 20 / 1000
    assert scores[0.5] > scores[0.0] + 0.05, scores


def test_madelon_like_design():
    dataset = load_dataset("madelon_like", seed=1, n_samples=500, n_irrelevant=30)
    X = dataset.X
    assert X.shape == (500, 50) and dataset.truth.relevant.sum() == 20
    assert dataset.truth.relevant[:20].all()
    first_ten = np.corrcoef(X[:, :20].T)[10:, :10]  # each copy follows one of the first ten
    assert np.all(np.abs(first_ten).max(axis=1) > 0.95)
    rank = np.linalg.matrix_rank(X[:, :10], tol=1e-8)
    assert rank == 5  # five informative features and five exact linear combinations
    noise = np.abs(np.corrcoef(np.column_stack([X[:, 20:], dataset.y]).T)[-1, :-1])
    assert noise.max() < 0.2


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_the_growth_curve_scores_the_trees_so_far_on_rows_they_never_saw(task):
    """seed 004's curves: the trees grown on the other rows equal those grown on those rows
    alone; every snapshot is the mean MDI of the trees so far (the last one the result);
    the held-out score is that of the kept trees' prediction, by an independent path."""
    X, y = make_friedman1(n_samples=240, n_features=9, noise=0.5, random_state=3)
    classification = task == "classification"
    if classification:
        y = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    held_out = np.arange(0, 240, 4)
    learn = np.setdiff1d(np.arange(240), held_out)
    settings = SubspaceSettings(n_trees=30, q=4, probe=False)
    result, curve = grow_with_curve(X, y, classification, settings, seed=5, step=7,
                                    held_out=held_out)
    alone = grow_subspace_trees(X[learn], y[learn], classification, settings, seed=5,
                                keep_trees=True)
    np.testing.assert_array_equal(result.importances, alone.importances)
    assert curve.n_trees == [7, 14, 21, 28, 30]
    np.testing.assert_allclose(curve.importances[-1], alone.importances, rtol=1e-12)
    prediction = predict_subspace(alone, X[held_out], classification)
    if classification:
        expected = np.mean(np.unique(y[learn])[prediction.argmax(axis=1)] == y[held_out])
    else:
        truth = y[held_out]
        expected = 1 - np.sum((truth - prediction) ** 2) / np.sum((truth - truth.mean()) ** 2)
    assert curve.held_out_score[-1] == pytest.approx(expected, abs=1e-12)
    assert 0 < curve.held_out_score[-1] <= 1


def test_rs_records_its_curve_through_explain_and_leaves_its_values_unchanged_without_it():
    ds = load_dataset("madelon_like", n_irrelevant=30, n_samples=300, seed=0)
    model = harness.fit_model({"forest": "extra_trees", "n_estimators": 1}, ds, seed=0)
    train = model.harness_fit_["train_index"]
    X, y = ds.X[train], ds.y[train]
    plain = harness.explain("rs", model, X, y, seed=1, n_trees=40, q=10)
    again = harness.explain("rs", model, X, y, seed=1, n_trees=40, q=10, curve_step=10)
    np.testing.assert_array_equal(plain.values, again.values)
    np.testing.assert_allclose(again.extra["curve"]["importances"][-1], again.values,
                               rtol=1e-12)
    assert again.extra["curve"]["n_trees"] == [10, 20, 30, 40]
    assert "curve" not in plain.extra
    held = harness.explain("rs", model, X, y, seed=1, n_trees=40, q=10, hold_out=0.25,
                           curve_step=20)
    assert held.extra["n_held_out"] == round(0.25 * len(y))
    assert all(0 < s <= 1 for s in held.extra["curve"]["held_out_score"])
    with pytest.raises(harness.BadInputError, match="hold_out must leave rows"):
        harness.explain("rs", model, X, y, seed=1, n_trees=5, hold_out=len(y))


def _result(sampled, beat):
    p = len(sampled)
    return SubspaceResult(np.zeros(p), np.zeros(p, dtype=bool), np.asarray(sampled),
                          np.asarray(beat))


def test_the_probe_rule_needs_more_than_l_draws_and_a_share_of_beta():
    """seed 004, 'Practical implementation': sampled *more than* L times, ahead of the probe
    in at least β of the trees."""
    settings = SubspaceSettings(n_trees=1, q=1, min_sampled=5, beta=0.95)
    result = _result([5, 6, 20, 20, 40], [5, 6, 19, 18, 38])
    # 5 draws is not more than L = 5; 19/20 = 0.95 passes, 18/20 does not; 38/40 passes
    np.testing.assert_array_equal(qualifies(result, settings, np.zeros(5, dtype=bool)),
                                  [False, True, True, False, True])


def test_update_rule_bad_value_is_refused():
    with pytest.raises(harness.InvalidParameterError, match="update must be one of"):
        SubspaceSettings(n_trees=1, q=1, update="sometimes")


@pytest.mark.parametrize("update", ["add", "recompute"])
def test_f_only_grows_under_the_slides_rule_and_follows_the_rule_otherwise(update):
    """Step 2.3 of the slides' SRS adds to F: F never loses a feature; 'recompute' makes F
    exactly the features that qualify after each tree."""
    dataset = load_dataset("madelon_like", seed=2, n_samples=300, n_irrelevant=60)
    settings = SubspaceSettings(n_trees=120, q=10, alpha=0.5, update=update)
    history, rule = [], []

    def record(t, result, grown):
        history.append(result.selected.copy())
        share = result.beat_probe / np.maximum(result.sampled, 1)
        rule.append((result.sampled > settings.min_sampled) & (share >= settings.beta))

    grow_subspace_trees(dataset.X, dataset.y, True, settings, seed=2, on_tree=record)
    history, rule = np.array(history), np.array(rule)
    if update == "add":
        assert np.all(history[1:] >= history[:-1])  # nothing ever leaves F
        np.testing.assert_array_equal(history, np.logical_or.accumulate(rule, axis=0))
    else:
        np.testing.assert_array_equal(history, rule)
        assert np.any(history[:-1] & ~history[1:])  # here some feature does leave F


def test_srs_with_the_slides_rule_keeps_more_relevant_features_than_the_earlier_rule():
    """The set-up problem of issue 20: with F recomputed after every tree SRS kept 1-2
    features. Over four seeds (p = 300, q = 20, 300 trees), the slides' 'add to F' rule keeps
    more relevant features; the mean gain must exceed two standard errors of the seeds."""
    gains = []
    for seed in range(4):
        dataset = load_dataset("madelon_like", seed=seed, n_samples=600, n_irrelevant=280)
        found = {}
        for update in ("add", "recompute"):
            settings = SubspaceSettings(n_trees=300, q=20, alpha=0.5, update=update)
            result = grow_subspace_trees(dataset.X, dataset.y, True, settings, seed=seed)
            found[update] = int(result.selected[dataset.truth.relevant].sum())
        gains.append(found["add"] - found["recompute"])
    gains = np.asarray(gains, dtype=float)
    assert gains.mean() > 2 * gains.std(ddof=1) / np.sqrt(len(gains)), gains


def test_importance_per_draw_divides_by_the_trees_that_drew_each_feature():
    X, y = make_friedman1(n_samples=150, n_features=12, noise=0.5, random_state=1)
    settings = SubspaceSettings(n_trees=30, q=4, probe=False)
    result = grow_subspace_trees(X, y, False, settings, seed=3, keep_trees=True)
    totals, draws = np.zeros(12), np.zeros(12)
    for columns, _, tree in result.trees:
        totals[columns] += tree.tree_.compute_feature_importances(normalize=False)
        draws[columns] += 1
    expected = np.divide(totals, draws, out=np.zeros(12), where=draws > 0)
    np.testing.assert_allclose(result.importance_per_draw, expected, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(result.sampled, draws)


@pytest.fixture(scope="module")
def xor_table():
    ds = load_dataset("xor")  # the 8 rows with their probabilities (eps = 0.05)
    model = ExtraTreesClassifier(10, criterion="entropy", random_state=0).fit(
        ds.X, ds.y, sample_weight=ds.sample_weight)
    return ds, model


def test_rs_on_an_explicit_distribution_gives_louppes_thm1(xor_table):
    # K = 1 and q = p: totally randomized trees grown on the XOR distribution itself, whose
    # mean MDI is Thm 1 (Louppe et al. 2013): 0.262, 0.262, 0.476 bits (Geurts's example).
    # A tree's MDI of a feature has sd at most 0.32 here (measured over 3000 trees), so the
    # mean of 3000 has a standard error under 0.0058; 0.025 is 4.3 of them.
    ds, model = xor_table
    thm1 = ds.truth.quantities["thm1"].values
    weighted = harness.explain("rs", model, ds.X, ds.y, sample_weight=ds.sample_weight,
                               seed=0, n_trees=3000, q=1.0, max_features=1, probe=False)
    np.testing.assert_allclose(weighted.values, thm1, atol=0.025)
    # the same rows as equally likely are another distribution, where X3 is independent of Y
    uniform = harness.explain("rs", model, ds.X, ds.y, seed=0, n_trees=3000, q=1.0,
                              max_features=1, probe=False)
    assert uniform.values[2] == 0.0 and abs(weighted.values[2] - thm1[2]) < 0.025


@pytest.mark.parametrize("name", ["rs", "srs"])
def test_equal_weights_grow_the_unweighted_trees_and_held_out_rows_are_refused(name,
                                                                              xor_table):
    ds, model = xor_table
    plain = harness.explain(name, model, ds.X, ds.y, seed=4, n_trees=60)
    equal = harness.explain(name, model, ds.X, ds.y, sample_weight=np.full(8, 0.3), seed=4,
                            n_trees=60)
    np.testing.assert_array_equal(equal.values, plain.values)
    assert equal.extra["selected"] == plain.extra["selected"]
    with pytest.raises(harness.MethodSkipped, match="hold_out=2 would take part"):
        harness.explain(name, model, ds.X, ds.y, sample_weight=ds.sample_weight, hold_out=2)
