"""``sutera2021-fig3``: local importances on the LED display and on digits (Figs. 3 and 5)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle

from harness.api import load_dataset
from harness.reports.base import new_figure, rowwise_pearson, save_figure
from harness.reports.targets._sutera import (
    LABELS,
    LOCAL_METHODS,
    STORE,
    LocalRun,
    correlations,
    explained_labels,
    forest,
    n_trees,
    pair_label,
    run_local,
    sqrt_k,
)
from harness.reports.targets.base import Target, TargetContext, TargetPage
from harness.run.runner import plan

# Segment rectangles (x, y, width, height) in a 1 x 2 box, in the order X1..X7 of the led
# dataset: top, upper-left, upper-right, middle, lower-left, lower-right, bottom.
SEGMENT_BOXES = [(0.15, 1.85, 0.7, 0.15), (0.0, 1.08, 0.15, 0.77), (0.85, 1.08, 0.15, 0.77),
                 (0.15, 0.925, 0.7, 0.15), (0.0, 0.15, 0.15, 0.775),
                 (0.85, 0.15, 0.15, 0.775), (0.15, 0.0, 0.7, 0.15)]
P = {"led": 7, "digits": 64}
CLOSE_TO_ONE = 0.85  # as in sutera2021-fig2: Table 4's lowest mean (0.881) less 0.03
# Independent K = 1 forests (seeds 0..15) give each (row, segment) a Monte-Carlo standard
# error; the per-entry variances differ by 10x, so each entry is scaled by its own. When
# E[local MDI] = Thm 2, t = gap / s.e. follows Student's t with 15 degrees of freedom:
# E[t²] = 15/13 = 1.15 and the mean of 70 such t² has s.d. ~0.22, so the limit 2.0 is ~4 s.d.
N_FORESTS = 16
T2_LIMIT = 2.0


def thm2_statistic(forests: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    """Mean over (row, segment) of t² = ((mean over forests - Thm 2) / its s.e.)².

    ``forests``: (n_forests, n, p) local MDI of independent forests. Entries that no forest
    varies (s.e. 0) count t = 0 if they equal Thm 2 and fail the test otherwise. Returns the
    mean t², the largest |gap| of the mean, and the rms s.e. of one forest.
    """
    n = len(forests)
    mean = forests.mean(axis=0)
    sd = forests.std(axis=0, ddof=1)
    gap = mean - truth
    fixed = sd == 0
    t = np.where(fixed, 0.0, gap / np.where(fixed, 1.0, sd / math.sqrt(n)))
    if np.any(np.abs(gap[fixed]) > 1e-9):
        return math.inf, float(np.abs(gap).max()), float(np.sqrt(np.mean(sd**2)))
    return float(np.mean(t**2)), float(np.abs(gap).max()), float(np.sqrt(np.mean(sd**2)))


def ks(dataset: str) -> list[int]:
    """K ∈ {1, √p, p}, √p as scikit-learn's "sqrt" (2 for LED, 8 for digits)."""
    return [1, sqrt_k(P[dataset]), P[dataset]]


def subset(run: LocalRun, k: int, positions: np.ndarray | None) -> LocalRun:
    """The run restricted to one K and to some of its explained rows (None: all)."""
    keep = slice(None) if positions is None else positions
    return LocalRun(run.dataset, [k], {(k, m): run.values[(k, m)][keep] for m in LOCAL_METHODS},
                    {k: run.rows[k][keep]}, run.feature_names, {})


