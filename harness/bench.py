"""``python -m harness bench``: method time as a multiple of the forest's own predict.

Every case fits one scikit-learn forest on all its rows and, in one process, times the
forest's ``predict`` / ``predict_proba`` on those rows and each method on the same rows
(best of ``repeat`` runs, or one run when a run takes longer than ``LONG_RUN`` seconds, after
an untimed warm-up that compiles the kernels). Ratios, not seconds, are the figures to compare
across machines. The out-of-bag methods get the training rows (here all rows); ``mda_test``
gets the same rows as a stand-in held-out set. A method may name a reference method of the
same case (e.g. ``tree_sage`` against ``sage``): its row then gives the speed-up over the
reference and, for estimates with a std, the largest |difference| in units of the combined
std.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer, load_digits, make_friedman1
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier, RandomForestRegressor

from harness.errors import unknown_name
from harness.forest import predict_output

LONG_RUN = 5.0  # seconds: a method this slow is timed once


def _digits() -> tuple[np.ndarray, np.ndarray]:
    return load_digits(return_X_y=True)


def _breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    return load_breast_cancer(return_X_y=True)


def _friedman1() -> tuple[np.ndarray, np.ndarray]:
    return make_friedman1(n_samples=2000, n_features=10, random_state=0)


def _benard2022() -> tuple[np.ndarray, np.ndarray]:
    from harness.api import load_dataset

    dataset = load_dataset("linear_gaussian", seed=0, preset="benard2022")
    return dataset.X, dataset.y


OOB_METHODS = ("mda_test", "mda_bc", "mda_ik", "sobol_mda")
OOB_TARGETS = {"mda_bc": 20.0, "mda_ik": 20.0, "sobol_mda": 50.0}
SAGE_METHODS = ("sage", "tree_sage", "tree_sage[imputation=marginal]")
# tree SAGE against sage at the same threshold, rows, background and loss: minimum speed-ups
SAGE_TARGETS = {"tree_sage": 10.0, "tree_sage[imputation=marginal]": 3.0}
SAGE_WARM_UP = {"max_permutations": 8, "batch_size": 8}


@dataclass(frozen=True)
class BenchCase:
    """A dataset, a forest grown on all its rows, and the methods timed on it.

    ``methods`` are method specs (``tree_sage[imputation=marginal]``); ``targets`` maps a
    spec to the largest ratio to predict it may take, ``speedup_targets`` to the smallest
    speed-up over its ``references`` entry; ``warm_up`` gives parameters for a cheap
    untimed first run (default: a full run).
    """

    name: str
    description: str
    data: Callable[[], tuple[np.ndarray, np.ndarray]]
    forest: Callable[[], Any]
    methods: tuple[str, ...]
    targets: dict[str, float] = field(default_factory=dict)
    references: dict[str, str] = field(default_factory=dict)
    speedup_targets: dict[str, float] = field(default_factory=dict)
    warm_up: dict[str, dict] = field(default_factory=dict)


def _sage_case(name, description, data, forest) -> BenchCase:
    return BenchCase(name, description, data, forest, SAGE_METHODS,
                     references={spec: "sage" for spec in SAGE_TARGETS},
                     speedup_targets=SAGE_TARGETS,
                     warm_up={spec: SAGE_WARM_UP for spec in SAGE_METHODS})


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
    "sage-A2": _sage_case(
        "sage-A2", "digits, ExtraTreesClassifier(100, max_features='sqrt')", _digits,
        lambda: ExtraTreesClassifier(n_estimators=100, max_features="sqrt", random_state=0)),
    "sage-B": _sage_case(
        "sage-B", "breast cancer, RandomForestClassifier(500)", _breast_cancer,
        lambda: RandomForestClassifier(n_estimators=500, random_state=0)),
    "sage-C": _sage_case(
        "sage-C", "make_friedman1(n_samples=2000), RandomForestRegressor(300)", _friedman1,
        lambda: RandomForestRegressor(n_estimators=300, random_state=0)),
}


def timed(call: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall time over ``repeat`` runs (one run if it is longer than ``LONG_RUN``) and
    the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
        if best > LONG_RUN:
            break
    return best, result


def _difference_in_std(ours, theirs) -> float:
    if ours.std is None or theirs.std is None:
        return float("nan")
    combined = np.sqrt(np.asarray(ours.std) ** 2 + np.asarray(theirs.std) ** 2)
    return float(np.max(np.abs(ours.values - theirs.values) / np.maximum(combined, 1e-300)))


def run_bench(cases: list[str] | None = None, methods: list[str] | None = None,
              repeat: int = 3, on_step: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Time each case's methods against the forest's predict; one row per (case, method).

    Columns: ``case``, ``method``, ``seconds``, ``predict_seconds``, ``ratio_to_predict``,
    ``target_ratio``, ``reference``, ``speedup``, ``target_speedup``, ``max_diff_in_std``
    and ``meets_target`` (None where no target is set). ``methods`` filters by spec or by
    method name.
    """
    from harness.api import explain
    from harness.cells import expand_methods

    names = list(CASES) if not cases else cases
    for name in names:
        if name not in CASES:
            raise unknown_name("bench case", name, list(CASES))
    step = on_step or (lambda text: None)
    rows = []
    for name in names:
        case = CASES[name]
        chosen = [spec for spec in case.methods
                  if not methods or spec in methods or spec.split("[")[0] in methods]
        if not chosen:
            continue
        step(f"{name}: fitting")
        X, y = case.data()
        model = case.forest().fit(X, y)
        predict_seconds, _ = timed(lambda: predict_output(model, X), repeat)  # noqa: B023
        results = {}
        for spec in chosen:
            step(f"{name}: {spec}")
            method = expand_methods([spec])[0]
            warm = case.warm_up.get(spec)
            warm_method = expand_methods([{"name": method.name, **method.params, **warm}])[0] \
                if warm else method
            explain(warm_method, model, X, y)  # compile kernels, fill shared caches
            seconds, result = timed(lambda: explain(method, model, X, y), repeat)  # noqa: B023
            results[spec] = (seconds, result)
            row = {"case": name, "method": spec, "seconds": seconds,
                   "predict_seconds": predict_seconds,
                   "ratio_to_predict": seconds / predict_seconds,
                   "target_ratio": case.targets.get(spec, float("nan")),
                   "reference": case.references.get(spec), "speedup": float("nan"),
                   "target_speedup": case.speedup_targets.get(spec, float("nan")),
                   "max_diff_in_std": float("nan")}
            reference = case.references.get(spec)
            if reference in results:
                row["speedup"] = results[reference][0] / seconds
                if spec.startswith("tree_sage[imputation=marginal"):
                    row["max_diff_in_std"] = _difference_in_std(result, results[reference][1])
            checks = []
            if row["target_ratio"] == row["target_ratio"]:
                checks.append(row["ratio_to_predict"] <= row["target_ratio"])
            if row["target_speedup"] == row["target_speedup"] and row["speedup"] == row[
                    "speedup"]:
                checks.append(row["speedup"] >= row["target_speedup"])
            row["meets_target"] = bool(all(checks)) if checks else None
            rows.append(row)
    return pd.DataFrame(rows)
