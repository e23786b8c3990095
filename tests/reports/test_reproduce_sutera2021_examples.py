"""``sutera2021-examples`` at quick scale, and Eq. 9 (Sutera et al. 2021) on forests.

The page's exact values must match the published ones within the printing tolerance of the
gallery's rule (they are exact quantities); Eq. 9 is an algebraic identity, so the gap must be
at floating-point level, and the test checks that the same computation does see a gap where the
identity does not hold (bootstrap forests averaged without their in-bag weights).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestRegressor

from harness.api import load_dataset
from harness.core.errors import BadInputError
from harness.forest.models import fit_model
from harness.forest.view import forest_view
from harness.oracle.local_mdi import example2_table
from harness.reports.targets._eq9 import eq9_gaps, per_tree_weighted_local
from harness.reports.targets.published import by_target
from harness.reports.targets.sutera2021_examples import eq9_gap, table_dataset
from harness.reports.targets.verdict import REPRODUCED, WITHIN_MC
from tests._support.gallery_pages import page_records, quick_gallery

NAME = "sutera2021-examples"
EXPECTED = {"sutera.table1", "sutera.table2", "sutera.eq9", "sutera.appendix-f",
            "sutera.shapley", "sutera.local-irrelevance"}


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    return quick_gallery(tmp_path_factory.mktemp("gallery"), [NAME])


def test_page_judges_exactly_its_catalogue_results(gallery):
    assert {r.key for r in by_target()[NAME]} == EXPECTED
    summary = json.loads((gallery / f"{NAME}.json").read_text())
    assert set(summary["results"]) == EXPECTED
    assert summary["assumptions"]
    assert (gallery / f"{NAME}.png").stat().st_size > 10_000
    assert (gallery / f"{NAME}-eq9.csv").exists()


def test_exact_values_are_the_published_ones(gallery):
    records = page_records((gallery / f"{NAME}.md").read_text())
    exact = [r for r in records if "exact" in r["label"] and r["published"]]
    assert len(exact) >= 8 + 8 + 6  # Table 1 CMI, K = 2 (two rules), Table 2
    for record in exact:
        gap = abs(float(record["ours"]) - float(record["published"]))
        assert gap <= float(record["printing_tolerance"]) + 1e-12, record["label"]
        assert record["verdict"] == REPRODUCED
    population = [r for r in records if "forest on the population" in r["label"]]
    assert population and all(r["verdict"] == REPRODUCED for r in population)


def test_claims_and_verdicts(gallery):
    records = page_records((gallery / f"{NAME}.md").read_text())
    claims = [r for r in records if r["measured"]]
    assert any("violates strong monotonicity for X1" in r["label"] for r in claims)
    assert all(r["verdict"] == REPRODUCED for r in claims), [
        r["label"] for r in claims if r["verdict"] != REPRODUCED]
    summary = json.loads((gallery / f"{NAME}.json").read_text())
    assert summary["results"]["sutera.eq9"] == REPRODUCED
    assert summary["verdict"] in (REPRODUCED, WITHIN_MC)


def test_eq9_identity_and_that_the_check_can_fail():
    data = load_dataset("iris", seed=0)
    spec = ("extra_trees[n_estimators=20,max_features=2,criterion=entropy,bootstrap=false,"
            "test_size=0.05]")
    gap, scale = eq9_gap(fit_model(spec, data, seed=0), data)
    assert scale > 0.1 and gap < 1e-12
    # with bootstrap the learning set of a tree is its in-bag sample: the plain mean over the
    # training rows is not the global MDI, and the same measurement shows it
    boot = spec.replace("bootstrap=false", "bootstrap=true")
    gap_boot, _ = eq9_gap(fit_model(boot, data, seed=0), data)
    assert gap_boot > 1e-3


def test_eq9_on_a_population_uses_its_weights():
    """Table 2's support rows: x = 0 twice (y = 0, 1), x = 1 once, P(X1 = 0) = 1/2. An
    unweighted mean over the 3 rows would give x = 0 the weight 2/3 and miss Eq. 9."""
    data = table_dataset("table2", *example2_table())
    spec = "extra_trees[n_estimators=10,max_features=1,criterion=entropy,bootstrap=false]"
    gap, scale = eq9_gap(fit_model(spec, data, seed=1), data)
    assert scale > 0.05 and gap < 1e-12


def _sklearn_tree_local_mdi(tree, X) -> np.ndarray:
    """Local MDI of one scikit-learn tree (Eq. 8) from its own ``decision_path`` and node
    impurities: the oracle the NumPy reference of the page is checked against."""
    inner = tree.tree_
    path = tree.decision_path(X.astype(np.float32)).toarray().astype(bool)
    parent = np.full(inner.node_count, -1)
    internal = np.flatnonzero(inner.children_left >= 0)
    parent[inner.children_left[internal]] = internal
    parent[inner.children_right[internal]] = internal
    local = np.zeros((len(X), X.shape[1]))
    for node in np.flatnonzero(parent >= 0):
        up = parent[node]
        local[path[:, node], inner.feature[up]] += inner.impurity[up] - inner.impurity[node]
    return local


@pytest.mark.parametrize("max_samples", [None, 0.5])
def test_weighted_eq9_holds_on_a_bootstrap_forest_and_the_plain_mean_does_not(max_samples):
    """Each bootstrap tree's impurities are those of its in-bag sample: Eq. 9 holds per tree
    with the in-bag counts as weights (against scikit-learn's own per-tree MDI and its own
    decision paths), and the plain mean over the training rows misses it."""
    data = load_dataset("friedman1", seed=0, n_samples=300)
    model = RandomForestRegressor(n_estimators=15, max_features=0.5, max_samples=max_samples,
                                  random_state=0).fit(data.X, data.y)
    view = forest_view(model)
    per_tree = per_tree_weighted_local(view.packed, view.apply(data.X),
                                       view.inbag.counts.astype(float))
    for t, (tree, drawn) in enumerate(zip(model.estimators_, model.estimators_samples_,
                                          strict=True)):
        counts = np.bincount(drawn, minlength=len(data.X))
        oracle = counts @ _sklearn_tree_local_mdi(tree, data.X) / counts.sum()
        mdi = tree.tree_.compute_feature_importances(normalize=False)
        np.testing.assert_allclose(oracle, mdi, rtol=0, atol=1e-12)  # Eq. 9, one tree
        np.testing.assert_allclose(per_tree[t], oracle, rtol=0, atol=1e-12)
    gaps = eq9_gaps(model, data.X, data.y)
    assert gaps.scale > 1.0
    assert gaps.weighted < 1e-12 and gaps.kernel < 1e-12
    assert gaps.unweighted > 1e-3 * gaps.scale  # not an identity with bootstrap


def test_eq9_gaps_on_a_population_and_a_refused_weighted_bootstrap():
    data = table_dataset("table2", *example2_table())
    spec = "extra_trees[n_estimators=10,max_features=1,criterion=entropy,bootstrap=false]"
    model = fit_model(spec, data, seed=1)
    gaps = eq9_gaps(model, data.X, data.y, data.sample_weight)
    assert gaps.scale > 0.05 and max(gaps.weighted, gaps.unweighted, gaps.kernel) < 1e-12
    # equal row weights instead of the probabilities miss Eq. 9 (x = 0 weighted 2/3)
    assert eq9_gaps(model, data.X, data.y).weighted > 1e-3
    boot = fit_model(spec.replace("bootstrap=false", "bootstrap=true"), data, seed=1)
    with pytest.raises(BadInputError, match="sample weights"):
        eq9_gaps(boot, data.X, data.y, data.sample_weight)


def test_eq9_table_covers_the_gallery_forests(gallery):
    table = pd.read_csv(gallery / f"{NAME}-eq9.csv")
    pages = " ".join(table["pages"])
    for page in ("louppe2013-led", "louppe2013-theorems", "geurts-masking", "geurts-xor",
                 "geurts2016-srs", "scornet-mdi-bias", "scornet-mda", "benard2022-sobol-mda",
                 "benard2022-shaff", "sutera2021"):
        assert page in pages, page
    assert table["bootstrap"].any() and (~table["bootstrap"]).any()
    bound = 1e-9 * np.maximum(1.0, table["largest_mdi"])
    assert (table["weighted_gap"] <= bound).all() and (table["kernel_gap"] <= bound).all()
    assert (table.loc[table["bootstrap"], "unweighted_gap"] > 1e-6).all()
