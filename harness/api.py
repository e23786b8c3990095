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
    """Explain a fitted tree model with one importance method.

    Parameters
    ----------
    method : str or Method
        A registered name (``"local_mdi"``), a configured label as reports and
        :attr:`Importances.method` write it (``"treeshap[perturbation=interventional]"``),
        or a configured Method instance.
    model : fitted tree model, classifier or regressor
        scikit-learn RandomForest, ExtraTrees, DecisionTree, GradientBoosting and
        HistGradientBoosting; XGBoost and LightGBM boosters and their scikit-learn wrappers
        (extras ``[xgboost]``, ``[lightgbm]``); fitted by the harness or not, with or without
        missing values. A single tree is a forest of one tree (no out-of-bag rows); boosted
        classifiers are explained in their margin (raw score); :func:`applicability` says
        which method explains which model.
    X : array-like or DataFrame of shape (n, p)
        Rows to explain (global methods use them only where they need data); NaN where the
        model routes missing values (every model above does), never inf. When X has
        string column names and the model knows its feature names (``feature_names_in_``,
        a raw booster's own, or those ``fit_model`` records), they must be the same names
        (as the library stores them) in fit order, as in
        scikit-learn; when only one side has names the columns are taken in fit order and a
        warning says so.
    y : array-like of shape (n,), or (n, k) for a regressor with k outputs, optional
        Targets of those rows, for methods that need them: finite numbers for a regressor,
        labels among ``model.classes_`` for a classifier.
    seed : int
        All randomness of the method comes from ``np.random.default_rng(seed)``; an int in
        [0, 2**32 - 1].
    sample_weight : array-like of shape (n,), optional
        Probabilities of the rows when they are the support of an explicit distribution
        (the SAGE methods then draw rows with these probabilities; a global method that
        treats rows as equally likely skips weights that are not all equal, local methods
        and MDI do not depend on them): finite, non-negative, with a positive sum.
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
    instance = method if isinstance(method, Method) \
        else registry.method_from_spec(method, **params)
    request = ExplainRequest(X, y, sample_weight)
    if not progress:
        return run_protocol(instance, model, request, seed)
    from tqdm.auto import tqdm

    with tqdm(total=100, desc=repr(instance), unit="%") as bar:
        def advance(fraction: float) -> None:
            bar.update(max(0, round(100 * min(fraction, 1.0)) - bar.n))

        return run_protocol(instance, model, request, seed, progress=advance)


def applicability(models: list[str] | None = None) -> pd.DataFrame:
    """Which method explains which model: one row per method, one column per model family
    (the ``--model`` names), "yes" or the reason the explain protocol gives for skipping it.

    Each family is fitted with its defaults on a small regression and a small binary
    classification problem, and each method with its defaults goes through the protocol's
    checks (declared model needs, then the method's own ``skip``), as ``explain`` and every
    cell of a run do. A method that applies to one task only says so. Families whose library
    is not installed get a column of "not installed".

    Parameters
    ----------
    models : list of str, optional
        Model family names (default: every family of :data:`harness.forest.models.MODELS`).
    """
    import numpy as np

    from harness.core.errors import NotInstalledError
    from harness.forest.models import MODELS, fit_model
    from harness.run.inputs import validate_explain_inputs
    from harness.run.protocol import missing_capability

    rng = np.random.default_rng(0)
    X = rng.random((120, 4))
    problems = {"regression": X[:, 0] + X[:, 1] * X[:, 2],
                "classification": (X[:, 0] + 0.5 * X[:, 1] > 0.75).astype(np.int64)}
    names = [f"x{j}" for j in range(X.shape[1])]
    table = {}
    for family in models or list(MODELS):
        column = {}
        for task, y in problems.items():
            data = Dataset(f"applicability-{task}", X, y, task, names)
            try:
                model = fit_model(family, data, seed=0)
            except NotInstalledError:
                column = dict.fromkeys(registry.method_names(), "not installed")
                break
            rows = validate_explain_inputs(model, X, y)
            for name in registry.method_names():
                method = registry.make_method(name)
                reason = missing_capability(method, model) or method.skip(model, rows)
                column.setdefault(name, {})[task] = reason
        table[family] = {name: _applies(reasons) for name, reasons in column.items()}
    return pd.DataFrame(table)


def _applies(reasons: dict[str, str | None] | str) -> str:
    """One cell of :func:`applicability` from the skip reasons of each task."""
    if isinstance(reasons, str):
        return reasons
    skipped = {task: reason for task, reason in reasons.items() if reason}
    if not skipped:
        return "yes"
    if len(skipped) == len(reasons):  # the same cause, worded for each task's model
        return f"no: {next(iter(skipped.values()))}"
    (task, reason), = skipped.items()
    (other,) = set(reasons) - {task}
    return f"{other} only: {reason}"
