"""asv suite: each method's rank agreement with exact ground truth, tracked per commit.

Two problems with an exact answer: ``led`` (10-row distribution; Thm 1 of Louppe et al.
2013 is the MDI limit of totally randomized trees, grown here with bootstrap so that the
out-of-bag methods run too) and ``linear_gaussian`` (independent-group Gaussian inputs with
closed-form total Sobol indices, the target of Sobol-MDA and, up to a factor, of the MDAs).
The tracked figure is Spearman's correlation between a method's per-feature summary (its
values, or mean |local values|) and the truth; a method that cannot run there gives NaN.
On the 10-row ``led`` table the out-of-bag methods see at most 10 rows, so their figures
there are not meaningful (and NaN when every out-of-bag class is unseen in-bag).
"""

from __future__ import annotations

import numpy as np

from .common import method_params, profile

TRUTH = {"led": "thm1", "linear_gaussian": "sobol_total"}


def _methods():
    import harness

    return list(harness.list_methods()["name"])


def _fitted() -> dict:
    import harness

    trees = profile()["n_estimators"]
    fitted = {}
    for dataset in TRUTH:
        ds = harness.load_dataset(dataset)
        spec = {"forest": "random_forest", "n_estimators": max(trees, 100),
                "max_features": 1 if dataset == "led" else "sqrt"}
        model = harness.fit_model(spec, ds, seed=0)
        fitted[dataset] = (model, ds)
    return fitted


class AccuracySuite:
    params = (_methods(), list(TRUTH))
    param_names = ["method", "dataset"]
    timeout = 300

    def setup_cache(self):
        return _fitted()

    def track_rank_correlation_with_truth(self, cache, method, dataset):
        from scipy.stats import spearmanr

        import harness
        from harness.core.types import global_view

        model, ds = cache[dataset]
        train = model.harness_fit_["train_index"]
        weight = None if ds.sample_weight is None else ds.sample_weight[train]
        try:
            result = harness.explain(method, model, ds.X[train], ds.y[train],
                                     sample_weight=weight, **method_params(method))
        except (harness.MethodSkipped, harness.NotInstalledError):
            return float("nan")  # asv shows NaN as n/a
        summary = global_view(result.values, result.scope)
        truth = ds.truth.quantities[TRUTH[dataset]].values
        return float(spearmanr(np.abs(summary), truth).statistic)
