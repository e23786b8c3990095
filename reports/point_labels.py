"""Labels for the points of a scatter plot that overlap neither each other nor the points.

Methods cluster on the report's cost figure (many reach the same precision at nearly the same
time), and a label set at a fixed offset above each point then prints over its neighbours'.
:func:`place_point_labels` puts each label at the first free spot of a ring around its point
(above, below, right, left, the diagonals), then of two wider rings joined to the point by a
thin line. Everything is measured in points (1/72 inch) on a figure without a layout engine
(:func:`reports.base.new_figure`), whose axes keep their place when it is saved.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.font_manager import FontProperties

#: Directions tried around a point, in order: above, below, right, left, then the diagonals.
DIRECTIONS = ((0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1))
#: Rings of spots tried: the first touches the marker; the others are further out by a
#: label's size each and get a line to their point.
RINGS = 3
GAP_PT = 1.5  # between a marker's edge, or another ring, and the label
#: Space kept free around a label (points, horizontally and vertically), so that two
#: numbers side by side do not read as one ("17" beside "4" read "174")
PAD_PT = (2.5, 0.5)


def text_size_pt(text: str, fontsize: float) -> tuple[float, float]:
    """Width and height, in points, of the box of ``text`` drawn in the default font at
    ``fontsize``: its own width, and at least the height of "lp" (a line's ascent and descent,
    which matplotlib gives every one-line text box)."""
    renderer = RendererAgg(1, 1, 72)  # at 72 dpi a pixel is a point
    font = FontProperties(size=fontsize)
    width, height, _ = renderer.get_text_width_height_descent(text, font, ismath=False)
    _, line, _ = renderer.get_text_width_height_descent("lp", font, ismath=False)
    return float(width), float(max(height, line))


def _overlaps(box: tuple[float, float, float, float],
              boxes: Sequence[tuple[float, float, float, float]]) -> bool:
    x0, y0, x1, y1 = box
    return any(x0 < b1x and b0x < x1 and y0 < b1y and b0y < y1
               for b0x, b0y, b1x, b1y in boxes)


def _spots(width: float, height: float, radius: float):
    """(ring, centre offset) of every spot around a point whose marker has ``radius``."""
    for ring in range(RINGS):
        reach_x = radius + GAP_PT + width / 2 + ring * (width + GAP_PT)
        reach_y = radius + GAP_PT + height / 2 + ring * (height + GAP_PT)
        for dx, dy in DIRECTIONS:
            yield ring, (dx * reach_x, dy * reach_y)


def place_point_labels(ax: Axes, x: Sequence[float], y: Sequence[float], texts: Sequence[str],
                       marker_pt: Sequence[float], fontsize: float) -> list[tuple[float, float]]:
    """Write ``texts[i]`` next to the point (``x[i]``, ``y[i]``) (data coordinates) so that no
    two labels overlap and no label covers a marker (``marker_pt[i]``: its diameter in
    points); call it once the axes' limits and scales are final.

    Each label takes the first free spot around its point (:data:`DIRECTIONS` on
    :data:`RINGS` rings; beyond the first ring it is joined to the point by a thin grey
    line) that stays inside the axes and at least :data:`PAD_PT` from every other label; a
    label with no free spot goes above its point.
    Points are labelled from left to right.

    Returns
    -------
    list of (dx, dy)
        Each label's centre, in points from its point (in the order of ``texts``).
    """
    figure = ax.figure
    to_pt = 72.0 / figure.dpi
    centres = ax.transData.transform(np.column_stack([x, y])) * to_pt
    frame = ax.get_position()
    width_pt, height_pt = figure.get_figwidth() * 72, figure.get_figheight() * 72
    inside = (frame.x0 * width_pt, frame.y0 * height_pt, frame.x1 * width_pt,
              frame.y1 * height_pt)
    markers = [(cx - d / 2, cy - d / 2, cx + d / 2, cy + d / 2)
               for (cx, cy), d in zip(centres, marker_pt)]
    placed: list[tuple[float, float, float, float]] = []
    offsets: list[tuple[float, float]] = [(0.0, 0.0)] * len(texts)
    for i in sorted(range(len(texts)), key=lambda k: (centres[k][0], centres[k][1])):
        width, height = text_size_pt(texts[i], fontsize)
        cx, cy = centres[i]
        chosen = None
        for ring, (dx, dy) in _spots(width, height, marker_pt[i] / 2):
            box = (cx + dx - width / 2, cy + dy - height / 2, cx + dx + width / 2,
                   cy + dy + height / 2)
            within = (box[0] >= inside[0] and box[1] >= inside[1] and box[2] <= inside[2]
                      and box[3] <= inside[3])
            padded = (box[0] - PAD_PT[0], box[1] - PAD_PT[1], box[2] + PAD_PT[0],
                      box[3] + PAD_PT[1])
            if within and not _overlaps(padded, placed) and not _overlaps(box, markers):
                chosen = ring, (dx, dy), box
                break
        if chosen is None:  # crowded out: above the point, as before
            dy = marker_pt[i] / 2 + GAP_PT + height / 2
            chosen = 0, (0.0, dy), (cx - width / 2, cy + dy - height / 2, cx + width / 2,
                                    cy + dy + height / 2)
        ring, offset, box = chosen
        placed.append(box)
        offsets[i] = offset
        leader = ({"arrowstyle": "-", "color": "0.55", "lw": 0.5, "shrinkA": 0,
                   "shrinkB": marker_pt[i] / 2} if ring > 0 else None)
        ax.annotate(texts[i], (x[i], y[i]), xytext=offset, textcoords="offset points",
                    ha="center", va="center", fontsize=fontsize, arrowprops=leader,
                    zorder=4)
    return offsets
