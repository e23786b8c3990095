"""Model specs: how a forest is grown, validated like every other parameter set.

A spec is a dict such as ``{"forest": "extra_trees", "n_estimators": 100, "max_features": 1,
"criterion": "entropy"}`` or the CLI form ``extra_trees[n_estimators=100,max_features=1]``.
The estimator class (classifier or regressor) follows the dataset's task.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.model_selection import train_test_split

from harness.core.errors import BadInputError, unknown_name
from harness.core.params import Boolean, Interval, NoneValue, Options, Param, validate_params
from harness.core.spec import format_spec
from harness.core.types import Dataset

FORESTS = {
    "extra_trees": {"classification": ExtraTreesClassifier, "regression": ExtraTreesRegressor},
    "random_forest": {
        "classification": RandomForestClassifier,
        "regression": RandomForestRegressor,
    },
}

CRITERIA = {
    "classification": ("entropy", "gini", "log_loss"),
    "regression": ("squared_error", "friedman_mse", "absolute_error", "poisson"),
}

MODEL_PARAMETERS: dict[str, Param] = {
    "n_estimators": Param(100, (Interval(int, 1, None, "left"),), "number of trees"),
    "max_features": Param(
        "sqrt",
        (Interval(int, 1, None, "left"), Interval(float, 0, 1, "right"),
         Options({"sqrt", "log2", "all"})),
        "K: features drawn at each node ('all' = p)",
    ),
    "max_depth": Param(None, (Interval(int, 1, None, "left"), NoneValue()), "depth limit"),
    "max_leaf_nodes": Param(None, (Interval(int, 2, None, "left"), NoneValue()), "leaf limit"),
    "min_samples_leaf": Param(1, (Interval(int, 1, None, "left"),), "rows per leaf"),
    "criterion": Param(
        "auto",
        (Options({"auto", *CRITERIA["classification"], *CRITERIA["regression"]}),),
        "impurity ('auto': entropy for classification, squared_error for regression)",
    ),
    "bootstrap": Param(None, (Boolean(), NoneValue()), "None: the forest's own default"),
    "max_samples": Param(
        None, (Interval(int, 1, None, "left"), Interval(float, 0, 1, "right"), NoneValue()),
        "bootstrap sample size (fraction of the training rows); None: all of them",
    ),
    "test_size": Param(0.25, (Interval(float, 0, 1, "neither"),), "held-out fraction"),
}


@dataclass
class ModelSpec:
    """A validated forest spec; ``repr`` is its stable key (non-default params only)."""

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
        if forest not in FORESTS:
            raise unknown_name("forest", forest, list(FORESTS))
        return cls(forest, validate_params(forest, MODEL_PARAMETERS, spec))

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.params.items() if v != MODEL_PARAMETERS[k].default}
        return format_spec(self.forest, changed)

    def estimator(self, task: str, seed: int):
        """The unfitted scikit-learn estimator for ``task``, seeded."""
        kwargs = {k: v for k, v in self.params.items() if k != "test_size"}
        criterion = kwargs.pop("criterion")
        if criterion == "auto":
            criterion = "entropy" if task == "classification" else "squared_error"
        if criterion not in CRITERIA[task]:
            allowed = ", ".join(("auto", *CRITERIA[task]))
            raise BadInputError(
                f"The 'criterion' parameter of {self.forest} must be one of {allowed} for "
                f"{task}. Got {criterion!r} instead."
            )
        bootstrap = kwargs["bootstrap"]
        if bootstrap is None:
            bootstrap = self.forest == "random_forest"  # scikit-learn's defaults
        if kwargs["max_samples"] is not None and not bootstrap:
            raise BadInputError(
                f"The 'max_samples' parameter of {self.forest} needs bootstrap=true (got "
                f"max_samples={kwargs['max_samples']!r} without bootstrap); add bootstrap=true "
                "or drop max_samples."
            )
        if kwargs["max_features"] == "all":
            kwargs["max_features"] = None
        if kwargs["bootstrap"] is None:
            kwargs.pop("bootstrap")
        return FORESTS[self.forest][task](criterion=criterion, random_state=seed, **kwargs)


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
    """Fit the forest described by ``spec`` on the training split of ``dataset``.

    Returns the fitted scikit-learn estimator. Its attribute ``harness_fit_`` (a dict) records
    the train and test row indices, the fit time, and the held-out score (accuracy for
    classification, R² for regression; on all rows for a population dataset).
    """
    spec = ModelSpec.from_any(spec)
    model = spec.estimator(dataset.task, seed)
    train, test = split_rows(dataset, spec.params["test_size"], seed)
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
