"""Permutation and projection importances beside the retrain-based reference, LOCO, on
datasets without a closed form (issue 21; part of the accuracy report).

Per feature, both profiles are normalised to sum |v| = 1, LOCO's standard error is put on the
same scale, and the difference and its z are reported; per pair of cells, the Spearman
correlation, the largest difference and the fraction of features within 2 LOCO standard
errors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.run.results import RunResults

from .base import (
    FONT_PT,
    GROUP,
    done_cells,
    method_of_label,
    new_figure,
    normalise_l1,
    save_figure,
    spearman,
)
from .palette import run_colours

#: The methods set beside LOCO where no closed form exists (issue 21): each measures what
#: the model loses without X_j, by permutation (MDA trio, conditional permutation) or by
#: projection (Sobol-MDA, SHAFF), where LOCO refits without it.
BESIDE_LOCO = ("mda_bc", "mda_ik", "mda_test", "sobol_mda", "shaff", "conditional_permutation")
REFERENCE = "loco"
LOCO_COLUMNS = [*GROUP, "reference", "method", "feature", "loco", "loco_se", "estimate",
                "difference", "z"]


def _has_global_truth(results: RunResults, dataset: str, seed: int) -> bool:
    truth = results.truth(dataset, seed)
    return truth is not None and any(v.scope == "global" for v in truth.quantities.values())


def loco_table(results: RunResults) -> pd.DataFrame:
    """Each method of :data:`BESIDE_LOCO` next to LOCO, per feature, where no global truth is.

    For each (dataset, model, seed) without a global ground truth and each LOCO cell psi
    (with standard errors se) and each global cell v of a method in ``BESIDE_LOCO`` there:
    ``loco = psi_j / sum|psi|``, ``loco_se = se_j / sum|psi|`` (the sum taken as fixed),
    ``estimate = v_j / sum|v|`` (units differ between methods; profiles normalised to
    sum |.| = 1 compare, as the global comparisons of DESIGN.md do), ``difference =
    estimate - loco`` and ``z = difference / loco_se``.
    """
    return results.derived("loco_table", _loco_table)


def _loco_table(results: RunResults) -> pd.DataFrame:
    cells = done_cells(results, scope="global")
    frames = []
    for (dataset, model, seed), group in cells.groupby(GROUP, sort=True):
        if _has_global_truth(results, dataset, int(seed)):
            continue
        others = group[group["method_name"].isin(BESIDE_LOCO)]
        for _, reference in group[group["method_name"] == REFERENCE].iterrows():
            arrays = results.arrays(reference["key"])
            psi = np.asarray(arrays["values"], dtype=float)
            total = np.abs(psi).sum()
            se = (np.full_like(psi, np.nan) if arrays["std"] is None or total == 0
                  else np.asarray(arrays["std"], dtype=float) / total)
            for _, cell in others.iterrows():
                estimate = normalise_l1(results.arrays(cell["key"])["values"])
                if estimate.shape != psi.shape:
                    continue
                loco = normalise_l1(psi)
                with np.errstate(divide="ignore", invalid="ignore"):
                    z = (estimate - loco) / se
                frames.append(pd.DataFrame({
                    "dataset": dataset, "model": model, "seed": seed,
                    "reference": reference["method"], "method": cell["method"],
                    "feature": results.feature_names(cell["key"]), "loco": loco,
                    "loco_se": se, "estimate": estimate, "difference": estimate - loco,
                    "z": z}))
    return (pd.concat(frames, ignore_index=True)[LOCO_COLUMNS] if frames
            else pd.DataFrame(columns=LOCO_COLUMNS))


def loco_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per (cell, LOCO cell): Spearman correlation of the two profiles, the largest
    |difference|, and the fraction of features within 2 LOCO standard errors."""
    columns = [*GROUP, "reference", "method", "spearman", "max_abs_difference",
               "within_2se"]
    if table.empty:
        return pd.DataFrame(columns=columns)
    summary = table.groupby([*GROUP, "reference", "method"], sort=True).apply(
        lambda g: pd.Series({
            "spearman": spearman(g["estimate"].to_numpy(), g["loco"].to_numpy()),
            "max_abs_difference": float(np.abs(g["difference"]).max()),
            "within_2se": float((np.abs(g["z"]) <= 2).mean()),
        }), include_groups=False).reset_index()
    return summary[columns]


def _loco_scatter(results: RunResults, table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """One panel per dataset (rows) and model (columns): each method's normalised value
    against LOCO's on that model, LOCO's ±2 SE as bars (every seed's points together).

    Models are kept apart because LOCO refits the model spec of its own cell: a method on
    one forest is only comparable with LOCO on the same forest."""
    if table.empty:
        return []
    figure = loco_figure(table, run_colours(results))
    return [save_figure(figure, out_dir / "accuracy_loco.png")]


def loco_figure(table: pd.DataFrame, colours: dict[str, str]):
    """The figure of :func:`_loco_scatter` (``colours``: a colour per method name)."""
    datasets = sorted(table["dataset"].unique())
    models = sorted(table["model"].unique())
    figure, axes = new_figure(ncols=len(models), nrows=len(datasets), width=3.2, height=3.2,
                              wspace=0.45)
    for row, dataset in enumerate(datasets):
        for column, model in enumerate(models):
            ax = axes[row, column]
            data = table[(table["dataset"] == dataset) & (table["model"] == model)]
            if data.empty:
                ax.set_axis_off()
                continue
            for method, rows in data.groupby("method", sort=True):
                ax.errorbar(rows["loco"], rows["estimate"], xerr=2 * rows["loco_se"],
                            fmt="o", markersize=3, linewidth=0.6, label=method,
                            color=colours.get(method_of_label(method), "#888888"))
            low = float(min(data["loco"].min(), data["estimate"].min(), 0.0))
            high = float(max(data["loco"].max(), data["estimate"].max()))
            ax.plot([low, high], [low, high], color="0.5", linewidth=0.8, linestyle="--")
            ax.set_title(f"{dataset}\n{model}", fontsize=FONT_PT)
            ax.set_xlabel("LOCO (sum |v| = 1), ±2 SE")
            ax.set_ylabel("method (sum |v| = 1)")
    handles = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    axes[0, -1].legend(handles.values(), handles.keys(), loc="upper left",
                       bbox_to_anchor=(1.02, 1), fontsize=FONT_PT, frameon=False)
    return figure
