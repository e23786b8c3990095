"""``louppe2013-led`` at quick scale: what its page claims holds (``geurts-xor``: see
``test_reproduce_geurts.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.reports.targets.louppe2013_led import PUBLISHED
from tests._support.gallery_pages import (
    cell_timestamps,
    page_records,
    quick_gallery,
)


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    return quick_gallery(tmp_path_factory.mktemp("gallery"), ["louppe2013-led"])


def _led_records(gallery) -> list[dict[str, str]]:
    return page_records((gallery / "louppe2013-led.md").read_text())


def test_led_page_thm1_column_is_the_truncated_exact_value(gallery):
    thm1 = [row for row in _led_records(gallery)
            if row["column"] == "Thm1" and row["variable"] != "Σ"]
    assert len(thm1) == 7
    for row in thm1:
        published, exact = float(row["published"]), float(row["exact_paper_rule"])
        assert published == math.floor(exact * 1000) / 1000  # truncated, not rounded
        assert row["verdict"] == "reproduced"


def test_led_page_paper_rule_matches_every_published_column(gallery):
    """The exact paper-rule values are computed, not sampled; the published K columns are
    Monte-Carlo averages: every one lies within the rule's tolerance (printing unit plus
    z*·SE, the SE from the paper-rule trees' spread at the estimated tree count)."""
    records = _led_records(gallery)
    by_k = [row for row in records if row["column"] != "Thm1" and row["variable"] != "Σ"]
    assert len(by_k) == 49
    for row in by_k:
        assert float(row["published"]) == PUBLISHED.loc[row["variable"], int(row["column"])]
        assert row["verdict"] != "deviates", row
    sums = [row for row in records if row["variable"] == "Σ"]
    assert len(sums) == 8
    for row in sums:  # Thm 2: every column sums to log2 10, printed truncated
        assert float(row["exact_paper_rule"]) == pytest.approx(math.log2(10), abs=5e-4)
    text = (gallery / "louppe2013-led.md").read_text()
    assert "**Verdict: reproduced within Monte-Carlo error.**" in text
    assert "K=7: 3.321928" in text  # Σ MDI = log2 10 for the fully grown forests


def test_led_forests_agree_with_their_exact_rules(gallery):
    """scikit-learn forests against the exact sklearn rule, paper-rule forests against the
    exact paper rule: χ²/dof over 49 terms; P(χ²₄₉/49 > 2) < 1e-4 when the oracle is right."""
    by_k = [row for row in _led_records(gallery)
            if row["column"] != "Thm1" and row["variable"] != "Σ"]
    for forest, exact, se in (("sklearn_forest", "exact_sklearn_rule", "sklearn_forest_se"),
                              ("paper_forest", "exact_paper_rule", "paper_forest_se")):
        z = np.array([(float(r[forest]) - float(r[exact])) / float(r[se]) for r in by_k])
        assert np.mean(z**2) < 2, forest


def test_rerun_reuses_every_stored_cell(gallery):
    store = gallery / "runs" / "louppe2013-led-quick"
    created = cell_timestamps(store)
    quick_gallery(gallery, ["louppe2013-led"])
    assert cell_timestamps(store) == created