def one_per_class(dataset: str, run: LocalRun, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions (in the explained rows) of the first explained row of each class."""
    labels = explained_labels(dataset, run.rows[k])
    classes = np.unique(labels)
    return np.array([np.flatnonzero(labels == c)[0] for c in classes]), classes


class Sutera2021Fig3(Target):
    """Local MDI, Saabas and TreeSHAP drawn on the 7-segment display and on 8 x 8 digits.

    Sec. 6, Fig. 3 (two samples) and Appendix E.1, Fig. 5 (all 10 LED digits, one digits
    image per class): 1000 Extra-Trees (entropy, no bootstrap) with K ∈ {1, √p, p};
    importances of the training rows (Saabas and TreeSHAP for the predicted class), each
    sample's vector scaled by its largest |value| for the colours. Checked: for K = 1 on the
    LED population, local MDI against its asymptotic value (Thm 2, Eq. 10, the led dataset's
    ``thm2_local`` truth) within Monte-Carlo error; efficiency of local MDI (sum over the
    segments = log2 10 for fully grown trees, Eq. 12); the paper's statement that the three
    measures "yield very similar importance scores" on the drawn samples.
    """

    name = "sutera2021-fig3"
    title = "Local importances on the LED display and on digits images, K ∈ {1, √p, p}"
    source = ("seed 003 (Sutera et al. 2021), Sec. 6, Fig. 3 and the paragraph after it; "
              "Appendix E.1, Fig. 5; Thm 2 (Eq. 10)")

    def run(self, context: TargetContext) -> TargetPage:
        led = run_local(context, "led", ks("led"))
        digits = run_local(context, "digits", ks("digits"))
        seeds = self._forests(context)
        truth = load_dataset("led").truth.quantities["thm2_local"].values
        checks, details = self._checks(led, digits, seeds, truth)
        figures = [self._led_figure(led, truth[led.rows[1]], context),
                   self._digits_figure(digits, context)]
        notes = [f"{c.check}: {'holds' if c.holds else 'does not hold'} ({c.measured})."
                 for c in checks.itertuples()] + details
        failed = checks[~checks["holds"]]
        thm2 = checks.iloc[0]
        return TargetPage(
            table=checks, figures=figures, notes=notes,
            verdict="reproduced within Monte-Carlo error" if failed.empty else "deviates",
            worst=(("every check holds" if failed.empty else
                    f"{len(failed)} check(s) fail: " + "; ".join(failed["check"]))
                   + f"; local MDI vs Thm 2 (LED, K = 1): {thm2['measured']}".replace(
                       "|gap|", "gap")),
            scale=(f"{'quick: ' if context.quick else ''}{n_trees(context.quick)} trees per "
                   f"K; {led.scale()}; {digits.scale()}, one drawn per class"))

    @staticmethod
    def _forests(context: TargetContext) -> np.ndarray:
        """Local MDI of the LED population from independent K = 1 forests (seeds 0..15;
        seed 0 is the forest drawn in the figure)."""
        grid = {"datasets": ["led"], "models": [forest(1, context.quick)],
                "methods": ["local_mdi"], "seeds": list(range(N_FORESTS))}
        keys = [cell.key for cell in plan(**grid)]
        results = context.compare(STORE, **grid)
        try:
            return np.array([results.arrays(key)["values"] for key in keys], dtype=float)
        finally:
            results.close()

    @staticmethod
    def _checks(led: LocalRun, digits: LocalRun, seeds, truth) -> tuple[pd.DataFrame, list]:
        rows = []
        target = truth[led.rows[1]]
        t2, gap, error = thm2_statistic(seeds, target)
        rows.append(("LED, K = 1: local MDI = Thm 2 (Eq. 10) per row and segment",
                     f"mean t² < {T2_LIMIT} (E = 1.15 if unbiased)",
                     f"mean t² {t2:.2f} over {len(seeds)} forests; max |gap| of one forest "
                     f"{np.abs(seeds[0] - target).max():.3f} bits, of their mean "
                     f"{gap:.3f} bits; MC s.e. of one forest {error:.3f} bits (rms)",
                     t2 < T2_LIMIT))
        sums = np.array([led.values[(k, "local_mdi")].sum(axis=1) for k in led.ks])
        gap = float(np.abs(sums - math.log2(10)).max())
        rows.append(("LED: efficiency, Σ_m local MDI(X_m, x) = log2 10 (Eq. 12), every K",
                     "max |gap| < 1e-9 bits", f"max |gap| = {gap:.1e} bits", gap < 1e-9))
        details = []
        drawn = one_per_class("digits", digits, digits.ks[0])[0]
        for run, shown in ((led, None), (digits, drawn)):
            for k in run.ks:
                means = correlations(subset(run, k, shown)).groupby(
                    ["method_a", "method_b"])["pearson"].mean()
                (a, b), lowest = means.idxmin(), means.min()
                rows.append((f"{run.dataset}, K = {k}: the three measures are very similar "
                             "on the drawn samples", f"every pair's mean Pearson of |values| "
                             f">= {CLOSE_TO_ONE}", f"lowest {lowest:.3f} ({pair_label(a, b)})",
                             bool(lowest >= CLOSE_TO_ONE)))
        for method in LOCAL_METHODS:
            r = rowwise_pearson(np.abs(led.values[(1, method)]), np.abs(target))
            details.append(f"LED, K = 1: mean per-row Pearson between |{LABELS[method]}| and "
                           f"|Thm 2|: {np.nanmean(r):.3f} (min {np.nanmin(r):.3f}).")
        return pd.DataFrame(rows, columns=["check", "criterion", "measured", "holds"]), details

    def _led_figure(self, run: LocalRun, truth: np.ndarray, context: TargetContext):
        context.gallery.mkdir(parents=True, exist_ok=True)
        labels = explained_labels("led", run.rows[1])
        lit = load_dataset("led").X[run.rows[1]]
        panels = [("Thm 2\n(K = 1, ∞)", truth)] + [
            (f"{LABELS[m]}\nK = {k}", run.values[(k, m)]) for m in LOCAL_METHODS for k in run.ks]
        figure, axes = new_figure(ncols=len(labels), nrows=len(panels), width=0.75,
                                  height=1.25, wspace=0.15, hspace=0.15)
        for i, (title, values) in enumerate(panels):
            for j in range(len(labels)):
                self._draw_display(axes[i, j], values[j], lit[j])
                if i == 0:
                    axes[i, j].set_title(f"digit {labels[j]}", fontsize=8)
            axes[i, 0].text(-0.3, 1.0, title, ha="right", va="center", fontsize=7,
                            transform=axes[i, 0].transData)
        figure.text(0.5, 0.08, "colour: importance / max |importance| of the sample "
                    "(red > 0, blue < 0); solid outline: segment lit", ha="center", fontsize=8)
        return save_figure(figure, context.gallery / f"{self.name}-led.png")

    @staticmethod
    def _draw_display(ax, values: np.ndarray, lit: np.ndarray) -> None:
        from matplotlib import colormaps

        scale = np.abs(values).max() or 1.0
        cmap = colormaps["RdBu_r"]
        for (x, y, w, h), value, on in zip(SEGMENT_BOXES, values, lit):
            ax.add_patch(Rectangle((x, y), w, h, facecolor=cmap(0.5 + 0.5 * value / scale),
                                   edgecolor="black" if on else "0.6",
                                   linestyle="-" if on else ":", linewidth=1.0 if on else 0.6))
        ax.set_xlim(-0.1, 1.1)
        ax.set_ylim(-0.1, 2.1)
        ax.set_aspect("equal")
        ax.set_axis_off()

    def _digits_figure(self, run: LocalRun, context: TargetContext):
        k0 = run.ks[0]
        if any(not np.array_equal(run.rows[k], run.rows[k0]) for k in run.ks):
            raise RuntimeError("the explained digits rows differ between the forests")
        shown, classes = one_per_class("digits", run, k0)
        images = load_dataset("digits").X[run.rows[k0][shown]]
        panels = [(f"{LABELS[m]}, K = {k}", m, k) for m in LOCAL_METHODS for k in run.ks]
        figure, axes = new_figure(ncols=len(classes), nrows=len(panels) + 1, width=0.9,
                                  height=0.9, wspace=0.08, hspace=0.12)
        for j, image in enumerate(images):
            axes[0, j].imshow(image.reshape(8, 8), cmap="gray_r")
            axes[0, j].set_title(f"class {classes[j]}", fontsize=8)
        for i, (title, method, k) in enumerate(panels, start=1):
            for j, row in enumerate(shown):  # the same rows are explained at every K
                values = run.values[(k, method)][row]
                scale = np.abs(values).max() or 1.0
                axes[i, j].imshow(values.reshape(8, 8), cmap="RdBu_r", vmin=-scale,
                                  vmax=scale)
            axes[i, 0].set_ylabel(title, fontsize=6, rotation=0, ha="right", va="center")
        for ax in axes.flat:
            ax.set_xticks([])
            ax.set_yticks([])
        return save_figure(figure, context.gallery / f"{self.name}-digits.png")

