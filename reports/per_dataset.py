"""One report section per dataset of the run: what the methods say about it, side by side.

Each section shows, for the dataset's first seed: (1) every method's global importances,
normalised to ``sum_j |v_j| = 1`` with their std scaled by the same factor, then the raw
values with a note beside any value outside the range of the population quantity its
method estimates (``Method.value_range``; all seeds are checked); (2) one local method's
values as shap's beeswarm (summary) plot; (3) the agreement between methods
(mean per-sample Spearman of |local|, Sutera et al. 2021, Table 4; Spearman of the global
views); (4) how that agreement moves with K = max_features, when models differ in K only.
The range checks live in :mod:`reports.value_ranges`, the agreement tables in
:mod:`reports.dataset_agreement` and the figures in :mod:`reports.dataset_figures`.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from harness.core import registry
from harness.run.results import RunResults, cell_global_view

from .base import (
    ReportSection,
    done_cells,
    figure_html,
    normalise_l1,
    save_figure,
    slug,
    table_html,
    write_csv,
)
from .correlation import global_agreement, local_matrix, local_summary
from .dataset_agreement import agreement_by_model, k_table
from .dataset_figures import beeswarm, importance_bars, k_lines
from .first_screen import agreement_html
from .palette import run_colours
from .value_ranges import range_html, range_notes

MAX_BAR_FEATURES = 15
MAX_SWARM_FEATURES = 12
#: Local methods shown as a beeswarm, first present first (then any other, by name).
LOCAL_PREFERENCE = ("treeshap", "saabas", "local_mdi")
SUMMED_OVER = "|value| summed over the"  # ... classes, or outputs of a multi-output regressor
AGREEMENT_CAPTION = (
    '<p class="note">Above the diagonal: Spearman correlation of the global importances, '
    "local methods as mean |local|; below: mean over the explained samples of the Spearman "
    "correlation of |local| (Sutera et al. 2021, Table 4). Means over seeds; blank: not "
    "compared.</p>")
K_CAPTION = ("One line per pair of methods (colour of the first, dashed with the colour of the "
             "second), one point per model; means over seeds.")


@dataclass
class RunContext:
    """What every section shares: the run's method colours and its agreement tables."""

    colours: dict[str, str]
    local_pairs: pd.DataFrame  # summarise_local, Spearman rows
    global_pairs: pd.DataFrame  # global_agreement
    datasets: dict[tuple[str, int], tuple[np.ndarray | None, str]] = field(default_factory=dict)


def build(results: RunResults, out_dir: Path) -> list[ReportSection]:
    """One section per dataset spec of the run, titled ``Dataset: <spec>``.

    Files per dataset (``<d>`` its :func:`slug`): ``dataset_<d>_importances.csv`` (every done
    cell of the first seed, per feature: raw and normalised values and std) and its figure,
    ``dataset_<d>_local.csv`` (the beeswarm's dots) and its figure, and the figures
    ``dataset_<d>_agreement.png`` and ``dataset_<d>_k.png`` when there is something to draw.
    """
    out_dir = Path(out_dir)
    cells = results.cells_table()
    if cells.empty:
        return []
    local_pairs = local_summary(results)
    context = RunContext(run_colours(results),
                         local_pairs[local_pairs["correlation"] == "spearman"],
                         global_agreement(results))
    done = done_cells(results)
    return [dataset_section(results, dataset, done[done["dataset"] == dataset], context, out_dir)
            for dataset in sorted(cells["dataset"].unique())]


def dataset_section(results: RunResults, dataset: str, cells: pd.DataFrame,
                    context: RunContext, out_dir: Path) -> ReportSection:
    """The section of one dataset from its done cells (every seed)."""
    section = ReportSection(f"Dataset: {dataset}")
    if cells.empty:
        section.html = "<p><em>No cell finished on this dataset.</em></p>"
        return section
    stem = out_dir / f"dataset_{slug(dataset)}"
    seed = int(cells["seed"].min())
    shown = cells[cells["seed"] == seed]

    def add_csv(frame: pd.DataFrame, suffix: str) -> None:
        section.csv_files.append(write_csv(frame, Path(f"{stem}_{suffix}.csv")))

    def add_figure(built, suffix: str, caption: str) -> str:
        path = save_figure(built, Path(f"{stem}_{suffix}.png"))
        section.figure_files.append(path)
        return figure_html(path, caption)

    table = importance_table(results, shown)
    add_csv(table, "importances")
    features = top_features(table, MAX_BAR_FEATURES)
    cut = len(features) < table["feature"].nunique()
    bars = importance_bars(table, features, context.colours,
                           f"{dataset}: global importances, seed {seed}")
    parts = ["<h3>Global importances</h3>",
             add_figure(bars, "importances", _bars_caption(seed, features, table, cut)),
             f"<h4>Raw values (seed {seed}{', features as in the figure' if cut else ''})</h4>",
             table_html(values_table(table, features)),
             *range_html(range_notes(results, cells))]

    dots = local_dots(results, shown, context)
    parts.append("<h3>Local values</h3>")
    if dots.empty:
        parts.append("<p><em>No local method finished on this dataset.</em></p>")
    else:
        add_csv(dots, "local")
        method, label = dots["method"].iloc[0], dots["value_label"].iloc[0]
        summed = f"\n({label.split(' (')[0]})" if label.startswith(SUMMED_OVER) else ""
        swarm = beeswarm(dots, f"{dataset}: {method} local values, seed {seed}{summed}")
        parts.append(add_figure(swarm, "local", _swarm_caption(dots)))

    matrices = agreement_by_model(cells, context.local_pairs, context.global_pairs)
    if matrices:
        parts.append("<h3>Agreement between methods</h3>")
        add_csv(pd.concat([m.reset_index(names="method").assign(model=model)
                           for model, m in matrices]), "agreement")
        parts += [f"<h4>{html.escape(model)}</h4>"
                  + agreement_html(matrix, context.colours, AGREEMENT_CAPTION)
                  for model, matrix in matrices]
    moves = k_table(results, cells, context.local_pairs, context.global_pairs)
    if not moves.empty:
        lines = k_lines(moves, context.colours, f"{dataset}: agreement against K")
        parts += ["<h3>Agreement against K</h3>", add_figure(lines, "k", K_CAPTION)]
    section.html = "\n".join(parts)
    return section


