"""The report's first screen: the grid in one line and the product's three answers.

Panels (element ids ``panel-relate``, ``panel-trust``, ``panel-cost``), computed from the
stored results by :mod:`reports.summary`: how the measures relate (agreement matrix), which
to trust (ranking on the datasets with ground truth), what they cost (time as a multiple of
predict against recovery, Pareto front marked).
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from harness.run.results import RunResults

from .accuracy import target_summary, target_table, truth_comparison
from .base import FONT_PT, new_figure, png_min_font_px, save_figure, write_csv
from .correlation import global_agreement, local_summary
from .point_labels import place_point_labels
from .summary import agreement_matrix, cost_table, trust_ranking
from .timing import timing_table


def grid_line(cells: pd.DataFrame) -> str:
    """``D datasets × M models × S seeds × K methods = N cells: done / skipped / failed``."""
    if cells.empty:
        return "No cells in this run."
    counts = cells["status"].value_counts()
    failed = int(counts.get("error", 0) + counts.get("timeout", 0))
    other = int(counts.get("not_installed", 0))
    sizes = [cells[c].nunique() for c in ("dataset", "model", "seed", "method")]
    text = (f"{sizes[0]} datasets × {sizes[1]} models × {sizes[2]} seeds × {sizes[3]} methods "
            f"= {len(cells)} cells: {int(counts.get('done', 0))} done, "
            f"{int(counts.get('skipped', 0))} skipped, {failed} failed")
    return text + (f", {other} not installed" if other else "")


def _colour(value: float) -> str:
    """Background of an agreement cell: white at 0, blue towards 1, red towards -1."""
    if not np.isfinite(value):
        return "#f4f4f4"
    level = int(255 - 150 * min(1.0, abs(value)))
    return f"rgb({level},{level},255)" if value >= 0 else f"rgb(255,{level},{level})"


AGREEMENT_NOTE = (
    '<p class="note">Above the diagonal: Spearman correlation of the global importances (local '
    "methods as mean |local|); below: mean per-sample Spearman correlation of |local| "
    "importances (Sutera et al. 2021, Table 4); blank: not compared. Means over datasets, "
    'models and seeds; per dataset in the <a href="#section-correlation">Correlation</a> '
    "section and the dataset sections.</p>")


def agreement_html(matrix: pd.DataFrame, colours: dict[str, str],
                   note: str = AGREEMENT_NOTE) -> str:
    """The matrix as an HTML table with numbered rows and columns, then the numbered methods
    (in their figure colours), then ``note``."""
    if matrix.empty:
        return "<p><em>Fewer than two methods finished on a common dataset.</em></p>"
    head = "".join(f'<th title="{html.escape(m)}">{k + 1}</th>'
                   for k, m in enumerate(matrix.columns))
    rows = []
    for k, (method, row) in enumerate(matrix.iterrows()):
        cells = "".join(
            f'<td style="background:{_colour(v)}">{"" if not np.isfinite(v) else f"{v:.2f}"}'
            "</td>" for v in row.to_numpy(dtype=float))
        rows.append(f'<tr><th title="{html.escape(method)}">{k + 1}</th>{cells}</tr>')
    legend = "".join(
        f'<li><span class="swatch" style="background:{colours.get(m, "#888")}"></span>'
        f"{html.escape(m)}</li>" for m in matrix.index)
    return (f'<table class="matrix"><tr><th></th>{head}</tr>{"".join(rows)}</table>'
            f'<ol class="methods">{legend}</ol>{note}')


def trust_html(ranking: pd.DataFrame) -> str:
    """The ranking as a table that states its units and targets."""
    if ranking.empty:
        return ("<p><em>No dataset of this run has ground truth (e.g. led, xor, "
                "linear_gaussian).</em></p>")
    rows = []
    for _, r in ranking.iterrows():
        error = ("" if pd.isna(r["relative_error"]) else
                 f'{100 * r["relative_error"]:.1f} % ({html.escape(str(r["target"]))})')
        rows.append(f"<tr><td class=\"rank\">{int(r['rank'])}</td>"
                    f"<td>{html.escape(r['method'])}</td>"
                    f"<td>{r['precision_relevant']:.2f}</td><td>{error}</td></tr>")
    return ('<table class="table sortable"><tr><th title="by precision, then by the distance '
            'to its own target">rank</th><th>method</th>'
            "<th>precision</th><th>off its own target</th></tr>"
            f"{''.join(rows)}</table>"
            '<p class="note">Precision (a fraction): the share of the top-|R| features by '
            "|importance| that are in the relevant set R, mean over the cells of datasets with "
            "ground truth. Off its own target: the largest |estimate − target| over features "
            "as a percentage of the target's total, median over cells, for methods whose "
            "theoretical target the dataset knows (Thm 1 MDI, Sobol indices, Shapley "
            "effects, ...); units per method in the Accuracy section.</p>")


def cost_figure(table: pd.DataFrame, numbers: dict[str, int], colours: dict[str, str],
                path: Path) -> Path | None:
    """:func:`draw_cost_figure` saved to ``path`` (None where no method is scored)."""
    figure = draw_cost_figure(table, numbers, colours)
    return None if figure is None else save_figure(figure, path)


def draw_cost_figure(table: pd.DataFrame, numbers: dict[str, int],
                     colours: dict[str, str]) -> Figure | None:
    """Explain time / predict time (log) against precision, one numbered point per method
    (the numbers of the agreement matrix; no two overlap, :func:`place_point_labels`), the
    Pareto front ringed and joined."""
    ratio = table["ratio_to_predict"].astype(float)
    data = table[np.isfinite(ratio) & (ratio > 0)
                 & np.isfinite(table["precision_relevant"].astype(float))]
    if data.empty:
        return None
    figure, axes = new_figure(width=3.55, height=3.0)
    ax = axes[0, 0]
    # marker areas (pt^2) and edges (pt): the Pareto front's are larger and ringed
    size, edge = {True: 60, False: 36}, {True: 1.6, False: 0.5}
    for _, row in data.iterrows():
        on_front = bool(row["pareto"])
        ax.scatter(row["ratio_to_predict"], row["precision_relevant"], s=size[on_front],
                   color=colours.get(row["method"], "#444"), edgecolor="black",
                   linewidth=edge[on_front], zorder=3)
    front = data[data["pareto"].astype(bool)].sort_values("ratio_to_predict")
    ax.step(front["ratio_to_predict"], front["precision_relevant"], where="post",
            color="black", linewidth=1, zorder=2, label="Pareto front (ringed)")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("explain time / predict time\n(same rows, median over cells)",
                  fontsize=FONT_PT)
    ax.set_ylabel("relevant-set precision", fontsize=FONT_PT)
    ax.tick_params(labelsize=FONT_PT)
    ax.margins(x=0.12, y=0.12)  # room for the labels of the outer points
    ax.set_xlim(ax.get_xlim())  # final limits, from which the labels are placed
    ax.set_ylim(ax.get_ylim())
    place_point_labels(ax, data["ratio_to_predict"].astype(float).tolist(),
                       data["precision_relevant"].astype(float).tolist(),
                       [str(numbers.get(method, "")) for method in data["method"]],
                       [np.sqrt(size[bool(on)]) + edge[bool(on)] for on in data["pareto"]],
                       FONT_PT)
    missing = len(table) - len(data)
    if missing:
        ax.set_title(f"{missing} methods not scored (no ground truth or no timing)",
                     fontsize=FONT_PT, color="#555")
    # below the axes, where no label can fall
    ax.legend(fontsize=FONT_PT, loc="upper center", bbox_to_anchor=(0.5, -0.3),
              frameon=False)
    ax.grid(alpha=0.3)
    return figure


def build_first_screen(results: RunResults, out_dir: Path,
                       colours: dict[str, str]) -> tuple[str, list[Path]]:
    """The three panels' HTML and the files they wrote (CSV tables and the cost figure)."""
    matrix = agreement_matrix(global_agreement(results),
                              local_summary(results))
    ranking = trust_ranking(truth_comparison(results), target_summary(target_table(results)))
    cost = cost_table(timing_table(results), ranking)
    files = [write_csv(matrix.reset_index(names="method"), out_dir / "summary_agreement.csv"),
             write_csv(ranking, out_dir / "summary_trust.csv"),
             write_csv(cost, out_dir / "summary_cost.csv")]
    numbers = {method: k + 1 for k, method in enumerate(matrix.index)}
    figure = cost_figure(cost, numbers, colours, out_dir / "summary_cost.png")
    cost_panel = "<p><em>No timings.</em></p>"
    if figure is not None:
        files.append(figure)
        smallest = png_min_font_px(figure)
        cost_panel = (f'<a href="{figure.name}"><img src="{figure.name}" '
                      f'alt="explain time against relevant-set precision" '
                      f'data-min-font-px="{smallest:.2f}"></a>'
                      '<p class="note">One point per method, numbered as in the agreement '
                      "matrix (not by the trust table's ranks); ringed and joined: the "
                      "methods that no other method beats in both time and precision (the "
                      "Pareto front). Times are the explain "
                      "call alone, in multiples of the forest's own predict on the same rows "
                      '(<a href="#section-timing">Timing</a>).</p>')
    panels = [("panel-relate", "How do they relate?", agreement_html(matrix, colours), files[0]),
              ("panel-trust", "Which to trust?", trust_html(ranking), files[1]),
              ("panel-cost", "What do they cost?", cost_panel, files[2])]
    body = "".join(f'<section class="panel" id="{pid}"><h2>{title}</h2>{content}'
                   f'<p class="note">Table: <a href="{csv.name}">{csv.name}</a></p></section>'
                   for pid, title, content, csv in panels)
    return f'<div class="panels">{body}</div>', files


__all__ = ["agreement_html", "build_first_screen", "grid_line"]
