"""asv suite: time, peak memory and accuracy identities of every registered method."""

from __future__ import annotations

import numpy as np

from .common import fitted_forests, method_params

DATASETS = ["led", "breast_cancer", "diabetes"]
FORESTS = ["extra_trees", "random_forest"]


def _methods():
    import harness

    return list(harness.list_methods()["name"])


def _additivity_residual(method: str, model, X) -> float:
    """max |base + Σ_j φ_j(x) − prediction| over rows and classes."""
    import harness
    from harness.forest.view import predict_output

    params = {"output": "all_classes"} if hasattr(model, "classes_") else {}
    imp = harness.explain(method, model, X, **params)
    total = imp.base_values + imp.values.sum(axis=1)
    return float(np.abs(total - predict_output(model, X)).max())


class ExplainSuite:
    """``time_explain`` and ``peakmem_explain`` for every method x dataset x forest."""

    params = (_methods(), DATASETS, FORESTS)
    param_names = ["method", "dataset", "forest"]
    timeout = 300

    def setup_cache(self):
        return fitted_forests()

    def setup(self, cache, method, dataset, forest):
        import harness

        self.model, X, ds = cache[(dataset, forest)]
        cls = harness.core.registry.get_method_class(method)
        if cls.missing_packages():
            raise NotImplementedError(f"{method} not installed")
        # the OOB methods take every training row, mda_test the held-out rows (Method.rows)
        info = self.model.harness_fit_
        rows = {"train": info["train_index"], "test": info["test_index"]}.get(cls.rows)
        self.X, self.y = (X, ds.y[info["train_index"][: len(X)]]) if rows is None else (
            ds.X[rows], ds.y[rows])
        self.harness = harness
        self.method = harness.core.registry.make_method(method, **method_params(method))
        try:  # compile or import once, outside the timing
            harness.explain(self.method, self.model, self.X, self.y)
        except harness.MethodSkipped as skipped:
            raise NotImplementedError(str(skipped)) from skipped

    def time_explain(self, cache, method, dataset, forest):
        self.harness.explain(self.method, self.model, self.X, self.y)

    def peakmem_explain(self, cache, method, dataset, forest):
        self.harness.explain(self.method, self.model, self.X, self.y)


class IdentitySuite:
    """Residuals of the identities every commit must keep (tracked, not asserted)."""

    params = (DATASETS, FORESTS)
    param_names = ["dataset", "forest"]

    def setup_cache(self):
        return fitted_forests()

    def track_local_mdi_to_global_mdi(self, cache, dataset, forest):
        import harness

        model, X, ds = cache[(dataset, forest)]
        train = ds.X[model.harness_fit_["train_index"]]
        if getattr(model, "bootstrap", False):
            return float("nan")  # the identity needs in-bag weights (OOB issue)
        local = harness.explain("local_mdi", model, train).values.mean(axis=0)
        return float(np.abs(local - harness.explain("mdi", model, train).values).max())

    def track_saabas_additivity(self, cache, dataset, forest):
        return _additivity_residual("saabas", *cache[(dataset, forest)][:2])

    def track_treeshap_additivity(self, cache, dataset, forest):
        return _additivity_residual("treeshap", *cache[(dataset, forest)][:2])

    def track_mdi_rank_correlation_with_thm1(self, cache, dataset, forest):
        from scipy.stats import spearmanr

        import harness

        model, X, ds = cache[(dataset, forest)]
        if ds.truth is None or "thm1" not in ds.truth.quantities:
            return float("nan")  # no Thm 1 ground truth for this dataset
        values = harness.explain("mdi", model, X).values
        return float(spearmanr(values, ds.truth.quantities["thm1"].values).statistic)
