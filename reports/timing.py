"""Cost of each method: explain seconds, per-sample cost and the ratio to the model's predict.

``time_explain`` times ``method.explain`` alone and ``time_predict`` the fitted model's own
``predict`` (``predict_proba`` for classifiers) on the same rows, so their ratio says how many
predictions one explanation costs, independently of the machine's speed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FuncFormatter, NullFormatter

from harness.run.results import RunResults

from .base import (
    GROUP,
    ReportSection,
    done_cells,
    new_figure,
    save_figure,
    table_html,
    wrap_label,
    write_csv,
)

TIMING_COLUMNS = [
    "key", *GROUP, "method", "method_name", "scope", "n_explained", "time_explain",
    "time_per_sample", "time_predict", "ratio_to_predict", "fit_time",
]


def timing_table(results: RunResults) -> pd.DataFrame:
    """One row per done cell with its timings.

    Columns: ``time_explain`` (s), ``time_per_sample = time_explain / n_explained`` (s),
    ``time_predict`` (s), ``ratio_to_predict = time_explain / time_predict`` (NaN when the
    predict time is 0 or missing), the model's ``fit_time`` (s) and the cell's ``p_*``
    parameters (for scaling with n, p and the number of trees).
    """
    cells = done_cells(results)
    if cells.empty:
        return pd.DataFrame(columns=TIMING_COLUMNS)
    table = pd.DataFrame({c: cells[c] if c in cells else np.nan for c in TIMING_COLUMNS})
    for column in ("n_explained", "time_explain", "time_predict", "fit_time"):
        table[column] = pd.to_numeric(table[column], errors="coerce").astype(float)
    n_explained = table["n_explained"].where(table["n_explained"] > 0)
    predict = table["time_predict"].where(table["time_predict"] > 0)
    table["time_per_sample"] = table["time_explain"] / n_explained
    table["ratio_to_predict"] = table["time_explain"] / predict
    params = [c for c in cells.columns if c.startswith("p_")]
    return pd.concat([table, cells[params]], axis=1)


def _ratio_figure(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Bar plot of the ratio to predict (log scale) per method, hued by dataset, per model."""
    ratio = pd.to_numeric(table["ratio_to_predict"], errors="coerce")
    data = table[np.isfinite(ratio) & (ratio > 0)]
    if data.empty:
        return []
    data = data.assign(method=data["method"].map(lambda m: wrap_label(m, 16)))
    models = sorted(data["model"].unique())
    n_methods = data["method"].nunique()
    figure, axes = new_figure(ncols=len(models), width=max(5.0, 1.1 * n_methods + 1.5),
                              height=4.5)
    for i, (ax, model) in enumerate(zip(axes[0], models)):
        sns.barplot(data=data[data["model"] == model], x="method", y="ratio_to_predict",
                    hue="dataset", errorbar=("pi", 100), ax=ax, legend=i == 0,
                    order=sorted(data["method"].unique()))
        ax.set_yscale("log")
        # plain labels (0.1, 1, 10): the default 10^k labels go through mathtext, ~0.3 s
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set(xlabel="", ylabel="explain time / predict time (same rows)")
        ax.set_title(f"{model}\n(bars: mean over seeds, lines: min-max)", fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    if axes[0, 0].get_legend() is not None:
        sns.move_legend(axes[0, 0], "upper left", fontsize=7, title="dataset")
    return [save_figure(figure, out_dir / "timing_ratio_to_predict.png")]


def build(results: RunResults, out_dir: Path) -> ReportSection:
    """Write ``timing.csv`` and ``timing_ratio_to_predict.png`` into ``out_dir``."""
    out_dir = Path(out_dir)
    table = timing_table(results)
    csvs = [write_csv(table, out_dir / "timing.csv")]
    figures = _ratio_figure(table, out_dir)
    summary = (table.groupby(["dataset", "model", "method"], sort=True)
               [["time_explain", "time_per_sample", "ratio_to_predict", "fit_time"]]
               .median().reset_index() if not table.empty else table)
    html = "<h3>Median over seeds</h3>" + table_html(summary)
    return ReportSection("Timing", csvs, figures, html)
