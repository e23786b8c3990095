"""``benard2022-sobol-mda``: the p = 200 table of Sobol-MDA, BC-MDA and IK-MDA (seed 002)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness.api import load_dataset
from harness.forest.models import ModelSpec
from harness.reports.base import save_figure, subplots
from harness.reports.targets.base import Target, TargetContext, TargetPage
from harness.reports.targets.verdict import (
    UNDETERMINED,
    Comparison,
    judge,
    page_verdict,
)

# seed 002 (Scornet, slides, Oct. 2025), "Sobol-MDA Experiments" table (Bénard, Da Veiga &
# Scornet, Biometrika 2022): top 10 of each estimate, printed with 3 decimals, one data set.
PUBLISHED = {
    "sobol_mda": [("X1", 0.035), ("X161", 0.005), ("X81", 0.004), ("X121", 0.004),
                  ("X41", 0.002), ("X179", 0.002), ("X13", 0.001), ("X25", 0.001),
                  ("X73", 0.001), ("X155", 0.001)],
    "mda_bc": [("X1", 0.048), ("X25", 0.010), ("X31", 0.008), ("X14", 0.008), ("X40", 0.007),
               ("X3", 0.007), ("X17", 0.006), ("X26", 0.006), ("X41", 0.006), ("X121", 0.006)],
    "mda_ik": [("X1", 0.056), ("X5", 0.009), ("X81", 0.007), ("X41", 0.005), ("X161", 0.005),
               ("X15", 0.005), ("X121", 0.005), ("X7", 0.005), ("X4", 0.004), ("X28", 0.004)],
}
COLUMNS = {"sobol_mda": "S-MDA", "mda_bc": "BC-MDA / 2V[Y]", "mda_ik": "IK-MDA / V[Y]"}
SCALE = {"sobol_mda": 0.0, "mda_bc": 2.0, "mda_ik": 1.0}  # divide by SCALE x V[Y] (0: as is)
RELEVANT = ("X1", "X41", "X81", "X121", "X161")
# n_samples such that the 0.25 held-out split leaves the paper's n = 1000 training rows
DATASET = "linear_gaussian[preset=benard2022,n_samples=1334]"


@dataclass(frozen=True)
class Scale:
    n_trees: int
    seeds: tuple[int, ...]


FULL = Scale(300, tuple(range(10)))
QUICK = Scale(40, (0, 1))
#: the mtry / subsample sensitivity (one data set each): (label, max_features, max_samples)
SENSITIVITY = (("√p = 14", "sqrt", None), ("p/5 = 40", "0.2", None), ("p/3 = 66", "0.33", None),
               ("p = 200", "1.0", None), ("p/3, 63.2 % bootstrap", "0.33", "0.632"))
QUICK_SENSITIVITY = SENSITIVITY[::2]


def forest(n_trees: int, max_features: str, max_samples: str | None = None) -> str:
    samples = f",max_samples={max_samples}" if max_samples else ""
    return (f"random_forest[n_estimators={n_trees},max_features={max_features},"
            f"min_samples_leaf=5{samples}]")


class Benard2022SobolMDA(Target):
    """Top 10 of Sobol-MDA, BC-MDA / 2V[Y] and IK-MDA / V[Y] in the p = 200 grouped setting.

    Setting of the slides (after Archer & Kimes 2008; Gregorutti et al. 2017): 5 independent
    blocks of 40 Gaussian features, "strongly correlated" inside a block, ``m(X) = 2 X1 + X41
    + X81 + X121 + X161``, noise variance 10 % of V[Y], n = 1000, M = 300 trees. The slides do
    not give the correlation: ``linear_gaussian[preset=benard2022]`` assumes 0.9, the value of
    Gregorutti et al.'s grouped designs. Nor do they give the forest's other parameters: we
    grow scikit-learn ``RandomForestRegressor`` (bootstrap), ``min_samples_leaf = 5``
    (ranger's and randomForest's regression default) and mtry = p/3 (66, randomForest's
    regression default); with ranger's default mtry = √p the Sobol-MDA of X1 is about four
    times smaller than published (reported in the notes). The published table is one data
    set; we repeat the experiment over several seeds so that the spread of a single run
    (our Monte-Carlo error) is known, and compare rank by rank: published k-th value against
    our k-th largest value (identity-free: which correlated proxies fill ranks 6-10 is
    chance), and each published variable against our value of the same variable. The exact
    total Sobol index ST_j (Sobol-MDA's target) and the asymptotic limits of the normalised
    MDAs (``a_j² / V[Y]`` for both; Bénard et al. 2022, Prop. 1) sit beside them.
    """

    name = "benard2022-sobol-mda"
    title = "Sobol-MDA vs BC-MDA vs IK-MDA, p = 200 grouped Gaussian inputs"
    source = ("seed 002 (Scornet, slides 'Explainability via tree-based methods', Oct. 2025), "
              "'Sobol-MDA Experiments' table; Bénard, Da Veiga & Scornet, Biometrika 2022")

    def run(self, context: TargetContext) -> TargetPage:
        scale = QUICK if context.quick else FULL
        methods = list(PUBLISHED)
        truth = load_dataset("linear_gaussian", preset="benard2022", n_samples=1334).truth
        main, alternative = forest(scale.n_trees, "0.33"), forest(scale.n_trees, "sqrt")
        main_results = context.compare(self.name, datasets=[DATASET], models=[main],
                                       methods=methods, seeds=list(scale.seeds))
        ours = self._values(main_results, main, scale.seeds, truth.var_y)
        main_results.close()
        alternative_seeds = scale.seeds[:3]  # the second mtry reading, on fewer data sets
        results = context.compare(self.name, datasets=[DATASET], models=[alternative],
                                  methods=methods, seeds=list(alternative_seeds))
        sqrt_values = self._values(results, alternative, alternative_seeds, truth.var_y)
        results.close()
        sensitivity = self.sensitivity(context, scale, truth.var_y)
        table = self._table(ours, truth)
        figures = [self._rank_figure(table, context.gallery),
                   self._profile_figure(ours, truth, context.gallery)]
        return self._page(table, ours, sqrt_values, sensitivity, scale, figures, context.quick)

    def sensitivity(self, context: TargetContext, scale: Scale, var_y: float) -> pd.DataFrame:
        """X1's three normalised values and their ratios, over mtry and the subsample (one
        data set, seed 0): the runs the page once called "exploratory runs outside this page",
        now part of it (at quick scale: three of the five forests, with the quick trees)."""
        chosen = QUICK_SENSITIVITY if context.quick else SENSITIVITY
        models = [forest(scale.n_trees, features, samples) for _, features, samples in chosen]
        results = context.compare(self.name, datasets=[DATASET], models=models,
                                  methods=list(PUBLISHED), seeds=[0])
        rows = []
        for (label, _, _), model in zip(chosen, models, strict=True):
            values = self._values(results, model, (0,), var_y)
            x1 = {m: float(values[m].loc[0, "X1"]) for m in PUBLISHED}
            rows.append({"forest": label, **{COLUMNS[m]: x1[m] for m in PUBLISHED},
                         "BC / S-MDA": x1["mda_bc"] / x1["sobol_mda"],
                         "IK / S-MDA": x1["mda_ik"] / x1["sobol_mda"],
                         "(BC/2V) / (IK/V)": x1["mda_bc"] / x1["mda_ik"]})
        results.close()
        return pd.DataFrame(rows)

    @staticmethod
    def _values(results, model: str, seeds, var_y: float) -> dict[str, pd.DataFrame]:
        """Per method, a (seeds x features) frame of the normalised values of ``model``."""
        cells = results.cells_table()
        cells = cells[(cells["status"] == "done")
                      & (cells["model"] == repr(ModelSpec.from_any(model)))]
        found: dict[str, dict[int, np.ndarray]] = {m: {} for m in PUBLISHED}
        names = None
        for _, cell in cells.iterrows():
            names = results.feature_names(cell["key"])
            found[cell["method_name"]][int(cell["seed"])] = results.arrays(cell["key"])["values"]
        missing = [(m, s) for m in PUBLISHED for s in seeds if s not in found[m]]
        if missing:
            raise RuntimeError(f"cells did not finish: {missing}; see {results.folder}")
        frames = {}
        for method, per_seed in found.items():
            divisor = SCALE[method] * var_y if SCALE[method] else 1.0
            frames[method] = pd.DataFrame([per_seed[s] / divisor for s in seeds],
                                          index=list(seeds), columns=names)
        return frames

    @staticmethod
    def _table(ours: dict[str, pd.DataFrame], truth) -> pd.DataFrame:
        st = pd.Series(truth.quantities["sobol_total"].values, index=ours["sobol_mda"].columns)
        limit = pd.Series(truth.quantities["mda_ik_limit"].values / truth.var_y, index=st.index)
        rows = []
        for method, published in PUBLISHED.items():
            values = ours[method]
            ordered = -np.sort(-values.to_numpy(), axis=1)  # each seed's k-th largest value
            mean = values.mean()
            rank = mean.rank(ascending=False).astype(int)
            top = mean.sort_values(ascending=False)
            for k, (variable, value) in enumerate(published):
                at_rank = ordered[:, k]
                sd = at_rank.std(ddof=1) if len(at_rank) > 1 else np.nan
                rows.append({
                    "estimate": COLUMNS[method], "rank": k + 1, "variable": variable,
                    "relevant": variable in RELEVANT, "published": value,
                    "ours_kth_largest": at_rank.mean(), "ours_kth_sd": sd,
                    "difference": value - at_rank.mean(),
                    "ours_same_variable": mean[variable],
                    "ours_same_variable_sd": values[variable].std(ddof=1),
                    "our_rank_of_variable": int(rank[variable]),
                    "our_kth_variable": top.index[k],
                    "exact_ST": st[variable],
                    "limit": st[variable] if method == "sobol_mda" else limit[variable],
                })
        return pd.DataFrame(rows)

    @staticmethod
    def _claims(ours: dict[str, pd.DataFrame]) -> dict[str, dict[str, float]]:
        """Per method, over seeds: the mean number of relevant variables among the top 5 and
        top 10, of X1's group-mates (irrelevant, correlated 0.9 with X1) among the top 10, and
        the fraction of seeds whose top 5 is exactly the relevant set."""
        found = {}
        mates = {f"X{j}" for j in range(2, 41)}
        for method, values in ours.items():
            order = np.argsort(-values.to_numpy(), axis=1)
            names = np.asarray(values.columns)
            top5 = [set(names[row[:5]]) for row in order]
            top10 = [set(names[row[:10]]) for row in order]
            found[method] = {
                "relevant_top5": float(np.mean([len(t & set(RELEVANT)) for t in top5])),
                "relevant_top10": float(np.mean([len(t & set(RELEVANT)) for t in top10])),
                "mates_top10": float(np.mean([len(t & mates) for t in top10])),
                "top5_is_relevant": float(np.mean([t == set(RELEVANT) for t in top5])),
            }
        return found

    @staticmethod
    def _judged(ours: dict[str, pd.DataFrame], bc_divisor: float = 2.0) -> pd.DataFrame:
        """The gallery's rule on the 30 published numbers: published k-th value against our
        mean k-th largest value (standard error over our data sets), the published value
        being one run (its standard error: the sd of one of our runs). ``bc_divisor``: BC-MDA
        divided by ``bc_divisor`` V[Y] (2 as printed; 4 is the factor-2 reading)."""
        comparisons = []
        for method, published in PUBLISHED.items():
            values = ours[method].to_numpy() * (2.0 / bc_divisor if method == "mda_bc" else 1)
            ordered = -np.sort(-values, axis=1)
            n = len(ordered)
            for k, (variable, value) in enumerate(published):
                sd = float(ordered[:, k].std(ddof=1)) if n > 1 else 0.0
                comparisons.append(Comparison(
                    f"{COLUMNS[method]} rank {k + 1} ({variable})", value,
                    float(ordered[:, k].mean()), 3, ours_se=sd / np.sqrt(n), published_se=sd))
        return judge(comparisons)

    def _page(self, table, ours, sqrt_values, sensitivity, scale, figures,
              quick) -> TargetPage:
        claims = self._claims(ours)
        published_claims = {}
        for method, top in PUBLISHED.items():
            names = [v for v, _ in top]
            published_claims[method] = (
                len(set(names[:5]) & set(RELEVANT)), len(set(names) & set(RELEVANT)),
                len({f"X{j}" for j in range(2, 41)} & set(names)))
        readings = {
            "mtry = p/3, BC / 2V[Y] (as printed)": self._judged(ours, 2.0),
            "mtry = p/3, BC / 4V[Y] (factor-2 reading)": self._judged(ours, 4.0),
            "mtry = √p, BC / 2V[Y]": self._judged(sqrt_values, 2.0),
            "mtry = √p, BC / 4V[Y]": self._judged(sqrt_values, 4.0),
        }
        main = readings["mtry = p/3, BC / 2V[Y] (as printed)"]
        table = table.assign(verdict=main["verdict"].to_numpy(),
                             verdict_bc_over_4VY=readings[
                                 "mtry = p/3, BC / 4V[Y] (factor-2 reading)"]["verdict"]
                             .to_numpy())
        by_reading = {name: page_verdict(judged["verdict"]) for name, judged in
                      readings.items()}
        # mtry is not in the source: where its two readings disagree, the result is not
        # determined by the text
        mtry_readings = {by_reading["mtry = p/3, BC / 2V[Y] (as printed)"],
                         by_reading["mtry = √p, BC / 2V[Y]"]}
        result = mtry_readings.pop() if len(mtry_readings) == 1 else UNDETERMINED
        results = {"scornet.sobol-mda-table": result}
        s_top = table[(table["estimate"] == COLUMNS["sobol_mda"]) & (table["rank"] <= 5)]
        same_order = bool((s_top["variable"] == s_top["our_kth_variable"]).all())
        s_ok = claims["sobol_mda"]["top5_is_relevant"] >= 0.5 and same_order
        bc_masked = (claims["mda_bc"]["mates_top10"]
                     > max(claims["mda_ik"]["mates_top10"], claims["sobol_mda"]["mates_top10"]))
        x1 = {m: float(ours[m]["X1"].mean()) for m in PUBLISHED}
        published_x1 = {m: PUBLISHED[m][0][1] for m in PUBLISHED}
        per_column = {label: page_verdict(part["verdict"]) for label, part in
                      main.groupby(main["label"].str.split(" rank").str[0], sort=False)}
        notes = [
            "Verdicts by the gallery's rule (printing tolerance 0.0005, z* for 30 numbers, "
            "standard error: ours over the data sets ⊕ one run's sd for the single published "
            "run), per reading: " + "; ".join(f"{name}: {verdict}" for name, verdict in
                                              by_reading.items())
            + ". Per column (as printed, mtry = p/3): "
            + ", ".join(f"{label}: {verdict}" for label, verdict in per_column.items()) + ".",
            "Relevant variables among the top 5 / top 10, and X1's correlated irrelevant "
            "group-mates X2..X40 among the top 10 (published | ours, mean over seeds): "
            + "; ".join(f"{COLUMNS[m]}: {published_claims[m][0]} | "
                        f"{claims[m]['relevant_top5']:.1f}, {published_claims[m][1]} | "
                        f"{claims[m]['relevant_top10']:.1f}, {published_claims[m][2]} | "
                        f"{claims[m]['mates_top10']:.1f}" for m in PUBLISHED) + ".",
            "Claim 'Sobol-MDA puts the 5 influential variables first': "
            f"{'holds' if s_ok else 'does not hold'} (top 5 exactly the influential set in "
            f"{claims['sobol_mda']['top5_is_relevant']:.0%} of the seeds, against "
            f"{claims['mda_bc']['top5_is_relevant']:.0%} for BC-MDA and "
            f"{claims['mda_ik']['top5_is_relevant']:.0%} for IK-MDA; averaged over seeds, "
            "our top 5 is the published one in the published order: "
            f"{'yes' if same_order else 'no'}). Claim 'BC-MDA promotes X1's correlated "
            "irrelevant partners (more than IK-MDA and Sobol-MDA do)': "
            f"{'holds' if bc_masked else 'does not hold'}.",
            "Exact total Sobol indices (ρ = 0.9): ST = "
            f"{table.loc[table['variable'] == 'X1', 'exact_ST'].iloc[0]:.4f} for X1 and "
            f"{table.loc[table['variable'] == 'X41', 'exact_ST'].iloc[0]:.4f} for X41..X161; "
            "both the published and our Sobol-MDA are below them at n = 1000 (the projected "
            "forest shares X1's signal with 39 proxies correlated 0.9). The asymptotic limits of "
            "BC-MDA / 2V[Y] and IK-MDA / V[Y] (a_j² / V[Y] = 0.45 for X1, 0.1125 for the other "
            "four) are an order of magnitude away from both tables: at n = 1000 the trees split "
            "on proxies, far from the consistency the limits assume.",
            "Why BC-MDA of X1 is about twice the published value: ours / published for X1 = "
            + ", ".join(f"{COLUMNS[m]} {x1[m] / published_x1[m]:.2f}" for m in PUBLISHED)
            + ". BC-MDA and IK-MDA permute the same column in the same trees, and both "
            "normalisations make their limits equal (E[(m(X) − m(X_πj))²] = 2 a_j² for BC, "
            "a_j² for IK), so (BC / 2V[Y]) / (IK / V[Y]) of X1 does not depend on V[Y] nor on "
            f"the forest's overall fit: {x1['mda_bc'] / x1['mda_ik']:.2f} here, "
            f"{published_x1['mda_bc'] / published_x1['mda_ik']:.2f} in the table; over mtry "
            "and the subsample (next note) it stays at "
            f"{sensitivity['(BC/2V) / (IK/V)'].min():.2f}–"
            f"{sensitivity['(BC/2V) / (IK/V)'].max():.2f}. A factor-2 convention in the "
            "published BC column alone (BC-MDA divided by 4V[Y]) would make ours "
            f"{x1['mda_bc'] / 2 / x1['mda_ik']:.2f} against the table's "
            f"{published_x1['mda_bc'] / published_x1['mda_ik']:.2f}: the numbers do not "
            "support it (both readings are judged above, column verdict_bc_over_4VY). Most "
            "of BC's excess is shared with IK-MDA (same permutations, same trees), so it lies "
            "in the forests (how often and how deep they split on X1 rather than on its 39 "
            "proxies), which the slides do not specify (mtry, ranger's 63.2 % subsamples "
            "without replacement, which scikit-learn cannot grow).",
            "Sensitivity of X1 to the forest (one data set, seed 0; computed on this page by "
            "Benard2022SobolMDA.sensitivity): "
            + "; ".join(f"{row['forest']}: S-MDA {row[COLUMNS['sobol_mda']]:.3f}, "
                        f"BC/2V {row[COLUMNS['mda_bc']]:.3f}, IK/V {row[COLUMNS['mda_ik']]:.3f}"
                        f", BC/S {row['BC / S-MDA']:.1f}, IK/S {row['IK / S-MDA']:.1f}"
                        for _, row in sensitivity.iterrows())
            + f" (published BC/S {published_x1['mda_bc'] / published_x1['sobol_mda']:.1f}, "
            f"IK/S {published_x1['mda_ik'] / published_x1['sobol_mda']:.1f}).",
            "Normalisation: Sobol-MDA divides by the sample variance of the training targets "
            "(as the reference code); BC- and IK-MDA are divided by 2 V[Y] and V[Y] with the "
            "exact V[Y] = 8 / 0.9.",
        ]
        worst = main.loc[(main["difference"].abs() / main["tolerance"]).idxmax()]
        assumptions = [
            "ρ = 0.9 inside a block ('strongly correlated' in the slides; Gregorutti et al.'s "
            "grouped designs).",
            "mtry not given: p/3 = 66 (randomForest's regression default) and √p = 14 "
            "(ranger's) both computed; the verdict is 'not determined by the text' where they "
            "disagree.",
            "BC-MDA normalisation: 2V[Y] as printed, and 4V[Y] (a factor-2 convention in the "
            "published code) both judged.",
            "Forest: scikit-learn RandomForestRegressor with bootstrap, min_samples_leaf = 5; "
            "the published table is one data set, ours the mean over data sets, compared rank "
            "by rank (identity-free).",
        ]
        return TargetPage(
            table=table, figures=figures, notes=notes, results=results,
            verdict=page_verdict(results.values()), assumptions=assumptions,
            worst=(f"{worst['label']}: published {worst['published']:.3f}, ours "
                   f"{worst['ours']:.3f} (tolerance {worst['tolerance']:.3f}: "
                   f"{worst['verdict']}; mtry = p/3, BC / 2V[Y])"),
            scale=(f"{'quick: ' if quick else ''}n = 1000, {scale.n_trees} trees, mtry = 66 "
                   f"(and 14 on {len(sqrt_values['mda_bc'])} data sets), min_samples_leaf = 5, "
                   f"{len(scale.seeds)} data sets (seeds)"))

    def _rank_figure(self, table: pd.DataFrame, out_dir: Path) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        fig, axes = subplots(1, 3, figsize=(13, 3.8), sharey=True)
        for ax, (label, part) in zip(axes, table.groupby("estimate", sort=False), strict=True):
            ax.errorbar(part["rank"], part["ours_kth_largest"], yerr=2 * part["ours_kth_sd"],
                        fmt="o", color="tab:blue", label="ours: k-th largest (± 2 sd of a run)")
            colours = np.where(part["relevant"], "tab:red", "black")
            ax.scatter(part["rank"], part["published"], marker="*", s=80, c=colours,
                       zorder=3, label="published (red: influential variable)")
            ax.scatter(part["rank"] + 0.2, part["ours_same_variable"], marker="x",
                       color="tab:green", label="ours: the published variable")
            for _, row in part.iterrows():
                ax.annotate(row["variable"], (row["rank"], row["published"]), fontsize=6,
                            xytext=(3, 4), textcoords="offset points")
            ax.set_yscale("log")
            ax.set_title(label)
            ax.set_xlabel("rank")
            ax.set_xticks(range(1, 11))
        axes[0].set_ylabel("importance")
        axes[0].legend(fontsize=7, loc="upper right")
        fig.tight_layout()
        path = out_dir / f"{self.name}.png"
        save_figure(fig, path)
        return path

    def _profile_figure(self, ours, truth, out_dir: Path) -> Path:
        fig, axes = subplots(3, 1, figsize=(12, 7), sharex=True)
        x = np.arange(1, 201)
        st = truth.quantities["sobol_total"].values
        limit = truth.quantities["mda_ik_limit"].values / truth.var_y
        for ax, method in zip(axes, PUBLISHED, strict=True):
            values = ours[method]
            colours = np.where(np.isin(values.columns, RELEVANT), "tab:red", "tab:blue")
            ax.bar(x, values.mean().to_numpy(), color=colours, width=1.0)
            reference = st if method == "sobol_mda" else limit
            shown = reference > 0
            ax.plot(x[shown], reference[shown], "k_", ms=12,
                    label="exact ST_j" if method == "sobol_mda" else "asymptotic limit")
            for edge in (40.5, 80.5, 120.5, 160.5):
                ax.axvline(edge, color="grey", lw=0.6)
            ax.set_yscale("symlog", linthresh=1e-3)
            ax.set_ylim(top=2.0 * max(reference.max(), values.mean().max()))
            ax.set_ylabel(COLUMNS[method], fontsize=8)
            ax.legend(fontsize=7, loc="upper right")
        axes[-1].set_xlabel("feature j (5 blocks of 40; red: influential)")
        fig.suptitle("Mean over seeds of each normalised importance, all 200 features",
                     fontsize=9)
        fig.tight_layout()
        path = out_dir / f"{self.name}-profile.png"
        save_figure(fig, path)
        return path
