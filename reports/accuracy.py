"""Accuracy: how good each model is, and how close each importance measure is to the truth.

Where a dataset knows its exact importances (e.g. Louppe et al. 2013, Thm 1 for LED; Sutera
et al. 2021, Thm 2 at every row; Sobol indices of analytic models), every done cell is
compared with them: ranks for every method, absolute values only for the methods on the same
scale (``TruthVector.compares_to``), and the precision of the relevant set. Where none
exists (diabetes, breast cancer, digits), the permutation and projection methods are set
beside the retrain-based reference, LOCO (:func:`loco_table`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns

from harness.core.types import GroundTruth
from harness.run.results import RunResults

from .accuracy_loco import _loco_scatter, loco_summary, loco_table
from .base import (
    FONT_PT,
    GROUP,
    MAX_WIDTH_IN,
    ReportSection,
    done_cells,
    global_label,
    global_views,
    method_of_label,
    new_figure,
    normalise_l1,
    rowwise_pearson,
    save_figure,
    slug,
    spearman,
    table_html,
    wrap_label,
    write_csv,
)
from .palette import run_colours

SCORE_COLUMNS = [*GROUP, "task", "score", "score_name", "n_train", "n_test", "n_features",
                 "fit_time"]
CELL_COLUMNS = ["key", *GROUP, "method", "method_name", "scope"]
ACCURACY_COLUMNS = [*CELL_COLUMNS, "truth", "truth_scope", "unit", "comparable", "spearman",
                    "max_abs_error", "mean_sample_pearson", "n_samples", "n_undefined",
                    "precision_relevant"]


def model_scores(results: RunResults) -> pd.DataFrame:
    """One row per fitted (dataset, model, seed): test score and its name, n_train, n_test."""
    models = results.models
    if models.empty:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    table = pd.DataFrame({c: models[c] if c in models else np.nan for c in SCORE_COLUMNS})
    return table.sort_values(GROUP, kind="stable").reset_index(drop=True)


def precision_of_relevant(view: np.ndarray, relevant: np.ndarray) -> float:
    """Fraction of the top-|R| features by ``|view|`` that are in R (ties: feature order)."""
    relevant = np.asarray(relevant, dtype=bool)
    k = int(relevant.sum())
    if k == 0 or view.shape != relevant.shape:
        return float("nan")
    top = np.argsort(-np.abs(view), kind="stable")[:k]
    return float(relevant[top].mean())


def _local_comparison(results: RunResults, key: str, truth: np.ndarray) -> dict[str, float]:
    arrays = results.arrays(key)
    values = np.asarray(arrays["values"], dtype=float)
    rows = arrays["sample_index"]
    rows = np.arange(len(values)) if rows is None else np.asarray(rows)
    if rows.size and rows.max() >= len(truth) or values.shape[1:] != truth.shape[1:]:
        return {"n_samples": len(values)}
    target = truth[rows]
    r = rowwise_pearson(values, target)
    defined = ~np.isnan(r)
    return {"max_abs_error": float(np.abs(values - target).max(initial=0.0)),
            "mean_sample_pearson": float(r[defined].mean()) if defined.any() else np.nan,
            "n_samples": len(r), "n_undefined": int((~defined).sum())}


def truth_comparison(results: RunResults) -> pd.DataFrame:
    """Every done cell of a dataset with ground truth, against each exact quantity.

    Rows, per cell:

    - each global ``TruthVector`` t: Spearman rank correlation between the cell's global view
      v (as in ``importances_table``: the values, or mean |local| for a local method) and t;
      ``max_abs_error = max_j |v_j - t_j|`` only when the method is in ``t.compares_to``;
    - each local ``TruthVector`` T (n_rows, p), for local cells of a method in
      ``T.compares_to``: ``max_abs_error = max_ij |V_ij - T[s_i, j]|`` and the mean over the
      explained rows s_i of the Pearson correlation between V_i and T[s_i] (constant rows are
      undefined: counted in ``n_undefined``, left out of the mean);
    - ``truth == "relevant"``: ``precision_relevant``, the fraction of the top-|R| features
      by |v| that are in the relevant set R.
    """
    return results.derived("truth_comparison", _truth_comparison)


def _truth_comparison(results: RunResults) -> pd.DataFrame:
    cells = done_cells(results)
    views = global_views(results, cells)
    truths: dict[tuple[str, int], GroundTruth | None] = {}
    rows = []
    for _, cell in cells.iterrows():
        where = (cell["dataset"], int(cell["seed"]))
        if where not in truths:
            truths[where] = results.truth(*where)
        truth = truths[where]
        if truth is None or cell["key"] not in views:
            continue
        base = {c: cell[c] for c in CELL_COLUMNS}
        view = views[cell["key"]]
        for name, vector in truth.quantities.items():
            target = np.asarray(vector.values, dtype=float)
            comparable = cell["method_name"] in vector.compares_to
            row = {**base, "truth": name, "truth_scope": vector.scope, "unit": vector.unit,
                   "comparable": comparable}
            if vector.scope == "global":
                row["spearman"] = spearman(view, target)
                if comparable and view.shape == target.shape:
                    row["max_abs_error"] = float(np.abs(view - target).max())
            elif cell["scope"] == "local" and comparable:
                row.update(_local_comparison(results, cell["key"], target))
            else:
                continue
            rows.append(row)
        rows.append({**base, "truth": "relevant", "truth_scope": "relevant set",
                     "precision_relevant": precision_of_relevant(view, truth.relevant)})
    return pd.DataFrame(rows, columns=ACCURACY_COLUMNS)


def target_table(results: RunResults) -> pd.DataFrame:
    """Each global estimate next to its own theoretical target, feature by feature.

    A target is a global truth quantity whose ``compares_to`` names the cell's method: e.g.
    ``sobol_mda`` next to the total Sobol index ST_j, ``mda_bc`` and ``mda_test`` next to the
    limit E[(m(X) - m(X_pi_j))^2] (2 V[Y] ST_j for independent inputs), ``mda_ik`` next to
    V[Y] ST_j + MDA3_j (Bénard, Da Veiga, Scornet 2022). Columns: the cell, ``target`` (its
    name), ``target_description``, ``unit``, ``feature``, ``estimate``, ``target_value`` and
    ``error = estimate - target_value``.
    """
    return results.derived("target_table", _target_table)


def _target_table(results: RunResults) -> pd.DataFrame:
    cells = done_cells(results, scope="global")
    views = global_views(results, cells)
    frames = []
    for _, cell in cells.iterrows():
        truth = results.truth(cell["dataset"], int(cell["seed"]))
        if truth is None:
            continue
        names = results.feature_names(cell["key"])
        for target, vector in truth.quantities.items():
            values = np.asarray(vector.values, dtype=float)
            if (cell["method_name"] not in vector.compares_to or vector.scope != "global"
                    or values.shape != views[cell["key"]].shape):
                continue
            frames.append(pd.DataFrame({
                **{c: cell[c] for c in CELL_COLUMNS}, "target": target,
                "target_description": vector.description, "unit": vector.unit,
                "feature": names, "estimate": views[cell["key"]], "target_value": values,
                "error": views[cell["key"]] - values}))
    columns = [*CELL_COLUMNS, "target", "target_description", "unit", "feature", "estimate",
               "target_value", "error"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def target_summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (cell, target): the largest |error|, the sums and the rank agreement."""
    if table.empty:
        return pd.DataFrame(columns=[*GROUP, "method", "target", "unit", "max_abs_error",
                                     "sum_estimate", "sum_target", "spearman",
                                     "target_description"])
    keys = [*GROUP, "method", "target", "unit", "target_description"]
    summary = table.groupby(keys, sort=True, dropna=False).apply(
        lambda g: pd.Series({
            "max_abs_error": float(np.abs(g["error"]).max()),
            "sum_estimate": float(g["estimate"].sum()),
            "sum_target": float(g["target_value"].sum()),
            "spearman": spearman(g["estimate"].to_numpy(), g["target_value"].to_numpy()),
        }), include_groups=False).reset_index()
    return summary[[*GROUP, "method", "target", "unit", "max_abs_error", "sum_estimate",
                    "sum_target", "spearman", "target_description"]]


