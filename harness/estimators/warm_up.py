"""Compile a method's kernels before anything is timed, by explaining a tiny forest.

``prepare()`` must leave nothing to compile for ``explain`` (DESIGN.md, "explain protocol"):
the methods whose kernels need a real fitted forest (in-bag counts, OOB rows, SAGE tables)
run their own ``_explain`` once per process on a forest of three shallow trees grown with
bootstrap on 40 rows, for each task they support and each parameter setting in their
``warm_up_params`` whose kernels differ. numba then holds every signature that a real explain
uses (inputs reach the kernels as C-contiguous float64, whatever the user passed); the
kernels that only wide rows reach (:func:`harness.kernels.tree_columns.compile_kernels`) are
compiled on their own.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from harness.core.method import ExplainData, Method
from harness.kernels.tree_columns import compile_kernels as compile_tree_columns

N_ROWS, N_FEATURES = 40, 3


@functools.cache
def tiny_problem(task: str) -> tuple[Any, np.ndarray, np.ndarray]:
    """A fitted three-tree bootstrap forest and its training rows, for ``task``."""
    rng = np.random.default_rng(0)
    X = np.ascontiguousarray(rng.random((N_ROWS, N_FEATURES)))
    if task == "classification":
        y = (X[:, 0] > 0.5).astype(np.int64) + (X[:, 1] > 0.5)
        forest = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0)
    else:
        y = X[:, 0] + X[:, 1] * X[:, 2]
        forest = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0)
    return forest.fit(X, y), X, y


@functools.cache
def warm_up(method_class: type[Method]) -> None:
    """Explain the tiny forest of each supported task with each ``warm_up_params`` setting,
    and compile the kernels the tiny rows do not reach."""
    compile_tree_columns()
    for task in method_class.tasks:
        model, X, y = tiny_problem(task)
        data = ExplainData(X=X, y=y, feature_names=[f"x{j}" for j in range(N_FEATURES)],
                           task=task)
        for params in getattr(method_class, "warm_up_params", ({},)):
            method = method_class(**params)
            if method.skip(model, data) is None:
                method._explain(model, data, np.random.default_rng(0))
