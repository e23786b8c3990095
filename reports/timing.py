"""Cost of each method: explain seconds, per-sample cost and the ratio to the model's predict.

``time_explain`` times ``method.explain`` alone and ``time_predict`` the fitted model's own
``predict`` (``predict_proba`` for classifiers) on the same rows, so their ratio says how many
predictions one explanation costs, independently of the machine's speed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, NullFormatter

from harness.run.results import RunResults

from .base import (
    GROUP,
    MAX_WIDTH_IN,
    ReportSection,
    done_cells,
    new_figure,
    save_figure,
    table_html,
    title_above,
    wrap_label,
    write_csv,
)
from .palette import run_colours

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
    return results.derived("timing_table", _timing_table)


def _timing_table(results: RunResults) -> pd.DataFrame:
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


def _ratio_figure(table: pd.DataFrame, out_dir: Path,
                  colours: dict[str, str]) -> list[Path]:
    """Explain time / predict time (log) per method: a bar at the median over datasets and
    seeds, a line from the minimum to the maximum, one panel per model."""
    ratio = pd.to_numeric(table["ratio_to_predict"], errors="coerce")
    data = table[np.isfinite(ratio) & (ratio > 0)]
    if data.empty:
        return []
    models = sorted(data["model"].unique())
    methods = sorted(data["method"].unique())
    width = min(5.5, MAX_WIDTH_IN / len(models))
    figure, axes = new_figure(ncols=len(models), width=width,
                              height=0.32 * len(methods) + 1.2, wspace=0.08)
    for j, (ax, model) in enumerate(zip(axes[0], models)):
        spread = (data[data["model"] == model].groupby("method")["ratio_to_predict"]
                  .agg(["median", "min", "max"]).reindex(methods))
        rows = np.arange(len(methods))
        ax.barh(rows, spread["median"], color=[colours.get(m, "#888") for m in methods],
                edgecolor="black", linewidth=0.4)
        ax.hlines(rows, spread["min"], spread["max"], color="black", linewidth=1)
        ax.axvline(1.0, color="0.4", linewidth=0.8, linestyle="--")
        ax.set_xscale("log")
        # plain labels (0.1, 1, 10): the default 10^k labels go through mathtext, ~0.3 s
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yticks(rows, [wrap_label(m, 34) for m in methods] if j == 0 else [])
        ax.invert_yaxis()
        ax.set_xlabel("explain time / predict time (same rows)")
        ax.set_title(wrap_label(model, 50))
        ax.grid(axis="x", alpha=0.3)
    title_above(figure, axes, "Cost of each method in multiples of the forest's own predict: "
                "bar at the median over datasets and seeds, line from min to max")
    return [save_figure(figure, out_dir / "timing_ratio_to_predict.png")]


def build(results: RunResults, out_dir: Path) -> ReportSection:
    """Write ``timing.csv`` and ``timing_ratio_to_predict.png`` into ``out_dir``."""
    out_dir = Path(out_dir)
    table = timing_table(results)
    csvs = [write_csv(table, out_dir / "timing.csv")]
    figures = _ratio_figure(table, out_dir, run_colours(results))
    summary = (table.groupby(["dataset", "model", "method"], sort=True)
               [["time_explain", "time_per_sample", "ratio_to_predict", "fit_time"]]
               .median().reset_index() if not table.empty else table)
    units = {"time_explain": "time_explain (s)", "time_per_sample": "time_per_sample (s)",
             "ratio_to_predict": "ratio_to_predict (× predict)", "fit_time": "fit_time (s)"}
    html = ("<h3>Median over seeds</h3><p class=\"note\">Seconds of the explain call alone; "
            "ratio: explain seconds per second of the forest's own predict on the same rows; "
            "fit: the forest's fit.</p>" + table_html(summary.rename(columns=units)))
    return ReportSection("Timing", csvs, figures, html)
