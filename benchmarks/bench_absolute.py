"""asv suite: absolute wall time of every method's explain, for quiet machines.

These figures move with the machine's load: on a shared 2-core machine at load 6, calls of
0.5-20 ms vary by more than asv's default factor 1.1 between two runs of the same commit, so
``asv continuous`` on such a machine reports them as changed. Run them on an idle machine,
without ``--quick`` (which takes one sample and so leaves asv no statistics), e.g.
``asv continuous -b bench_absolute A B``; on a busy one compare ``bench_methods`` instead
(each explain as a multiple of predict, timed in the same process).
"""

from __future__ import annotations

from .common import DATASETS, FORESTS, fitted_forests, method_params


def _methods():
    import harness

    return list(harness.list_methods()["name"])


class ExplainSuite:
    """``time_explain`` for every method x dataset x forest (the rows of the fast profile:
    the first 100 training rows)."""

    params = (_methods(), DATASETS, FORESTS)
    param_names = ["method", "dataset", "forest"]
    timeout = 300
    # several samples in each of two rounds (asv's default) so that asv compares the two
    # commits by a rank test on the samples, not by one number; warm-up covers the caches
    repeat = (5, 20, 20.0)
    warmup_time = 0.2

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
