"""Scaling curves of ``python -m harness bench --scaling``: the figure and the exponents.

The bench writes its table as ``scaling.json`` (:func:`harness.bench.scaling.scaling_record`:
``settings``, ``points``, ``exponents``); this module draws one log-log panel per axis (n, p,
trees, depth), every method in its fixed colour (:func:`reports.palette.method_colours` over
the registered methods the table holds), and shows the fitted exponents beside the stated
ones. In a run folder that holds a ``scaling.json``, the run report shows both (:func:`build`);
elsewhere it adds nothing.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

from harness.core.complexity import stated_label

from .base import ReportSection, new_figure, save_figure, table_html, title_above, write_csv
from .palette import method_colours

TABLE = "scaling.json"
FIGURE = "scaling.png"
EXPONENTS_CSV = "scaling_exponents.csv"
TIME = "cpu_seconds"  # the column the bench fits its exponents on
AXIS_LABELS = {"n": "rows n", "p": "features p", "trees": "trees T",
               "depth": "mean leaf depth D"}


def read_scaling(path: Path) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """Settings, points and exponents of a ``scaling.json`` (plain JSON, never evaluated)."""
    record = json.loads(Path(path).read_text(encoding="utf-8"))
    return (record["settings"], pd.DataFrame(record["points"]),
            pd.DataFrame(record["exponents"]))


def scaling_figure(points: pd.DataFrame, path: Path) -> Path:
    """One log-log panel per axis: CPU seconds (what the exponents are fitted on) against
    size, one line per method in its fixed colour, one legend for all panels; skipped
    points are not drawn, a method with one point shows as a dot."""
    axes_names = list(dict.fromkeys(points["axis"]))
    colours = method_colours(points["method"])
    figure, axes = new_figure(ncols=len(axes_names), width=2.7, height=3.0, wspace=0.3)
    for ax, axis in zip(axes[0], axes_names):
        timed = points[(points["axis"] == axis) & (points["status"] == "ok")]
        for method, group in timed.groupby("method", sort=True):
            group = group.sort_values("x")
            ax.plot(group["x"], group[TIME], marker="o", markersize=3, linewidth=1.2,
                    color=colours[method])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(AXIS_LABELS.get(axis, axis))
        ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
        ax.set_title(f"{axis} axis")
        if axis == "depth":  # a short range: plain numbers, not powers of ten
            ax.xaxis.set_major_locator(FixedLocator([2, 3, 4, 6, 8, 10, 12]))
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
    axes[0][0].set_ylabel("explain CPU seconds (best of runs)")
    handles = [Line2D([], [], color=colours[m], marker="o", markersize=3, label=m)
               for m in sorted(colours)]
    figure.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.91, 0.88),
                  frameon=False, title="method")
    title_above(figure, axes, "Cost of each method along each axis (log-log; exponents in "
                              "the table)")
    return save_figure(figure, path)


def _exponents_html(settings: dict, exponents: pd.DataFrame) -> str:
    base = ", ".join(f"{k} = {v}" for k, v in settings["base"].items())
    note = (f"<p class=\"note\">Base point {html.escape(base)}; data "
            f"{html.escape(settings['dataset'])}; model {html.escape(settings['model'])}; "
            f"best of {settings['repeat']} runs; exponents: the order k of the growing part "
            f"of the CPU time, t ≈ a + c size^k fitted with its flat part a where an axis has "
            f"four points and grows {settings.get('floor_factor', 2.0):g}-fold, else "
            f"least-squares slopes of log CPU time on log size over the points above "
            f"{1e3 * settings['floor_seconds']:g} ms and "
            f"{settings.get('floor_factor', 2.0):g} times the axis's fastest point; points "
            f"predicted over {settings['budget_seconds']:g} s skipped (reasons in "
            f"scaling.csv); agreement within ±{settings['tolerance']:g} of the stated "
            f"exponent (or of the range of a sum's exponents)"
            + (f", judged over sizes spanning at least {settings['min_span']:g}x"
               if "min_span" in settings else "") + ".</p>")
    shown = exponents.pivot_table(index="method", columns="axis", values="exponent",
                                  aggfunc="first", dropna=False)
    if "stated_low" not in exponents:  # a table of a bench before stated ranges
        exponents = exponents.assign(stated_low=exponents["stated"])
    labels = exponents.assign(label=[stated_label(low, high) for low, high in zip(
        exponents["stated_low"].astype(float), exponents["stated"].astype(float))])
    stated = labels.pivot_table(index="method", columns="axis", values="label",
                                aggfunc="first", dropna=False)
    cells = pd.DataFrame(index=shown.index)
    for axis in shown.columns:
        cells[axis] = [_cell(shown.at[m, axis], stated.at[m, axis] if m in stated.index
                             and axis in stated.columns else "") for m in shown.index]
    return note + table_html(cells.reset_index())


def _cell(fitted: float, stated: str) -> str:
    text = "–" if not np.isfinite(fitted) else f"{fitted:.2f}"
    return text + (f" (stated {stated})" if isinstance(stated, str) and stated else "")


def write_scaling_report(table: Path) -> list[Path]:
    """The figure and the exponents CSV next to a ``scaling.json``; returns their paths."""
    table = Path(table)
    _, points, exponents = read_scaling(table)
    figure = scaling_figure(points, table.with_name(FIGURE))
    return [write_csv(exponents, table.with_name(EXPONENTS_CSV)), figure]


def build(results, out_dir: Path) -> list[ReportSection]:
    """The run report's "Scaling" section when the folder holds a ``scaling.json``; none
    otherwise (``results`` is not read: the table comes from the bench, not the store)."""
    table = Path(out_dir) / TABLE
    if not table.exists():
        return []
    settings, _, exponents = read_scaling(table)
    csv, figure = write_scaling_report(table)
    return [ReportSection("Scaling", csv_files=[csv], figure_files=[figure],
                          html=_exponents_html(settings, exponents))]
