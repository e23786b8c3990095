"""How the methods of one dataset agree, per model, and how that moves with K.

Local methods: mean over the explained samples of the Spearman correlation of |local|
(Sutera et al. 2021, Table 4, from :func:`reports.correlation.summarise_local`); global
views: Spearman correlation of the importances (:func:`reports.correlation.global_agreement`,
local methods as mean |local|). K is scikit-learn's ``max_features`` read as a count.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from harness.run.results import RunResults

from .summary import agreement_matrix

LOCAL_AGREEMENT = "local: mean per-sample Spearman of |local|"
GLOBAL_AGREEMENT = "global: Spearman of the importances"


def agreement_by_model(cells: pd.DataFrame, local_pairs: pd.DataFrame,
                       global_pairs: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Per model of ``cells`` (one dataset's done cells): the first screen's split matrix
    (:func:`agreement_matrix`: global Spearman above the diagonal, mean per-sample Spearman of
    |local| below), over the methods that ran on it, averaged over seeds; models with a
    single method are left out.

    ``local_pairs`` are :func:`summarise_local` rows, ``global_pairs`` :func:`global_agreement`
    rows, of every dataset and model.
    """
    dataset = cells["dataset"].iloc[0]
    matrices = []
    for model, group in cells.groupby("model", sort=True):
        methods = sorted(group["method"].unique())
        if len(methods) < 2:
            continue
        local = local_pairs[(local_pairs["dataset"] == dataset)
                            & (local_pairs["model"] == model)]
        pairs = global_pairs[(global_pairs["dataset"] == dataset)
                             & (global_pairs["model"] == model)]
        matrices.append((model, agreement_matrix(pairs, local, methods)))
    return matrices


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
