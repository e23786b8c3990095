"""The public Python API (DESIGN.md, "Public Python API")."""

from __future__ import annotations

from typing import Any

import pandas as pd

from harness.core import registry
from harness.core.method import Method
from harness.core.types import Dataset, Importances
from harness.run.protocol import ExplainRequest, run_protocol


def _param_summary(params) -> dict[str, Any]:
    return {name: param.default for name, param in params.items()}


def list_methods() -> pd.DataFrame:
    """Registered methods: name, scope, family, tasks, parameters (defaults), installed."""
    rows = []
    for name in registry.method_names():
        cls = registry.get_method_class(name)
        missing = cls.missing_packages()
        rows.append({
            "name": name, "scope": cls.scope, "family": cls.family,
            "tasks": ", ".join(cls.tasks), "parameters": _param_summary(cls.parameters),
            "installed": not missing, "missing": ", ".join(missing), "summary": cls.summary,
        })
    return pd.DataFrame(rows)


def list_datasets() -> pd.DataFrame:
    """Registered datasets: name, task, parameters (defaults), summary."""
    rows = []
    for name in registry.dataset_names():
        cls = registry.get_dataset_class(name)
        rows.append({"name": name, "task": cls.task,
                     "parameters": _param_summary(cls.parameters), "summary": cls.summary})
    return pd.DataFrame(rows)


def load_dataset(name: str, seed: int = 0, **params: Any) -> Dataset:
    """Load a registered dataset, e.g. ``load_dataset("led", n_samples=200, seed=1)``."""
    return registry.make_dataset(name, **params).load(seed)


def explain(
    method: str | Method, model, X, y=None, seed: int = 0, sample_weight=None,
    progress: bool = False, **params: Any
) -> Importances:
    """Explain a fitted tree model (a scikit-learn RandomForest/ExtraTrees or DecisionTree)
    with one importance method.

    Parameters
    ----------
    method : str or Method
        A registered name (``"local_mdi"``) or a configured Method instance.
    model : fitted RandomForest/ExtraTrees/DecisionTree classifier or regressor
        Any such model, fitted by the harness or not (a single tree is explained as a forest
        of one tree; it has no out-of-bag rows).
    X : array-like or DataFrame of shape (n, p)
        Rows to explain (global methods use them only where they need data). When X has
        string column names and the model knows its feature names (``feature_names_in_``,
        or those ``fit_model`` records), they must be the same names in fit order, as in
        scikit-learn; when only one side has names the columns are taken in fit order and a
        warning says so.
    y : array-like of shape (n,), optional
        Targets of those rows, for methods that need them: finite numbers for a regressor,
        labels among ``model.classes_`` for a classifier.
    seed : int
        All randomness of the method comes from ``np.random.default_rng(seed)``; an int in
        [0, 2**32 - 1].
    sample_weight : array-like of shape (n,), optional
        Probabilities of the rows when they are the support of an explicit distribution
        (the SAGE methods then draw rows with these probabilities): finite, non-negative,
        with a positive sum.
    progress : bool
        Show a progress bar (on stderr) for methods that sample until convergence.
    **params
        Method parameters, validated against its declaration.

    Raises
    ------
    BadInputError
        When the model, X, y, sample_weight or seed breaks the rules above
        (:func:`harness.run.inputs.validate_explain_inputs`).
    MethodSkipped
        When the method declines this model or data (the reason says why).
    NotInstalledError
        When an optional package the method needs is missing.
    """
    instance = method if isinstance(method, Method) else registry.make_method(method, **params)
    request = ExplainRequest(X, y, sample_weight)
    if not progress:
        return run_protocol(instance, model, request, seed)
    from tqdm.auto import tqdm

    with tqdm(total=100, desc=repr(instance), unit="%") as bar:
        def advance(fraction: float) -> None:
            bar.update(max(0, round(100 * min(fraction, 1.0)) - bar.n))

        return run_protocol(instance, model, request, seed, progress=advance)
