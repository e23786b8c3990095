"""Model specs: how a tree model is grown, validated like every other parameter set.

A spec is a dict such as ``{"forest": "extra_trees", "n_estimators": 100, "max_features": 1,
"criterion": "entropy"}`` or the CLI form ``extra_trees[n_estimators=100,max_features=1]``.
Each model name is one :class:`ModelFamily` in :data:`MODELS` (its estimator class per task,
its own declared parameters, its builder): ``random_forest``, ``extra_trees``,
``decision_tree``, ``gradient_boosting``, ``hist_gradient_boosting``, and the optional
``xgboost`` and ``lightgbm`` (imported when a spec is built). The estimator class
(classifier or regressor) follows the dataset's task.
"""

from __future__ import annotations

import importlib
import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.model_selection import train_test_split

from harness.core.errors import BadInputError, NotInstalledError, unknown_name
from harness.core.params import Boolean, Interval, NoneValue, Options, Param, validate_params
from harness.core.spec import format_spec
from harness.core.types import Dataset

CRITERIA = {
    "classification": ("entropy", "gini", "log_loss"),
    "regression": ("squared_error", "friedman_mse", "absolute_error", "poisson"),
}

_MAX_FEATURES = (Interval(int, 1, None, "left"), Interval(float, 0, 1, "right"),
                 Options({"sqrt", "log2", "all"}))
_TEST_SIZE = Param(0.25, (Interval(float, 0, 1, "neither"),), "held-out fraction")
_N_ESTIMATORS = Param(100, (Interval(int, 1, None, "left"),), "number of trees")
_MAX_DEPTH = Param(None, (Interval(int, 1, None, "left"), NoneValue()), "depth limit")
_MAX_LEAF_NODES = Param(None, (Interval(int, 2, None, "left"), NoneValue()), "leaf limit")
_MIN_SAMPLES_LEAF = Param(1, (Interval(int, 1, None, "left"),), "rows per leaf")
_CRITERION = Param(
    "auto",
    (Options({"auto", *CRITERIA["classification"], *CRITERIA["regression"]}),),
    "impurity ('auto': entropy for classification, squared_error for regression)",
)


def _learning_rate(default: float) -> Param:
    return Param(default, (Interval(float, 0, None, "neither"),),
                 "shrinkage of each tree's contribution")


#: The parameters of random_forest and extra_trees (their names and defaults enter the run
#: keys of stored cells: do not change them)
MODEL_PARAMETERS: dict[str, Param] = {
    "n_estimators": _N_ESTIMATORS,
    "max_features": Param("sqrt", _MAX_FEATURES, "K: features drawn at each node ('all' = p)"),
    "max_depth": _MAX_DEPTH,
    "max_leaf_nodes": _MAX_LEAF_NODES,
    "min_samples_leaf": _MIN_SAMPLES_LEAF,
    "criterion": _CRITERION,
    "bootstrap": Param(None, (Boolean(), NoneValue()), "None: the forest's own default"),
    "max_samples": Param(
        None, (Interval(int, 1, None, "left"), Interval(float, 0, 1, "right"), NoneValue()),
        "bootstrap sample size (fraction of the training rows); None: all of them",
    ),
    "test_size": _TEST_SIZE,
}


def _criterion(family: str, criterion: str, task: str) -> str:
    if criterion == "auto":
        criterion = "entropy" if task == "classification" else "squared_error"
    if criterion not in CRITERIA[task]:
        allowed = ", ".join(("auto", *CRITERIA[task]))
        raise BadInputError(
            f"The 'criterion' parameter of {family} must be one of {allowed} for "
            f"{task}. Got {criterion!r} instead."
        )
    return criterion


def _build_forest(family: ModelFamily, params: dict, task: str, seed: int):
    kwargs = dict(params)
    criterion = _criterion(family.name, kwargs.pop("criterion"), task)
    bootstrap = kwargs["bootstrap"]
    if bootstrap is None:
        bootstrap = family.name == "random_forest"  # scikit-learn's defaults
    if kwargs["max_samples"] is not None and not bootstrap:
        raise BadInputError(
            f"The 'max_samples' parameter of {family.name} needs bootstrap=true (got "
            f"max_samples={kwargs['max_samples']!r} without bootstrap); add bootstrap=true "
            "or drop max_samples."
        )
    if kwargs["max_features"] == "all":
        kwargs["max_features"] = None
    if kwargs["bootstrap"] is None:
        kwargs.pop("bootstrap")
    return family.estimator_class(task)(criterion=criterion, random_state=seed, **kwargs)


