"""``sutera2021-table4``: local MDI against Saabas and TreeSHAP (seed 003, Table 4, Fig. 7)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from harness.api import load_dataset
from harness.core.spec import parse_spec
from harness.reports.base import new_figure, save_figure
from harness.reports.correlation import THRESHOLDS
from harness.reports.targets._sutera import (
    LABELS,
    TEST_SIZE,
    combine_readings,
    correlations,
    explained_data,
    max_explain,
    n_trees,
    run_local,
)
from harness.reports.targets.base import Target, TargetContext, TargetPage
from harness.reports.targets.verdict import (
    Comparison,
    claim,
    judge,
    page_verdict,
    worst_line,
)

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
# Table 3: (samples, features) of each data set
TABLE3 = {"Led": (10, 7), "Led (sampled)": (200, 7), "Digits": (1797, 64), "Iris": (150, 4),
          "Wine": (178, 13), "Breast cancer": (569, 30)}
STATISTICS = ("mean", "std", "pct_ge_0.90", "pct_ge_0.75")
DECIMALS = {"mean": 3, "std": 3, "pct_ge_0.90": 2, "pct_ge_0.75": 2}
# 100 % of the rows >= 0.9 but 87 % >= 0.75 is impossible (an erratum of the paper): shown and
# judged, but left out of the page's verdict.
ERRATA = {("Led (sampled)", "Saabas", "pearson", "pct_ge_0.75")}
KINDS = {"abs": "absolute values", "signed": "signed values"}
# Independent replicates (seeds 0..R-1: learning set of a sampled data set, train/test split,
# forest, rows explained). Their spread is the Monte-Carlo error of one run like the paper's.
REPLICATES = {False: 5, True: 3}


def statistics(values: np.ndarray) -> dict[str, float]:
    """Table 4's statistics of a set of per-row correlations: mean, std (ddof = 0) and the
    percentages of rows >= 0.9 and >= 0.75 (Sutera et al. 2021, Appendix E.2)."""
    out = {"mean": float(np.mean(values)), "std": float(np.std(values))}
    for threshold in THRESHOLDS:
        out[f"pct_ge_{threshold:.2f}"] = float(100 * np.mean(values >= threshold))
    return out


def summarise(per_sample: pd.DataFrame) -> pd.DataFrame:
    """Table 4's statistics per (compared method, correlation), over the rows where the
    correlation is defined."""
    long = per_sample.melt(id_vars=["method_b", "sample"], value_vars=["pearson", "spearman"],
                           var_name="correlation").dropna(subset=["value"])
    rows = []
    for (method, correlation), part in long.groupby(["method_b", "correlation"]):
        values = part["value"].to_numpy()
        rows.append({"versus": LABELS[method], "correlation": correlation, "n": len(values),
                     **statistics(values)})
    return pd.DataFrame(rows)


class Sutera2021Table4(Target):
    """Per-sample agreement of local MDI with Saabas and TreeSHAP, six data sets, K = 1.

    1000 totally randomized Extra-Trees (K = 1, entropy, no bootstrap) per data set; the
    local importances of the training rows by local MDI (Eq. 8), Saabas and TreeSHAP
    (path-dependent), the last two for the predicted class; per row, Pearson and Spearman
    correlation between local MDI and each of the two. The paper does not say whether
    Table 4 correlates signed or absolute values (Sec. 6 uses absolute values for Fig. 2):
    both readings are computed and judged, each with the gallery's rule; where they get
    different verdicts the result is "not determined by the text". Fig. 7 (the per-row
    correlations sorted) is drawn, and the claims of Appendix E.2 about it are checked.
    """

    name = "sutera2021-table4"
    title = "Local MDI vs Saabas and TreeSHAP on six classification data sets (K = 1)"
    source = ("seed 003 (Sutera, Louppe, Huynh-Thu, Wehenkel, Geurts 2021), Appendix E.2, "
              "Table 4 and Fig. 7; data sets of Table 3")

    def run(self, context: TargetContext) -> TargetPage:
        frames, per_sample, n_ours = [], [], {}
        for label, spec in DATASETS.items():
            for seed in range(REPLICATES[context.quick]):
                run = run_local(context, spec, [1], seed=seed)
                X, _ = explained_data(spec, run.rows[1], seed)
                if seed == 0:
                    n_ours[label] = (len(X), len(np.unique(X, axis=0)))
                for signed in (False, True):
                    pairs = (("local_mdi", "saabas"), ("local_mdi", "treeshap"))
                    rows = correlations(run, signed, pairs)
                    summary = summarise(rows)
                    summary["dataset"], summary["signed"], summary["seed"] = label, signed, seed
                    frames.append(summary)
                    if seed == 0:
                        per_sample.append(rows.assign(dataset=label, signed=signed))
        replicates = pd.concat(frames, ignore_index=True)
        samples = pd.concat(per_sample, ignore_index=True)
        table, judged = self._side_by_side(replicates)
        table3 = self._table3()
        fig7_claims = self._fig7_claims(replicates)
        figures = [self._figure(table, context), self._fig7(samples, context)]
        csv = context.gallery / f"{self.name}-per-sample.csv"
        samples.to_csv(csv, index=False)
        replicates.to_csv(context.gallery / f"{self.name}-replicates.csv", index=False)
        return self._page(table, judged, fig7_claims, samples, n_ours, figures, csv,
                          context.quick, table3)

    @staticmethod
    def _table3() -> pd.DataFrame:
        """Table 3's sizes against the data sets as loaded (seed 0), exact integers."""
        comparisons = []
        for label, spec in DATASETS.items():
            name, grid = parse_spec(spec)
            loaded = load_dataset(name, seed=0, **{k: v[0] for k, v in grid.items()})
            samples, features = TABLE3[label]
            comparisons += [Comparison(f"{label}: samples", samples, loaded.n_samples, 0),
                            Comparison(f"{label}: features", features, loaded.n_features, 0)]
        return judge(comparisons)

    @staticmethod
    def _side_by_side(replicates: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
        """One Comparison per published number and reading, judged per reading (96 each).

        Ours is the mean over the replicates, with its standard error; the published value is
        one run like one of our replicates: its standard error is their standard deviation.
        """
        keys = ["dataset", "versus", "correlation"]
        judged, meta = {}, []
        for kind, signed in (("abs", False), ("signed", True)):
            frame = replicates[replicates["signed"] == signed]
            comparisons = []
            for _, pub in PUBLISHED.iterrows():
                key = tuple(pub[keys])
                mine = frame[(frame[keys] == pd.Series(key, index=keys)).all(axis=1)]
                for statistic in STATISTICS:
                    values = mine[statistic].to_numpy()
                    spread = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
                    if statistic.startswith("pct"):
                        # a fraction of n rows varies at least binomially; a few replicates
                        # all at 100 % (or 0 %) would otherwise claim no error at all
                        n_rows = float(mine["n"].mean())
                        pooled = (values.mean() + float(pub[statistic])) / 200
                        spread = max(spread, 100 * math.sqrt(pooled * (1 - pooled) / n_rows))
                    comparisons.append(Comparison(
                        f"{key[0]} {key[1]} {key[2]} {statistic}", float(pub[statistic]),
                        float(values.mean()), DECIMALS[statistic],
                        ours_se=spread / math.sqrt(len(values)), published_se=spread))
                    if kind == "abs":
                        meta.append({"dataset": key[0], "versus": key[1],
                                     "correlation": key[2], "statistic": statistic,
                                     "erratum": (*key, statistic) in ERRATA,
                                     "n_rows": int(mine["n"].iloc[0]),
                                     "replicates": len(values)})
            judged[kind] = judge(comparisons)
        table = pd.DataFrame(meta)
        table["published"] = judged["abs"]["published"]
        for kind in KINDS:
            part = judged[kind]
            table[f"ours_{kind}"] = part["ours"]
            table[f"diff_{kind}"] = part["difference"]
            table[f"tolerance_{kind}"] = part["tolerance"]
            table[f"verdict_{kind}"] = part["verdict"]
        return table, judged

    @staticmethod
    def _fig7_claims(ours: pd.DataFrame) -> pd.DataFrame:
        """Appendix E.2 on Fig. 7: "More than 90 % importance vectors are similar (correlation
        >= 0.75) in four datasets (out of six) and more than 80 % in two datasets". Of Table 4's
        columns, the published Spearman percentages (both methods) fit it and the Pearson ones
        do not (Saabas Pearson: five >= 90 %), so it is read on Spearman; both methods and both
        readings are checked."""
        rows = []
        for kind, signed in (("abs", False), ("signed", True)):
            for versus in ("Saabas", "TreeSHAP"):
                part = ours[(ours["signed"] == signed) & (ours["versus"] == versus)
                            & (ours["correlation"] == "spearman")]
                pct = part.groupby("dataset", sort=False)["pct_ge_0.75"].mean()
                above_90 = int((pct > 90).sum())
                above_80 = int(((pct > 80) & (pct <= 90)).sum())
                rows.append({"reading": KINDS[kind], "versus": versus,
                             "claim": "Spearman >= 0.75 for > 90 % of rows in 4 data sets, "
                                      "for > 80 % in the other 2",
                             "measured": ", ".join(f"{d} {v:.1f} %" for d, v in pct.items()),
                             "holds": above_90 == 4 and above_80 == 2})
        return pd.DataFrame(rows)

    def _page(self, table, judged, fig7_claims, samples, n_ours, figures, csv,
              quick, table3) -> TargetPage:
        counted = ~table["erratum"]
        reading = {kind: page_verdict(table.loc[counted, f"verdict_{kind}"]) for kind in KINDS}
        table4 = combine_readings(reading)
        fig7_reading = {kind: claim(bool(fig7_claims.loc[
            fig7_claims["reading"] == KINDS[kind], "holds"].all())) for kind in KINDS}
        fig7 = combine_readings(fig7_reading)
        results = {"sutera.table4": table4, "sutera.fig7": fig7,
                   "sutera.table3": page_verdict(table3["verdict"])}
        erratum = table[table["erratum"]].iloc[0]
        low = {t: samples.groupby(["dataset", "signed"])["spearman"].apply(
            lambda v, t=t: 100 * float(np.mean(v.dropna() < t))) for t in (0.0, 0.25, 0.5)}
        notes = [
            "Table 3 (data set sizes, published | ours): " + "; ".join(
                f"{r.label} {r.published:.0f} | {r.ours:.0f} ({r.verdict})"
                for r in table3.itertuples()) + ".",
            "Readings: " + "; ".join(
                f"{KINDS[k]}: Table 4 {reading[k]}, Fig. 7 claim {fig7_reading[k]}"
                for k in KINDS) + ". The verdict of a result is the common verdict of the two "
            "readings, or 'not determined by the text' where they differ.",
            f"Worst number with {KINDS['abs']}: {worst_line(judged['abs'][counted.to_numpy()])}"
            f"; with {KINDS['signed']}: "
            f"{worst_line(judged['signed'][counted.to_numpy()])}.",
            f"Erratum: the paper's Led (sampled) Saabas Pearson row reports 100 % of rows >= 0.9 "
            f"but {erratum['published']:.0f} % >= 0.75, which cannot both hold; that number is "
            f"judged ({erratum['verdict_abs']} / {erratum['verdict_signed']}) but left out "
            "of the page verdict.",
            "Fig. 7 claims (Appendix E.2): " + "; ".join(
                f"{r.reading}, {r.versus}: {'holds' if r.holds else 'does not hold'} "
                f"({r.measured})" for r in fig7_claims.itertuples()) + ".",
            "'A fraction of samples (roughly 1 % to 10 %) are associated with uncorrelated "
            "importance scores': 'uncorrelated' is not defined by the text; the percentage of "
            "rows with Spearman below 0, 0.25 and 0.5 (absolute / signed values): " + "; ".join(
                f"{d}: " + ", ".join(f"{low[t][(d, False)]:.1f}/{low[t][(d, True)]:.1f}"
                                     for t in (0.0, 0.25, 0.5))
                for d in DATASETS) + ". Not judged.",
            f"Replicates: {REPLICATES[quick]} seeds per data set; the statistics of each: "
            f"[{self.name}-replicates.csv]({self.name}-replicates.csv). Rows explained "
            "(seed 0, all / distinct): " + ", ".join(
                f"{k} {n}/{d}" for k, (n, d) in n_ours.items())
            + f". All per-row correlations: [{csv.name}]({csv.name}).",
        ]
        if not quick:
            notes.append(
                "Digits: TreeSHAP of 1000 fully grown K = 1 trees costs ~1.3 s per row on one "
                "idle core (measured), 40 min for all 1707 training rows: a seeded subset of "
                f"{max_explain('digits', quick)} training rows is explained (its sampling "
                "error is in the standard errors).")
        worst = worst_line(judged["abs"][counted.to_numpy()])
        return TargetPage(
            table=table, figures=figures, notes=notes, results=results,
            verdict=page_verdict(results.values()),
            worst=f"{KINDS['abs']}: {worst}",
            scale=(f"{'quick: ' if quick else ''}{n_trees(quick)} trees (K = 1) per data set, "
                   f"{REPLICATES[quick]} replicates; "
                   f"digits: {max_explain('digits', quick)} seeded training rows explained"
                   + ("; breast cancer, wine, led (sampled): 80" if quick else "")),
            assumptions=[
                "Signed or absolute importances? Table 4 does not say (Sec. 6 correlates "
                "absolute values for Figs. 2 and 6): both are computed and judged; a result "
                "whose two readings disagree is 'not determined by the text'.",
                f"The forests see {100 * (1 - TEST_SIZE):.0f} % of the rows (the gallery holds "
                "out a test split); the paper grows and explains on all rows of Table 3 (the "
                "LED population: all 10 rows here too).",
                "Rows explained: the training rows; digits: a seeded subset "
                f"({max_explain('digits', False)} at full scale), as TreeSHAP of 1000 deep "
                "trees on all 1707 rows would take 40 min.",
                "Standard errors: the paper's numbers are one run (one forest, one learning "
                "set for Led (sampled)); ours are the mean of independent replicates (seeds: "
                "learning set, split, forest, explained rows) with its standard error, and the "
                "replicates' standard deviation is the paper's standard error. The digits "
                "subset makes that spread larger than for all rows (conservative). A "
                "percentage's spread is at least binomial for the rows explained, with the "
                "fraction taken halfway between ours and the paper's.",
                "Std is the population standard deviation (ddof = 0); a row whose correlation "
                "is undefined (a constant vector) is left out.",
                "Fig. 7's sentence on '> 90 % in four data sets, > 80 % in two' is read on the "
                "Spearman columns (the published ones fit it, the Pearson ones do not).",
            ])

    def _figure(self, table: pd.DataFrame, context: TargetContext):
        context.gallery.mkdir(parents=True, exist_ok=True)
        means = table[table["statistic"] == "mean"]
        figure, axes = new_figure(ncols=2, nrows=1, width=5.0, height=4.6, share=True,
                                  wspace=0.55)
        for ax, versus in zip(axes[0], ("Saabas", "TreeSHAP")):
            part = means[means["versus"] == versus]
            ax.plot([0.75, 1.0], [0.75, 1.0], color="grey", lw=0.8)
            points, texts = [], []
            for correlation, marker in (("pearson", "o"), ("spearman", "s")):
                rows = part[part["correlation"] == correlation]
                ax.scatter(rows["published"], rows["ours_abs"], marker=marker,
                           label=f"{correlation}, |values|")
                ax.scatter(rows["published"], rows["ours_signed"], marker=marker,
                           facecolors="none", edgecolors="black",
                           label=f"{correlation}, signed")
                for r in rows.itertuples():
                    points.append((r.published, r.ours_abs))
                    texts.append(f"{r.dataset} ({correlation[0].upper()})")
            label_column(ax, points, texts)
            ax.set_title(f"local MDI vs {versus}:\nmean per-row correlation", fontsize=10)
            ax.set_xlabel("published (Table 4)")
            ax.set_ylabel("ours")
        axes[0, 1].legend(fontsize=9, loc="upper left", bbox_to_anchor=(-1.35, -0.15),
                          ncol=4)
        return save_figure(figure, context.gallery / f"{self.name}.png")

    def _fig7(self, samples: pd.DataFrame, context: TargetContext):
        """Our Fig. 7: per data set, the per-row correlations sorted increasingly."""
        figure, axes = new_figure(ncols=3, nrows=2, width=3.6, height=2.8, wspace=0.45,
                                  hspace=0.6)
        styles = {(False, "pearson"): "-", (False, "spearman"): "--",
                  (True, "pearson"): ":", (True, "spearman"): "-."}
        colours = {"saabas": "tab:blue", "treeshap": "tab:orange"}
        for ax, dataset in zip(axes.flat, DATASETS):
            part = samples[samples["dataset"] == dataset]
            for (signed, correlation), style in styles.items():
                for method, colour in colours.items():
                    values = np.sort(part[(part["signed"] == signed)
                                          & (part["method_b"] == method)][correlation]
                                     .dropna().to_numpy())
                    if len(values):
                        ax.plot(np.linspace(0, 1, len(values)), values, style, color=colour,
                                lw=1.0, label=(f"{LABELS[method]}, {correlation}, "
                                               f"{'signed' if signed else '|values|'}"))
            ax.set_xlabel("row rank, by increasing correlation")
            ax.set_ylabel("correlation with local MDI")
            ax.set_title(dataset, fontsize=10)
            ax.set_ylim(-1.05, 1.05)
        axes[0, 0].legend(fontsize=9, loc="upper left", bbox_to_anchor=(0.0, -2.0), ncol=2)
        return save_figure(figure, context.gallery / f"{self.name}-fig7.png")


def label_column(ax, points: list[tuple[float, float]], texts: list[str],
                 fontsize: float = 9) -> None:
    """Label scatter points from a column right of the axes, in the points' vertical order,
    one text line (1.3 × the font size) apart at least, each joined to its point by a thin
    line: no two labels can overlap, however close the points are."""
    if not points:
        return
    height = ax.get_position().height * ax.figure.get_figheight()  # inches
    min_gap = 1.3 * fontsize / 72 / height  # axes fraction
    order = np.argsort([y for _, y in points])
    low, high = ax.get_ylim()
    wanted = [(points[i][1] - low) / (high - low) for i in order]
    placed = []
    for y in wanted:
        placed.append(max(y, placed[-1] + min_gap) if placed else max(y, 0.0))
    overflow = placed[-1] - 1.0
    if overflow > 0:  # shift the column down, keeping the gaps
        placed = [y - overflow for y in placed]
    for i, y in zip(order, placed):
        ax.text(1.04, y, texts[i], transform=ax.transAxes, fontsize=fontsize, va="center")
        ax.annotate("", xy=points[i], xycoords="data", xytext=(1.035, y),
                    textcoords="axes fraction",
                    arrowprops={"arrowstyle": "-", "color": "0.6", "lw": 0.5})
