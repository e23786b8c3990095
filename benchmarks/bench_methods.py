"""asv suites of every registered method, in figures that stay put on a busy machine.

``asv continuous`` compares one figure per benchmark between two commits. On a shared machine
the absolute time of a call varies by more than asv's default factor (1.1) from one run to the
next, since the process waits for a core a varying share of the wall clock; so these suites
track instead

- ``ExplainSuite.track_explain_to_predict``: the explain's time as a multiple of the forest's
  own predict on the same rows, both timed in the same process, interleaved, in CPU seconds
  on one numba thread (median of nine alternations of samples of at least 50 ms each; see
  :func:`benchmarks.common.interleaved_ratio`): a machine that is slower for a while slows
  both alike, and a kernel that becomes twice slower doubles the figure. The figure is the
  median of that ratio over three fresh processes
  (:func:`benchmarks.common.ratio_over_processes`), since each process still carries a
  factor of its own on a busy machine;
- ``ExplainSuite.track_explain_traced_peak``: the largest memory the explain itself holds
  above its start (NumPy and numba arrays, traced by ``tracemalloc``), which is the same from
  run to run, rather than asv's ``peakmem_`` (the whole process: 330-380 MB for every method,
  mostly the imported libraries);
- ``MemoryAtScaleSuite``: the traced and the resident peak of every local method above its
  output, on up to 10^6 rows x 20 features with a 100-tree forest (issue 22's bounded-memory
  target; the measure of ``python -m harness bench --memory``), to show that it does not grow
  with the rows;
- ``IdentitySuite``: residuals of the identities every commit must keep (exact figures).

The absolute times of the same calls are in ``bench_absolute`` (for quiet machines), the
first call in a fresh cache in ``bench_cold``.
"""

from __future__ import annotations

import numpy as np

from .common import (
    DATASETS,
    FORESTS,
    explain_inputs,
    fitted_forests,
    ratio_over_processes,
)

# (dataset, forest) of the shared grid on which every method runs (the OOB methods need the
# bootstrap); one case, so that ``asv continuous -b bench_methods`` takes minutes
CASES = ["diabetes/random_forest"]


def _methods():
    import harness

    return list(harness.list_methods()["name"])


def _memory():
    from harness.bench import memory

    return memory


def _additivity_residual(method: str, model, X) -> float:
    """max |base + Σ_j φ_j(x) − prediction| over rows and classes."""
    import harness
    from harness.forest.view import predict_output

    params = {"output": "all_classes"} if hasattr(model, "classes_") else {}
    imp = harness.explain(method, model, X, **params)
    total = imp.base_values + imp.values.sum(axis=1)
    return float(np.abs(total - predict_output(model, X)).max())


def _one_thread():
    """Run kernels on one numba thread (as ``python -m harness bench`` does) and the native
    pools (BLAS, OpenMP) on one thread too, and return what restores them: CPU time then
    measures work, not threads that spin while another process holds the other core (shaff's
    ratio went 1.8x up in one run beside a busy process before the pools were limited)."""
    import numba
    from threadpoolctl import threadpool_limits

    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    limits = threadpool_limits(1)
    return previous, limits


def _restore(saved) -> None:
    import numba

    previous, limits = saved
    numba.set_num_threads(previous)
    limits.restore_original_limits()


class ExplainSuite:
    """Each method's cost relative to predict, and the memory its explain allocates."""

    params = (_methods(), CASES)
    param_names = ["method", "case"]
    timeout = 300

    def setup_cache(self):
        return fitted_forests()

    def setup(self, cache, method, case):
        import harness
        from harness.forest.view import predict_output

        model, _, ds = cache[tuple(case.split("/"))]
        cls = harness.core.registry.get_method_class(method)
        if cls.missing_packages():
            raise NotImplementedError(f"{method} not installed")
        spec, X, y = explain_inputs(method, model, ds)
        self.threads = _one_thread()
        self.explain = lambda: harness.explain(spec, model, X, y)
        self.predict = lambda: predict_output(model, X)
        try:  # compile or import once, outside the measures
            self.explain()
        except harness.MethodSkipped as skipped:
            raise NotImplementedError(str(skipped)) from skipped

    def teardown(self, cache, method, case):
        if hasattr(self, "threads"):  # asv tears down after a skipping setup too
            _restore(self.threads)

    def track_explain_to_predict(self, cache, method, case):
        return ratio_over_processes("explain", method, case)

    track_explain_to_predict.unit = "ratio"

    def track_explain_traced_peak(self, cache, method, case):
        from harness.bench.runner import traced_peak

        return float(traced_peak(self.explain)[0])

    track_explain_traced_peak.unit = "bytes"


class MemoryAtScaleSuite:
    """Memory of every local method's explain on n rows x 20 features with the 100-tree,
    depth-12 forest of ``python -m harness bench --memory``, by the same measure
    (:func:`harness.bench.memory.measure`): the traced peak above the start of the explain,
    minus the output, which the row blocks keep constant in n. The resident peak is not
    tracked: it moves by whole pages from run to run (TreeSHAP at 10^4 rows: 5.33, 5.32, 5.26
    and 4.47 MB above the output in four asv runs of commits that did not change it, flagged
    at 0.85, where the traced peak moved by at most 70 bytes; below 10^6 rows the resident
    figure of the path walks was negative); ``bench --memory`` prints it. Each method
    runs up to the largest n whose explain takes seconds on one thread in CI (10^6 rows for
    the path walks, 10^4 for path-dependent TreeSHAP, 10^3 for interventional TreeSHAP);
    ``bench --memory`` goes further."""

    # the settings of harness.bench.memory.SETTINGS (named here: asv discovers the suites
    # without importing harness), each up to the largest n that takes seconds
    largest = {"local_mdi": 10**6, "saabas": 10**6, "treeshap": 10**4,
               "treeshap[perturbation=interventional]": 10**3}
    params = (list(largest), [10**3, 10**4, 10**6])
    param_names = ["spec", "n_rows"]
    smoke_params = (params[0][:1], [2000])  # the suites' test: one method, seconds
    timeout = 600

    def setup_cache(self):
        return _memory().scale_forest()

    def setup(self, model, spec, n_rows):
        if n_rows > self.largest[spec]:
            raise NotImplementedError(f"{spec} is measured up to {self.largest[spec]} rows")
        self.threads = _one_thread()
        self.figures = _memory().measure(spec, model, _memory().scale_rows(n_rows),
                                         threads=None)

    def teardown(self, model, spec, n_rows):
        if hasattr(self, "threads"):  # asv tears down after a skipping setup too
            _restore(self.threads)
            del self.threads

    def track_extra_traced(self, model, spec, n_rows):
        return float(self.figures["extra_traced_mb"] * 1e6)

    track_extra_traced.unit = "bytes"


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
