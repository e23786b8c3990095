"""The first screen's tables on hand-made results: values worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.reports.summary import agreement_matrix, cost_table, pareto_front, trust_ranking


def test_agreement_matrix_puts_global_ranks_above_and_local_correlations_below():
    global_pairs = pd.DataFrame({
        "dataset": ["a", "b", "a"], "model": "m", "seed": 0,
        "method_a": ["mdi", "mdi", "saabas (mean |local|)"],
        "method_b": ["saabas (mean |local|)", "saabas (mean |local|)",
                     "treeshap (mean |local|)"],
        "spearman": [0.5, 0.7, 0.9]})
    local_pairs = pd.DataFrame({
        "dataset": ["a", "b", "a"], "model": "m", "seed": 0,
        "method_a": ["saabas", "saabas", "saabas"],
        "method_b": ["treeshap", "treeshap", "treeshap"],
        "correlation": ["spearman", "spearman", "pearson"], "mean": [0.8, 0.6, -1.0]})
    matrix = agreement_matrix(global_pairs, local_pairs)
    assert list(matrix.index) == ["mdi", "saabas", "treeshap"]
    assert matrix.loc["mdi", "saabas"] == pytest.approx(0.6)  # mean of 0.5 and 0.7
    assert matrix.loc["saabas", "treeshap"] == pytest.approx(0.9)
    assert matrix.loc["treeshap", "saabas"] == pytest.approx(0.7)  # Pearson rows left out
    assert np.isnan(matrix.loc["saabas", "mdi"])  # mdi is global: no local correlation
    assert np.isnan(matrix.loc["mdi", "treeshap"])  # never compared
    np.testing.assert_array_equal(np.diag(matrix), 1.0)


def test_agreement_matrix_keeps_the_given_order_so_the_triangles_follow_it():
    global_pairs = pd.DataFrame({"method_a": ["a"], "method_b": ["b"], "spearman": [0.3]})
    local_pairs = pd.DataFrame({"method_a": ["a"], "method_b": ["b"],
                                "correlation": ["spearman"], "mean": [0.1]})
    matrix = agreement_matrix(global_pairs, local_pairs, methods=["b", "a"])
    assert matrix.loc["b", "a"] == pytest.approx(0.3)  # upper triangle in the given order
    assert matrix.loc["a", "b"] == pytest.approx(0.1)


def _truth_rows():
    return pd.DataFrame({
        "method": ["mdi", "mdi", "sobol_mda", "sobol_mda", "saabas", "x"],
        "truth": ["relevant", "relevant", "relevant", "relevant", "relevant", "shapley"],
        "precision_relevant": [1.0, 0.5, 1.0, 1.0, 0.75, np.nan]})


def _target_rows():
    return pd.DataFrame({
        "method": ["mdi", "sobol_mda", "sobol_mda"],
        "target": ["thm1", "total_sobol", "total_sobol"],
        "unit": ["bits", "fraction of Var(Y)", "fraction of Var(Y)"],
        "max_abs_error": [0.1, 0.02, 0.06], "sum_target": [2.0, 1.0, -1.0]})


def test_trust_ranking_ranks_by_recovery_then_by_distance_to_the_own_target():
    ranking = trust_ranking(_truth_rows(), _target_rows())
    # mdi and saabas tie at 0.75; mdi's own target is 5 % off, saabas has none: mdi first
    assert list(ranking["method"]) == ["sobol_mda", "mdi", "saabas"]
    assert list(ranking["rank"]) == [1, 2, 3]
    row = ranking.set_index("method")
    assert row.loc["sobol_mda", "precision_relevant"] == 1.0
    assert row.loc["mdi", "precision_relevant"] == 0.75 and row.loc["mdi", "n_cells"] == 2
    assert row.loc["sobol_mda", "max_abs_error"] == pytest.approx(0.04)  # median
    assert row.loc["sobol_mda", "relative_error"] == pytest.approx(0.04)  # / |sum_target|
    assert row.loc["mdi", "relative_error"] == pytest.approx(0.05)
    assert row.loc["mdi", "unit"] == "bits" and row.loc["sobol_mda", "target"] == "total_sobol"
    assert np.isnan(row.loc["saabas", "relative_error"])  # no target of its own


def test_trust_ranking_breaks_equal_recovery_by_the_smaller_relative_error():
    truth = pd.DataFrame({"method": ["a", "b"], "truth": "relevant",
                          "precision_relevant": [1.0, 1.0]})
    targets = pd.DataFrame({"method": ["a", "b"], "target": "t", "unit": "u",
                            "max_abs_error": [0.3, 0.1], "sum_target": [1.0, 1.0]})
    assert list(trust_ranking(truth, targets)["method"]) == ["b", "a"]


def test_pareto_front_keeps_the_points_nothing_beats():
    cost = np.array([1.0, 2.0, 3.0, 2.0, 5.0, np.nan, 1.0])
    quality = np.array([0.5, 0.9, 0.9, 0.4, 1.0, 1.0, 0.5])
    # 0 and 6 tie (neither dominates), 2 is beaten by 1, 3 by 0, 5 is undefined
    np.testing.assert_array_equal(pareto_front(cost, quality),
                                  [True, True, False, False, True, False, True])


def test_cost_table_takes_the_median_ratio_and_marks_the_front():
    timing = pd.DataFrame({"method": ["a", "a", "a", "b", "c"],
                           "ratio_to_predict": [1.0, 1.5, 100.0, 2.0, 50.0],
                           "time_explain": [0.1, 0.3, 10.0, 0.2, 5.0]})
    ranking = pd.DataFrame({"method": ["a", "b", "c"], "precision_relevant": [0.5, 0.9, 0.8]})
    table = cost_table(timing, ranking).set_index("method")
    assert table.loc["a", "ratio_to_predict"] == 1.5 and table.loc["a", "time_explain"] == 0.3
    assert list(table.index) == ["a", "b", "c"]  # cheapest first
    assert table.loc["a", "pareto"]  # the cheapest
    assert table.loc["b", "pareto"]  # the best
    assert not table.loc["c", "pareto"]  # b is cheaper and better
