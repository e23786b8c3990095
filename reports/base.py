"""What every report shares: the section record, file names, CSV, HTML and figure helpers.

Figures are :class:`matplotlib.figure.Figure` objects rendered with the Agg backend, never
made through ``pyplot``, so that writing reports neither switches the caller's backend nor
leaves figures registered in pyplot's global state.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from scipy import stats

from harness.run.results import RunResults, cell_global_view

GROUP = ["dataset", "model", "seed"]
FIGURE_DPI = 100
#: Margin around a saved figure's artists, in inches (:func:`save_figure`).
PAD_INCHES = 0.15
#: Smallest font of the report's figures, in points: 12.5 px at 100 dpi, so that a figure
#: shrunk to 80 % of its width on the page still shows every text at 10 px or more.
FONT_PT = 9
#: Widest figure, in inches: at 100 dpi it fits the page's main column (about 1200 px)
#: without being shrunk.
MAX_WIDTH_IN = 11.5
#: Matplotlib settings under which every report figure is drawn (:func:`figure_style`).
FIGURE_STYLE = {"font.size": FONT_PT, **{key: FONT_PT for key in (
    "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize",
    "legend.fontsize", "legend.title_fontsize", "figure.titlesize")}}


@dataclass
class ReportSection:
    """One report's contribution to ``index.html``.

    Attributes
    ----------
    title : str
        Heading of the section.
    csv_files : list of Path
        Tables written by the report, linked from the page.
    figure_files : list of Path
        Figures written by the report, embedded in the page.
    html : str
        Fragment (tables, notes) shown under the heading.
    error : str or None
        Set by the index when the report raised; its text is shown instead of the content.
    """

    title: str
    csv_files: list[Path] = field(default_factory=list)
    figure_files: list[Path] = field(default_factory=list)
    html: str = ""
    error: str | None = None

    @property
    def files(self) -> list[Path]:
        """Every file of the section, tables first."""
        return [*self.csv_files, *self.figure_files]


def slug(text: str) -> str:
    """A file-name-safe version of a spec such as ``led[noise=0.1]`` (``led_noise_0.1``)."""
    cleaned = re.sub(r"[^A-Za-z0-9.+-]+", "_", str(text)).strip("_.")
    return cleaned or "unnamed"


def wrap_label(text: str, width: int = 26) -> str:
    """Break a long spec over lines at ``[`` and after ``,`` (for tick labels and legends)."""
    lines = [""]
    for piece in re.split(r"(?<=,)|(?=\[)", str(text)):
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines.append(piece)
        else:
            lines[-1] += piece
    return "\n".join(lines)


def done_cells(results: RunResults, scope: str | None = None) -> pd.DataFrame:
    """Rows of ``results.cells_table()`` with status ``done`` (and the given scope)."""
    cells = results.cells_table()
    keep = cells["status"] == "done"
    if scope is not None:
        keep &= cells["scope"] == scope
    return cells[keep].sort_values([*GROUP, "method"], kind="stable").reset_index(drop=True)


def global_views(results: RunResults, cells: pd.DataFrame) -> dict[str, np.ndarray]:
    """:func:`harness.run.results.cell_global_view` of each cell of ``cells`` (done cells), by key.

    Computed from the stored arrays rather than ``importances_table``, which builds a wide
    per-feature frame that reports do not need.
    """
    return {key: cell_global_view(results.arrays(key), scope)
            for key, scope in zip(cells["key"], cells["scope"], strict=True)}


#: How a local method is marked among global views (it is summarised as mean |local|)
LOCAL_SUFFIX = " (mean |local|)"


def global_label(method: str, scope: str) -> str:
    """How a cell is named among global views: its method, marked when summarising locals."""
    return method if scope == "global" else f"{method}{LOCAL_SUFFIX}"


def method_of_label(label: str) -> str:
    """The method of a :func:`global_label`."""
    return label.removesuffix(LOCAL_SUFFIX)


def _constant_rows(x: np.ndarray) -> np.ndarray:
    # Relative tolerance: a row of identical floats can centre to ~1e-17 residues.
    return np.ptp(x, axis=1) <= 1e-12 * np.abs(x).max(axis=1)


def rowwise_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation between matching rows of two (n, p) arrays.

    ``r_i = <a_i - mean(a_i), b_i - mean(b_i)> / (||a_i - mean(a_i)|| ||b_i - mean(b_i)||)``,
    NaN where either row is constant (the correlation is undefined there).
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    undefined = _constant_rows(a) | _constant_rows(b)
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    r = np.clip(r, -1.0, 1.0)
    r[undefined] = np.nan
    return r


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman correlation of two profiles (NaN when either is constant)."""
    if a.shape != b.shape or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(stats.spearmanr(a, b).statistic)


def rowwise_spearman(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman correlation between matching rows: Pearson of the (average-tie) ranks."""
    return rowwise_pearson(stats.rankdata(a, axis=1), stats.rankdata(b, axis=1))


def normalise_l1(values: np.ndarray) -> np.ndarray:
    """``values / sum(|values|)`` (all NaN when the sum is 0), as in Sutera et al. 2021, Fig. 2."""
    values = np.asarray(values, dtype=float)
    total = np.abs(values).sum()
    return values / total if total > 0 else np.full_like(values, np.nan)


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    """Write ``frame`` without its index and return ``path``."""
    frame.to_csv(path, index=False)
    return path


#: Tables longer than this are collapsed under a one-line summary (one click opens them)
OPEN_ROWS = 20


def table_html(frame: pd.DataFrame, max_rows: int = 500) -> str:
    """An escaped HTML table of ``frame`` (floats with 4 significant digits); beyond
    ``OPEN_ROWS`` rows it is collapsed, so that the page stays short enough to scan."""
    if frame.empty:
        return "<p><em>No rows.</em></p>"
    n_rows, note = len(frame), ""
    if n_rows > max_rows:
        note = f"<p><em>First {max_rows} of {n_rows} rows; see the CSV.</em></p>"
        frame = frame.head(max_rows)
    table = note + ('<div class="table-wrap">'
                    + frame.to_html(index=False, na_rep="", float_format="{:.4g}".format,
                                    border=0, classes="table") + "</div>")
    if n_rows <= OPEN_ROWS:
        return table
    return f"<details><summary>Table of {n_rows} rows (open)</summary>{table}</details>"


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 5.0, height: float = 4.0,
               share: bool = False, wspace: float = 0.3,
               hspace: float = 0.45) -> tuple[Figure, np.ndarray]:
    """A figure outside pyplot and its (nrows, ncols) array of axes.

    ``width`` and ``height`` are per panel; ``share``: common x and y axes with tick labels
    on the outer panels only; ``wspace`` and ``hspace``: gaps between panels as fractions of
    a panel. No layout engine: :func:`save_figure` crops to the drawn artists instead, which
    costs one layout pass where constrained layout costs several (~40% of the rendering time).

    The figure keeps matplotlib's base canvas until :func:`save_figure` renders it with Agg:
    on the base canvas, draws that seaborn forces while plotting (``heatmap`` draws the whole
    figure to check tick label overlaps) are no-ops, which halves the cost of a heat map.
    """
    figure = Figure(figsize=(width * ncols, height * nrows))
    axes = figure.subplots(nrows, ncols, squeeze=False, sharex=share, sharey=share,
                           gridspec_kw={"wspace": wspace, "hspace": hspace})
    return figure, axes


def subplots(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float] = (6.4, 4.8),
             layout: str | None = None, **kwargs) -> tuple[Figure, object]:
    """``pyplot.subplots`` without pyplot: a figure that no global state keeps alive, axes
    squeezed as pyplot squeezes them (``sharex``/``sharey``/``gridspec_kw`` pass through).
    Save it with :func:`save_figure`. For targets that size the whole figure; reports that
    size panels use :func:`new_figure`."""
    figure = Figure(figsize=figsize, layout=layout)
    return figure, figure.subplots(nrows, ncols, **kwargs)


def title_above(figure: Figure, axes: np.ndarray, text: str) -> None:
    """A figure title just above the top row of panels (``suptitle`` sits at the top of the
    figure, far above the panels of a tall grid without a layout engine)."""
    top = max(ax.get_position().y1 for ax in axes[0])
    figure.text(0.5, top + 0.45 / figure.get_figheight(), text, ha="center", va="bottom",
                fontsize=10)


def save_figure(figure: Figure, path: Path) -> Path:
    """Render ``figure`` with Agg into the PNG file ``path``, cropped (or extended) to its
    artists with a margin of ``PAD_INCHES``, and return ``path``.

    The same pixels as ``savefig(bbox_inches="tight")`` for one draw fewer: matplotlib
    finds the tight box by drawing the whole figure once without rendering, then draws it
    again into the file. Without a layout engine nothing moves at draw time that
    ``Figure.get_tightbbox`` does not settle itself (view limits, ticks, aspect, title
    positions), so the box is asked for directly and handed to ``savefig``; a figure with a
    layout engine (constrained, tight) is laid out by that first draw and keeps it.
    Nothing to close afterwards: the figure was never registered with pyplot, so it is
    freed with its last reference (clearing it first would only cost time).
    """
    smallest = min_font_px(figure)
    metadata = {} if smallest is None else {"min_font_px": f"{smallest:.2f}"}
    crop: str | Bbox = "tight"
    if figure.get_layout_engine() is None:
        canvas, dpi = figure.canvas, figure.dpi
        try:  # text measured by Agg at FIGURE_DPI, as savefig measures it
            figure.set_dpi(FIGURE_DPI)
            renderer = FigureCanvasAgg(figure).get_renderer()
            crop = figure.get_tightbbox(renderer).padded(PAD_INCHES)
        finally:  # the base canvas keeps seaborn's draws while plotting free (new_figure)
            figure.set_canvas(canvas)
            figure.set_dpi(dpi)
    figure.savefig(path, dpi=FIGURE_DPI, backend="agg", bbox_inches=crop,
                   pad_inches=PAD_INCHES, metadata=metadata)
    return path


def min_font_px(figure: Figure) -> float | None:
    """Size, in pixels at the saved resolution, of the smallest visible text of ``figure``
    (None without text). Stored in each PNG's metadata (``min_font_px``), so that the page
    can say, and a browser test check, how large the text is where the figure is shown."""
    sizes = [text.get_fontsize() for text in figure.findobj(Text)
             if text.get_visible() and text.get_text().strip()
             and (text.axes is None or text.axes.get_visible())]
    return min(sizes) * FIGURE_DPI / 72 if sizes else None


def png_min_font_px(path: Path) -> float | None:
    """The ``min_font_px`` stored by :func:`save_figure` in a PNG (None if absent)."""
    from PIL import Image

    with Image.open(path) as image:
        value = getattr(image, "text", {}).get("min_font_px")
    return None if value is None else float(value)


def figure_html(path: Path, caption: str | None = None) -> str:
    """A figure of the page: the PNG linked to itself, its caption, and the size of its
    smallest text at natural size (``data-min-font-px``, from :func:`save_figure`)."""
    name = html.escape(path.name)
    text = html.escape(caption if caption is not None else path.name)
    smallest = png_min_font_px(path) if path.is_file() else None
    font = "" if smallest is None else f' data-min-font-px="{smallest:.2f}"'
    return (f'<figure><a href="{name}"><img src="{name}" alt="{text}"{font}></a>'
            f"<figcaption>{text}</figcaption></figure>")
