"""``louppe2013-theorems`` at quick scale, and its exact helpers against independent oracles.

Oracles: the worked example's entropies (seed 000: 0.97, 0.65, 0.81 for 20 → 12 + 8), Thm 1
computed directly over every subset (:meth:`DiscreteDistribution.thm1`), the combinatorial
identity behind seed 001's bound, and the theorems' own statements.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.datasets.led import led_population
from harness.oracle.finite_table import DiscreteDistribution
from harness.reports.targets.louppe2013_theorems import (
    binary_entropy,
    delta_i,
    example_class_counts,
    thm1_with_irrelevant_bits,
    tree_by_tree_mdi,
)
from tests._support.gallery_pages import page_records, quick_gallery


def test_worked_example_counts_and_delta():
    """The printed entropies pin the two-class counts; Δi follows from Eq. of seed 000."""
    counts = example_class_counts()
    assert set(counts) == {(2, 6), (10, 2)}
    for a_left, a_right in counts:
        assert binary_entropy(a_left + a_right, 20) == pytest.approx(0.971, abs=1e-3)
        # Δi = H(0.4) − 0.6 H(1/6) − 0.4 H(1/4), written out independently of delta_i
        h = lambda q: -q * math.log2(q) - (1 - q) * math.log2(1 - q)  # noqa: E731
        assert delta_i(a_left, a_right) == pytest.approx(h(0.4) - 0.6 * h(1 / 6) - 0.4 * h(0.25))
    assert math.floor(delta_i(2, 6) * 100) / 100 == 0.25  # printed truncated


@pytest.mark.parametrize("q", [1, 2])
def test_exchangeable_thm1_equals_the_direct_sum(q):
    """Thm 1 on LED + q bits by the exchangeable-bits sum = the direct sum over all subsets."""
    direct = DiscreteDistribution(*led_population(0.0, q)).thm1()
    np.testing.assert_allclose(thm1_with_irrelevant_bits(q), direct, rtol=0, atol=1e-12)


def test_thm3_and_thm5_with_ten_bits():
    """LED + 10 bits (the page runs 17 at full scale, 8 at quick scale; 10 keeps this test
    short): bits get 0 and the segments keep their 7-variable values."""
    values = thm1_with_irrelevant_bits(10)
    seven = DiscreteDistribution(*led_population(0.0)).thm1()
    assert np.abs(values[7:]).max() < 1e-12
    np.testing.assert_allclose(values[:7], seven, rtol=0, atol=1e-12)


def test_trees_grown_one_at_a_time_on_the_population():
    """Each fully grown K = 1 tree on the population of LED + 6 bits gives every bit exactly 0
    (Thm 3), sums to I(X; Y) = log2 10 (Thm 2), and reports the harness's ``mdi``; the trees
    differ (the seeds reach the workers)."""
    per_tree, harness_gap = tree_by_tree_mdi(6, 4, jobs=2)
    assert per_tree.shape == (4, 13)
    assert np.abs(per_tree[:, 7:]).max() < 1e-12
    np.testing.assert_allclose(per_tree.sum(axis=1), math.log2(10), rtol=0, atol=1e-12)
    assert np.ptp(per_tree[:, :7], axis=0).max() > 0.01
    assert harness_gap < 1e-12


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    return quick_gallery(tmp_path_factory.mktemp("gallery"), ["louppe2013-theorems"])


def test_theorems_page(gallery):
    text = (gallery / "louppe2013-theorems.md").read_text()
    assert "**Verdict: reproduced" in text
    records = {row["key"]: row for row in page_records(text) if row["label"].startswith("claim")}
    assert set(records) == {"louppe.thm1-branches", "louppe.thm2", "louppe.thm3",
                            "louppe.thm5", "louppe.degrees", "louppe.degree-bound",
                            "louppe.rf-masking"}
    assert all(row["verdict"] == "reproduced" for row in records.values())
    assert "every one with I(X_m; Y | B) > 0 (420); at K = 7 only 50" in text
    assert (gallery / "louppe2013-theorems-degrees.png").exists()
