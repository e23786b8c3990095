"""asv suite for the out-of-bag family on the bench cases of ``python -m harness bench``.

Tracks, per commit, each method's time (for quiet machines), its ratio to the forest's own
predict on the same rows (CPU time on one thread, interleaved in the same process, the
median over three fresh processes: stable on a busy machine, see ``bench_methods``), and on
case C (Friedman #1, independent inputs, exact Sobol indices) its largest distance to its own
theoretical target.
"""

from __future__ import annotations

import numpy as np

from .common import profile, ratio_over_processes

CASES = ["C", "benard2022"]
METHODS = ["mda_test", "mda_bc", "mda_ik", "sobol_mda"]


def fitted_case(name: str) -> tuple:
    """(model, X, y) of the bench case ``name``, 300 trees in the regular profile, 50 else."""
    from harness.bench.runner import CASES as BENCH_CASES

    trees = 300 if profile()["n_estimators"] >= 300 else 50
    case = BENCH_CASES[name]
    X, y = case.data()
    return case.forest().set_params(n_estimators=trees).fit(X, y), X, y


def _fitted_cases() -> dict:
    return {name: fitted_case(name) for name in CASES}


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
        return ratio_over_processes("oob", method, case)

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
