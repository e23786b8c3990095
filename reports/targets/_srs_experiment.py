"""The RS vs SRS convergence experiment of seed 004 ("Experiments: protocol").

Madelon-like data (1500 rows: 1000 to learn, 500 to test), 480 / 1480 / 2980 / 5480
irrelevant features, q = 50, K = q, no bootstrap, threshold randomization; after every
``step`` trees, the area under the precision-recall curve of the relevant set when features
are ranked by their accumulated importance, and the test accuracy of the trees grown so
far, averaged over random learning/test splits. The slides' claims: SRS improves both, the
more so as q/p falls, and only SRS eventually ranks the features perfectly.

Each (method, p, split) is one cell of a ``compare`` grid, run by the runner like every other
method: ``rs`` / ``srs`` with ``hold_out=500`` and ``curve_step`` record the curve in the
cell's ``extra``, and the AUPRC is computed here from the stored importances and the
dataset's relevant set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import average_precision_score

N_LEARN = 1000
N_TEST = 500
#: the grid's forest only lends its split criterion; its 75 % training split (the default
#: test_size) of 2000 rows gives the methods the 1500 rows of the protocol
N_ROWS = 2000
MODEL = "extra_trees[n_estimators=1,bootstrap=false]"


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

    def grid(self) -> dict:
        """``compare``'s arguments: one cell per (method, p, split), run by the runner."""
        common = (f"n_trees={self.n_trees},q={self.q},max_features=all,probe=true,"
                  f"min_sampled={self.min_sampled},beta={self.beta},hold_out={N_TEST},"
                  f"curve_step={self.step}")
        return {
            "datasets": [f"madelon_like[n_irrelevant={k},n_samples={N_ROWS}]"
                         for k in self.n_irrelevant],
            "models": [MODEL],
            "methods": [f"rs[{common}]", f"srs[{common},alpha={self.alpha}]"],
            "seeds": list(range(self.n_splits)),
        }


def curves_of(results) -> pd.DataFrame:
    """AUPRC of the relevant set and held-out accuracy against the number of trees, one row
    per (method, p, split, n_trees), from the stored cells' ``extra["curve"]``."""
    cells = results.cells_table()
    not_done = cells[cells["status"] != "done"]
    if len(not_done):
        first = not_done.iloc[0]
        raise RuntimeError(f"{len(not_done)} RS/SRS cells did not finish (first: "
                           f"{first['method']} on {first['dataset']}: {first['reason']}); "
                           f"see {results.folder}")
    frames = []
    for _, cell in cells.iterrows():
        relevant = np.asarray(results.truth(cell["dataset"], cell["seed"]).relevant)
        extra = results.extra(cell["key"])
        curve = extra["curve"]
        final_relevant = int(np.asarray(extra["selected"])[relevant].sum())
        frame = pd.DataFrame({
            "n_trees": curve["n_trees"],
            "auprc": [average_precision_score(relevant, values)
                      for values in curve["importances"]],
            "accuracy": curve["held_out_score"],
            "n_selected": curve["n_selected"],
        })
        frame["n_selected_relevant"] = np.where(frame["n_trees"] == frame["n_trees"].max(),
                                                final_relevant, np.nan)
        frame["method"] = cell["method_name"]
        frame["p"] = int(cell["p_dataset_n_irrelevant"]) + 20
        frame["split"] = int(cell["seed"])
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
