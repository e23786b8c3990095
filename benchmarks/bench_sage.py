"""asv suite: tree SAGE against sage on the SAGE bench cases.

Every estimator draws the same number of (row, permutation) samples (no early stop), so
``time_explain`` measures a fixed amount of work; ``track_speedup_vs_sage`` is sage's time
over the method's, both measured in the same run; ``track_speedup_to_threshold`` is the
same ratio when each samples until sage's convergence rule holds at one threshold (the
measure of ``python -m harness bench``, where tree SAGE's control variates count too: 0.1
in the fast profile, sage's 0.025 in the regular one); ``track_max_diff_in_std`` is the
largest |tree_sage(marginal) − sage| over features in units of their combined standard
error (same rows, background and loss, so it should stay near the maximum of p standard
normals).
"""

from __future__ import annotations

import time

import numpy as np

from .common import profile

CASES = ["sage-A2", "sage-B", "sage-C"]
METHODS = ["sage", "tree_sage", "tree_sage[imputation=marginal]"]


def _budget() -> dict:
    samples = 256 if profile()["n_estimators"] < 300 else 2048
    return {"n_background": 32, "max_permutations": samples, "batch_size": samples,
            "thresh": 1e-9}


def _to_threshold() -> dict:
    return {"n_background": 32, "max_permutations": 10**6, "batch_size": 256,
            "thresh": 0.1 if profile()["n_estimators"] < 300 else 0.025}


def _fitted_cases() -> dict:
    from harness.bench.runner import CASES as BENCH_CASES

    trees = 30 if profile()["n_estimators"] < 300 else None
    fitted = {}
    for name in CASES:
        case = BENCH_CASES[name]
        X, y = case.data()
        forest = case.forest()
        if trees is not None:
            forest.set_params(n_estimators=trees)
        fitted[name] = (forest.fit(X, y), X, y)
    return fitted


def _method(spec: str, settings: dict | None = None):
    from harness.run.cells import expand_methods

    method = expand_methods([spec])[0]
    return type(method)(**{**method.params, **(settings or _budget())})


class SageSuite:
    params = (METHODS, CASES)
    param_names = ["method", "case"]
    timeout = 900

    def setup_cache(self):
        return _fitted_cases()

    def setup(self, cache, method, case):
        import harness

        self.model, self.X, self.y = cache[case]
        self.explain = harness.explain
        self.method = _method(method)
        warm = type(self.method)(**{**self.method.params, "max_permutations": 4,
                                    "batch_size": 4})
        self.explain(warm, self.model, self.X, self.y)  # compile outside the timing

    def time_explain(self, cache, method, case):
        self.explain(self.method, self.model, self.X, self.y)

    def track_speedup_vs_sage(self, cache, method, case):
        start = time.perf_counter()
        self.explain(_method("sage"), self.model, self.X, self.y)
        reference = time.perf_counter() - start
        start = time.perf_counter()
        self.explain(self.method, self.model, self.X, self.y)
        return reference / (time.perf_counter() - start)

    track_speedup_vs_sage.unit = "x"

    def track_speedup_to_threshold(self, cache, method, case):
        if method == "sage":
            return float("nan")
        times = []
        for spec in ("sage", method):
            start = time.perf_counter()
            self.explain(_method(spec, _to_threshold()), self.model, self.X, self.y, seed=0)
            times.append(time.perf_counter() - start)
        return times[0] / times[1]

    track_speedup_to_threshold.unit = "x"

    def track_max_diff_in_std(self, cache, method, case):
        if method != "tree_sage[imputation=marginal]":
            return float("nan")
        ours = self.explain(self.method, self.model, self.X, self.y, seed=0)
        theirs = self.explain(_method("sage"), self.model, self.X, self.y, seed=0)
        combined = np.maximum(np.sqrt(ours.std**2 + theirs.std**2), 1e-300)  # constant pixels
        return float(np.max(np.abs(ours.values - theirs.values) / combined))

    track_max_diff_in_std.unit = "std"
