"""The figures of a dataset's report section, drawn from tidy tables (no store access).

Every builder returns the :class:`~matplotlib.figure.Figure` unsaved (the caller saves it with
:func:`reports.base.save_figure`), so that tests can inspect its artists. Text is at least
:data:`FONT_PT` points: at 100 dpi that is 12.5 px, and every figure stays narrower than
:data:`MAX_WIDTH_IN` so that the page (a ~1200 px column) shows it at its natural size.
Methods keep the colour :func:`reports.palette.method_colours` gives them in the whole run.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.legend_handler import HandlerTuple
from matplotlib.patches import Patch

from .base import method_of_label, new_figure, title_above, wrap_label

FONT_PT = 9
MAX_WIDTH_IN = 11.0
NEUTRAL = "#888888"
#: Methods drawn as bars per feature; more are drawn as dots (:func:`importance_bars`)
MAX_BAR_METHODS = 6


def _grid(n_panels: int, width: float, height: float, wspace: float = 0.45,
          share: bool = False) -> tuple[Figure, list]:
    """Panels in rows of at most two; unused axes are hidden."""
    ncols = min(2, n_panels)
    figure, axes = new_figure(ncols=ncols, nrows=-(-n_panels // ncols), width=width,
                              height=height, wspace=wspace, share=share)
    for ax in axes.ravel()[n_panels:]:
        ax.set_visible(False)
    return figure, list(axes.ravel()[:n_panels])


def _bottom_legend(figure: Figure, axes: list, handles: list, gap_in: float = 0.55) -> None:
    """A legend under the lowest panels (beside them it would make the figure too wide)."""
    bottom = min(ax.get_position().y0 for ax in axes)
    figure.legend(handles=handles, loc="upper center", fontsize=FONT_PT, frameon=False,
                  ncol=min(3, len(handles)),
                  bbox_to_anchor=(0.5, bottom - gap_in / figure.get_figheight()))


def importance_bars(table: pd.DataFrame, features: list[str], colours: dict[str, str],
                    title: str) -> Figure:
    """Horizontal bars of the normalised global importances, a panel per model.

    ``table`` has columns ``model``, ``method``, ``feature``, ``normalised`` and
    ``normalised_std`` (NaN: no error bar); ``features`` are drawn top to bottom in the given
    order, one bar per method within each feature, in the method's colour. Beyond
    ``MAX_BAR_METHODS`` methods, a dot with its error bar per method replaces the bar, closer
    together, so that a grid of 18 methods keeps a figure that fits the screen's height.
    """
    models = sorted(table["model"].unique())
    methods = sorted(table["method"].unique())
    dots = len(methods) > MAX_BAR_METHODS
    per_method = 0.03 if dots else 0.075  # inches: 6 methods x 15 features under 9 inches
    height = max(2.2, len(features) * (per_method * len(methods) + 0.2))
    # shared axes: the same features in the same order, on the same normalised scale
    figure, axes = _grid(len(models), width=4.0, height=height, wspace=0.08, share=True)
    step = 0.8 / len(methods)
    rows = {feature: k for k, feature in enumerate(features)}
    for ax, model in zip(axes, models):
        data = table[(table["model"] == model) & table["feature"].isin(rows)]
        for m, method in enumerate(methods):
            own = data[data["method"] == method]
            if own.empty:
                continue
            y = own["feature"].map(rows).to_numpy() - 0.4 + (m + 0.5) * step
            error = own["normalised_std"].to_numpy(dtype=float)
            error = np.where(np.isfinite(error), error, 0.0)
            if dots:
                ax.errorbar(own["normalised"], y, xerr=error, fmt="o", markersize=4,
                            color=colours.get(method, NEUTRAL), markeredgecolor="black",
                            markeredgewidth=0.3, elinewidth=0.8, ecolor="#333333")
            else:
                ax.barh(y, own["normalised"], height=step * 0.9,
                        color=colours.get(method, NEUTRAL), xerr=error,
                        error_kw={"elinewidth": 0.8, "capsize": 1.5, "ecolor": "#333333"})
        ax.set_yticks(range(len(features)), [wrap_label(f, 20) for f in features])
        ax.set_ylim(len(features) - 0.5, -0.5)  # the most important feature on top
        ax.axvline(0, color="black", linewidth=0.6)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(labelsize=FONT_PT)
        ax.set_xlabel("normalised importance (sum |v| = 1)", fontsize=FONT_PT)
        ax.set_title(wrap_label(model, 32), fontsize=FONT_PT + 1)
    handles = [Patch(color=colours.get(m, NEUTRAL), label=m) for m in methods]
    _bottom_legend(figure, axes, handles)
    title_above(figure, np.array([axes[:2]]), title)
    return figure


def swarm_offsets(x: np.ndarray, n_bins: int = 100, half_width: float = 0.4) -> np.ndarray:
    """Vertical offsets that pile dots of close x values up and down, as shap's beeswarm does.

    x is cut into ``n_bins`` bins; the k-th dot of a bin (in input order) goes to
    ``ceil(k / 2) * (+1, -1, +1, ...)`` layers from the centre, scaled so that the tallest pile
    spans ``±half_width``. Deterministic: no random jitter.
    """
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return x
    span = np.ptp(x)
    bins = np.round(n_bins * (x - x.min()) / (span if span > 0 else 1.0))
    order = np.argsort(bins, kind="stable")
    sorted_bins = bins[order]
    starts = np.flatnonzero(np.r_[True, sorted_bins[1:] != sorted_bins[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, x.size]))
    layer = np.arange(x.size) - first
    offsets = np.empty(x.size)
    offsets[order] = np.ceil(layer / 2) * np.where(layer % 2 == 1, 1.0, -1.0)
    tallest = np.abs(offsets).max()
    return offsets * (half_width / tallest) if tallest > 0 else offsets


def beeswarm(dots: pd.DataFrame, title: str) -> Figure:
    """Local values as shap's summary plot: a panel per model, a row per feature, a dot per
    explained sample at its local value, coloured by the feature's value (coolwarm, rank
    within the feature; grey where the values are unknown).

    ``dots`` has columns ``model``, ``method``, ``feature``, ``rank`` (0 = most important
    row, drawn on top), ``value``, ``colour`` (in [0, 1] or NaN) and ``value_label``.
    """
    models = sorted(dots["model"].unique())
    n_rows = int(dots["rank"].max()) + 1
    figure, axes = _grid(len(models), width=3.8, height=0.38 * n_rows + 1.2, wspace=0.08)
    mappable = None
    for k, (ax, model) in enumerate(zip(axes, models)):
        data = dots[dots["model"] == model]
        features = data.drop_duplicates("rank").sort_values("rank")["feature"].tolist()
        for rank, row in data.groupby("rank", sort=True):
            y = rank + swarm_offsets(row["value"].to_numpy())
            known = row["colour"].notna().to_numpy()
            if (~known).any():
                ax.scatter(row["value"][~known], y[~known], s=7, color=NEUTRAL, linewidths=0)
            if known.any():
                mappable = ax.scatter(row["value"][known], y[known], s=7,
                                      c=row["colour"][known], cmap="coolwarm", vmin=0, vmax=1,
                                      linewidths=0)
        ax.set_yticks(range(len(features)), [wrap_label(f, 20) for f in features])
        ax.set_ylim(len(features) - 0.5, -0.5)
        ax.axvline(0, color="#999999", linewidth=0.6, zorder=0)
        # every panel has the same rows (local_dots orders them over all models)
        ax.tick_params(labelsize=FONT_PT, labelleft=k % 2 == 0)
        ax.set_xlabel(textwrap.fill(f"{data['method'].iloc[0]}: {data['value_label'].iloc[0]}",
                                    40), fontsize=FONT_PT)
        ax.set_title(wrap_label(model, 32), fontsize=FONT_PT + 1)
    if mappable is not None:
        bar = figure.colorbar(mappable, ax=axes, fraction=0.04, pad=0.03, aspect=30)
        bar.set_ticks([0, 1], labels=["low", "high"], fontsize=FONT_PT)
        bar.set_label("feature value (low → high)", fontsize=FONT_PT)
    title_above(figure, np.array([axes[:2]]), title)
    return figure


def k_lines(data: pd.DataFrame, colours: dict[str, str], title: str) -> Figure:
    """Correlation between two methods against K = max_features, one line per pair.

    ``data`` has columns ``panel`` (a panel per value), ``ylabel``, ``method_a``,
    ``method_b``, ``k`` and ``correlation``. A pair's line is drawn in the colour of its
    first method, dashed over with the colour of its second.
    """
    panels = list(dict.fromkeys(data["panel"]))
    figure, axes = _grid(len(panels), width=4.4, height=3.2, wspace=0.35)
    for ax, panel in zip(axes, panels):
        part = data[data["panel"] == panel]
        handles, names = [], []
        for (a, b), line in part.groupby(["method_a", "method_b"], sort=True):
            line = line.sort_values("k")
            colour_a = colours.get(method_of_label(a), NEUTRAL)
            colour_b = colours.get(method_of_label(b), NEUTRAL)
            solid = ax.plot(line["k"], line["correlation"], color=colour_a, linewidth=3,
                            marker="o", markersize=5)[0]
            dashed = ax.plot(line["k"], line["correlation"], color=colour_b, linewidth=3,
                             linestyle=(0, (2, 2)))[0]
            handles.append((solid, dashed))
            names.append(f"{a} vs {b}")
        ax.set_xticks(sorted(part["k"].unique()))
        ax.tick_params(labelsize=FONT_PT)
        ax.set_xlabel("K = max_features (features drawn at each node)", fontsize=FONT_PT)
        ax.set_ylabel(part["ylabel"].iloc[0], fontsize=FONT_PT)
        ax.set_title(wrap_label(panel, 60), fontsize=FONT_PT + 1)
        ax.grid(alpha=0.3)
        ax.legend(handles, names, handler_map={tuple: HandlerTuple(ndivide=1)},
                  fontsize=FONT_PT, loc="upper center", bbox_to_anchor=(0.5, -0.2),
                  frameon=False, handlelength=3)
    title_above(figure, np.array([axes[:2]]), title)
    return figure


__all__ = ["FONT_PT", "beeswarm", "importance_bars", "k_lines",
           "swarm_offsets"]
