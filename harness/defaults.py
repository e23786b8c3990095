"""The default small grid of ``python -m harness compare`` (under 2 minutes on 2 cores)."""

from __future__ import annotations

DEFAULT_GRID = {
    "datasets": ["led", "xor", "iris", "wine", "breast_cancer", "diabetes",
                 "linear_gaussian[n_samples=400]"],
    "models": [
        "extra_trees[n_estimators=100,max_features=1]",
        "random_forest[n_estimators=100]",
    ],
    "methods": [
        "mdi", "mdi[normalize=true]", "local_mdi", "saabas",
        "treeshap", "treeshap[perturbation=interventional,n_background=50]",
        "mda_test", "mda_bc", "mda_ik", "sobol_mda",
    ],
    "seeds": [0],
    "max_explain": 200,
}
