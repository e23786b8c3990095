"""The RS vs SRS convergence experiment of seed 004 ("Experiments: protocol").

Madelon-like data (1500 rows: 1000 to learn, 500 to test), 480 / 1480 / 2980 / 5480
irrelevant features, q = 50, K = q, no bootstrap, threshold randomization; after every
``step`` trees, the area under the precision-recall curve of the relevant set when features
are ranked by their accumulated importance, and the test accuracy of the trees grown so
far, averaged over random learning/test splits. The slides' claims: SRS improves both, the
more so as q/p falls, and only SRS eventually ranks the features perfectly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import average_precision_score

from harness.api import load_dataset
from harness.estimators.random_subspace import (
    SubspaceResult,
    SubspaceSettings,
    grow_subspace_trees,
)

N_LEARN = 1000
N_TEST = 500


@dataclass(frozen=True)
class CurveSettings:
    """One experiment: the grid and the RS/SRS parameters (seed 004 defaults)."""

    n_irrelevant: Sequence[int] = (480, 1480, 2980)
    n_trees: int = 1500
    step: int = 100
    n_splits: int = 2
    q: int = 50
    alpha: float = 0.5
    min_sampled: int = 5
    beta: float = 0.95


def _curve(dataset, split: int, settings: CurveSettings, alpha: float) -> list[dict]:
    rng = np.random.default_rng([split, 2016])
    order = rng.permutation(len(dataset.y))
    learn, test = order[:N_LEARN], order[N_LEARN:N_LEARN + N_TEST]
    X_test, y_test = dataset.X[test], dataset.y[test]
    relevant = dataset.truth.relevant
    votes = np.zeros((len(test), 2))
    rows: list[dict] = []
    vote_rng = np.random.default_rng([split, 7])

    def record(t: int, result: SubspaceResult, grown: tuple) -> None:
        columns, probe_source, tree = grown
        inputs = X_test[:, columns]
        if probe_source >= 0:
            probe = X_test[vote_rng.permutation(len(test)), probe_source]
            inputs = np.column_stack([inputs, probe])
        votes[:] += tree.predict_proba(inputs)
        if (t + 1) % settings.step == 0:
            rows.append({
                "n_trees": t + 1,
                "auprc": average_precision_score(relevant, result.importances),
                "accuracy": float(np.mean(votes.argmax(axis=1) == y_test)),
                "n_selected": int(result.selected.sum()),
                "n_selected_relevant": int(result.selected[relevant].sum()),
            })

    subspace = SubspaceSettings(n_trees=settings.n_trees, q=settings.q, alpha=alpha,
                                min_sampled=settings.min_sampled, beta=settings.beta)
    grow_subspace_trees(dataset.X[learn], dataset.y[learn], True, subspace, seed=split,
                        on_tree=record)
    return rows


def run_curves(settings: CurveSettings,
               progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """AUPRC and test accuracy against the number of trees, RS (α = 0) and SRS.

    Returns one row per (method, n_irrelevant, split, n_trees).
    """
    frames = []
    for n_irrelevant in settings.n_irrelevant:
        for split in range(settings.n_splits):
            dataset = load_dataset("madelon_like", seed=split, n_irrelevant=n_irrelevant,
                                   n_samples=N_LEARN + N_TEST)
            for method, alpha in (("rs", 0.0), ("srs", settings.alpha)):
                if progress is not None:
                    progress(f"{method} p={n_irrelevant + 20} split {split}")
                frame = pd.DataFrame(_curve(dataset, split, settings, alpha))
                frame["method"], frame["n_irrelevant"], frame["split"] = (
                    method, n_irrelevant, split)
                frame["p"] = n_irrelevant + 20
                frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def final_scores(curves: pd.DataFrame) -> pd.DataFrame:
    """Per p: final mean AUPRC and accuracy of RS and SRS, and the SRS − RS gaps."""
    final = curves[curves["n_trees"] == curves["n_trees"].max()]
    mean = final.groupby(["p", "method"])[["auprc", "accuracy"]].mean().unstack("method")
    table = pd.DataFrame(index=mean.index)
    for score in ("auprc", "accuracy"):
        table[f"{score}_rs"] = mean[(score, "rs")]
        table[f"{score}_srs"] = mean[(score, "srs")]
        table[f"{score}_gap"] = table[f"{score}_srs"] - table[f"{score}_rs"]
    return table.reset_index()


def claims(scores: pd.DataFrame) -> dict[str, bool]:
    """The slides' qualitative claims, checked on :func:`final_scores`.

    "Important improvement of both auprc and accuracy with SRS" (SRS ≥ RS at every p) and
    "the lower q/p, the larger the improvement" (the gap does not shrink as p grows), for
    each score separately.
    """
    ordered = scores.sort_values("p")
    checks = {}
    for score in ("auprc", "accuracy"):
        gap = ordered[f"{score}_gap"]
        checks[f"SRS >= RS in {score} at every p"] = bool((gap >= 0).all())
        checks[f"{score} gap grows as q/p falls"] = bool((gap.diff().dropna() >= 0).all())
    return checks
