"""``sutera2021-fig1``: global MDI and SAGE on LED for K = 1..7 (seed 003, Fig. 1)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.api import load_dataset
from harness.datasets.led import SEGMENTS
from harness.oracle.exact_mdi import expected_mdi
from harness.reports.base import new_figure, normalise_l1, save_figure
from harness.reports.targets._sutera import forest, n_trees
from harness.reports.targets.base import Target, TargetContext, TargetPage
from harness.run.runner import plan

KS = list(range(1, 8))
# sage's default convergence threshold in full mode; a looser one (about 4x fewer sampled
# permutations) in quick mode.
SAGE = {False: "sage[loss=cross_entropy]", True: "sage[loss=cross_entropy,thresh=0.05]"}
LABELS = {"mdi": "global MDI", "sage": "SAGE (cross-entropy)"}
# The paper numbers the segments from 0 in its figures: its "X1 and X4" are the harness's
# X2 (upper-left) and X5 (lower-left), the two variables that Louppe et al. (2013)'s LED
# table shows growing with K. Checked below, not assumed: the two largest gains are named.
FAVOURED = ("X2", "X5")
# "At the expense of the others": no other variable gains more than this (normalised), about
# twice the standard error of a normalised SAGE value at sage's default threshold.
GAIN_TOLERANCE = 0.01


def _vector(values: pd.DataFrame, method: str, k: int, names: list[str]) -> np.ndarray:
    part = values[(values["method"] == method) & (values["k"] == k)]
    return part.set_index("feature").loc[names, "normalised"].to_numpy()


def claims(values: pd.DataFrame, thm1: np.ndarray, names: list[str]) -> pd.DataFrame:
    """The claims of Sec. 6 about Fig. 1, checked on the normalised importances.

    ``values``: one row per (method, K, feature) with ``normalised`` (sum |.| = 1). "Near"
    and "close" are read against the effect the figure is about: a gap counts as small when
    it is below half of the largest change that K = 1 -> 7 makes in one normalised MDI score.
    """
    def vector(method: str, k: int) -> np.ndarray:
        return _vector(values, method, k, names)

    target = normalise_l1(thm1)
    tolerance = np.abs(vector("mdi", 7) - vector("mdi", 1)).max() / 2
    rows = []
    for method, label in LABELS.items():
        gap = np.abs(vector(method, 1) - target).max()
        rows.append((f"K = 1: {label} ≈ Thm 1 (normalised)",
                     f"max |gap| < {tolerance:.3f}", f"max |gap| = {gap:.3f}", gap < tolerance))
    gaps = {k: np.abs(vector("mdi", k) - vector("sage", k)).max() for k in KS}
    worst_k = max(gaps, key=gaps.get)
    rows.append(("MDI and SAGE remain very close as K grows",
                 f"max |gap| < {tolerance:.3f} at every K",
                 f"max |gap| = {gaps[worst_k]:.3f} (K = {worst_k})", gaps[worst_k] < tolerance))
    favoured = [names.index(n) for n in FAVOURED]
    others = [j for j in range(len(names)) if j not in favoured]
    for method, label in LABELS.items():
        gain = vector(method, 7) - vector(method, 1)
        top = np.argsort(-gain)[:2]
        rows.append((f"{label}: masking favours the paper's X1 and X4 (numbered from 0: "
                     "upper-left and lower-left, our X2 and X5) as K grows",
                     "the two largest gains K = 1 -> 7 are X2 and X5, both > 0",
                     "largest gains: " + ", ".join(f"{names[j]} {gain[j]:+.3f}" for j in top),
                     sorted(top.tolist()) == favoured and bool((gain[favoured] > 0).all())))
        rows.append((f"{label}: ... at the expense of the other variables",
                     f"no other variable gains more than {GAIN_TOLERANCE} K = 1 -> 7",
                     ", ".join(f"{names[j]} {gain[j]:+.3f}" for j in others),
                     bool((gain[others] <= GAIN_TOLERANCE).all())))
    return pd.DataFrame(rows, columns=["claim", "criterion", "measured", "holds"])


class Sutera2021Fig1(Target):
    """Normalised global MDI and SAGE importances on LED for Extra-Trees with K = 1..7.

    Sec. 6, Fig. 1: 1000 Extra-Trees (entropy, no bootstrap, fully grown) on the LED data
    (the 10-row population, equiprobable digits); global MDI (Louppe et al. 2013, Eq. 1) and
    SAGE with the cross-entropy loss through the ``sage`` package, as the paper did (marginal
    imputer with the 10 LED rows as background, its permutation estimator to sage's default
    convergence threshold), each normalised to sum |values| = 1. Louppe et al.'s Thm 1
    values, normalised, are the asymptotic MDI of K = 1 and the population SAGE with
    conditional imputation (Sec. 5). The figure has no numbers: its claims are checked.
    """

    name = "sutera2021-fig1"
    title = "Global MDI and SAGE on LED as K grows"
    source = ("seed 003 (Sutera et al. 2021), Sec. 6, Fig. 1 and the paragraph after "
              "Fig. 3 ('Global importances are shown ...')")

    def run(self, context: TargetContext) -> TargetPage:
        grid = {"datasets": ["led"], "models": [forest(k, context.quick) for k in KS],
                "methods": ["mdi", SAGE[context.quick]], "seeds": [0]}
        cells = {cell.key: cell for cell in plan(**grid)}
        results = context.compare(self.name, **grid)
        try:
            table = results.cells_table().set_index("key").loc[list(cells)]
            if (table["status"] != "done").any():
                bad = table[table["status"] != "done"]
                raise RuntimeError(f"{len(bad)} cells did not finish ({bad['reason'].iloc[0]});"
                                   f" see the store {results.folder}")
            names = results.feature_names(next(iter(cells)))
            rows = []
            for key, cell in cells.items():
                raw = np.asarray(results.arrays(key)["values"], dtype=float)
                for name, value, share in zip(names, raw, normalise_l1(raw)):
                    rows.append({"method": cell.method.name,
                                 "k": int(cell.model.params["max_features"]),
                                 "feature": name, "value": value, "normalised": share,
                                 "seconds": float(table.loc[key, "time_explain"])})
        finally:
            results.close()
        values = pd.DataFrame(rows)
        led = load_dataset("led")
        thm1 = led.truth.quantities["thm1"].values
        exact = {k: normalise_l1(expected_mdi(led.X, led.y, led.sample_weight, max_features=k,
                                              rule="sklearn")) for k in (1, 7)}
        checks = claims(values, thm1, names)
        figure = self._figure(values, normalise_l1(thm1), names, context)
        csv = context.gallery / f"{self.name}.csv"
        values.to_csv(csv, index=False)
        return self._page(checks, values, names, exact, figure, csv, context.quick)

    def _page(self, checks, values, names, exact, figure, csv, quick) -> TargetPage:
        wide = values.pivot_table(index=["method", "k"], columns="feature",
                                  values="normalised")[names]
        gain = exact[7] - exact[1]
        notes = [f"Claim '{c.claim}': {'holds' if c.holds else 'does not hold'} "
                 f"({c.measured})." for c in checks.itertuples()]
        notes += [
            "Exact expected MDI of scikit-learn's Extra-Trees (harness.oracle.exact_mdi, sklearn "
            "rule), normalised, gain K = 1 -> 7: " + ", ".join(
                f"{n} {g:+.4f}" for n, g in zip(names, gain))
            + ": X7 (bottom) is flat, so 'at the expense of the other variables' is true of "
            "four of them and a tie for X7.",
            "Normalised importances (method, K: X1..X7): " + "; ".join(
                f"{m} K={k}: " + " ".join(f"{v:.3f}" for v in row)
                for (m, k), row in wide.iterrows()) + f". All values: [{csv.name}]({csv.name}).",
            f"SAGE (sage package) took "
            f"{values[values['method'] == 'sage'].groupby('k')['seconds'].first().sum():.0f} s "
            "over the 7 forests; MDI is read from the trees at no extra cost.",
        ]
        failed = checks[~checks["holds"]]
        close = checks.loc[checks["claim"].str.startswith("MDI and SAGE"), "measured"].iloc[0]
        return TargetPage(
            table=checks, figures=[figure], notes=notes,
            verdict="reproduced" if failed.empty else "deviates",
            worst=("every claim holds" if failed.empty else
                   f"{len(failed)} claim(s) fail: " + "; ".join(failed["claim"]))
            + f" (largest MDI-SAGE gap in normalised importance: "
            f"{close.replace('max |gap| = ', '')})",
            scale=(f"{'quick: ' if quick else ''}{n_trees(quick)} trees per K, K = 1..7, "
                   f"LED population (10 rows); {SAGE[quick]}"))

    def _figure(self, values, thm1, names, context: TargetContext):
        context.gallery.mkdir(parents=True, exist_ok=True)
        figure, axes = new_figure(ncols=2, width=5.5, height=3.8, share=True, wspace=0.1)
        x = np.arange(len(names))
        width = 0.8 / len(KS)
        colours = [(0.15 + 0.7 * i / (len(KS) - 1), 0.35, 0.85 - 0.7 * i / (len(KS) - 1))
                   for i in range(len(KS))]
        for ax, (method, label) in zip(axes[0], LABELS.items()):
            for i, k in enumerate(KS):
                ax.bar(x - 0.4 + (i + 0.5) * width, _vector(values, method, k, names), width,
                       color=colours[i], label=f"K = {k}")
            ax.hlines(thm1, x - 0.45, x + 0.45, colors="black", linewidth=1.5,
                      label="Thm 1 (normalised)")
            ax.set_xticks(x, [f"{n}\n{s}" for n, s in zip(names, SEGMENTS)], fontsize=7)
            ax.set_title(label, fontsize=10)
        axes[0, 0].set_ylabel("normalised importance")
        axes[0, 1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
        return save_figure(figure, context.gallery / f"{self.name}.png")
