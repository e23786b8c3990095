"""``sutera2021-examples`` at quick scale, and Eq. 9 (Sutera et al. 2021) on forests.

The page's exact values must match the published ones within the printing tolerance of the
gallery's rule (they are exact quantities); Eq. 9 is an algebraic identity, so the gap must be
at floating-point level, and the test checks that the same computation does see a gap where the
identity does not hold (bootstrap forests averaged without their in-bag weights).
"""

from __future__ import annotations

import json

import pytest

from harness.api import load_dataset
from harness.forest.models import fit_model
from harness.oracle.local_mdi import example2_table
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
