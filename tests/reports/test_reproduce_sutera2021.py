"""The four Sutera et al. (2021) targets at quick scale: what their pages claim holds.

Quick scale is 100 trees instead of 1000 and fewer explained rows; every local importance
is then a mean over 10x fewer trees, whose Monte-Carlo noise lowers per-row correlations.
The bounds below say how much slack that is given, and why.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from harness.reports.targets.base import VERDICTS
from harness.reports.targets.sutera2021_table4 import PUBLISHED, Z_LIMIT
from tests._support.gallery_pages import cell_timestamps, page_header, page_rows, quick_gallery

NAMES = ["sutera2021-table4", "sutera2021-fig1", "sutera2021-fig2", "sutera2021-fig3"]
STORES = ["sutera2021-local-quick", "sutera2021-fig1-quick"]


def _table(page_text: str) -> pd.DataFrame:
    return pd.DataFrame(page_rows(page_text), columns=page_header(page_text))


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    return quick_gallery(tmp_path_factory.mktemp("gallery"), NAMES)


def test_pages_summaries_and_figures(gallery):
    for name in NAMES:
        summary = json.loads((gallery / f"{name}.json").read_text())
        assert summary["verdict"] in VERDICTS and summary["scale"].startswith("quick")
        assert name in (gallery / "index.md").read_text()
    for figure in ("sutera2021-table4", "sutera2021-fig1", "sutera2021-fig2",
                   "sutera2021-fig3-led", "sutera2021-fig3-digits"):
        assert (gallery / f"{figure}.png").stat().st_size > 10_000


def test_table4_shows_the_published_numbers_next_to_ours(gallery):
    table = _table((gallery / "sutera2021-table4.md").read_text())
    assert len(table) == 96  # 6 data sets x 2 methods x 2 correlations x 4 statistics
    published = PUBLISHED.melt(id_vars=["dataset", "versus", "correlation"],
                               var_name="statistic", value_name="value")
    merged = table.merge(published, on=["dataset", "versus", "correlation", "statistic"])
    assert len(merged) == 96
    assert (merged["published"].astype(float) - merged["value"]).abs().max() < 5e-3
    diff = table["ours_abs"].astype(float) - table["published"].astype(float)
    assert (diff - table["diff_abs"].astype(float)).abs().max() < 0.01  # 4 digits shown


def test_table4_mean_correlations_at_quick_scale(gallery):
    """Bounds: the paper's lowest mean Pearson is 0.881 (digits, TreeSHAP); 100 trees are
    allowed 0.08 below that, and 0.1 from each published mean Pearson. LED: the paper has
    local MDI vs TreeSHAP at 1.000 ± 0.000 (both converge to Shapley values of totally
    randomized trees on the 10-row population); 100 trees are allowed 0.01."""
    table = _table((gallery / "sutera2021-table4.md").read_text())
    numbers = ["published", "ours_abs", "ours_signed", "diff_abs", "diff_signed", "z_abs",
               "z_signed"]
    table[numbers] = table[numbers].astype(float)
    means = table[table["statistic"] == "mean"]
    pearson = means[means["correlation"] == "pearson"]
    for kind in ("abs", "signed"):
        assert pearson[f"ours_{kind}"].min() >= 0.8
        assert (pearson[f"ours_{kind}"] - pearson["published"]).abs().max() <= 0.1
    led = pearson[(pearson["dataset"] == "Led") & (pearson["versus"] == "TreeSHAP")]
    assert float(led["ours_abs"].iloc[0]) >= 0.99
    pct = table[table["statistic"].str.startswith("pct")]
    assert pct[["ours_abs", "ours_signed"]].stack().between(0, 100).all()
    # the verdict follows the stated rule, on the variant closer to the published means
    closer = min(("abs", "signed"), key=lambda kind: means[f"diff_{kind}"].abs().mean())
    text = (gallery / "sutera2021-table4.md").read_text()
    assert f"**{'Absolute' if closer == 'abs' else 'Signed'} values match better**" in text
    tested = table[table["tested"] == "yes"]
    within = (tested[f"z_{closer}"].abs() <= Z_LIMIT).all()
    verdict = json.loads((gallery / "sutera2021-table4.json").read_text())["verdict"]
    assert (verdict == "reproduced within Monte-Carlo error") == within


def test_fig1_claims_robust_at_quick_scale(gallery):
    """K = 1 nearness and the X2/X5 (the paper's 0-based X1/X4) masking are effects of
    0.04-0.08 in normalised importance, against Monte-Carlo noise of ~0.005 at 100 trees
    (checked here); 'at the expense of the others' is a near-tie for X7 in expectation, so
    it is not asserted at quick scale."""
    table = _table((gallery / "sutera2021-fig1.md").read_text())
    holds = dict(zip(table["claim"], table["holds"]))
    for claim, value in holds.items():
        if "expense" not in claim:
            assert value == "yes", claim
    values = pd.read_csv(gallery / "sutera2021-fig1.csv")
    mdi = values[values["method"] == "mdi"].groupby("k")["value"].sum()
    assert len(mdi) == 7
    # fully grown trees on the LED population: Σ_j MDI_j = I(X; Y) = log2 10 (Thm 2, 2013)
    assert (mdi - math.log2(10)).abs().max() < 1e-9
    assert values.groupby(["method", "k"])["normalised"].apply(
        lambda v: abs(v.abs().sum() - 1)).max() < 1e-12


def test_fig2_reuses_table4_cells_and_states_its_claims(gallery):
    table = _table((gallery / "sutera2021-fig2.md").read_text())
    assert len(table) == 6 and set(table["dataset"]) == {"digits", "led"}
    summary = pd.read_csv(gallery / "sutera2021-fig2.csv")
    assert (summary["min"] <= summary["mean"] + 1e-12).all()
    assert (summary["mean"] <= summary["max"] + 1e-12).all()
    # the K = 1 digits forest and its importances are Table 4's (one shared store)
    t4 = _table((gallery / "sutera2021-table4.md").read_text())
    for versus, method in (("Saabas", "saabas"), ("TreeSHAP", "treeshap")):
        ours = float(t4[(t4["dataset"] == "Digits") & (t4["versus"] == versus)
                        & (t4["correlation"] == "pearson")
                        & (t4["statistic"] == "mean")]["ours_abs"].iloc[0])
        row = summary[(summary["dataset"] == "digits") & (summary["k"] == 1)
                      & (summary["method_a"] == "local_mdi") & (summary["method_b"] == method)
                      & (summary["correlation"] == "pearson")]
        assert float(row["mean"].iloc[0]) == pytest.approx(ours, abs=1e-4)
    # the verdict counts every claim except claim 3 on LED (see the page's notes)
    counted = table[~((table["dataset"] == "led") & table["claim"].str.startswith("Saabas"))]
    verdict = json.loads((gallery / "sutera2021-fig2.json").read_text())["verdict"]
    assert (verdict == "reproduced") == (counted["holds"] == "yes").all()


def test_fig3_exact_checks(gallery):
    """Efficiency is exact for fully grown trees; local MDI of K = 1 against Thm 2 is a
    Monte-Carlo test whose ratio exceeds 2 with probability ~0.002 when Thm 2 is right."""
    table = _table((gallery / "sutera2021-fig3.md").read_text())
    holds = dict(zip(table["check"], table["holds"]))
    assert holds["LED: efficiency, Σ_m local MDI(X_m, x) = log2 10 (Eq. 12), every K"] == "yes"
    assert holds["LED, K = 1: local MDI = Thm 2 (Eq. 10) per row and segment"] == "yes"
    # Table 4 (K = 1, LED): the lowest mean Pearson between the three is 0.98
    assert holds["led, K = 1: the three measures are very similar on the drawn samples"] == "yes"


def test_rerun_reuses_every_stored_cell(gallery):
    before = {store: cell_timestamps(gallery / "runs" / store) for store in STORES}
    assert all(before.values())
    quick_gallery(gallery, NAMES)
    after = {store: cell_timestamps(gallery / "runs" / store) for store in STORES}
    assert after == before
