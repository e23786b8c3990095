"""How the methods of one dataset agree, per model, and how that moves with K.

Local methods: mean over the explained samples of the Spearman correlation of |local|
(Sutera et al. 2021, Table 4, from :func:`reports.correlation.summarise_local`); global
views: Spearman correlation of the importances (:func:`reports.correlation.global_agreement`,
local methods as mean |local|). K is scikit-learn's ``max_features`` read as a count.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from harness.run.results import RunResults

from .summary import agreement_matrix

LOCAL_AGREEMENT = "local: mean per-sample Spearman of |local|"
GLOBAL_AGREEMENT = "global: Spearman of the importances"


Panels = list[tuple[str, list[tuple[str, pd.DataFrame]]]]


def agreement_panels(cells: pd.DataFrame, local_pairs: pd.DataFrame,
                     global_pairs: pd.DataFrame) -> Panels:
    """Per model of ``cells`` (one dataset's done cells): the local methods' matrix, and the
    global one when a global method ran (local methods in it as mean |local|), both made
    symmetric; models with neither are left out.

    ``local_pairs`` are :func:`summarise_local` rows of the Spearman kind, ``global_pairs``
    :func:`global_agreement` rows; both are averaged over seeds by :func:`agreement_matrix`.
    """
    rows = []
    dataset = cells["dataset"].iloc[0]
    for model, group in cells.groupby("model", sort=True):
        local = local_pairs[(local_pairs["dataset"] == dataset)
                            & (local_pairs["model"] == model)]
        pairs = global_pairs[(global_pairs["dataset"] == dataset)
                             & (global_pairs["model"] == model)]
        panels = []
        local_methods = sorted(group.loc[group["scope"] == "local", "method"].unique())
        if len(local_methods) > 1 and not local.empty:
            matrix = agreement_matrix(pairs.iloc[0:0], local, local_methods)
            panels.append((LOCAL_AGREEMENT, _symmetric(matrix)))
        if (group["scope"] == "global").any() and group["method"].nunique() > 1:
            matrix = agreement_matrix(pairs, local.iloc[0:0], sorted(group["method"].unique()))
            panels.append((GLOBAL_AGREEMENT, _symmetric(matrix)))
        if panels:
            rows.append((model, panels))
    return rows


def _symmetric(matrix: pd.DataFrame) -> pd.DataFrame:
    """Fill the empty triangle of an :func:`agreement_matrix` with its mirror image."""
    values = matrix.to_numpy(dtype=float)
    return pd.DataFrame(np.where(np.isnan(values), values.T, values), index=matrix.index,
                        columns=matrix.columns)


def features_drawn(max_features, n_features: int) -> int:
    """K, the features drawn at each node, as scikit-learn reads ``max_features``."""
    if max_features in (None, "all"):
        return n_features
    if max_features == "sqrt":
        return max(1, int(math.sqrt(n_features)))
    if max_features == "log2":
        return max(1, int(math.log2(n_features)))
    if isinstance(max_features, float):
        return max(1, int(max_features * n_features))
    return min(int(max_features), n_features)


def k_table(results: RunResults, cells: pd.DataFrame, local_pairs: pd.DataFrame,
            global_pairs: pd.DataFrame) -> pd.DataFrame:
    """Mean (over seeds) agreement of each pair of methods against K, for the models that
    differ in ``max_features`` only (empty when no two do).

    Local pairs: mean per-sample Spearman of |local|; global pairs (both methods global):
    Spearman of the global importances. Model parameters are read from their stored JSON,
    so that an int K is never taken for a float fraction.
    """
    dataset = cells["dataset"].iloc[0]
    stored = results.cells.set_index("key")["model_params"]
    models = {}
    for _, cell in cells.drop_duplicates("model").iterrows():
        params = json.loads(stored[cell["key"]] or "{}")
        k = features_drawn(params.pop("max_features", None),
                           len(results.feature_names(cell["key"])))
        models[cell["model"]] = (json.dumps([cell["model_name"], params], sort_keys=True), k)
    families: dict[str, dict[str, int]] = {}
    for model, (family, k) in models.items():
        families.setdefault(family, {})[model] = k
    global_methods = set(cells.loc[cells["scope"] == "global", "method"])
    frames = []
    for members in families.values():
        if len(set(members.values())) < 2:
            continue
        suffix = "" if len(families) == 1 else "\n" + " / ".join(sorted(members))
        local = local_pairs[local_pairs["model"].isin(list(members))]
        pairs = global_pairs[global_pairs["model"].isin(list(members))
                             & global_pairs["method_a"].isin(global_methods)
                             & global_pairs["method_b"].isin(global_methods)]
        for frame, column, panel, ylabel in (
                (local, "mean", LOCAL_AGREEMENT, "mean per-sample Spearman"),
                (pairs, "spearman", GLOBAL_AGREEMENT, "Spearman")):
            frame = frame[frame["dataset"] == dataset]
            if frame.empty:
                continue
            means = (frame.groupby(["model", "method_a", "method_b"], sort=True)[column]
                     .mean().rename("correlation").reset_index())
            frames.append(means.assign(k=means["model"].map(members), panel=panel + suffix,
                                       ylabel=ylabel))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
