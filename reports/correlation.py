"""Agreement between importance measures: per-sample local correlations and global ranks.

Follows Sutera et al. (2021), Appendix E: for each sample, the Pearson and Spearman
correlations between the (absolute) local importance vectors of two methods, summarised by
their mean, standard deviation and the fractions of samples with correlation >= 0.9 and >= 0.75
(Table 4), and plotted over the samples sorted by increasing correlation (Fig. 7).
"""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D
from scipy import stats
from scipy.spatial import distance

from harness.run.results import RunResults

from .base import (
    FONT_PT,
    GROUP,
    MAX_WIDTH_IN,
    ReportSection,
    done_cells,
    global_label,
    global_views,
    new_figure,
    normalise_l1,
    rowwise_pearson,
    rowwise_spearman,
    save_figure,
    table_html,
    title_above,
    wrap_label,
    write_csv,
)

PAIR = [*GROUP, "method_a", "method_b"]
KINDS = ("pearson", "spearman")
THRESHOLDS = (0.9, 0.75)
PER_SAMPLE_COLUMNS = [*PAIR, "sample", *KINDS]
SUMMARY_COLUMNS = [*PAIR, "correlation", "mean", "std", "fraction_ge_0.90",
                   "fraction_ge_0.75", "n_samples", "n_undefined"]
GLOBAL_COLUMNS = [*PAIR, "spearman", "kendall", "l1_distance"]


