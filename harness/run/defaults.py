"""The default small grid of ``python -m harness compare`` (under 2 minutes on 2 cores).

Both forests are grown with bootstrap, so that every method applies to every cell: the
out-of-bag methods need out-of-bag rows, which ExtraTrees' default (no bootstrap) leaves none
of. The only cells skipped are on ``xor``, whose rows are its 8-row table with unequal
weights (an explicit distribution): the global methods that treat rows as equally likely
decline them (``Method.weighted_rows``), 7 methods on each forest.
"""

from __future__ import annotations

DEFAULT_GRID = {
    "datasets": ["led", "xor", "iris", "wine", "breast_cancer", "diabetes",
                 "linear_gaussian[n_samples=400]"],
    "models": [
        "extra_trees[n_estimators=100,max_features=1,bootstrap=true]",
        "random_forest[n_estimators=100]",
    ],
    "methods": [
        "mdi", "mdi[normalize=true]", "local_mdi", "saabas",
        "treeshap", "treeshap[perturbation=interventional,n_background=50]",
        "mda_test", "mda_bc", "mda_ik", "sobol_mda",
        # SAGE at a looser threshold and a small background, to stay within the budget
        "sage[n_background=16,thresh=0.05]", "tree_sage[thresh=0.05]",
        "tree_sage[imputation=marginal,n_background=16,thresh=0.05]",
        "ufi", "mdi_oob", "shaff[n_subsets=32]", "rs[n_trees=50]", "srs[n_trees=50]",
    ],
    "seeds": [0],
    "max_explain": 200,
}
