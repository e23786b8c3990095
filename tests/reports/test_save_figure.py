"""``save_figure`` writes the pixels of matplotlib's own ``bbox_inches="tight"``, one draw fewer.

The oracle is matplotlib: each figure is saved by ``save_figure`` first (as the reports do, on
a figure never drawn), then by ``savefig(bbox_inches="tight")``, and the two PNGs must be equal
pixel for pixel. The figures hold what moves a tight box: text beyond the figure (a title
above the panels, a legend under them), seaborn's heat map (it draws while plotting), an
axis offset text, a legend placed at draw time (``loc="best"``), annotations in offset
points, rotated tick labels, a colour bar, an equal aspect, and a layout engine.
"""

from __future__ import annotations

import numpy as np
import pytest
import seaborn as sns
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.patches import Patch
from PIL import Image

from harness.reports.base import (
    FIGURE_DPI,
    PAD_INCHES,
    new_figure,
    save_figure,
    subplots,
    title_above,
)


def _panels_beyond_the_figure():
    figure, axes = new_figure(ncols=2, nrows=2, width=3.0, height=2.0, share=True)
    for k, ax in enumerate(axes.ravel()):
        ax.barh(np.arange(5), np.linspace(0.1, 1.0, 5) * (k + 1), xerr=0.05)
        ax.set_yticks(range(5), [f"a long feature name {j}" for j in range(5)])
        ax.set_title(f"model {k}")
    figure.legend(handles=[Patch(color="C0", label="mdi")], loc="upper center",
                  bbox_to_anchor=(0.5, -0.05), ncol=1)
    title_above(figure, axes, "a title above the panels")
    return figure


def _heat_map():
    figure, axes = new_figure(width=4.0, height=3.5)
    values = np.linspace(-1.0, 1.0, 36).reshape(6, 6)
    labels = [f"method {k}" for k in range(6)]
    sns.heatmap(values, ax=axes[0, 0], annot=True, fmt=".2f", cmap="vlag",
                xticklabels=labels, yticklabels=labels)
    return figure


def _offset_text_and_best_legend():
    figure, ax = subplots(figsize=(5.0, 3.0))
    x = np.linspace(0.0, 1.0, 50)
    ax.plot(x, 1e6 + 3e3 * x, label="rises")
    ax.plot(x, 1e6 + 3e3 * x ** 2, label="curves")
    ax.legend(loc="best")
    ax.annotate("far to the right", (1.0, 1e6 + 3e3), xytext=(60, 20),
                textcoords="offset points")
    ax.tick_params(axis="x", labelrotation=60)
    return figure


def _colour_bar_and_equal_aspect():
    figure, ax = subplots(figsize=(4.0, 4.0))
    image = ax.imshow(np.arange(64.0).reshape(8, 8), cmap="viridis")
    ax.set_aspect("equal")
    figure.colorbar(image, ax=ax, label="importance")
    ax.set_xlabel("pixel column")
    return figure


def _constrained_layout():
    figure, axes = subplots(1, 2, figsize=(6.0, 3.0), layout="constrained")
    for ax in axes:
        ax.plot([0, 1], [0, 1])
        ax.set_title("a title the layout engine places")
    figure.suptitle("a figure title")
    return figure


FIGURES = [_panels_beyond_the_figure, _heat_map, _offset_text_and_best_legend,
           _colour_bar_and_equal_aspect, _constrained_layout]


def _pixels(path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGBA"))


@pytest.mark.parametrize("build", FIGURES, ids=lambda build: build.__name__.strip("_"))
def test_save_figure_writes_the_pixels_of_matplotlibs_tight_box(build, tmp_path):
    figure = build()
    save_figure(figure, tmp_path / "ours.png")
    figure.savefig(tmp_path / "matplotlib.png", dpi=FIGURE_DPI, backend="agg",
                   bbox_inches="tight", pad_inches=PAD_INCHES)

    ours, theirs = _pixels(tmp_path / "ours.png"), _pixels(tmp_path / "matplotlib.png")
    assert ours.shape == theirs.shape
    assert np.array_equal(ours, theirs)


def test_text_beyond_the_figure_extends_the_saved_image(tmp_path):
    figure = _panels_beyond_the_figure()
    width, height = figure.get_size_inches() * FIGURE_DPI
    rows, columns, _ = _pixels(save_figure(figure, tmp_path / "panels.png")).shape
    assert rows > height + 2 * PAD_INCHES * FIGURE_DPI  # the title above, the legend under
    assert columns != width


def test_save_figure_leaves_the_figure_on_its_base_canvas_and_dpi(tmp_path):
    figure = _heat_map()
    dpi = figure.dpi
    save_figure(figure, tmp_path / "heat_map.png")
    assert type(figure.canvas) is FigureCanvasBase  # seaborn's later draws stay free
    assert figure.dpi == dpi