def _build_tree(family: ModelFamily, params: dict, task: str, seed: int):
    kwargs = dict(params)
    criterion = _criterion(family.name, kwargs.pop("criterion"), task)
    if kwargs["max_features"] == "all":
        kwargs["max_features"] = None
    return family.estimator_class(task)(criterion=criterion, random_state=seed, **kwargs)


def _build_gradient_boosting(family: ModelFamily, params: dict, task: str, seed: int):
    kwargs = dict(params)
    if kwargs["max_features"] == "all":
        kwargs["max_features"] = None
    return family.estimator_class(task)(random_state=seed, **kwargs)


def _build_hist_gradient_boosting(family: ModelFamily, params: dict, task: str, seed: int):
    kwargs = dict(params)
    kwargs["max_iter"] = kwargs.pop("n_estimators")
    # categorical splits are not read by the forest view: never infer them from dtypes
    return family.estimator_class(task)(random_state=seed, categorical_features=None, **kwargs)


def _build_xgboost(family: ModelFamily, params: dict, task: str, seed: int):
    # one thread: cells run in parallel processes, and results must not depend on threads
    return family.estimator_class(task)(random_state=seed, n_jobs=1, **params)


def _build_lightgbm(family: ModelFamily, params: dict, task: str, seed: int):
    kwargs = dict(params)
    if kwargs["max_depth"] is None:
        kwargs["max_depth"] = -1  # LightGBM's "no limit"
    return family.estimator_class(task)(random_state=seed, n_jobs=1, verbose=-1, **kwargs)