def local_matrix(values: np.ndarray, signed: bool = False) -> np.ndarray:
    """(n, p) importances of a local cell: ``|values|``, or the values when ``signed``.

    A 3-D (n, p, n_classes) array is reduced to ``sum_k |values[:, :, k]|`` in both cases: a
    signed sum over classes of a decomposition of class probabilities is identically ~0.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 3:
        return np.abs(values).sum(axis=2)
    return values if signed else np.abs(values)


def local_correlations(results: RunResults, signed: bool = False) -> pd.DataFrame:
    """Per-sample Pearson and Spearman correlation between every pair of local methods.

    Pairs are the done local cells of one (dataset, model, seed), compared on the dataset
    rows that both explained (the intersection of their ``sample_index``).

    Parameters
    ----------
    results : RunResults
    signed : bool, default False
        Correlate the signed values instead of their absolute values (Sutera et al. 2021
        correlate absolute values).

    Returns
    -------
    DataFrame
        One row per (dataset, model, seed, method_a, method_b, sample) with ``pearson`` and
        ``spearman``; NaN where either vector is constant.
    """
    if signed:
        return _local_correlations(results, signed)
    return results.derived("local_correlations", _local_correlations)


def _local_correlations(results: RunResults, signed: bool = False) -> pd.DataFrame:
    frames = []
    for (dataset, model, seed), group in done_cells(results, "local").groupby(GROUP, sort=True):
        loaded = []
        for _, cell in group.iterrows():
            arrays = results.arrays(cell["key"])
            values = local_matrix(arrays["values"], signed)
            rows = arrays["sample_index"]
            loaded.append((cell["method"], np.arange(len(values)) if rows is None else rows,
                           values))
        for (name_a, rows_a, a), (name_b, rows_b, b) in itertools.combinations(loaded, 2):
            common, ia, ib = np.intersect1d(rows_a, rows_b, return_indices=True)
            if common.size == 0 or a.shape[1] != b.shape[1]:
                continue
            frames.append(pd.DataFrame({
                "dataset": dataset, "model": model, "seed": seed, "method_a": name_a,
                "method_b": name_b, "sample": common,
                "pearson": rowwise_pearson(a[ia], b[ib]),
                "spearman": rowwise_spearman(a[ia], b[ib]),
            }))
    if not frames:
        return pd.DataFrame(columns=PER_SAMPLE_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def summarise_local(per_sample: pd.DataFrame) -> pd.DataFrame:
    """Sutera et al. (2021), Table 4: summary of the per-sample correlations.

    For each (dataset, model, seed, method_a, method_b) and correlation kind: ``mean`` and
    ``std`` (ddof=0) over the defined samples, the fractions of defined samples with
    correlation >= 0.9 and >= 0.75, ``n_samples`` (every sample compared) and
    ``n_undefined`` (samples where a vector is constant, excluded from the other columns).
    """
    if per_sample.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    long = per_sample.melt(id_vars=[*PAIR, "sample"], value_vars=list(KINDS),
                           var_name="correlation", value_name="value")
    long["defined"] = long["value"].notna()
    for threshold in THRESHOLDS:
        long[f"ge_{threshold:.2f}"] = long["value"] >= threshold
    grouped = long.groupby([*PAIR, "correlation"], sort=True)
    defined = grouped["defined"].sum()
    summary = pd.DataFrame({"mean": grouped["value"].mean(),
                            "std": grouped["value"].std(ddof=0)})
    for threshold in THRESHOLDS:
        hits = grouped[f"ge_{threshold:.2f}"].sum()
        summary[f"fraction_ge_{threshold:.2f}"] = (hits / defined).where(defined > 0)
    summary["n_samples"] = grouped["value"].size()
    summary["n_undefined"] = summary["n_samples"] - defined
    return summary.reset_index()[SUMMARY_COLUMNS]


def local_summary(results: RunResults) -> pd.DataFrame:
    """:func:`summarise_local` of the run's :func:`local_correlations`, computed once per
    report build and shared by the reports that show it."""
    return results.derived("local_summary",
                           lambda run: summarise_local(local_correlations(run)))


def global_agreement(results: RunResults) -> pd.DataFrame:
    """Rank agreement between the global views of every pair of methods.

    Global cells contribute their values, local cells their mean |value| over the explained
    samples (labelled ``"<method> (mean |local|)"``). Each vector is normalised to
    ``sum_j |v_j| = 1``; the table gives Spearman's rho, Kendall's tau and the L1 distance
    ``sum_j |v_a,j - v_b,j|`` between the normalised vectors.
    """
    return results.derived("global_agreement", _global_agreement)


def _global_agreement(results: RunResults) -> pd.DataFrame:
    cells = done_cells(results)
    views = global_views(results, cells)
    rows = []
    for (dataset, model, seed), group in cells.groupby(GROUP, sort=True):
        vectors = sorted(
            [(global_label(method, scope), normalise_l1(views[key]))
             for key, method, scope in zip(group["key"], group["method"], group["scope"])],
            key=lambda item: item[0])
        position = {}  # vectors of one length are compared with each other
        for index, (_, vector) in enumerate(vectors):
            position.setdefault(vector.shape, []).append(index)
        pairs = {}
        for members in position.values():
            matrix = np.array([vectors[i][1] for i in members], dtype=float)
            for (a, b), values in zip(itertools.combinations(range(len(members)), 2),
                                      _pairwise_agreement(matrix)):
                pairs[members[a], members[b]] = values
        for a, b in itertools.combinations(range(len(vectors)), 2):
            if (a, b) in pairs:
                spearman, kendall, l1 = pairs[a, b]
                rows.append({"dataset": dataset, "model": model, "seed": seed,
                             "method_a": vectors[a][0], "method_b": vectors[b][0],
                             "spearman": spearman, "kendall": kendall, "l1_distance": l1})
    return pd.DataFrame(rows, columns=GLOBAL_COLUMNS)


#: up to this many features, Kendall's tau of every pair of profiles is one matrix product
#: over the feature pairs (p(p - 1)/2 columns); beyond it, scipy per pair
MATRIX_KENDALL_MAX_FEATURES = 256


def _pairwise_agreement(matrix: np.ndarray) -> list[tuple[float, float, float]]:
    """Spearman's rho, Kendall's tau-b and the L1 distance of every pair of rows of
    ``matrix`` (m profiles x p features), in ``itertools.combinations`` order.

    Equal to scipy's ``spearmanr`` and ``kendalltau`` pair by pair (NaN for a constant or
    non-finite profile), computed for all pairs at once: rho is the Pearson correlation of the
    average ranks, tau-b = sum_k s_a,k s_b,k / sqrt(sum_k s_a,k^2 sum_k s_b,k^2) over the
    feature pairs k = (i < j), with s = sign(v_i - v_j). A report of m methods per group costs
    O(m^2 p) (O(m^2 p^2) for tau) in compiled loops instead of m^2/2 scipy calls (measured:
    3000 cells of 300 methods per group took 107 s in the per-pair calls).
    """
    m, p = matrix.shape
    finite = np.isfinite(matrix).all(axis=1)
    ranks = stats.rankdata(np.where(finite[:, None], matrix, 0.0), axis=1)
    centred = ranks - ranks.mean(axis=1, keepdims=True)
    norms = np.sqrt((centred**2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (centred @ centred.T) / np.outer(norms, norms)
    if p <= MATRIX_KENDALL_MAX_FEATURES:
        i, j = np.triu_indices(p, k=1)
        signs = np.sign(matrix[:, i] - matrix[:, j]) if p > 1 else np.zeros((m, 0))
        signs = np.where(finite[:, None], signs, 0.0)
        untied = (signs**2).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = (signs @ signs.T) / np.sqrt(np.outer(untied, untied))
    else:
        tau = np.full((m, m), np.nan)
        for a, b in itertools.combinations(range(m), 2):
            if finite[a] and finite[b]:
                tau[a, b] = _kendall(matrix[a], matrix[b])
    l1 = distance.cdist(matrix, matrix, "cityblock")
    out = []
    for a, b in itertools.combinations(range(m), 2):
        ok = finite[a] and finite[b]
        out.append((float(np.clip(rho[a, b], -1.0, 1.0)) if ok else float("nan"),
                    float(np.clip(tau[a, b], -1.0, 1.0)) if ok else float("nan"),
                    float(l1[a, b])))
    return out


def _kendall(a: np.ndarray, b: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return float(stats.kendalltau(a, b).statistic)


def _pair_matrix(summary: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """Symmetric ``methods`` x ``methods`` matrix of the mean over seeds of ``summary["mean"]``
    (1 on the diagonal, NaN for pairs that were not compared)."""
    means = summary.groupby(["method_a", "method_b"])["mean"].mean()
    position = {method: k for k, method in enumerate(methods)}
    matrix = np.full((len(methods), len(methods)), np.nan)
    np.fill_diagonal(matrix, 1.0)
    for (a, b), value in means.items():
        matrix[position[a], position[b]] = matrix[position[b], position[a]] = value
    labels = [wrap_label(m) for m in methods]
    return pd.DataFrame(matrix, index=labels, columns=labels)


def _heatmaps(summary: pd.DataFrame, out_dir: Path) -> list[Path]:
    """One figure: mean local Pearson between methods, a panel per (dataset, model).

    Every panel lists the same methods in the same order (blank where a pair was not
    compared), so tick labels are shown once per row and column of panels.
    """
    pearson = summary[summary["correlation"] == "pearson"]
    if pearson.empty:
        return []
    datasets, models = sorted(pearson["dataset"].unique()), sorted(pearson["model"].unique())
    methods = sorted({*pearson["method_a"], *pearson["method_b"]})
    size = min(1.5 + 0.6 * len(methods), MAX_WIDTH_IN / len(models))
    figure, axes = new_figure(ncols=len(models), nrows=len(datasets), width=size,
                              height=size, wspace=0.1, hspace=0.3)
    cells = dict(iter(pearson.groupby(["dataset", "model"], sort=False)))
    for (i, dataset), (j, model) in itertools.product(enumerate(datasets), enumerate(models)):
        ax = axes[i, j]
        if (dataset, model) not in cells:
            ax.set_axis_off()
            continue
        with warnings.catch_warnings():
            # seaborn 0.13 calls Colormap.set_bad, deprecated by matplotlib 3.11
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            sns.heatmap(_pair_matrix(cells[dataset, model], methods), ax=ax, vmin=-1, vmax=1,
                        center=0, cmap="vlag", annot=True, fmt=".2f", square=True,
                        cbar=False, annot_kws={"fontsize": FONT_PT},
                        xticklabels=i == len(datasets) - 1, yticklabels=j == 0)
        ax.set_title(f"{dataset}\n{wrap_label(model, 40)}", fontsize=FONT_PT)
        ax.tick_params(axis="y", labelrotation=0)
    title_above(figure, axes, "Mean per-sample Pearson correlation of |local importances|")
    return [save_figure(figure, out_dir / "correlation_heatmaps.png")]


def _sorted_lines(per_sample: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Sutera et al. (2021), Fig. 7: correlations over the samples sorted by increasing value.

    One figure, a panel per (dataset, model); colour: pair of methods, solid: Pearson,
    dashed: Spearman, one line per seed. Lines are drawn with ``Axes.plot`` in seaborn's
    palette: ``sns.lineplot`` with one unit per seed costs ~0.1 s per panel.
    """
    long = per_sample.melt(id_vars=PAIR, value_vars=list(KINDS), var_name="correlation",
                           value_name="value").dropna(subset=["value"])
    if long.empty:
        return []
    long["pair"] = long["method_a"] + " vs " + long["method_b"]
    pairs = sorted(long["pair"].unique())
    palette = sns.color_palette("husl" if len(pairs) > 10 else None, n_colors=len(pairs))
    colours = dict(zip(pairs, palette))
    dashes = dict(zip(KINDS, ("-", "--")))
    datasets, models = sorted(long["dataset"].unique()), sorted(long["model"].unique())
    figure, axes = new_figure(ncols=len(models), nrows=len(datasets),
                              width=min(4.0, MAX_WIDTH_IN / (len(models) + 0.8)), height=3.0,
                              share=True)
    for ax in axes.flat:
        ax.set_axis_off()
    for (dataset, model, _seed, pair, kind), line in long.groupby(
            ["dataset", "model", "seed", "pair", "correlation"], sort=False):
        ax = axes[datasets.index(dataset), models.index(model)]
        values = np.sort(line["value"].to_numpy())
        ax.set_axis_on()
        ax.plot(np.arange(1, len(values) + 1) / len(values), values, color=colours[pair],
                linestyle=dashes[kind], linewidth=1.2)
    for (i, dataset), (j, model) in itertools.product(enumerate(datasets), enumerate(models)):
        ax = axes[i, j]
        ax.set(ylim=(-1.05, 1.05), xlim=(0, 1), ylabel="correlation" if j == 0 else "",
               xlabel="samples sorted by correlation (fraction)" if i == len(datasets) - 1
               else "")
        ax.set_title(f"{dataset}\n{wrap_label(model, 40)}", fontsize=FONT_PT)
    handles = [Line2D([], [], color=colours[p], label=wrap_label(p)) for p in pairs]
    handles += [Line2D([], [], color="grey", linestyle=dashes[k], label=k) for k in KINDS]
    axes[0, -1].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1),
                       fontsize=FONT_PT, frameon=False)
    title_above(figure, axes, "Per-sample correlation of |local importances|, samples sorted "
                "by increasing correlation (Sutera et al. 2021, Fig. 7)")
    return [save_figure(figure, out_dir / "correlation_sorted.png")]


