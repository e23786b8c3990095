"""``sutera2021-table4``: local MDI against Saabas and TreeSHAP (seed 003, Table 4)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.reports.base import new_figure, save_figure
from harness.reports.correlation import THRESHOLDS
from harness.reports.targets._sutera import (
    LABELS,
    correlations,
    explained_data,
    max_explain,
    n_trees,
    run_local,
)
from harness.reports.targets.base import Target, TargetContext, TargetPage

# Seed 003, Appendix E.2, Table 4 ("Summary of results on classification datasets"):
# (dataset, compared with local MDI, correlation) -> mean, std, % >= 0.9, % >= 0.75.
PUBLISHED = pd.DataFrame(
    [("Wine", "Saabas", "pearson", 0.906, 0.101, 72.47, 91.57),
     ("Wine", "Saabas", "spearman", 0.843, 0.128, 44.38, 80.90),
     ("Iris", "Saabas", "pearson", 0.949, 0.156, 89.33, 95.33),
     ("Iris", "Saabas", "spearman", 0.892, 0.231, 67.33, 91.33),
     ("Breast cancer", "Saabas", "pearson", 0.899, 0.220, 79.96, 91.04),
     ("Breast cancer", "Saabas", "spearman", 0.857, 0.255, 68.19, 84.71),
     ("Led", "Saabas", "pearson", 0.980, 0.025, 100.00, 100.00),
     ("Led", "Saabas", "spearman", 0.989, 0.016, 100.00, 100.00),
     ("Led (sampled)", "Saabas", "pearson", 0.970, 0.034, 100.00, 87.00),
     ("Led (sampled)", "Saabas", "spearman", 0.978, 0.017, 100.00, 100.00),
     ("Digits", "Saabas", "pearson", 0.915, 0.045, 69.84, 99.44),
     ("Digits", "Saabas", "spearman", 0.899, 0.045, 55.65, 99.50),
     ("Wine", "TreeSHAP", "pearson", 0.900, 0.104, 70.22, 90.45),
     ("Wine", "TreeSHAP", "spearman", 0.852, 0.121, 47.75, 82.02),
     ("Iris", "TreeSHAP", "pearson", 0.947, 0.150, 88.00, 96.67),
     ("Iris", "TreeSHAP", "spearman", 0.881, 0.186, 56.67, 92.00),
     ("Breast cancer", "TreeSHAP", "pearson", 0.888, 0.223, 79.26, 90.33),
     ("Breast cancer", "TreeSHAP", "spearman", 0.841, 0.254, 62.57, 84.18),
     ("Led", "TreeSHAP", "pearson", 1.000, 0.000, 100.00, 100.00),
     ("Led", "TreeSHAP", "spearman", 1.000, 0.000, 100.00, 100.00),
     ("Led (sampled)", "TreeSHAP", "pearson", 0.990, 0.009, 100.00, 100.00),
     ("Led (sampled)", "TreeSHAP", "spearman", 0.988, 0.017, 100.00, 100.00),
     ("Digits", "TreeSHAP", "pearson", 0.881, 0.047, 38.01, 98.39),
     ("Digits", "TreeSHAP", "spearman", 0.891, 0.041, 44.80, 99.55)],
    columns=["dataset", "versus", "correlation", "mean", "std", "pct_ge_0.90",
             "pct_ge_0.75"])
DATASETS = {"Led": "led", "Led (sampled)": "led[n_samples=200]", "Digits": "digits",
            "Iris": "iris", "Wine": "wine", "Breast cancer": "breast_cancer"}
# Distinct rows the paper explains (Table 3: every row). The noise-free LED has 10 patterns,
# so its 200 sampled rows are 10 distinct rows repeated: their correlations take at most 10
# values, and 10, not 200, is the number of independent samples behind each statistic.
PAPER_ROWS = {"Led": 10, "Led (sampled)": 10, "Digits": 1797, "Iris": 150, "Wine": 178,
              "Breast cancer": 569}
STATISTICS = ("mean", "std", "pct_ge_0.90", "pct_ge_0.75")
# 100 % of the rows >= 0.9 but 87 % >= 0.75 is impossible: a typo in the paper.
INCONSISTENT = {("Led (sampled)", "Saabas", "pearson", "pct_ge_0.75")}
KINDS = {"abs": "Absolute", "signed": "Signed"}
Z_LIMIT = 3.5  # two-sided p = 4.7e-4; times 72 tested statistics, about 3 % by chance


def summarise(per_sample: pd.DataFrame) -> pd.DataFrame:
    """Table 4's statistics per (compared method, correlation): mean, std (ddof = 0) and the
    percentages of rows with correlation >= 0.9 and >= 0.75, over the rows where it is
    defined (Sutera et al. 2021, Appendix E.2)."""
    long = per_sample.melt(id_vars=["method_b", "sample"], value_vars=["pearson", "spearman"],
                           var_name="correlation").dropna(subset=["value"])
    grouped = long.groupby(["method_b", "correlation"])["value"]
    table = pd.DataFrame({"mean": grouped.mean(), "std": grouped.std(ddof=0),
                          "n": grouped.size()})
    for threshold in THRESHOLDS:
        table[f"pct_ge_{threshold:.2f}"] = 100 * grouped.apply(lambda v, t=threshold:
                                                               np.mean(v >= t))
    table = table.reset_index()
    table["versus"] = table.pop("method_b").map(LABELS)
    return table


def z_score(statistic: str, ours: float, published: float, std_ours: float,
            std_published: float, n_ours: int, n_published: int) -> float:
    """Difference over its sampling error, treating both as samples of distinct rows.

    Means: (ours - published) / sqrt(s_o²/n_o + s_p²/n_p), after removing the published
    rounding (± 0.0005); percentages: two-proportion z with the pooled proportion.
    NaN for the standard deviations (not tested).
    """
    if statistic == "std":
        return np.nan
    gap = ours - published
    if statistic == "mean":
        gap = np.sign(gap) * max(abs(gap) - 0.0005, 0.0)
        error = np.sqrt(std_ours**2 / n_ours + std_published**2 / n_published)
    else:
        pooled = (ours * n_ours + published * n_published) / (100 * (n_ours + n_published))
        error = 100 * np.sqrt(pooled * (1 - pooled) * (1 / n_ours + 1 / n_published))
    if error == 0:
        return 0.0 if gap == 0 else np.inf * np.sign(gap)
    return float(gap / error)


class Sutera2021Table4(Target):
    """Per-sample agreement of local MDI with Saabas and TreeSHAP, six data sets, K = 1.

    1000 totally randomized Extra-Trees (K = 1, entropy, no bootstrap) per data set; the
    local importances of the training rows by local MDI (Eq. 8), Saabas and TreeSHAP
    (path-dependent), the last two for the predicted class; per row, Pearson and Spearman
    correlation between local MDI and each of the two. The paper does not say whether
    Table 4 correlates signed or absolute values (Sec. 6 uses absolute values for Fig. 2):
    both are computed, the page says which is closer to the published numbers, and the
    verdict is on that one (measured: signed values; absolute ones put the digits Spearman
    means and the breast cancer Spearman fractions 6-8 standard errors away).
    """

    name = "sutera2021-table4"
    title = "Local MDI vs Saabas and TreeSHAP on six classification data sets (K = 1)"
    source = ("seed 003 (Sutera, Louppe, Huynh-Thu, Wehenkel, Geurts 2021), Appendix E.2, "
              "Table 4 (and Fig. 7); data sets of Table 3")

    def run(self, context: TargetContext) -> TargetPage:
        frames, n_ours = [], {}
        for label, spec in DATASETS.items():
            run = run_local(context, spec, [1])
            X, _ = explained_data(spec, run.rows[1])
            n_ours[label] = (len(X), len(np.unique(X, axis=0)))
            for signed in (False, True):
                pairs = (("local_mdi", "saabas"), ("local_mdi", "treeshap"))
                summary = summarise(correlations(run, signed, pairs))
                summary["dataset"], summary["signed"] = label, signed
                frames.append(summary)
        ours = pd.concat(frames, ignore_index=True)
        table = self._side_by_side(ours, {k: v[1] for k, v in n_ours.items()})
        figure = self._figure(table, context)
        return self._page(table, n_ours, figure, context.quick)

    @staticmethod
    def _side_by_side(ours: pd.DataFrame, distinct: dict[str, int]) -> pd.DataFrame:
        keys = ["dataset", "versus", "correlation"]
        variants = {"abs": ours[~ours["signed"]].set_index(keys),
                    "signed": ours[ours["signed"]].set_index(keys)}
        rows = []
        for _, pub in PUBLISHED.iterrows():
            key = tuple(pub[keys])
            for statistic in STATISTICS:
                row = {"dataset": key[0], "versus": key[1], "correlation": key[2],
                       "statistic": statistic, "published": float(pub[statistic])}
                for kind, frame in variants.items():
                    mine = frame.loc[key]
                    row[f"ours_{kind}"] = float(mine[statistic])
                    row[f"diff_{kind}"] = float(mine[statistic] - pub[statistic])
                    row[f"z_{kind}"] = z_score(statistic, mine[statistic], pub[statistic],
                                               mine["std"], pub["std"], distinct[key[0]],
                                               PAPER_ROWS[key[0]])
                row["n_rows"] = int(variants["abs"].loc[key, "n"])
                row["tested"] = statistic != "std" and (*key, statistic) not in INCONSISTENT
                rows.append(row)
        return pd.DataFrame(rows)

    def _page(self, table: pd.DataFrame, n_ours: dict, figure, quick: bool) -> TargetPage:
        means = table[table["statistic"] == "mean"]
        pct = table[table["statistic"].str.startswith("pct")]
        gap = {kind: float(means[f"diff_{kind}"].abs().mean()) for kind in KINDS}
        gap_pct = {kind: float(pct[f"diff_{kind}"].abs().mean()) for kind in KINDS}
        closer = min(gap, key=gap.get)
        tested = table[table["tested"]]
        beyond = {kind: tested[tested[f"z_{kind}"].abs() > Z_LIMIT] for kind in KINDS}
        worst = tested.loc[tested[f"z_{closer}"].abs().idxmax()]
        worst_mean = means.loc[means[f"diff_{closer}"].abs().idxmax()]
        ok = beyond[closer].empty
        notes = [
            f"Absolute or signed values? Mean |ours − published| over the 24 mean "
            f"correlations: {gap['abs']:.4f} with absolute values, {gap['signed']:.4f} with "
            f"signed values (over the 48 percentages: {gap_pct['abs']:.2f} vs "
            f"{gap_pct['signed']:.2f} points); |z| > {Z_LIMIT}: {len(beyond['abs'])} with "
            f"absolute, {len(beyond['signed'])} with signed values. **{KINDS[closer]} values "
            "match better**, and the verdict is on them. (Sec. 6 correlates absolute "
            "values for Figs. 2 and 6; on LED every importance is >= 0, so there the two "
            "agree.)",
            f"z = (ours − published) / (sampling error of both, the distinct explained rows "
            f"being samples; the published 3-decimal rounding removed first); verdict "
            f"'reproduced within Monte-Carlo error' iff |z| <= {Z_LIMIT} for every tested "
            "mean and percentage (72 tests: two-sided p = 4.7e-4 each, ~3 % for one false "
            "alarm among them). Standard deviations are shown, not tested. The noise-free "
            "LED has 10 distinct rows, so Led (sampled) counts 10 samples, not 200.",
            "The paper's Led (sampled) Saabas Pearson row reports 100 % of rows >= 0.9 but "
            "87 % >= 0.75, which cannot both hold (a typo): that percentage is not tested.",
            "Rows explained (distinct): " + ", ".join(f"{k} {n} ({d})"
                                                       for k, (n, d) in n_ours.items())
            + ". Training rows: the paper explains all rows of Table 3, with forests grown on "
            "all of them; ours hold out 5 % (the LED population none).",
            "Saabas and TreeSHAP explain the predicted-class probability, local MDI the "
            "impurity (class-agnostic), as in the paper; Led is the 10-row population "
            "(equiprobable digits), Led (sampled) 200 rows drawn with seed 0.",
        ]
        for kind in KINDS:
            if not beyond[kind].empty:
                notes.append(f"Beyond the limit with {KINDS[kind].lower()} values: " + "; ".join(
                    f"{r['dataset']} {r['versus']} {r['correlation']} {r['statistic']}: "
                    f"published {r['published']:.3f}, ours {r[f'ours_{kind}']:.3f} "
                    f"(z = {r[f'z_{kind}']:+.1f})" for _, r in beyond[kind].iterrows()))
        digits_rows = max_explain("digits", quick)
        if not quick:
            notes.append(
                "Digits: TreeSHAP of 1000 fully grown K = 1 trees costs ~1.3 s per row on one "
                "idle core (measured), 40 min for all 1707 training rows: a seeded subset of "
                f"{digits_rows} training rows is explained (its sampling error is in z).")
        return TargetPage(
            table=table, figures=[figure], notes=notes,
            verdict="reproduced within Monte-Carlo error" if ok else "deviates",
            worst=(f"{KINDS[closer].lower()} values (closer to the paper): largest abs(z) "
                   f"{abs(worst[f'z_{closer}']):.1f} ({worst['dataset']} {worst['versus']} "
                   f"{worst['correlation']} {worst['statistic']}: published "
                   f"{worst['published']:.3f}, ours {worst[f'ours_{closer}']:.3f}); largest "
                   f"mean gap {worst_mean[f'diff_{closer}']:+.3f} ({worst_mean['dataset']} "
                   f"{worst_mean['versus']} {worst_mean['correlation']})"),
            scale=(f"{'quick: ' if quick else ''}{n_trees(quick)} trees (K = 1) per data set; "
                   f"digits: {digits_rows} seeded training rows explained"
                   + ("; breast cancer, wine, led (sampled): 80" if quick else "")))

    def _figure(self, table: pd.DataFrame, context: TargetContext):
        context.gallery.mkdir(parents=True, exist_ok=True)
        means = table[table["statistic"] == "mean"]
        figure, axes = new_figure(ncols=2, nrows=1, width=5.0, height=4.2, share=True)
        for ax, versus in zip(axes[0], ("Saabas", "TreeSHAP")):
            part = means[means["versus"] == versus]
            ax.plot([0.75, 1.0], [0.75, 1.0], color="grey", lw=0.8)
            for correlation, marker in (("pearson", "o"), ("spearman", "s")):
                rows = part[part["correlation"] == correlation]
                ax.scatter(rows["published"], rows["ours_abs"], marker=marker,
                           label=f"{correlation}, |values|")
                ax.scatter(rows["published"], rows["ours_signed"], marker=marker,
                           facecolors="none", edgecolors="black",
                           label=f"{correlation}, signed")
                for r in rows.itertuples():
                    ax.annotate(r.dataset, (r.published, r.ours_abs), fontsize=6,
                                xytext=(3, -6), textcoords="offset points")
            ax.set_title(f"local MDI vs {versus}: mean per-row correlation", fontsize=9)
            ax.set_xlabel("published (Table 4)")
        axes[0, 0].set_ylabel("ours")
        axes[0, 1].legend(fontsize=7, loc="lower right")
        return save_figure(figure, context.gallery / f"{self.name}.png")