def importance_table(results: RunResults, cells: pd.DataFrame) -> pd.DataFrame:
    """The global view of each cell, per feature: ``value`` and ``std`` as stored (local
    methods: mean |local| and its standard error over the explained samples), and
    ``normalised`` and ``normalised_std``, both multiplied by ``1 / sum_j |value_j|``."""
    frames = []
    for _, cell in cells.iterrows():
        arrays = results.arrays(cell["key"])
        weights = arrays["row_weights"]
        view = cell_global_view(arrays, cell["scope"])
        if cell["scope"] == "local" and weights is not None:
            # the rows are a distribution's support: the weighted mean's standard error,
            # over the effective number of rows (sum w)^2 / sum w^2
            magnitude = local_matrix(arrays["values"])
            w = np.asarray(weights, dtype=float) / np.sum(weights)
            spread = np.sqrt(w @ (magnitude - view) ** 2)
            std = spread * math.sqrt(float(w @ w))
            std_of = "standard error of the weighted mean |local| over the explained samples"
        elif cell["scope"] == "local":
            magnitude = local_matrix(arrays["values"])
            n = len(magnitude)
            std = magnitude.std(axis=0, ddof=1) / math.sqrt(n) if n > 1 else np.nan
            std_of = "standard error of mean |local| over the explained samples"
        else:
            std = np.nan if arrays["std"] is None else np.asarray(arrays["std"], dtype=float)
            std_of = "" if arrays["std"] is None else results.extra(cell["key"]).get(
                "std_of", "as returned by the method")
        total = np.abs(view).sum()
        frames.append(pd.DataFrame({
            **{c: cell[c] for c in ("dataset", "model", "seed", "method", "method_name",
                                    "scope", "unit")},
            "feature": results.feature_names(cell["key"]), "value": view, "std": std,
            "std_of": std_of, "normalised": normalise_l1(view),
            "normalised_std": std / total if total > 0 else np.nan}))
    return pd.concat(frames, ignore_index=True)


def top_features(table: pd.DataFrame, limit: int) -> list[str]:
    """The ``limit`` features of largest mean normalised importance over models and methods,
    largest first (ties and all-NaN features: in feature order)."""
    means = table.groupby("feature", sort=False)["normalised"].mean()
    return list(means.sort_values(ascending=False, kind="stable").index[:limit])


def values_table(table: pd.DataFrame, features: list[str]) -> pd.DataFrame:
    """Raw values, a row per (model, method) with its unit, a column per feature."""
    data = table[table["feature"].isin(features)].assign(unit=table["unit"].fillna(""))
    wide = data.pivot(index=["model", "method", "unit"], columns="feature", values="value")
    return wide[features].reset_index().rename_axis(columns=None)


def _local_cell(cells: pd.DataFrame) -> pd.Series | None:
    """The local cell shown as a beeswarm: by :data:`LOCAL_PREFERENCE`, then by name."""
    local = cells[cells["scope"] == "local"]
    if local.empty:
        return None
    order = {name: k for k, name in enumerate(LOCAL_PREFERENCE)}
    rank = local["method_name"].map(lambda name: order.get(name, len(order)))
    return local.assign(_rank=rank).sort_values(["_rank", "method"], kind="stable").iloc[0]


