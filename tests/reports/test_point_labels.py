"""The cost figure's point labels: none overlaps another label or a marker, however crowded."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from harness.reports.base import FONT_PT, new_figure
from harness.reports.first_screen import draw_cost_figure
from harness.reports.point_labels import place_point_labels, text_size_pt

# the default compare's cost panel: 12 methods within a factor 5 of time at precision 1, and
# three more at one lower precision (their labels printed over each other at a fixed offset)
RATIOS = [0.15, 0.19, 0.21, 0.24, 0.28, 0.31, 0.36, 0.42, 0.5, 0.58, 0.63, 0.7, 1.9, 2.0, 2.1]
PRECISIONS = [1.0] * 12 + [0.875] * 3
MARKER_PT = 6.0


def _overlap(a, b, gap: float = 0.0) -> bool:
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] and b[1] < a[3]


def _text_box(annotation, renderer):
    # the text's own box: an annotation's window extent includes its leader line
    return Text.get_window_extent(annotation, renderer).extents


def _crowded_axes():
    figure, axes = new_figure(width=3.55, height=3.0)
    ax = axes[0, 0]
    ax.scatter(RATIOS, PRECISIONS, s=MARKER_PT ** 2)
    ax.set_xscale("log")
    ax.margins(x=0.12, y=0.12)
    ax.set_xlim(ax.get_xlim())
    ax.set_ylim(ax.get_ylim())
    return figure, ax


def test_crowded_labels_overlap_neither_each_other_nor_a_marker():
    figure, ax = _crowded_axes()
    texts = [str(k) for k in range(10, 10 + len(RATIOS))]
    place_point_labels(ax, RATIOS, PRECISIONS, texts, [MARKER_PT] * len(RATIOS), FONT_PT)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [_text_box(text, renderer) for text in ax.texts]
    assert len(boxes) == len(texts)
    gap = 2 * figure.dpi / 72  # 2 points side by side: "17" beside "4" must not read "174"
    for a, b in itertools.combinations(boxes, 2):
        assert not _overlap(a, b, gap), (a, b)
    radius = MARKER_PT / 2 * figure.dpi / 72
    for cx, cy in ax.transData.transform(np.column_stack([RATIOS, PRECISIONS])):
        marker = (cx - radius, cy - radius, cx + radius, cy + radius)
        assert not any(_overlap(marker, box) for box in boxes)
    frame = ax.get_window_extent(renderer).extents
    for box in boxes:
        assert frame[0] <= box[0] and box[2] <= frame[2] and frame[1] <= box[1]
        assert box[3] <= frame[3]


def test_these_points_are_crowded_for_labels_at_a_fixed_offset():
    # what the figure did before: every label 5 points above its point; here they collide,
    # so the test above is one that fails without the placement
    figure, ax = _crowded_axes()
    to_pt = 72 / figure.dpi
    width, height = text_size_pt("10", FONT_PT)
    centres = ax.transData.transform(np.column_stack([RATIOS, PRECISIONS])) * to_pt
    boxes = [(x - width / 2, y + 5, x + width / 2, y + 5 + height) for x, y in centres]
    assert any(_overlap(a, b) for a, b in itertools.combinations(boxes, 2))


def test_the_cost_figure_numbers_every_scored_method_once_without_overlap():
    table = pd.DataFrame({
        "method": [f"m{k}" for k in range(len(RATIOS))] + ["unscored"],
        "ratio_to_predict": RATIOS + [np.nan],
        "precision_relevant": PRECISIONS + [1.0],
        "pareto": [k == 0 for k in range(len(RATIOS))] + [False]})
    numbers = {f"m{k}": k + 1 for k in range(len(RATIOS))}
    figure = draw_cost_figure(table, numbers, {})
    ax = figure.axes[0]
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    labels = sorted(int(text.get_text()) for text in ax.texts)
    assert labels == list(range(1, len(RATIOS) + 1))  # the unscored method has no point
    boxes = [_text_box(text, renderer) for text in ax.texts]
    for a, b in itertools.combinations(boxes, 2):
        assert not _overlap(a, b), (a, b)
