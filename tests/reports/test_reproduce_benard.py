"""``benard2022-shaff`` at quick scale: the SHAFF linear-case page of seed 002."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from harness.reports.targets.verdict import UNDETERMINED
from tests._support.gallery_pages import page_records, quick_gallery

NAME = "benard2022-shaff"


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    return quick_gallery(tmp_path_factory.mktemp("gallery"), [NAME])


def test_the_figure_without_its_set_up_is_not_determined_by_the_text(gallery):
    """The slides print no value and no parameter of the linear case: whatever ours show,
    the result is 'not determined by the text', and the page names what is missing."""
    summary = json.loads((gallery / f"{NAME}.json").read_text())
    assert summary["results"] == {"scornet.shaff-linear": UNDETERMINED}
    assert summary["verdict"] == UNDETERMINED
    text = (gallery / f"{NAME}.md").read_text()
    assert "correlation ρ of the inputs" in text and "Scale: quick:" in text
    assert (gallery / f"{NAME}.png").stat().st_size > 10_000


def test_closed_form_and_shaff_invariants(gallery):
    """Oracle: the closed-form effects sum to 1 − 0.1 (noise 10 % of V[Y]) at every ρ.
    SHAFF: its sum is the forest's OOB explained variance, below 0.9 and above 0.6 (the
    measured 0.75-0.78 at 40 trees, ± the 0.14 spread of one run at ρ = 0 printed on the
    page), and its top five is among the exact top five (ties included)."""
    rows = page_records((gallery / f"{NAME}.md").read_text())
    assert [row["setting"] for row in rows] == ["p = 10, ρ = 0", "p = 10, ρ = 0.9"]
    for row in rows:
        assert float(row["sum exact"]) == pytest.approx(0.9, abs=1e-3)
        assert 0.6 < float(row["sum ours"]) < 0.9
        assert row["top 5 among the exact top 5 (ties included)"] == "yes"


def test_the_block_sums_share_the_explained_variance_of_the_same_explain():
    """The p = 200 by-block note (full scale only) on a small grouped case: SHAFF is
    efficient (its effects sum to v̂(all)), so the two block sums must add up to the
    explained variance the same explain reports; a block sum or v̂(all) read from another
    run, or blocks that miss a variable, break the identity."""
    from harness.reports.targets._shaff_blocks import block_row
    from harness.reports.targets.benard2022_shaff import Setting

    dataset = Setting(10, 0.5).dataset(0, n_samples=300)
    row = block_row(dataset, n_trees=20, seed=0, mtry="√p")
    assert row.n == 300 and row.n_trees == 20 and row.mtry == "√p"
    assert row.sum_block1 + row.sum_rest == pytest.approx(row.v_all, abs=1e-12)
    assert 0.0 < row.v_all < 1.0 and 0.0 <= row.walked_up <= 1.0
    assert 0 <= row.shared_top5 <= 5


def test_a_noise_free_row_is_put_on_the_page_scale(monkeypatch):
    """Effects of a noise-free response are fractions of V[m(X)], which is 0.9 of the page's
    V[Y]: the by-block row multiplies them and v̂(all) by 0.9, so that the page's exact values
    (block sums 0.45, weak signals 0.015) apply to it; with the page's noise they are kept.
    SHAFF is replaced by a made-up explanation whose every effect is 0.05 and whose v̂(all)
    is 1.0."""
    from harness.core.types import Importances
    from harness.reports.targets import _shaff_blocks
    from harness.reports.targets.benard2022_shaff import Setting

    def made_up(name, model, X, y, seed):
        return Importances(values=np.full(X.shape[1], 0.05), scope="global",
                           feature_names=[f"x{j}" for j in range(X.shape[1])],
                           unit="fraction of V[Y]", explains="made up",
                           extra={"explained_variance": 1.0, "walked_up_share": 0.0,
                                  "design_std": 0.002, "n_subsets_drawn": 64})

    monkeypatch.setattr(_shaff_blocks.harness, "explain", made_up)
    for noise, scale in ((0.0, 0.9), (0.1, 1.0)):
        row = _shaff_blocks.block_row(Setting(10, 0.5).dataset(0, 200, noise), n_trees=2,
                                      seed=0)
        assert row.noise_fraction == noise
        assert row.v_all == pytest.approx(scale * 1.0, abs=1e-12)
        assert row.sum_block1 == pytest.approx(scale * 0.1, abs=1e-12)  # 2 of 10 features
        assert row.weak_signals == pytest.approx(scale * 0.05, abs=1e-12)
        assert row.design_std == pytest.approx(scale * 0.002, abs=1e-12)
        assert row.n_subsets == 64


def test_the_by_block_note_follows_its_numbers():
    """The full-scale by-block note (too slow for the suite) from rows made up here: the
    trend between the first and last rows of leaves of 5 is read from blocks 2-5's distance
    to 0.45, and a row of larger leaves gets its own sentence with its own figures (at the
    first n, one sentence for the leaf sizes tried: whether any brings the ranking back;
    at larger n, one for the leaves that grow with n)."""
    from harness.reports.targets._shaff_blocks import BlockRow
    from harness.reports.targets.benard2022_shaff import Benard2022SHAFF

    def row(n, leaf, rest, top5, mtry="p/3"):
        return BlockRow(n=n, n_trees=10, min_samples_leaf=leaf, mtry=mtry, depth=9, v_all=0.8,
                        walked_up=0.25, sum_block1=0.8 - rest, sum_rest=rest, x1=0.07,
                        weak_signals=0.011, shared_top5=top5, seconds=1.0)

    away = Benard2022SHAFF._by_block([row(1000, 5, 0.29, 1), row(3000, 5, 0.19, 1)])
    assert "moved away from its exact 0.45 (0.290 → 0.190)" in away
    # the design's own error against the weak signals' shortfall (0.015 − 0.011 = 0.004)
    assert ("The design's own error is at most 0.0010 on these rows, under a third of the "
            "weak signals' shortfall at n = 1000 (0.0040 below their exact 0.015 with leaves "
            "of 5): the shortfall is the projected forest's (SHAFF step 2), not the subset "
            "design's.") in Benard2022SHAFF._by_block(
                [dataclasses.replace(row(1000, 5, 0.29, 1), design_std=0.001),
                 row(3000, 5, 0.19, 1)])
    noisy = Benard2022SHAFF._by_block([row(1000, 5, 0.29, 1),
                                       dataclasses.replace(row(3000, 5, 0.19, 1),
                                                           design_std=0.002)])
    assert ("The design's own error reaches 0.0020 on these rows, a third or more of the weak "
            "signals' shortfall at n = 1000 (0.0040): the design and the projected forest "
            "both contribute to it.") in noisy
    assert "leaves that grow" not in away
    closer = Benard2022SHAFF._by_block([row(1000, 5, 0.29, 1), row(3000, 5, 0.40, 2),
                                        row(30_000, 300, 0.36, 5)])
    assert "came closer to its exact 0.45 (0.290 → 0.400)" in closer
    assert ("top five shares 5 of 5 at n = 30000 (min_samples_leaf 300) (against 1 at "
            "n = 1000)") in closer
    assert "SHAFF's ranking converges as the forest's cells fill" in closer
    larger = Benard2022SHAFF._by_block([row(1000, 5, 0.29, 1), row(1000, 20, 0.33, 2),
                                        row(1000, 50, 0.45, 5), row(3000, 5, 0.19, 1)])
    assert ("At n = 1000, leaves of 20 / 50 rows leave the top five at 2 / 5 of 5 (weak "
            "signals 0.0110 / 0.0110, exact 0.015; blocks 2-5 get 0.330 / 0.450; 25% / 25% of "
            "the projected predictions walked up).") in larger
    assert "no leaf size tried" not in larger  # leaves of 50 brought the top five back
    fewer = Benard2022SHAFF._by_block([row(1000, 5, 0.29, 1), row(1000, 20, 0.33, 2),
                                       row(3000, 5, 0.19, 1)])
    assert ": at this n no leaf size tried brings the weak blocks back." in fewer
    assert "moved away from its exact 0.45 (0.290 → 0.190)" in larger
    assert "leaves that grow" not in larger
    # the other mtry reading at the page's n and leaves: its own sentence, and it is not
    # taken for the page's first row (the trend still runs between the p/3 rows)
    readings = Benard2022SHAFF._by_block([row(1000, 5, 0.29, 1), row(1000, 5, 0.25, 1, "√p"),
                                          row(3000, 5, 0.19, 1)])
    assert "mtry √p, min_samples_leaf 5" in readings
    assert ("With mtry = √p (the other reading) at n = 1000 and leaves of 5 rows, v̂(all) is "
            "0.800" in readings)
    assert "blocks 2-5 get 0.250 and the top five shares 1 of 5: the mtry reading is not" \
        in readings
    assert "moved away from its exact 0.45 (0.290 → 0.190)" in readings
    better = Benard2022SHAFF._by_block([row(1000, 5, 0.29, 1), row(1000, 5, 0.40, 4, "√p"),
                                        row(3000, 5, 0.19, 1)])
    assert "top five shares 4 of 5." in better and "not what loses" not in better
    # a noise-free row: its own sentence, read against the page's first row, and never taken
    # for a row of the page's noise (the trend still runs between the noisy rows)
    quiet = dataclasses.replace(row(1000, 5, 0.27, 1), noise_fraction=0.0, weak_signals=0.006)
    lost = Benard2022SHAFF._by_block([row(1000, 5, 0.29, 1), quiet, row(3000, 5, 0.19, 1)])
    assert "min_samples_leaf 5, depth 9, noise-free response)" in lost
    assert ("the weak signals average 0.0060 (exact 0.015; 0.0110 with the noise), blocks 2-5 "
            "get 0.270 and block 1 0.530, and the top five shares 1 of 5: the noise is not "
            "what loses the weak blocks; the forest's approximation of m at this n is.") in lost
    assert "moved away from its exact 0.45 (0.290 → 0.190)" in lost
    found = dataclasses.replace(quiet, shared_top5=5)
    back = Benard2022SHAFF._by_block([row(1000, 5, 0.29, 1), found, row(3000, 5, 0.19, 1)])
    assert "shares 5 of 5: without the noise the weak blocks come back." in back
    with pytest.raises(ValueError, match=r"noise \(0.1\) or none \(0.0\); got \[0.2\]"):
        Benard2022SHAFF._by_block([row(1000, 5, 0.29, 1),
                                   dataclasses.replace(quiet, noise_fraction=0.2)])


def test_block_row_names_the_mtry_readings_it_knows():
    """An mtry label outside the two readings is refused with both named (a typo must not
    fall back to a default forest)."""
    from harness.reports.targets._shaff_blocks import block_row
    from harness.reports.targets.benard2022_shaff import Setting

    with pytest.raises(ValueError, match=r"mtry must be one of \['p/3', '√p'\]; got 'sqrt'"):
        block_row(Setting(10, 0.5).dataset(0, n_samples=100), n_trees=2, seed=0, mtry="sqrt")
