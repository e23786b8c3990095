"""Which numba kernels gain a compiled signature during ``explain`` after ``prepare()``.

Run as a fresh process (``python -m tests._support.compile_check [METHOD ...]``): for every
registered method and each task it supports, call ``prepare()``, then explain small
classifiers (4 and 30 features) or a regressor and list every harness dispatcher that
gained a signature meanwhile (a compilation, or a load from numba's cache: either would be
timed as ``time_explain``). Prints a JSON object ``{"method/task/p=width": [dispatcher,
...]}``; ``{}`` is the contract kept.
"""

from __future__ import annotations

import itertools
import json
import sys

from numba.core.registry import CPUDispatcher
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

import harness
from harness.core import registry


def compiled_signatures() -> dict[str, int]:
    """Number of compiled signatures of every numba dispatcher in a loaded harness module."""
    counts = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("harness") or module is None:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, CPUDispatcher):
                key = f"{value.py_func.__module__}.{value.py_func.__qualname__}"
                counts[key] = len(value.signatures)
    return counts


def compiled_during_explain(names: list[str]) -> dict[str, list[str]]:
    iris, diabetes = load_iris(return_X_y=True), load_diabetes(return_X_y=True)
    cancer = load_breast_cancer(return_X_y=True)
    # iris and diabetes (4 and 10 features) and breast cancer (30): a kernel may specialise
    # on the width (tree SAGE's walk once did, by its rank tables' entry type, and so
    # compiled inside every explain past p = 10)
    problems = {
        "classification": [(RandomForestClassifier(n_estimators=4, random_state=0), *iris),
                           (RandomForestClassifier(n_estimators=4, random_state=0),
                            cancer[0][:100], cancer[1][:100])],
        "regression": [(RandomForestRegressor(n_estimators=4, random_state=0),
                        diabetes[0][:150], diabetes[1][:150])],
    }
    for forest, X, y in itertools.chain.from_iterable(problems.values()):
        forest.fit(X, y)
    report = {}
    for name in names:
        method_class = registry.get_method_class(name)
        if method_class.missing_packages():  # e.g. hidimstat, not installed at the floors
            continue
        for task in method_class.tasks:
            method_class.prepare()
            for forest, X, y in problems[task]:
                before = compiled_signatures()
                try:
                    harness.explain(name, forest, X, y, seed=0)
                except harness.MethodSkipped:
                    continue
                after = compiled_signatures()
                gained = sorted(k for k, n in after.items() if n > before.get(k, 0))
                if gained:
                    report[f"{name}/{task}/p={X.shape[1]}"] = gained
    return report


if __name__ == "__main__":
    print(json.dumps(compiled_during_explain(sys.argv[1:] or registry.method_names())))
