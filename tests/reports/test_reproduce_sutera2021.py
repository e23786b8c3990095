"""The four Sutera et al. (2021) figure/table targets at quick scale: what their pages claim
holds, and that their verdicts follow the gallery's rule (reports/targets/verdict.py).

Quick scale is 100 trees instead of 1000 and fewer explained rows; every local importance
is then a mean over 10x fewer trees, whose Monte-Carlo noise lowers per-row correlations.
The bounds below say how much slack that is given, and why.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from harness.api import load_dataset
from harness.forest.models import fit_model
from harness.reports.targets._sutera import combine_readings, forest
from harness.reports.targets.base import VERDICTS
from harness.reports.targets.sutera2021_fig1 import binary_lookup
from harness.reports.targets.sutera2021_table4 import ERRATA, PUBLISHED, label_column
from harness.reports.targets.verdict import (
    DEVIATES,
    REPRODUCED,
    UNDETERMINED,
    WITHIN_MC,
    page_verdict,
)
from tests._support.gallery_pages import cell_timestamps, page_header, page_rows, quick_gallery

NAMES = ["sutera2021-table4", "sutera2021-fig1", "sutera2021-fig2", "sutera2021-fig3"]
STORES = ["sutera2021-local-quick", "sutera2021-fig1-quick"]
RESULTS = {"sutera2021-table4": {"sutera.table4", "sutera.fig7", "sutera.table3"},
           "sutera2021-fig1": {"sutera.fig1", "sutera.fig4"},
           "sutera2021-fig2": {"sutera.fig2"}, "sutera2021-fig3": {"sutera.fig3"}}


def _table(page_text: str) -> pd.DataFrame:
    return pd.DataFrame(page_rows(page_text), columns=page_header(page_text))


def _summary(gallery, name: str) -> dict:
    return json.loads((gallery / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    return quick_gallery(tmp_path_factory.mktemp("gallery"), NAMES)


def test_pages_summaries_and_figures(gallery):
    for name in NAMES:
        summary = _summary(gallery, name)
        assert summary["verdict"] in VERDICTS and summary["scale"].startswith("quick")
        assert set(summary["results"]) == RESULTS[name]
        assert summary["verdict"] == page_verdict(summary["results"].values())
        assert summary["assumptions"], name
        assert name in (gallery / "index.md").read_text()
    for figure in ("sutera2021-table4", "sutera2021-table4-fig7", "sutera2021-fig1",
                   "sutera2021-fig2", "sutera2021-fig3-led", "sutera2021-fig3-digits"):
        assert (gallery / f"{figure}.png").stat().st_size > 10_000


def test_table4_shows_the_published_numbers_next_to_ours(gallery):
    table = _table((gallery / "sutera2021-table4.md").read_text())
    assert len(table) == 96  # 6 data sets x 2 methods x 2 correlations x 4 statistics
    published = PUBLISHED.melt(id_vars=["dataset", "versus", "correlation"],
                               var_name="statistic", value_name="value")
    merged = table.merge(published, on=["dataset", "versus", "correlation", "statistic"])
    assert len(merged) == 96
    assert (merged["published"].astype(float) - merged["value"]).abs().max() < 5e-3
    for kind in ("abs", "signed"):
        diff = table[f"ours_{kind}"].astype(float) - table["published"].astype(float)
        assert (diff - table[f"diff_{kind}"].astype(float)).abs().max() < 0.01  # 4 digits
    assert set(table.loc[table["erratum"] == "yes", "statistic"]) == {
        key[3] for key in ERRATA}


def test_table4_verdicts_follow_the_rule(gallery):
    """Each number: 'deviates' exactly when |ours − published| exceeds its tolerance; each
    reading: the worst of its numbers (the erratum left out); the result: the readings
    combined (not determined by the text where one deviates and the other does not)."""
    table = _table((gallery / "sutera2021-table4.md").read_text())
    reading = {}
    for kind in ("abs", "signed"):
        gap = table[f"diff_{kind}"].astype(float).abs()
        tolerance = table[f"tolerance_{kind}"].astype(float)
        deviates = table[f"verdict_{kind}"] == DEVIATES
        # 4 significant digits on the page: allow the printing of both columns
        margin = 5e-4 * np.maximum(gap, tolerance) + 1e-9
        assert not (deviates & (gap < tolerance - margin)).any()
        assert not (~deviates & (gap > tolerance + margin)).any()
        reading[kind] = page_verdict(table.loc[table["erratum"] == "no", f"verdict_{kind}"])
    results = _summary(gallery, "sutera2021-table4")["results"]
    assert results["sutera.table4"] == combine_readings(reading)


def test_table4_mean_correlations_at_quick_scale(gallery):
    """Bounds: the paper's lowest mean Pearson is 0.881 (digits, TreeSHAP); 100 trees are
    allowed 0.08 below that, and 0.1 from each published mean Pearson. LED: the paper has
    local MDI vs TreeSHAP at 1.000 ± 0.000 (both converge to Shapley values of totally
    randomized trees on the 10-row population); 100 trees are allowed 0.01."""
    table = _table((gallery / "sutera2021-table4.md").read_text())
    numbers = ["published", "ours_abs", "ours_signed"]
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


def test_combine_readings():
    assert combine_readings({"a": REPRODUCED, "b": REPRODUCED}) == REPRODUCED
    assert combine_readings({"a": REPRODUCED, "b": WITHIN_MC}) == WITHIN_MC
    assert combine_readings({"a": DEVIATES, "b": DEVIATES}) == DEVIATES
    assert combine_readings({"a": DEVIATES, "b": WITHIN_MC}) == UNDETERMINED
    with pytest.raises(ValueError):
        combine_readings({})


def test_scatter_labels_do_not_overlap():
    """Twelve points within 0.01 of each other get twelve labels whose boxes are disjoint."""
    figure = Figure(figsize=(4, 4))
    ax = figure.subplots()
    points = [(0.9 + 0.001 * i, 0.95 + 0.0008 * i) for i in range(12)]
    ax.scatter(*zip(*points))
    ax.set_ylim(0.75, 1.0)
    label_column(ax, points, [f"data set {i}" for i in range(12)])
    figure.canvas.draw()
    # the labels (the leader lines are separate, empty annotations)
    boxes = [text.get_window_extent() for text in ax.texts if type(text) is Text]
    assert len(boxes) == 12
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b)


def test_fig1_claims_robust_at_quick_scale(gallery):
    """K = 1 nearness and the X2/X5 (the paper's 0-based X1/X4) masking are effects of
    0.04-0.08 in normalised importance, against Monte-Carlo noise of ~0.005 at 100 trees
    (checked here); 'at the expense of the others' is a near-tie for X7 in expectation, so
    it is not asserted at quick scale."""
    table = _table((gallery / "sutera2021-fig1.md").read_text())
    assert set(table["result"]) == {"sutera.fig1", "sutera.fig4"}
    fig1 = table[table["result"] == "sutera.fig1"]
    for claim, value in zip(fig1["claim"], fig1["holds"]):
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
    # the K = 1 digits forest and its importances are Table 4's seed-0 replicate (one store)
    per_sample = pd.read_csv(gallery / "sutera2021-table4-per-sample.csv")
    for method in ("saabas", "treeshap"):
        ours = per_sample[(per_sample["dataset"] == "Digits") & ~per_sample["signed"]
                          & (per_sample["method_b"] == method)]["pearson"].mean()
        row = summary[(summary["dataset"] == "digits") & (summary["k"] == 1)
                      & (summary["method_a"] == "local_mdi") & (summary["method_b"] == method)
                      & (summary["correlation"] == "pearson")]
        assert float(row["mean"].iloc[0]) == pytest.approx(ours, abs=1e-9)
    # the verdict counts every claim except claim 3 on LED (shown, not judged)
    counted = table[table["verdict"] != "shown, not judged"]
    assert len(counted) == 5
    verdict = _summary(gallery, "sutera2021-fig2")["verdict"]
    assert verdict == page_verdict(counted["verdict"])
    assert (verdict == REPRODUCED) == (counted["holds"] == "yes").all()


def test_fig3_exact_checks(gallery):
    """Efficiency is exact for fully grown trees; local MDI of K = 1 against Thm 2 is judged
    by the gallery's rule (a false 'deviates' has probability below 1 % when Thm 2 is right)."""
    table = _table((gallery / "sutera2021-fig3.md").read_text())
    holds = dict(zip(table["check"], table["holds"]))
    assert holds["LED: efficiency, Σ_m local MDI(X_m, x) = log2 10 (Eq. 12), every K"] == "yes"
    thm2 = table[table["check"].str.startswith("LED, K = 1: local MDI = Thm 2")]
    assert len(thm2) == 1 and thm2["verdict"].iloc[0] in (REPRODUCED, WITHIN_MC)
    values = pd.read_csv(gallery / "sutera2021-fig3-thm2.csv")
    assert len(values) == 70  # 10 rows x 7 segments
    # Table 4 (K = 1, LED): the lowest mean Pearson between the three is 0.98
    assert holds["led, K = 1: the three measures are very similar on the drawn samples"] == "yes"


def test_rerun_reuses_every_stored_cell(gallery):
    """Fig. 2 and Fig. 3 read the cells Table 4 stored (the reuse mechanism is the same for
    every target: one rerun of the pages that share a store checks it here)."""
    before = {store: cell_timestamps(gallery / "runs" / store) for store in STORES}
    assert all(before.values())
    quick_gallery(gallery, ["sutera2021-fig2", "sutera2021-fig3"])
    after = {store: cell_timestamps(gallery / "runs" / store) for store in STORES}
    assert after == before


def test_fig4s_lookup_answers_as_the_forest_on_every_binary_row_and_refuses_others():
    led = load_dataset("led")
    model = fit_model(forest(3, True), led, seed=0)
    rows = np.random.default_rng(0).integers(0, 2, (300, 7)).astype(float)
    lookup = binary_lookup(model.predict_proba, led.X)
    np.testing.assert_array_equal(lookup(rows), model.predict_proba(rows))
    with pytest.raises(ValueError, match="outside"):
        lookup(rows + 0.5)
    # rows that are not all 0/1 keep the model's own predict
    predict = model.predict_proba
    assert binary_lookup(predict, led.X + 0.5) is predict
