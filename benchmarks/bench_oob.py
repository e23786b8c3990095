"""asv suite for the out-of-bag family on the bench cases of ``python -m harness bench``.

Tracks, per commit, each method's time (for quiet machines), its ratio to the forest's own
predict on the same rows (CPU time, interleaved in the same process: stable on a busy
machine, see ``bench_methods``), and on case C (Friedman #1, independent inputs, exact Sobol
indices) its largest distance to its own theoretical target.
"""

from __future__ import annotations

import numpy as np

from .common import interleaved_ratio, profile

CASES = ["C", "benard2022"]
METHODS = ["mda_test", "mda_bc", "mda_ik", "sobol_mda"]


def _fitted_cases() -> dict:
    from harness.bench.runner import CASES as BENCH_CASES

    trees = 300 if profile()["n_estimators"] >= 300 else 50
    fitted = {}
    for name in CASES:
        case = BENCH_CASES[name]
        X, y = case.data()
        fitted[name] = (case.forest().set_params(n_estimators=trees).fit(X, y), X, y)
    return fitted


class OOBSuite:
    params = (METHODS, CASES)
    param_names = ["method", "case"]
    timeout = 600

    def setup_cache(self):
        return _fitted_cases()

    def setup(self, cache, method, case):
        import harness
        from harness.forest.view import predict_output

        self.model, self.X, self.y = cache[case]
        self.explain = harness.explain
        self.predict = predict_output
        self.explain(method, self.model, self.X, self.y)  # compile outside the timing

    def time_explain(self, cache, method, case):
        self.explain(method, self.model, self.X, self.y)

    def track_ratio_to_predict(self, cache, method, case):
        return interleaved_ratio(lambda: self.explain(method, self.model, self.X, self.y),
                                 lambda: self.predict(self.model, self.X))

    track_ratio_to_predict.unit = "x predict"

    def track_max_error_to_target(self, cache, method, case):
        import harness

        if case != "C" or method == "mda_test":
            return float("nan")  # mda_test would need held-out rows; the case has none
        truth = harness.load_dataset("friedman1", n_samples=10, noise=0.0).truth
        estimate = self.explain(method, self.model, self.X, self.y, seed=0).values
        for vector in truth.quantities.values():
            if method in vector.compares_to:
                return float(np.abs(estimate - vector.values).max())
        return float("nan")

    track_max_error_to_target.unit = "target units"