def _mean_over_seeds(agreement: pd.DataFrame) -> pd.DataFrame:
    if agreement.empty:
        return agreement
    keys = ["dataset", "model", "method_a", "method_b"]
    grouped = agreement.groupby(keys, sort=True)
    table = grouped[["spearman", "kendall", "l1_distance"]].mean()
    table["n_seeds"] = grouped.size()
    return table.reset_index()


def build(results: RunResults, out_dir: Path) -> ReportSection:
    """Write the correlation tables and figures into ``out_dir``.

    Files: ``correlation_local_per_sample.csv``, ``correlation_local_summary.csv``,
    ``correlation_global.csv``, ``correlation_heatmaps.png`` and ``correlation_sorted.png``.
    """
    out_dir = Path(out_dir)
    per_sample = local_correlations(results)
    summary = local_summary(results)
    agreement = global_agreement(results)
    csvs = [write_csv(per_sample, out_dir / "correlation_local_per_sample.csv"),
            write_csv(summary, out_dir / "correlation_local_summary.csv"),
            write_csv(agreement, out_dir / "correlation_global.csv")]
    figures = [*_heatmaps(summary, out_dir), *_sorted_lines(per_sample, out_dir)]
    html = ("<h3>Local methods: per-sample correlation of |importances| "
            "(Sutera et al. 2021, Table 4)</h3>" + table_html(summary)
            + "<h3>Global views: rank agreement (mean over seeds)</h3>"
            + table_html(_mean_over_seeds(agreement)))
    return ReportSection("Correlation", csvs, figures, html)
