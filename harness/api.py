"""The public Python API (DESIGN.md, "Public Python API")."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness import registry
from harness.errors import BadInputError, MethodSkipped, NotInstalledError
from harness.forest import check_forest, is_classifier
from harness.method import ExplainData, Method
from harness.types import Dataset, Importances


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


def _feature_names(model, X, n_features: int) -> list[str]:
    if hasattr(X, "columns"):
        return [str(c) for c in X.columns]
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        names = getattr(model, "harness_fit_", {}).get("feature_names")
    if names is not None and len(names) == n_features:
        return [str(c) for c in names]
    return [f"x{j}" for j in range(n_features)]


def check_rows(model, X, y=None) -> tuple[np.ndarray, np.ndarray | None]:
    """Validate the rows to explain against the model: 2-D, finite, right width."""
    check_forest(model)
    try:
        array = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise BadInputError(
            f"X must be a numeric 2-D array; could not convert it: {exc}"
        ) from exc
    if array.ndim != 2:
        raise BadInputError(f"X must be a 2-D array (n_samples, n_features); got shape "
                            f"{array.shape}.")
    if array.shape[1] != model.n_features_in_:
        raise BadInputError(f"X has {array.shape[1]} columns but the model was fitted on "
                            f"{model.n_features_in_} features.")
    if array.shape[0] == 0:
        raise BadInputError("X has no rows; expected at least one row to explain.")
    if not np.all(np.isfinite(array)):
        raise BadInputError("X contains NaN or infinite values; expected finite numbers.")
    target = None
    if y is not None:
        target = np.asarray(y)
        if target.shape != (array.shape[0],):
            raise BadInputError(f"y must have shape ({array.shape[0]},) to match X; got "
                                f"{target.shape}.")
    return array, target


def explain(
    method: str | Method, model, X, y=None, seed: int = 0, sample_weight=None,
    progress: bool = False, **params: Any
) -> Importances:
    """Explain a fitted scikit-learn RandomForest/ExtraTrees with one importance method.

    Parameters
    ----------
    method : str or Method
        A registered name (``"local_mdi"``) or a configured Method instance.
    model : fitted RandomForest/ExtraTrees classifier or regressor
        Any such forest, fitted by the harness or not.
    X : array-like of shape (n, p)
        Rows to explain (global methods use them only where they need data).
    y : array-like of shape (n,), optional
        Targets of those rows, for methods that need them.
    seed : int
        All randomness of the method comes from ``np.random.default_rng(seed)``.
    sample_weight : array-like of shape (n,), optional
        Probabilities of the rows when they are the support of an explicit distribution
        (the SAGE methods then draw rows with these probabilities).
    progress : bool
        Show a progress bar (on stderr) for methods that sample until convergence.
    **params
        Method parameters, validated against its declaration.

    Raises
    ------
    MethodSkipped
        When the method declines this model or data (the reason says why).
    NotInstalledError
        When an optional package the method needs is missing.
    """
    instance = method if isinstance(method, Method) else registry.make_method(method, **params)
    missing = instance.missing_packages()
    if missing:
        raise NotInstalledError(
            f"{instance.name} needs {', '.join(missing)}; install it with "
            f"{instance.install_hint()}."
        )
    array, target = check_rows(model, X, y)
    weight = None
    if sample_weight is not None:
        weight = np.asarray(sample_weight, dtype=float)
        if weight.shape != (array.shape[0],) or np.any(weight < 0) or weight.sum() <= 0:
            raise BadInputError(f"sample_weight must be {array.shape[0]} non-negative numbers "
                                f"with a positive sum; got shape {weight.shape}.")
    data = ExplainData(
        X=array, y=target, feature_names=_feature_names(model, X, array.shape[1]),
        task="classification" if is_classifier(model) else "regression", sample_weight=weight,
    )
    reason = instance.skip(model, data)
    if reason:
        raise MethodSkipped(reason)
    instance.prepare()
    if not progress:
        return instance.explain(model, data, np.random.default_rng(seed))
    from tqdm.auto import tqdm

    with tqdm(total=100, desc=repr(instance), unit="%") as bar:
        def advance(fraction: float) -> None:
            bar.update(max(0, round(100 * min(fraction, 1.0)) - bar.n))

        data.progress = advance
        return instance.explain(model, data, np.random.default_rng(seed))
