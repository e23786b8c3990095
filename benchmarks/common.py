"""Shared asv setup: fitted forests cached once, a fast/regular profile by environment variable.

``HARNESS_BENCH_PROFILE=fast`` (default) keeps every suite to seconds; ``regular`` uses the
sizes of the papers' experiments (1000 trees).
"""

from __future__ import annotations

import os

PROFILES = {
    "fast": {"n_estimators": 30, "max_explain": 100},
    "regular": {"n_estimators": 1000, "max_explain": None},
}

# Methods whose cost is set by a sampling budget get a fixed one in the fast profile, so that
# their timings measure a fixed amount of work and the suites stay short.
FAST_METHOD_PARAMS = {
    "sage": {"n_background": 16, "max_permutations": 512, "batch_size": 128},
    "tree_sage": {"n_background": 16, "max_permutations": 512, "batch_size": 128},
    "shaff": {"n_subsets": 16},
    "rs": {"n_trees": 20},
    "srs": {"n_trees": 20},
}


def method_params(method: str) -> dict:
    """Parameter overrides of ``method`` in the current profile."""
    return FAST_METHOD_PARAMS.get(method, {}) if profile() is PROFILES["fast"] else {}


def profile() -> dict:
    name = os.environ.get("HARNESS_BENCH_PROFILE", "fast")
    if name not in PROFILES:
        raise ValueError(f"HARNESS_BENCH_PROFILE must be one of {sorted(PROFILES)}; got {name!r}")
    return PROFILES[name]


def fitted_forests() -> dict:
    """(dataset, forest) -> (model, X) for the benchmark grid."""
    import harness

    settings = profile()
    forests = {}
    for dataset in ("led", "breast_cancer", "diabetes"):
        ds = harness.load_dataset(dataset)
        for forest in ("extra_trees", "random_forest"):
            spec = {"forest": forest, "n_estimators": settings["n_estimators"]}
            if dataset == "led":
                spec.update(max_features=1, bootstrap=False)
            model = harness.fit_model(spec, ds, seed=0)
            X = ds.X[model.harness_fit_["train_index"]]
            if settings["max_explain"] is not None:
                X = X[: settings["max_explain"]]
            forests[(dataset, forest)] = (model, X, ds)
    return forests
