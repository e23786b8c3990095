"""``louppe2013-led``: the LED table of Louppe et al. (2013), Thm 1 and K = 1..7 columns."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from harness.api import load_dataset  # noqa: E402
from harness.oracle.exact_mdi import expected_mdi  # noqa: E402
from harness.reports.targets.base import Target, TargetContext, TargetPage  # noqa: E402

VARIABLES = [f"X{i}" for i in range(1, 8)]
# seed 000 (Louppe, Wehenkel, Sutera, Geurts 2013, NIPS poster), "Effect of randomization"
# table: rows X1..X7, columns Thm. 1 and K = 1..7 (bits); every column sums to 3.321.
PUBLISHED = pd.DataFrame(
    [[0.412, 0.414, 0.362, 0.327, 0.309, 0.304, 0.305, 0.306],
     [0.581, 0.583, 0.663, 0.715, 0.757, 0.787, 0.801, 0.799],
     [0.531, 0.532, 0.512, 0.496, 0.489, 0.483, 0.475, 0.475],
     [0.542, 0.543, 0.525, 0.484, 0.445, 0.414, 0.409, 0.412],
     [0.656, 0.658, 0.731, 0.778, 0.810, 0.827, 0.831, 0.835],
     [0.225, 0.221, 0.140, 0.126, 0.122, 0.122, 0.121, 0.120],
     [0.372, 0.368, 0.385, 0.392, 0.387, 0.382, 0.375, 0.372]],
    index=VARIABLES, columns=["Thm1", *range(1, 8)])
PUBLISHED_SUM = 3.321
N_TREES = {False: 20_000, True: 400}


class Louppe2013LED(Target):
    """Thm 1 and the K = 1..7 LED columns: exact oracles and scikit-learn forests.

    Ours: the Thm 1 oracle (Louppe et al. 2013, Eq. 2); the exact expected MDI of
    :mod:`harness.oracle.exact_mdi` under the paper's rule (K drawn among the variables unused on
    the branch, multiway splits) and under scikit-learn's splitter; and ExtraTrees forests
    (max_features = K, entropy, fully grown, no bootstrap) on the 10-row LED distribution,
    whose mean MDI has a standard error below the table's last digit at full scale (20 000
    trees per K; the paper used 10 000 at K = 1).
    """

    name = "louppe2013-led"
    title = "Variable importances of totally and non-totally randomized trees on LED"
    source = ("seed 000 (Louppe, Wehenkel, Sutera, Geurts, NIPS 2013), 'Effect of "
              "randomization' table: Thm. 1 and K = 1..7 columns, X1..X7 and Σ")

    def run(self, context: TargetContext) -> TargetPage:
        n_trees = N_TREES[context.quick]
        models = [f"extra_trees[n_estimators={n_trees},max_features={k},criterion=entropy,"
                  "bootstrap=false]" for k in range(1, 8)]
        results = context.compare(self.name, datasets=["led"], models=models, methods=["mdi"],
                                  seeds=[0])
        forest, forest_se = self._forest_columns(results)
        dataset = load_dataset("led", seed=0)
        X, y, weights = dataset.X, dataset.y, dataset.sample_weight
        context.say(f"{self.name}: exact expected MDI, K = 1..7, two rules")
        rows = []
        thm1 = dataset.truth.quantities["thm1"].values
        for j, name in enumerate(VARIABLES):
            published = PUBLISHED.loc[name, "Thm1"]
            rows.append(self._row("Thm1", name, published, thm1[j], thm1[j], np.nan, np.nan))
        for k in range(1, 8):
            paper = expected_mdi(X, y, weights, max_features=k, rule="paper")
            sklearn_rule = expected_mdi(X, y, weights, max_features=k, rule="sklearn")
            for j, name in enumerate(VARIABLES):
                rows.append(self._row(k, name, PUBLISHED.loc[name, k], paper[j],
                                      sklearn_rule[j], forest[k][j], forest_se[k][j]))
        table = pd.DataFrame(rows)
        figure = self._figure(table, context)
        return self._page(table, thm1, forest, n_trees, figure, context.quick)

    @staticmethod
    def _row(column, variable, published, paper, sklearn_rule, forest, forest_se) -> dict:
        return {"column": str(column), "variable": variable, "published": published,
                "exact_paper_rule": paper, "exact_sklearn_rule": sklearn_rule,
                "sklearn_forest": forest, "forest_se": forest_se,
                "published_minus_paper": published - paper,
                "forest_minus_sklearn_rule": forest - sklearn_rule}

    @staticmethod
    def _forest_columns(results) -> tuple[dict, dict]:
        cells = results.cells_table()
        cells = cells[cells["status"] == "done"]
        values, errors = {}, {}
        for _, cell in cells.iterrows():
            arrays = results.arrays(cell["key"])
            k = int(cell["p_model_max_features"])
            values[k], errors[k] = arrays["values"], arrays["std"]
        missing = sorted(set(range(1, 8)) - set(values))
        if missing:
            raise RuntimeError(f"the forests for K = {missing} did not finish; see the store "
                               f"{results.folder}")
        return values, errors

    def _page(self, table, thm1, forest, n_trees, figure, quick) -> TargetPage:
        truncated = np.floor(thm1 * 1000 + 1e-9) / 1000
        rounded = np.round(thm1, 3)
        thm1_rows = table[table["column"] == "Thm1"]
        truncation_holds = bool(np.array_equal(thm1_rows["published"].to_numpy(), truncated))
        rest = table[table["column"] != "Thm1"]
        worst_paper = rest.loc[rest["published_minus_paper"].abs().idxmax()]
        gap_sklearn = (rest["published"] - rest["exact_sklearn_rule"]).abs()
        worst_sklearn = rest.loc[gap_sklearn.idxmax()]
        z = (rest["forest_minus_sklearn_rule"] / rest["forest_se"]).to_numpy()
        chi2_dof = float(np.mean(z**2))
        sums = {k: float(np.sum(forest[k])) for k in range(1, 8)}
        notes = [
            "Thm. 1 column: the published values are the exact values **truncated** to 3 "
            f"decimals ({'holds for all 7' if truncation_holds else 'does NOT hold'}); rounding"
            f" would print {', '.join(f'{v:.3f}' for v in rounded)} "
            f"(Σ {rounded.sum():.3f} instead of {PUBLISHED_SUM}).",
            "K = 1..7: the published columns are within "
            f"{abs(worst_paper.published_minus_paper):.4f} bits of the exact expectation "
            "under the paper's rule (K drawn among the variables unused on the branch, "
            "multiway splits), about the Monte Carlo noise of the "
            "published K = 1 column (up to 0.0048 from the exact Thm 1); scikit-learn's "
            f"splitter gives up to {gap_sklearn.max():.4f} bits ({worst_sklearn.variable}, "
            f"K = {worst_sklearn.column}), because it draws K among all p features and lets "
            "constant (already used) ones consume draws.",
            f"scikit-learn forests ({n_trees} trees per K) against the exact sklearn-rule "
            f"expectation: χ²/dof = {chi2_dof:.2f} over {len(z)} terms (≈ 1 when the exact "
            "value is right and the standard errors are honest).",
            "Σ over variables of the forests' mean MDI (Thm 2: log2 10 = "
            f"{math.log2(10):.4f}): " + ", ".join(f"K={k}: {s:.6f}" for k, s in sums.items()),
        ]
        ok = truncation_holds and abs(worst_paper.published_minus_paper) < 0.005 \
            and chi2_dof < 3
        return TargetPage(
            table=table, figures=[figure], notes=notes,
            verdict="reproduced within Monte-Carlo error" if ok else "deviates",
            worst=(f"|published − exact (paper rule)| = "
                   f"{abs(worst_paper.published_minus_paper):.4f} bits ({worst_paper.variable},"
                   f" K = {worst_paper.column}); scikit-learn differs by up to "
                   f"{gap_sklearn.max():.4f}"),
            scale=f"{'quick: ' if quick else ''}{n_trees} trees per K on the 10-row LED table")

    def _figure(self, table: pd.DataFrame, context: TargetContext):
        context.gallery.mkdir(parents=True, exist_ok=True)
        rest = table[table["column"] != "Thm1"].copy()
        rest["K"] = rest["column"].astype(int)
        fig, axes = plt.subplots(2, 7, figsize=(16, 5.6), sharey="row", sharex=True)
        for top, bottom, name in zip(axes[0], axes[1], VARIABLES, strict=True):
            part = rest[rest["variable"] == name]
            top.plot(part["K"], part["published"], "o", color="black", label="published")
            top.plot(part["K"], part["exact_paper_rule"], "-", label="exact, paper's rule")
            top.plot(part["K"], part["exact_sklearn_rule"], "--", label="exact, scikit-learn")
            top.errorbar(part["K"], part["sklearn_forest"], yerr=2 * part["forest_se"],
                         fmt="x", label="scikit-learn forest ± 2 SE")
            top.set_title(name)
            bottom.axhline(0.0, color="grey", lw=0.8)
            bottom.plot(part["K"], part["published_minus_paper"], "o-",
                        label="published − exact (paper's rule)")
            bottom.plot(part["K"], part["published"] - part["exact_sklearn_rule"], "s--",
                        label="published − exact (scikit-learn)")
            bottom.errorbar(part["K"], part["forest_minus_sklearn_rule"],
                            yerr=2 * part["forest_se"], fmt="x",
                            label="forest − exact (scikit-learn) ± 2 SE")
            bottom.set_xlabel("K")
        axes[0, 0].set_ylabel("MDI (bits)")
        axes[1, 0].set_ylabel("difference (bits)")
        axes[0, -1].legend(fontsize=7, loc="upper right")
        axes[1, -1].legend(fontsize=6, loc="lower right")
        fig.tight_layout()
        path = context.gallery / f"{self.name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path
