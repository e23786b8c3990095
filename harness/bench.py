"""``python -m harness bench``: method time as a multiple of the forest's own predict.

Every case fits one scikit-learn forest on all its rows and, in one process, times the
forest's ``predict`` / ``predict_proba`` on those rows and each method on the same rows
(best of ``repeat`` runs, after one untimed warm-up run that compiles the kernels). Ratios,
not seconds, are the figures to compare across machines. The out-of-bag methods get the
training rows (here all rows); ``mda_test`` gets the same rows as a stand-in held-out set.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.datasets import make_friedman1
from sklearn.ensemble import RandomForestRegressor

from harness.errors import unknown_name
from harness.forest import predict_output

OOB_METHODS = ("mda_test", "mda_bc", "mda_ik", "sobol_mda")


def _friedman1() -> tuple[np.ndarray, np.ndarray]:
    return make_friedman1(n_samples=2000, n_features=10, random_state=0)


def _benard2022() -> tuple[np.ndarray, np.ndarray]:
    from harness.api import load_dataset

    dataset = load_dataset("linear_gaussian", seed=0, preset="benard2022")
    return dataset.X, dataset.y


@dataclass(frozen=True)
class BenchCase:
    """A dataset, a forest grown on all its rows, and the methods timed on it."""

    name: str
    description: str
    data: Callable[[], tuple[np.ndarray, np.ndarray]]
    forest: Callable[[], Any]
    methods: tuple[str, ...]
    targets: dict[str, float] = field(default_factory=dict)  # method -> max ratio


OOB_TARGETS = {"mda_bc": 20.0, "mda_ik": 20.0, "sobol_mda": 50.0}

CASES = {
    "C": BenchCase(
        "C", "make_friedman1(n_samples=2000, n_features=10), RandomForestRegressor(300)",
        _friedman1, lambda: RandomForestRegressor(n_estimators=300, random_state=0),
        OOB_METHODS, OOB_TARGETS),
    "benard2022": BenchCase(
        "benard2022", "Bénard et al. p = 200 grouped Gaussians (n = 1000), "
        "RandomForestRegressor(300, max_features='sqrt', min_samples_leaf=5)",
        _benard2022, lambda: RandomForestRegressor(n_estimators=300, max_features="sqrt",
                                                   min_samples_leaf=5, random_state=0),
        OOB_METHODS, OOB_TARGETS),
}


def _best_time(call: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def run_bench(cases: list[str] | None = None, methods: list[str] | None = None,
              repeat: int = 3, on_step: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Time each case's methods against the forest's predict; one row per (case, method).

    Columns: ``case``, ``method``, ``seconds``, ``predict_seconds``, ``ratio_to_predict``,
    ``target_ratio`` (NaN where none is set) and ``meets_target``.
    """
    from harness.api import explain

    names = list(CASES) if not cases else cases
    for name in names:
        if name not in CASES:
            raise unknown_name("bench case", name, list(CASES))
    step = on_step or (lambda text: None)
    rows = []
    for name in names:
        case = CASES[name]
        step(f"{name}: fitting")
        X, y = case.data()
        model = case.forest().fit(X, y)
        predict_seconds = _best_time(lambda: predict_output(model, X), repeat)  # noqa: B023
        for method in case.methods:
            if methods and method not in methods:
                continue
            step(f"{name}: {method}")
            explain(method, model, X, y)  # warm-up: compile kernels, fill shared caches
            seconds = _best_time(lambda: explain(method, model, X, y), repeat)  # noqa: B023
            target = case.targets.get(method, float("nan"))
            ratio = seconds / predict_seconds
            rows.append({"case": name, "method": method, "seconds": seconds,
                         "predict_seconds": predict_seconds, "ratio_to_predict": ratio,
                         "target_ratio": target,
                         "meets_target": bool(ratio <= target) if target == target else None})
    return pd.DataFrame(rows)
