"""Other libraries' implementations that ``python -m harness bench`` times beside ours.

Each tool computes, on the same fitted forest and the same rows, the quantity that one of our
methods computes: shap's ``TreeExplainer`` (Saabas with ``approximate=True``, path-dependent
and interventional TreeSHAP), ``treeinterpreter`` (Saabas), ``fasttreeshap`` (path-dependent
TreeSHAP), XGBoost's ``pred_contribs`` and LightGBM's ``pred_contrib`` (their C++
path-dependent TreeSHAP, one thread) and scikit-learn's ``permutation_importance`` (Train/Test
MDA). The packages are
optional (``pip install 'tree-importance-harness[bench]'``): a tool whose package is missing or
fails to import is reported as "not installed" and the bench goes on.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import itertools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.forest.view import forest_view, predict_output

NOT_INSTALLED = "not installed"


@dataclass(frozen=True)
class ToolResult:
    """A tool's values (same layout as shap's: (n, p) or (n, p, n_classes), or (p,)) and,
    for a Monte Carlo estimate, the std over its repeats."""

    values: np.ndarray
    std: np.ndarray | None = None


@dataclass(frozen=True)
class Tool:
    """One external implementation: the package it imports and how to run it.

    ``same_draws`` is False when the tool estimates the same quantity with other random
    draws (permutations): its values are then compared in units of the combined std, not by
    their absolute difference. ``uses`` names the parameters of our method that the tool
    takes over; a run is reused for every method of a case that agrees on them. ``note``
    is shown beside its rows (a known reason why its values differ from ours). ``refuses``
    gives, for a model the installed release is known to fail on, the reason shown instead
    of a row (None: run it).
    """

    name: str
    module: str
    run: Callable[[Any, np.ndarray, np.ndarray | None, dict], ToolResult]
    same_draws: bool = True
    uses: tuple[str, ...] = ()
    note: str | None = None
    refuses: Callable[[Any], str | None] | None = None


def _as_shap_layout(values) -> np.ndarray:
    if isinstance(values, list):  # older shap: one (n, p) array per class
        return np.stack([np.asarray(v, dtype=float) for v in values], axis=-1)
    return np.asarray(values, dtype=float)


def _shap_approximate(model, X, y, params) -> ToolResult:
    import shap

    explainer = shap.TreeExplainer(model)
    return ToolResult(_as_shap_layout(
        explainer.shap_values(X, approximate=True, check_additivity=False)))


def _shap_path_dependent(model, X, y, params) -> ToolResult:
    import shap

    explainer = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
    return ToolResult(_as_shap_layout(explainer.shap_values(X, check_additivity=False)))


def _shap_interventional(model, X, y, params) -> ToolResult:
    import shap

    # our method draws min(n_background, n) of the explained rows, sorted: with
    # n_background >= n that is every row in order, the background given here
    if params.get("n_background", 100) < X.shape[0]:
        raise ValueError("pair shap interventional with n_background >= the explained rows")
    explainer = shap.TreeExplainer(model, data=X, feature_perturbation="interventional")
    return ToolResult(_as_shap_layout(explainer.shap_values(X, check_additivity=False)))


def _fasttreeshap(model, X, y, params) -> ToolResult:
    import fasttreeshap

    explainer = fasttreeshap.TreeExplainer(model, algorithm="auto", n_jobs=1)
    return ToolResult(_as_shap_layout(explainer.shap_values(X, check_additivity=False)))


def _treeinterpreter(model, X, y, params) -> ToolResult:
    from treeinterpreter import treeinterpreter

    _, _, contributions = treeinterpreter.predict(model, X)
    return ToolResult(np.asarray(contributions, dtype=float))


def _release(module: str) -> tuple[int, ...]:
    parts = []
    for part in importlib.metadata.version(module).split(".")[:3]:
        digits = "".join(itertools.takewhile(str.isdigit, part))
        parts.append(int(digits or 0))
    return tuple(parts)


#: The last release of treeinterpreter on PyPI (2021): it predates NumPy 2.
TREEINTERPRETER_LAST = (0, 2, 3)


def _treeinterpreter_refuses(model) -> str | None:
    """Why treeinterpreter's PyPI release cannot explain ``model`` here, or None.

    On a regressor its ``_predict_tree`` keeps each node value as a length-1 array (the tree's
    ``value`` squeezed on the output axis only) and adds it into one float cell of the
    contributions; NumPy 2 refuses that ("setting an array element with a sequence"), so
    every regressor fails with release 0.2.3 and NumPy >= 2. Classifiers' values are whole
    rows and run.
    """
    if forest_view(model).classifier or int(np.__version__.split(".")[0]) < 2:
        return None
    if _release("treeinterpreter") > TREEINTERPRETER_LAST:
        return None  # a later release may have fixed it: run it and let it show
    version = ".".join(map(str, _release("treeinterpreter")))
    return (f"not run: treeinterpreter {version} (its last PyPI release) fails on every "
            f"regressor under NumPy {np.__version__} (it adds a length-1 array into a float "
            "cell: 'setting an array element with a sequence')")


def _permutation_importance(model, X, y, params) -> ToolResult:
    from sklearn.inspection import permutation_importance

    # the drop of accuracy is the rise of the misclassification rate; the drop of -MSE the
    # rise of the squared error: the losses of mda_test's default ``loss="auto"``
    if params.get("loss", "auto") != "auto":
        raise ValueError("pair permutation_importance with mda_test's default loss")
    scoring = "accuracy" if forest_view(model).classifier else "neg_mean_squared_error"
    result = permutation_importance(model, X, y, scoring=scoring,
                                    n_repeats=params.get("n_repeats", 5), random_state=0)
    return ToolResult(result.importances_mean, result.importances_std)


def _without_bias(contributions: np.ndarray, n_features: int) -> np.ndarray:
    """A library's (n, p + 1) or (n, classes, p + 1) contributions as shap's layout."""
    contributions = np.asarray(contributions, dtype=float)
    if contributions.ndim == 3:
        return contributions[:, :, :n_features].transpose(0, 2, 1)
    if contributions.shape[1] > n_features + 1:  # LightGBM multiclass: classes side by side
        contributions = contributions.reshape(contributions.shape[0], -1, n_features + 1)
        return contributions[:, :, :n_features].transpose(0, 2, 1)
    return contributions[:, :n_features]


def _xgboost_contribs(model, X, y, params) -> ToolResult:
    import xgboost

    # the prediction runs on the booster's nthread: the bench's models are built with
    # n_jobs=1, and the matrix is built on one thread too
    contributions = model.get_booster().predict(xgboost.DMatrix(X, nthread=1),
                                                pred_contribs=True)
    return ToolResult(_without_bias(contributions, X.shape[1]))


def _lightgbm_contrib(model, X, y, params) -> ToolResult:
    return ToolResult(_without_bias(model.predict(X, pred_contrib=True, num_threads=1),
                                    X.shape[1]))


TOOLS = {tool.name: tool for tool in (
    Tool("shap approximate", "shap", _shap_approximate),
    Tool("treeinterpreter", "treeinterpreter", _treeinterpreter,
         refuses=_treeinterpreter_refuses),
    Tool("shap path-dependent", "shap", _shap_path_dependent),
    Tool("shap interventional", "shap", _shap_interventional, uses=("n_background",),
         note="shap rounds thresholds to float32 (shap issue 5116); ours routes as sklearn"),
    Tool("fasttreeshap", "fasttreeshap", _fasttreeshap),
    # the libraries' own C++ path-dependent TreeSHAP, on one thread
    Tool("xgboost pred_contribs", "xgboost", _xgboost_contribs,
         note="XGBoost sums in float32; ours in float64"),
    Tool("lightgbm pred_contrib", "lightgbm", _lightgbm_contrib),
    Tool("sklearn permutation_importance", "sklearn", _permutation_importance,
         same_draws=False, uses=("n_repeats", "loss")),
)}


@functools.cache
def missing(module: str) -> str | None:
    """``"not installed"`` unless ``module`` imports (any import failure counts as missing)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            importlib.import_module(module)
    except Exception:  # noqa: BLE001 (a build for another numpy fails with anything)
        return NOT_INSTALLED
    return None


def aligned(theirs: np.ndarray, ours: np.ndarray, model, X: np.ndarray) -> np.ndarray:
    """The tool's values in the layout of ours: the predicted class's slice when ours explains
    the predicted-class probability."""
    if theirs.ndim == 3 and ours.ndim == 2:
        cls = np.argmax(predict_output(model, X), axis=1)
        return theirs[np.arange(theirs.shape[0]), :, cls]
    return theirs.reshape(ours.shape)