def _reload_features(results: RunResults, cell: pd.Series) -> tuple[np.ndarray | None, str]:
    """The dataset's X, generated again from its spec and seed (datasets are data: seeded
    generators or bundled files), or None and why not."""
    stored = results.cells.loc[results.cells["key"] == cell["key"]].iloc[0]
    try:
        params = json.loads(stored.get("dataset_params") or "{}")
        dataset = registry.make_dataset(cell["dataset_name"], **params).load(int(cell["seed"]))
    except Exception as exc:  # e.g. a plugin's dataset that is not installed here
        return None, f"the dataset cannot be loaded here ({type(exc).__name__}: {exc})"
    if list(dataset.feature_names) != results.feature_names(cell["key"]):
        return None, "the dataset loaded here has other features than the stored results"
    return np.asarray(dataset.X, dtype=float), ""


def _ranks(column: np.ndarray) -> np.ndarray:
    """Ranks scaled to [0, 1] (ties averaged); 0.5 for a constant column."""
    if len(column) < 2 or np.ptp(column) == 0:
        return np.full(len(column), 0.5)
    return (stats.rankdata(column) - 1) / (len(column) - 1)


def local_dots(results: RunResults, cells: pd.DataFrame, context: RunContext) -> pd.DataFrame:
    """The beeswarm's dots: for each model, the :func:`_local_cell`'s values on the
    :data:`MAX_SWARM_FEATURES` features of largest mean |value| (each model's mean |value|
    normalised to sum 1, averaged over models, so that every panel has the same rows), one
    row per (feature, explained sample) with the plotted ``value``, the sample's
    ``feature_value`` and its ``colour`` (rank within the feature, in [0, 1]; NaN when the
    dataset cannot be loaded again).

    Values of shape (n, p, classes) are shown as ``sum_k |value_k|`` (their signed sum over
    classes of a probability decomposition is ~0), see :func:`local_matrix`.
    """
    chosen = [(model, cell) for model, group in cells.groupby("model", sort=True)
              if (cell := _local_cell(group)) is not None]
    if not chosen:
        return pd.DataFrame()
    loaded = [(model, cell, results.arrays(cell["key"])) for model, cell in chosen]
    names = results.feature_names(chosen[0][1]["key"])
    weight = np.mean([normalise_l1(cell_global_view(arrays, "local"))
                      for _, _, arrays in loaded], axis=0)
    order = np.argsort(-np.nan_to_num(weight, nan=-1.0), kind="stable")[:MAX_SWARM_FEATURES]
    frames = []
    for model, cell, arrays in loaded:
        values = local_matrix(arrays["values"], signed=True)
        rows = arrays["sample_index"]
        rows = np.arange(len(values)) if rows is None else np.asarray(rows)
        where = (cell["dataset"], int(cell["seed"]))
        if where not in context.datasets:
            context.datasets[where] = _reload_features(results, cell)
        X, why = context.datasets[where]
        if X is not None and (rows.size and rows.max() >= len(X)):
            X, why = None, "the explained rows are not rows of the dataset loaded here"
        for rank, j in enumerate(order):
            feature_value = X[rows, j] if X is not None else np.full(len(rows), np.nan)
            frames.append(pd.DataFrame({
                "model": model, "seed": cell["seed"], "method": cell["method"],
                "feature": names[j], "rank": rank, "sample": rows, "value": values[:, j],
                "feature_value": feature_value,
                "colour": _ranks(feature_value) if X is not None else np.nan,
                "value_label": _value_label(cell, np.ndim(arrays["values"])),
                "no_colour_because": why}))
    return pd.concat(frames, ignore_index=True)


def _value_label(cell: pd.Series, ndim: int) -> str:
    """What the beeswarm's x axis shows, in the cell's unit."""
    unit = f" ({cell['unit']})" if isinstance(cell["unit"], str) and cell["unit"] else ""
    explains = cell["explains"] if isinstance(cell["explains"], str) else ""
    if ndim == 3:
        columns = "outputs" if "outputs" in explains else "classes"
        return f"{SUMMED_OVER} {columns}{unit}"
    return f"{explains or 'local value'}{unit}"


def _bars_caption(seed: int, features: list[str], table: pd.DataFrame, cut: bool) -> str:
    cells = table.drop_duplicates(["model", "method"])
    bars = [f"{', '.join(sorted(set(group['method'])))}: {std_of}"
            for std_of, group in cells[cells["std_of"] != ""].groupby("std_of", sort=True)]
    return (f"Seed {seed}. Each method's values divided by their sum of |values| (sum |v| = 1), "
            "its std by the same factor; local methods as mean |local|. Error bars (std): "
            + ("; ".join(bars) if bars else "none stored") + "."
            + (f" The {len(features)} features of largest mean normalised importance of "
               f"{table['feature'].nunique()}; all in the CSV." if cut else ""))


def _swarm_caption(dots: pd.DataFrame) -> str:
    why = sorted({w for w in dots["no_colour_because"] if w})
    colour = ("Colour: the feature's value for that sample, ranked within the feature (blue: "
              "low, red: high)." if not why else f"Grey dots: no feature values ({why[0]}).")
    return (f"{dots['method'].iloc[0]}: one dot per explained sample, at its local value; rows: "
            f"the {dots['rank'].max() + 1} features of largest mean |value|, sorted. {colour}")