@dataclass(frozen=True)
class ModelFamily:
    """One kind of model a spec can name: its estimator classes, parameters and builder.

    Attributes
    ----------
    name : str
        The spec name (``random_forest``, ``hist_gradient_boosting``, ...).
    estimators : dict
        ``"module:Class"`` of the estimator for each task, imported when first built (so that
        an optional library is needed only by the specs that name it).
    parameters : dict of str to Param
        The declared parameters with their defaults and constraints (``test_size`` included:
        it sets the held-out split, not the estimator).
    build : callable
        ``build(family, params, task, seed)`` -> the unfitted estimator (params without
        ``test_size``).
    summary : str
    extra : str or None
        The pip extra that installs the library (``pip install 'harness[extra]'``).
    encoded_labels : bool
        The classifier needs labels 0..K-1 (XGBoost's scikit-learn wrapper).
    """

    name: str
    estimators: dict[str, str]
    parameters: dict[str, Param]
    build: Callable[..., Any]
    summary: str
    extra: str | None = None
    encoded_labels: bool = False

    def estimator_class(self, task: str) -> type:
        """The estimator class for ``task`` (imported here; see ``extra``)."""
        module_name, class_name = self.estimators[task].split(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            package = module_name.split(".")[0]
            raise NotInstalledError(
                f"The model {self.name!r} needs the package {package!r}, which is not "
                f"installed here; install it with: pip install 'harness[{self.extra}]'."
            ) from error
        return getattr(module, class_name)

    def installed(self) -> bool:
        """Whether the estimator's library can be imported here."""
        package = self.estimators["regression"].split(".")[0].split(":")[0]
        return importlib.util.find_spec(package) is not None


def _sklearn(module: str, stem: str) -> dict[str, str]:
    return {"classification": f"sklearn.{module}:{stem}Classifier",
            "regression": f"sklearn.{module}:{stem}Regressor"}


MODELS: dict[str, ModelFamily] = {family.name: family for family in (
    ModelFamily("extra_trees", _sklearn("ensemble", "ExtraTrees"), MODEL_PARAMETERS,
                _build_forest, "scikit-learn ExtraTrees (Geurts et al. 2006)"),
    ModelFamily("random_forest", _sklearn("ensemble", "RandomForest"), MODEL_PARAMETERS,
                _build_forest, "scikit-learn RandomForest (Breiman 2001)"),
    ModelFamily(
        "decision_tree", _sklearn("tree", "DecisionTree"),
        {"max_features": Param("all", _MAX_FEATURES,
                               "K: features drawn at each node ('all' = p)"),
         "max_depth": _MAX_DEPTH, "max_leaf_nodes": _MAX_LEAF_NODES,
         "min_samples_leaf": _MIN_SAMPLES_LEAF, "criterion": _CRITERION,
         "test_size": _TEST_SIZE},
        _build_tree, "one scikit-learn DecisionTree (a forest of one tree)"),
    ModelFamily(
        "gradient_boosting", _sklearn("ensemble", "GradientBoosting"),
        {"n_estimators": _N_ESTIMATORS, "learning_rate": _learning_rate(0.1),
         "max_depth": Param(3, (Interval(int, 1, None, "left"), NoneValue()), "depth limit"),
         "max_leaf_nodes": _MAX_LEAF_NODES, "min_samples_leaf": _MIN_SAMPLES_LEAF,
         "subsample": Param(1.0, (Interval(float, 0, 1, "right"),),
                            "fraction of the training rows drawn for each tree"),
         "max_features": Param("all", _MAX_FEATURES,
                               "K: features drawn at each node ('all' = p)"),
         "test_size": _TEST_SIZE},
        _build_gradient_boosting,
        "scikit-learn GradientBoosting (Friedman 2001), explained in its margin"),
    ModelFamily(
        "hist_gradient_boosting", _sklearn("ensemble", "HistGradientBoosting"),
        {"n_estimators": Param(100, (Interval(int, 1, None, "left"),),
                               "boosting iterations (max_iter)"),
         "learning_rate": _learning_rate(0.1), "max_depth": _MAX_DEPTH,
         "max_leaf_nodes": Param(31, (Interval(int, 2, None, "left"), NoneValue()),
                                 "leaf limit"),
         "min_samples_leaf": Param(20, (Interval(int, 1, None, "left"),), "rows per leaf"),
         "l2_regularization": Param(0.0, (Interval(float, 0, None, "left"),),
                                    "L2 penalty on the leaf values"),
         "max_bins": Param(255, (Interval(int, 2, 255, "both"),), "bins per feature"),
         "early_stopping": Param(False, (Boolean(),),
                                 "hold out a validation split and stop early (scikit-learn's "
                                 "'auto' turns it on above 10000 rows; off here)"),
         "test_size": _TEST_SIZE},
        _build_hist_gradient_boosting,
        "scikit-learn HistGradientBoosting (binned, NaN-aware), explained in its margin"),
    ModelFamily(
        "xgboost",
        {"classification": "xgboost:XGBClassifier", "regression": "xgboost:XGBRegressor"},
        {"n_estimators": _N_ESTIMATORS, "max_depth": Param(
            6, (Interval(int, 1, None, "left"),), "depth limit"),
         "learning_rate": _learning_rate(0.3), "test_size": _TEST_SIZE},
        _build_xgboost, "XGBoost (optional extra), explained in its margin",
        extra="xgboost", encoded_labels=True),
    ModelFamily(
        "lightgbm",
        {"classification": "lightgbm:LGBMClassifier", "regression": "lightgbm:LGBMRegressor"},
        {"n_estimators": _N_ESTIMATORS, "max_depth": _MAX_DEPTH,
         "learning_rate": _learning_rate(0.1), "test_size": _TEST_SIZE},
        _build_lightgbm, "LightGBM (optional extra), explained in its margin",
        extra="lightgbm"),
)}
#: the forests (kept for callers of the earlier name)
FORESTS = {name: MODELS[name].estimators for name in ("extra_trees", "random_forest")}


def list_models() -> list[dict[str, Any]]:
    """Every model name with its parameters (defaults), summary and whether it is installed."""
    return [{"name": family.name, "summary": family.summary, "installed": family.installed(),
             "extra": family.extra,
             "parameters": {k: p.default for k, p in family.parameters.items()}}
            for family in MODELS.values()]


@dataclass
class ModelSpec:
    """A validated model spec; ``repr`` is its stable key (non-default params only).

    ``forest`` is the model's name in :data:`MODELS` (the key keeps its historical name)."""

    forest: str
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_any(cls, spec: ModelSpec | dict | str) -> ModelSpec:
        if isinstance(spec, ModelSpec):
            return spec
        if isinstance(spec, str):
            from harness.core.spec import expand_grid, parse_spec

            name, grid = parse_spec(spec)
            combos = expand_grid(grid)
            if len(combos) != 1:
                raise BadInputError(f"{spec!r} names {len(combos)} models; expected one.")
            spec = {"forest": name, **combos[0]}
        if not isinstance(spec, dict):
            raise BadInputError(
                f"A model spec must be a dict or a str; got {type(spec).__name__}."
            )
        spec = dict(spec)
        forest = spec.pop("forest", "extra_trees")
        if forest not in MODELS:
            raise unknown_name("model", forest, list(MODELS))
        return cls(forest, validate_params(forest, MODELS[forest].parameters, spec))

    @property
    def family(self) -> ModelFamily:
        return MODELS[self.forest]

    def __repr__(self) -> str:
        declared = self.family.parameters
        changed = {k: v for k, v in self.params.items() if v != declared[k].default}
        return format_spec(self.forest, changed)

    def estimator(self, task: str, seed: int):
        """The unfitted estimator for ``task``, seeded.

        Raises
        ------
        BadInputError
            For parameters that do not fit together or the task.
        NotInstalledError
            If the model's optional library is not installed.
        """
        kwargs = {k: v for k, v in self.params.items() if k != "test_size"}
        return self.family.build(self.family, kwargs, task, seed)


def split_rows(dataset: Dataset, test_size: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train and test row indices; a population dataset is trained and scored on all rows."""
    rows = np.arange(dataset.n_samples)
    if dataset.population or dataset.n_samples < 4:
        return rows, rows
    stratify = None
    if dataset.task == "classification":
        _, counts = np.unique(dataset.y, return_counts=True)
        if counts.min() >= 2:
            stratify = dataset.y
    train, test = train_test_split(rows, test_size=test_size, random_state=seed,
                                   stratify=stratify)
    return np.sort(train), np.sort(test)


def fit_model(spec: ModelSpec | dict | str, dataset: Dataset, seed: int = 0):
    """Fit the model described by ``spec`` on the training split of ``dataset``.

    Returns the fitted estimator (scikit-learn's, or the XGBoost/LightGBM scikit-learn
    wrapper). Its attribute ``harness_fit_`` (a dict) records
    the train and test row indices, the fit time, and the held-out score (accuracy for
    classification, R² for regression; on all rows for a population dataset).
    """
    spec = ModelSpec.from_any(spec)
    model = spec.estimator(dataset.task, seed)
    train, test = split_rows(dataset, spec.params["test_size"], seed)
    if spec.family.encoded_labels and dataset.task == "classification":
        labels = np.unique(dataset.y[train])
        if not np.array_equal(labels, np.arange(labels.size)):
            raise BadInputError(
                f"The model {spec.forest!r} needs class labels 0..K-1 in its training rows; "
                f"got {labels[:10].tolist()}.")
    weight = None if dataset.sample_weight is None else dataset.sample_weight[train]
    if weight is not None and np.any(weight > 0):
        # Trees are invariant to a common scale of the weights except for rounding: with the
        # smallest weight at exactly 1, equal weights are exact integers, so splits that tie
        # in exact arithmetic also tie in floating point and scikit-learn breaks them by its
        # random draw order. With LED's probabilities of 0.1, rounding broke the X5/X6 ties
        # the same way every time (4 standard errors off the exact expected MDI at K = 3).
        weight = weight / weight[weight > 0].min()
    start = time.perf_counter()
    model.fit(dataset.X[train], dataset.y[train], sample_weight=weight)
    fit_time = time.perf_counter() - start
    test_weight = None if dataset.sample_weight is None else dataset.sample_weight[test]
    score = float(model.score(dataset.X[test], dataset.y[test], sample_weight=test_weight))
    model.harness_fit_ = {
        "spec": repr(spec),
        "train_index": train,
        "test_index": test,
        "fit_time": fit_time,
        "score": score,
        "score_name": "accuracy" if dataset.task == "classification" else "r2",
        "feature_names": list(dataset.feature_names),
    }
    return model
