"""Shared small fixtures: fitted forests on bundled data, built once per session."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris, load_wine
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)


@pytest.fixture(scope="session")
def iris():
    return load_iris(return_X_y=True)


@pytest.fixture(scope="session")
def wine():
    return load_wine(return_X_y=True)


@pytest.fixture(scope="session")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return X[:200], y[:200]


FOREST_CASES = {
    "et_clf_entropy": (ExtraTreesClassifier, "iris", dict(criterion="entropy")),
    "rf_clf_gini_nobootstrap": (RandomForestClassifier, "wine",
                                dict(criterion="gini", bootstrap=False, max_features=3)),
    "et_reg": (ExtraTreesRegressor, "diabetes", dict(max_features=0.5)),
    "rf_reg_depth": (RandomForestRegressor, "diabetes", dict(bootstrap=False, max_depth=6)),
}


@pytest.fixture(scope="session", params=sorted(FOREST_CASES))
def forest_without_bootstrap(request, iris, wine, diabetes):
    """(model, X_train) for forests grown on all rows without bootstrap."""
    cls, data, kwargs = FOREST_CASES[request.param]
    X, y = {"iris": iris, "wine": wine, "diabetes": diabetes}[data]
    model = cls(n_estimators=15, random_state=0, **kwargs).fit(X, y)
    return model, X


@pytest.fixture(scope="session")
def bootstrap_forests(iris, diabetes):
    """Forests with bootstrap (one with max_samples < 1)."""
    return [
        (RandomForestClassifier(n_estimators=12, random_state=1, criterion="entropy")
         .fit(*iris), iris[0]),
        (RandomForestRegressor(n_estimators=12, random_state=2, max_samples=0.6)
         .fit(*diabetes), diabetes[0]),
    ]


def rng(seed=0):
    return np.random.default_rng(seed)
