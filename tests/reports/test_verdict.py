"""The gallery's one verdict rule (harness/reports/targets/verdict.py) and its catalogue."""

from __future__ import annotations

import json
from statistics import NormalDist

import pandas as pd
import pytest

from harness.reports.targets import base
from harness.reports.targets.published import PUBLISHED, SOURCES
from harness.reports.targets.verdict import (
    DEVIATES,
    REPRODUCED,
    UNDETERMINED,
    WITHIN_MC,
    Comparison,
    judge,
    page_verdict,
    worst_line,
    z_bound,
)


@pytest.mark.parametrize(("n", "expected"), [(1, 2.5758), (10, 3.2905), (50, 3.7190)])
def test_z_bound_is_the_bonferroni_quantile_of_one_percent_per_page(n, expected):
    assert z_bound(n) == pytest.approx(expected, abs=1e-4)
    # the chance that one of n agreeing numbers crosses the bound is at most 1 %
    assert n * 2 * (1 - NormalDist().cdf(z_bound(n))) == pytest.approx(0.01)


@pytest.mark.parametrize(("comparison", "verdict"), [
    # 0.412 printed: anything in [0.4115, 0.4125] is the same printed number
    (Comparison("exact, rounds to it", 0.412, 0.41249, 3), REPRODUCED),
    (Comparison("exact, rounds elsewhere", 0.412, 0.41251, 3), DEVIATES),
    # a truncating source prints 0.412 for [0.412, 0.413)
    (Comparison("truncated", 0.412, 0.4129, 3, truncated=True), REPRODUCED),
    # beyond the printing tolerance by 2.5 s.e. (one number: bound 2.58): within MC error
    (Comparison("2.5 s.e. out", 0.412, 0.4125 + 2.5 * 0.001, 3, ours_se=0.001), WITHIN_MC),
    (Comparison("2.7 s.e. out", 0.412, 0.4125 + 2.7 * 0.001, 3, ours_se=0.001), DEVIATES),
    # the published estimate's own s.e. adds in quadrature: sqrt(0.0006² + 0.0008²) = 0.001
    (Comparison("both noisy", 0.412, 0.4125 + 2.5 * 0.001, 3, ours_se=0.0006,
                published_se=0.0008), WITHIN_MC),
    (Comparison("not a number", 0.412, float("nan"), 3), DEVIATES),
    (Comparison("printed to tens", 40810.0, 40812.0, -1), REPRODUCED),
])
def test_one_number(comparison, verdict):
    [row] = judge([comparison]).to_dict("records")
    assert row["verdict"] == verdict
    assert row["difference"] == pytest.approx(comparison.ours - comparison.published,
                                              nan_ok=True)


def test_the_bound_widens_with_the_number_of_comparisons():
    # 3 s.e. beyond the printing tolerance fails alone (bound 2.58) and passes among 10 (3.29)
    item = Comparison("3 s.e. out", 1.0, 1.05 + 3 * 0.01, 1, ours_se=0.01)
    assert judge([item])["verdict"].item() == DEVIATES
    assert set(judge([item] * 10)["verdict"]) == {WITHIN_MC}


def test_a_negative_standard_error_is_refused():
    with pytest.raises(ValueError, match="ours_se .* finite number >= 0; got -0.1"):
        Comparison("x", 1.0, 1.0, 2, ours_se=-0.1)


@pytest.mark.parametrize(("verdicts", "page"), [
    ([REPRODUCED, REPRODUCED], REPRODUCED),
    ([REPRODUCED, WITHIN_MC], WITHIN_MC),
    ([WITHIN_MC, UNDETERMINED], UNDETERMINED),
    ([UNDETERMINED, DEVIATES, REPRODUCED], DEVIATES),
])
def test_the_page_takes_the_worst_verdict(verdicts, page):
    assert page_verdict(verdicts) == page


@pytest.mark.parametrize(("verdicts", "message"), [([], "at least one"),
                                                   (["fine"], "got \\['fine'\\]")])
def test_page_verdict_refuses(verdicts, message):
    with pytest.raises(ValueError, match=message):
        page_verdict(verdicts)


def test_worst_line_names_the_comparison_furthest_beyond_its_tolerance():
    judged = judge([Comparison("a", 1.0, 1.04, 2), Comparison("b", 1.0, 1.3, 1)])
    # a: 0.04 against 0.005 (8x); b: 0.3 against 0.05 (6x)
    assert worst_line(judged, "bits").startswith("a: published 1, ours 1.04 bits")


def test_catalogue_keys_are_unique_and_cite_a_source():
    keys = [result.key for result in PUBLISHED]
    assert len(keys) == len(set(keys))
    assert {result.seed for result in PUBLISHED} <= set(SOURCES)


#: the catalogue's results of the page the tests below stand in for
THEOREM_KEYS = tuple(result.key for result in PUBLISHED if result.target == "louppe2013-theorems")


class _Target(base.Target):
    name = "louppe2013-theorems"
    title = "t"
    source = "s"


def _page(**changes) -> base.TargetPage:
    fields = dict(table=pd.DataFrame({"a": [1]}), worst="w", verdict=REPRODUCED, scale="s")
    return base.TargetPage(**(fields | changes))


@pytest.mark.parametrize(("results", "verdict", "message"), [
    ({"louppe.thm3": REPRODUCED}, REPRODUCED, "each of its published results"),
    (dict.fromkeys(THEOREM_KEYS, REPRODUCED) | {"louppe.thm3": DEVIATES}, REPRODUCED,
     "worst of its results"),
])
def test_a_page_must_judge_each_of_its_results(tmp_path, results, verdict, message):
    with pytest.raises(ValueError, match=message):
        base.write_page(_Target(), _page(results=results, verdict=verdict), tmp_path)
    assert not any(tmp_path.iterdir())


def test_index_prints_the_rule_the_assumptions_and_every_published_result(tmp_path):
    results = dict.fromkeys(THEOREM_KEYS, REPRODUCED)
    results["louppe.thm5"] = WITHIN_MC
    base.write_page(_Target(), _page(results=results, verdict=WITHIN_MC,
                                     assumptions=["K = 1 | exact"]), tmp_path)
    index = (tmp_path / "index.md").read_text()
    assert "**The verdict rule**" in index and "K = 1 \\| exact" in index
    rows = [line for line in index.splitlines() if line.startswith("| 00")]
    assert len(rows) == len(PUBLISHED)
    thm5 = next(row for row in rows if "Thm 5" in row)
    assert thm5.endswith(f"| {WITHIN_MC} |")
    assert sum(row.endswith("| no page yet |") for row in rows) == sum(
        result.target != "louppe2013-theorems" for result in PUBLISHED)
    summary = json.loads((tmp_path / "louppe2013-theorems.json").read_text())
    assert summary["results"] == results and summary["seconds"] is None
    assert "| not recorded |" in index


def test_every_published_result_has_a_registered_page_and_every_page_results():
    """None silently absent: each catalogue entry names a built-in target, and each built-in
    target reproduces at least one catalogued result."""
    from harness.reports.targets.base import TARGETS
    from harness.reports.targets.published import by_target

    assert set(by_target()) <= set(TARGETS)
    assert set(TARGETS) <= set(by_target())
