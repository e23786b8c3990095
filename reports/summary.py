"""The three answers of the report's first screen, as tables computed from the other reports.

- :func:`agreement_matrix` — *how do the measures relate*: a method x method matrix whose
  upper triangle is the rank (Spearman) correlation of the global importances and whose lower
  triangle is the mean per-sample Spearman correlation of |local| importances (Sutera et al.
  2021, Table 4 form), each averaged over the (dataset, model, seed) groups of the grid;
- :func:`trust_ranking` — *which to trust*: on datasets with ground truth, each method's
  recovery of the relevant set and its distance to its own theoretical target, ranked;
- :func:`cost_table` and :func:`pareto_front` — *what they cost*: explain time as a multiple
  of the forest's own predict, against that recovery, with the Pareto front marked.

Every function takes tidy tables (those of :mod:`reports.correlation`, :mod:`reports.accuracy`
and :mod:`reports.timing`), so they are checked on hand-made tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .base import method_of_label


def agreement_matrix(global_pairs: pd.DataFrame, local_pairs: pd.DataFrame,
                     methods: list[str] | None = None) -> pd.DataFrame:
    """Method x method agreement, global ranks above the diagonal, local below.

    Parameters
    ----------
    global_pairs : DataFrame
        :func:`reports.correlation.global_agreement`: ``method_a``, ``method_b``,
        ``spearman`` per (dataset, model, seed).
    local_pairs : DataFrame
        :func:`reports.correlation.summarise_local`: ``method_a``, ``method_b``,
        ``correlation`` (``"spearman"`` rows are used) and ``mean`` per (dataset, model, seed).
    methods : list of str, optional
        Row and column order (default: every method met, sorted).

    Returns
    -------
    DataFrame
        Square, indexed by method on both axes: ``[a, b]`` for a before b in ``methods`` is
        the mean over groups of the global Spearman correlation, ``[b, a]`` the mean over
        groups of the mean per-sample Spearman correlation of |local| (NaN unless both are
        local), 1 on the diagonal.
    """
    global_pairs = global_pairs.assign(method_a=global_pairs["method_a"].map(method_of_label),
                                       method_b=global_pairs["method_b"].map(method_of_label))
    local = local_pairs[local_pairs["correlation"] == "spearman"] if len(local_pairs) else \
        local_pairs
    if methods is None:
        met = set(global_pairs["method_a"]) | set(global_pairs["method_b"])
        met |= set(local["method_a"]) | set(local["method_b"])
        methods = sorted(met)
    position = {method: k for k, method in enumerate(methods)}
    matrix = np.full((len(methods), len(methods)), np.nan)
    np.fill_diagonal(matrix, 1.0)
    for frame, column, upper in ((global_pairs, "spearman", True), (local, "mean", False)):
        if frame.empty:
            continue
        means = frame.groupby(["method_a", "method_b"])[column].mean()
        for (a, b), value in means.items():
            if a not in position or b not in position:
                continue
            i, j = sorted((position[a], position[b]))
            matrix[(i, j) if upper else (j, i)] = value
    return pd.DataFrame(matrix, index=methods, columns=methods)


def trust_ranking(truth_rows: pd.DataFrame, target_rows: pd.DataFrame) -> pd.DataFrame:
    """Methods ranked by how well they recover what the datasets with ground truth say.

    Parameters
    ----------
    truth_rows : DataFrame
        :func:`reports.accuracy.truth_comparison`: rows with ``truth == "relevant"`` give
        ``precision_relevant`` per cell (the fraction of the top-|R| features that are in the
        relevant set R).
    target_rows : DataFrame
        :func:`reports.accuracy.target_summary`: per (cell, target), ``max_abs_error`` in the
        target's ``unit`` and ``sum_target``.

    Returns
    -------
    DataFrame
        One row per method, best first (highest mean precision, then smallest relative
        error): ``method``, ``precision_relevant`` (mean over cells), ``n_cells``,
        ``target`` (its own targets, joined), ``unit``, ``max_abs_error`` (median over cells,
        in ``unit``) and ``relative_error`` (median of ``max_abs_error / |sum_target|``: a
        unit-free distance comparable across datasets). Methods without a target of their
        own have NaN there.
    """
    columns = ["rank", "method", "precision_relevant", "n_cells", "target", "unit",
               "max_abs_error", "relative_error"]
    relevant = truth_rows[truth_rows["truth"] == "relevant"] if len(truth_rows) else truth_rows
    if relevant.empty:
        return pd.DataFrame(columns=columns)
    table = relevant.groupby("method").agg(
        precision_relevant=("precision_relevant", "mean"),
        n_cells=("precision_relevant", "size"))
    if len(target_rows):
        targets = target_rows.assign(relative_error=target_rows["max_abs_error"]
                                     / target_rows["sum_target"].abs().where(
                                         target_rows["sum_target"] != 0))
        own = targets.groupby("method").agg(
            target=("target", lambda names: ", ".join(sorted(set(names)))),
            unit=("unit", lambda units: ", ".join(sorted(set(map(str, units))))),
            max_abs_error=("max_abs_error", "median"),
            relative_error=("relative_error", "median"))
        table = table.join(own, how="left")
    for column in ("target", "unit", "max_abs_error", "relative_error"):
        if column not in table:
            table[column] = np.nan
    table = table.reset_index().sort_values(
        ["precision_relevant", "relative_error", "method"], ascending=[False, True, True],
        na_position="last", kind="stable").reset_index(drop=True)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    return table[columns]


def pareto_front(cost: np.ndarray, quality: np.ndarray) -> np.ndarray:
    """True where no other point is at least as cheap and as good, and better in one.

    NaN points are never on the front and dominate nothing.
    """
    cost, quality = np.asarray(cost, dtype=float), np.asarray(quality, dtype=float)
    valid = np.isfinite(cost) & np.isfinite(quality)
    front = valid.copy()
    for i in np.flatnonzero(valid):
        others = valid & (cost <= cost[i]) & (quality >= quality[i])
        others &= (cost < cost[i]) | (quality > quality[i])
        front[i] = not others.any()
    return front


def cost_table(timing: pd.DataFrame, ranking: pd.DataFrame) -> pd.DataFrame:
    """Per method: median explain time as a multiple of predict, beside its recovery.

    Parameters
    ----------
    timing : DataFrame
        :func:`reports.timing.timing_table`: ``method`` and ``ratio_to_predict`` per cell.
    ranking : DataFrame
        :func:`trust_ranking` (its ``precision_relevant``; NaN for a method never scored).

    Returns
    -------
    DataFrame
        ``method``, ``ratio_to_predict`` (median over cells: explain seconds per predict
        second on the same rows), ``time_explain`` (median, s), ``precision_relevant`` and
        ``pareto`` (on the front of low cost and high precision).
    """
    columns = ["method", "ratio_to_predict", "time_explain", "precision_relevant", "pareto"]
    if timing.empty:
        return pd.DataFrame(columns=columns)
    table = timing.groupby("method").agg(
        ratio_to_predict=("ratio_to_predict", "median"),
        time_explain=("time_explain", "median")).reset_index()
    precision = ranking.set_index("method")["precision_relevant"] if len(ranking) else {}
    table["precision_relevant"] = table["method"].map(precision).astype(float)
    table["pareto"] = pareto_front(table["ratio_to_predict"], table["precision_relevant"])
    return table.sort_values("ratio_to_predict", kind="stable").reset_index(drop=True)[columns]