def _target_scatter(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Estimate against target, one panel per method, one point per feature and cell."""
    if table.empty:
        return []
    methods = sorted(table["method_name"].unique())
    datasets, models = sorted(table["dataset"].unique()), sorted(table["model"].unique())
    ncols = min(3, len(methods))
    nrows = -(-len(methods) // ncols)
    figure, axes = new_figure(ncols=ncols, nrows=nrows, width=3.0, height=3.0, wspace=0.4)
    for ax, method in zip(axes.ravel(), methods):
        data = table[table["method_name"] == method]
        sns.scatterplot(data=data, x="target_value", y="estimate", hue="dataset", style="model",
                        hue_order=datasets, style_order=models, ax=ax, s=22,
                        legend=ax is axes[0, -1])
        low = float(min(data["target_value"].min(), data["estimate"].min(), 0.0))
        high = float(max(data["target_value"].max(), data["estimate"].max()))
        ax.plot([low, high], [low, high], color="0.5", linewidth=0.8, linestyle="--")
        ax.set_title(wrap_label(f"{method} vs {', '.join(sorted(data['target'].unique()))}",
                                36), fontsize=FONT_PT)
        ax.set_xlabel("theoretical target")
        ax.set_ylabel(wrap_label(f"estimate ({data['unit'].iloc[0]})", 30))
    for ax in axes.ravel()[len(methods):]:
        ax.set_visible(False)
    corner = axes[0, -1]
    if corner.get_legend() is not None:
        sns.move_legend(corner, "upper left", bbox_to_anchor=(1.02, 1), fontsize=FONT_PT,
                        frameon=False)
    return [save_figure(figure, out_dir / "accuracy_targets.png")]


def _truth_frame(results: RunResults, cells: pd.DataFrame) -> pd.DataFrame:
    """Normalised global views of ``cells`` and of each global truth of their dataset."""
    views = global_views(results, cells)
    frames = []
    for (model, seed), group in cells.groupby(["model", "seed"], sort=True):
        truth = results.truth(group["dataset"].iloc[0], int(seed))
        names = results.feature_names(group["key"].iloc[0])
        truths = [pd.DataFrame({"model": model, "seed": seed, "feature": names,
                                "measure": f"truth: {name}",
                                "normalised importance": normalise_l1(vector.values)})
                  for name, vector in ({} if truth is None else truth.quantities).items()
                  if vector.scope == "global" and len(vector.values) == len(names)]
        if not truths:
            continue
        frames.extend(truths)
        for key, method, scope in zip(group["key"], group["method"], group["scope"]):
            if len(views[key]) == len(names):
                frames.append(pd.DataFrame({
                    "model": model, "seed": seed, "feature": names,
                    "measure": global_label(method, scope),
                    "normalised importance": normalise_l1(views[key])}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _truth_bars(results: RunResults, out_dir: Path) -> list[Path]:
    """Per dataset with a global truth: normalised importances next to the normalised truth,
    each method in its colour of every figure, the truths in greys."""
    colours = run_colours(results)
    paths = []
    for dataset, cells in done_cells(results).groupby("dataset", sort=True):
        data = _truth_frame(results, cells)
        if data.empty:
            continue
        order = list(dict.fromkeys(data["feature"]))
        # mean over seeds here, so that seaborn only draws bars
        data = (data.groupby(["model", "feature", "measure"], sort=False)
                ["normalised importance"].mean().reset_index())
        labels = dict(zip(data["measure"], data["measure"].map(wrap_label)))
        data["measure"] = data["measure"].map(labels)
        models = sorted(data["model"].unique())
        measures = sorted(data["measure"].unique(), key=lambda m: (not m.startswith("truth"), m))
        greys = iter(["#000000", "#555555", "#999999", "#cccccc"] * len(measures))
        palette = {label: next(greys) if raw.startswith("truth")
                   else colours.get(method_of_label(raw), "#888888")
                   for raw, label in labels.items()}
        figure, axes = new_figure(nrows=len(models), height=3.8,
                                  width=min(MAX_WIDTH_IN - 3.0,
                                            0.12 * len(order) * len(measures) + 2.5))
        for i, (ax, model) in enumerate(zip(axes[:, 0], models)):
            sns.barplot(data=data[data["model"] == model], x="feature",
                        y="normalised importance", hue="measure", order=order,
                        hue_order=measures, palette=palette, errorbar=None, ax=ax,
                        legend=i == 0)
            ax.set_title(f"{dataset} | {model}: sum |v| = 1, mean over seeds", fontsize=FONT_PT)
        if axes[0, 0].get_legend() is not None:
            sns.move_legend(axes[0, 0], "upper left", bbox_to_anchor=(1.01, 1),
                            fontsize=FONT_PT, title=None, frameon=False,
                            ncols=1 + len(measures) // 16)
        paths.append(save_figure(figure, out_dir / f"accuracy_truth_{slug(dataset)}.png"))
    return paths


def build(results: RunResults, out_dir: Path) -> ReportSection:
    """Write ``model_scores.csv``, ``accuracy.csv``, ``accuracy_targets.csv``,
    ``accuracy_loco.csv``, and the figures ``accuracy_truth_<dataset>.png``,
    ``accuracy_targets.png`` and ``accuracy_loco.png``."""
    out_dir = Path(out_dir)
    scores = model_scores(results)
    comparison = truth_comparison(results)
    targets = target_table(results)
    beside_loco = loco_table(results)
    csvs = [write_csv(scores, out_dir / "model_scores.csv"),
            write_csv(comparison, out_dir / "accuracy.csv"),
            write_csv(targets, out_dir / "accuracy_targets.csv"),
            write_csv(beside_loco, out_dir / "accuracy_loco.csv")]
    figures = (_target_scatter(targets, out_dir) + _truth_bars(results, out_dir)
               + _loco_scatter(results, beside_loco, out_dir))
    shown = comparison.drop(columns=["key"]).dropna(axis=1, how="all")
    html = ("<h3>Model scores (test set, or the population for explicit distributions)</h3>"
            + table_html(scores)
            + "<h3>Each method next to its own theoretical target</h3>"
            + "<p>Per feature in accuracy_targets.csv; the last column says which quantity "
              "the method estimates.</p>"
            + table_html(target_summary(targets))
            + "<h3>Without a closed form: each method beside LOCO</h3>"
            + "<p>Profiles normalised to sum |v| = 1; within_2se: fraction of features within "
              "2 LOCO standard errors. Per feature in accuracy_loco.csv.</p>"
            + table_html(loco_summary(beside_loco))
            + "<h3>Importances against the ground truth</h3>" + table_html(shown))
    return ReportSection("Accuracy", csvs, figures, html)
