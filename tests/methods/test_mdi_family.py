"""Invariants of global and local MDI (Louppe 2013 Eq. 1; Sutera 2021 Eq. 8-9)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesClassifier
from sklearn.ensemble._forest import _generate_sample_indices, _get_n_samples_bootstrap

import harness
from harness.forest.flat import path_accumulate
from harness.forest.view import forest_view


def _scale(model) -> float:
    """Tolerances are 1e-12 in units of the root impurity (variance can be ~1e4)."""
    return max(1.0, float(np.mean([t.tree_.impurity[0] for t in model.estimators_])))


def test_local_mdi_averages_to_global_mdi_without_bootstrap(forest_without_bootstrap):
    model, X = forest_without_bootstrap
    local = harness.explain("local_mdi", model, X).values
    global_ = harness.explain("mdi", model, X).values
    np.testing.assert_allclose(local.mean(axis=0), global_, rtol=0, atol=1e-12 * _scale(model))


def test_global_mdi_matches_sklearn_per_tree_unnormalised(forest_without_bootstrap):
    model, X = forest_without_bootstrap
    expected = np.mean([t.tree_.compute_feature_importances(normalize=False)
                        for t in model.estimators_], axis=0)
    np.testing.assert_allclose(harness.explain("mdi", model, X).values, expected,
                               atol=1e-12 * _scale(model))


def test_normalised_mdi_is_sklearn_feature_importances(forest_without_bootstrap):
    model, X = forest_without_bootstrap
    values = harness.explain("mdi", model, X, normalize=True).values
    np.testing.assert_allclose(values, model.feature_importances_, atol=1e-12)


def _in_bag_counts(model, n_samples):
    """Per-tree bootstrap counts, rebuilt from scikit-learn's own (private) sampler.

    scikit-learn >= 1.8 added a ``sample_weight`` argument to both private helpers.
    """
    try:
        n_boot = _get_n_samples_bootstrap(n_samples, model.max_samples, None)
        draw = lambda state: _generate_sample_indices(state, n_samples, n_boot, None)  # noqa: E731
    except TypeError:
        n_boot = _get_n_samples_bootstrap(n_samples, model.max_samples)
        draw = lambda state: _generate_sample_indices(state, n_samples, n_boot)  # noqa: E731
    return np.stack([np.bincount(draw(t.random_state), minlength=n_samples)
                     for t in model.estimators_], axis=1)


def test_in_bag_weighted_local_mdi_equals_global_mdi_with_bootstrap(bootstrap_forests):
    for model, X in bootstrap_forests:
        counts = _in_bag_counts(model, X.shape[0])
        leaves = model.apply(X.astype(np.float32))
        p = X.shape[1]
        per_tree = []
        for t, tree in enumerate(forest_view(model).trees):
            local_t = path_accumulate(tree, tree.impurity, p, sign=-1.0)[leaves[:, t]]
            per_tree.append(counts[:, t] @ local_t / counts[:, t].sum())
        global_ = harness.explain("mdi", model, X).values
        np.testing.assert_allclose(np.mean(per_tree, axis=0), global_,
                                   atol=1e-12 * _scale(model))
        # and the unweighted mean is NOT the global MDI in general: the weights matter
        plain = harness.explain("local_mdi", model, X).values.mean(axis=0)
        assert np.abs(plain - global_).max() > 1e-6


def test_local_mdi_sums_to_root_minus_leaf_impurity(forest_without_bootstrap):
    model, X = forest_without_bootstrap
    local = harness.explain("local_mdi", model, X).values
    leaves = model.apply(X.astype(np.float32))
    drop = np.mean([t.tree_.impurity[0] - t.tree_.impurity[leaves[:, k]]
                    for k, t in enumerate(model.estimators_)], axis=0)
    np.testing.assert_allclose(local.sum(axis=1), drop, atol=1e-12 * _scale(model))


def test_mdi_unit_is_bits_for_entropy(iris):
    model = ExtraTreesClassifier(5, criterion="entropy", random_state=0).fit(*iris)
    assert harness.explain("mdi", model, iris[0]).unit == "bits"
    assert harness.explain("local_mdi", model, iris[0]).unit == "bits"


def test_totally_randomized_trees_on_led_reach_thm1():
    """K = 1, entropy, fully grown ExtraTrees on the 10 LED rows: MDI -> Louppe Thm 1.

    Tolerance: 4 standard errors of the mean over trees (the method's own ``std``) plus
    1e-12; the sum is log2(10) exactly because every tree ends in pure leaves.
    """
    ds = harness.load_dataset("led")
    model = harness.fit_model({"forest": "extra_trees", "n_estimators": 3000, "max_features": 1,
                               "bootstrap": False}, ds, seed=0)
    imp = harness.explain("mdi", model, ds.X)
    thm1 = ds.truth.quantities["thm1"].values
    assert imp.unit == "bits"
    assert abs(imp.values.sum() - np.log2(10)) < 1e-12
    assert np.all(np.abs(imp.values - thm1) <= 4 * imp.std + 1e-12), (imp.values, thm1, imp.std)
    # the Monte-Carlo error is small enough for the check to mean something
    assert imp.std.max() < 0.01


@pytest.mark.parametrize("name", ["xor"])
def test_totally_randomized_trees_on_weighted_population(name):
    """The XOR rows carry unequal probabilities (sample weights): MDI still -> Thm 1."""
    ds = harness.load_dataset(name)
    model = harness.fit_model({"forest": "extra_trees", "n_estimators": 3000, "max_features": 1,
                               "bootstrap": False}, ds, seed=0)
    imp = harness.explain("mdi", model, ds.X)
    thm1 = ds.truth.quantities["thm1"].values
    assert np.all(np.abs(imp.values - thm1) <= 4 * imp.std + 1e-12), (imp.values, thm1)


def test_local_mdi_of_totally_randomized_trees_reaches_sutera_thm2():
    """Per LED row, local MDI -> Sutera 2021 Thm 2 (Eq. 10), within 4 standard errors.

    The standard error of each entry is the spread over trees of the per-tree local MDI
    divided by sqrt(n_trees); each row's vector also sums to H(Y) - H(Y|x) = log2 10 exactly.
    """
    ds = harness.load_dataset("led")
    model = harness.fit_model({"forest": "extra_trees", "n_estimators": 2000, "max_features": 1,
                               "bootstrap": False}, ds, seed=1)
    leaves = model.apply(ds.X.astype(np.float32))
    per_tree = np.stack([
        path_accumulate(tree, tree.impurity, ds.n_features, sign=-1.0)[leaves[:, t]]
        for t, tree in enumerate(forest_view(model).trees)
    ])
    stderr = per_tree.std(axis=0, ddof=1) / np.sqrt(per_tree.shape[0])
    local = harness.explain("local_mdi", model, ds.X).values
    np.testing.assert_allclose(local, per_tree.mean(axis=0), atol=1e-12)
    thm2 = ds.truth.quantities["thm2_local"].values
    assert np.all(np.abs(local - thm2) <= 4 * stderr + 1e-12)
    np.testing.assert_allclose(local.sum(axis=1), np.log2(10), atol=1e-12)
    assert stderr.max() < 0.03  # the check has power: errors of 0.1 bit would show
