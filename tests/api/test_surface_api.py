"""The Python API surface of issue 17 (defects 3 and 4), one row per case.

Defect 3: the columns of X must be the features the model was fitted on, in fit order, checked
by name wherever both sides have names (scikit-learn's ``feature_names_in_``, or the names that
``harness.fit_model`` records); a frame with its columns in another order used to be explained
under the wrong names. Defect 4: y, sample_weight and seed are checked before any method runs;
NaN in y used to give all-NaN importances, a raw ``LinAlgError`` or a wrong "not the training
rows", and a string y, a NaN weight or ``seed=-1`` raw numpy errors.

Every refused input raises the named exception with one line holding the listed words; every
accepted-with-a-warning input warns with the listed words and labels the result with the names
the columns really have.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

import harness
from harness.core import registry
from harness.core.errors import BadInputError
from harness.run.inputs import validate_explain_inputs

DIABETES = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]
IRIS = ["sepal length (cm)", "sepal width (cm)", "petal length (cm)", "petal width (cm)"]


@dataclass
class Fitted:
    """Models and rows the rows below use (fitted once per module)."""

    frame: pd.DataFrame  # diabetes, first 200 rows, columns in fit order
    y: pd.Series
    on_frame: RandomForestRegressor  # bootstrap forest fitted on ``frame``: has feature_names_in_
    on_array: RandomForestRegressor  # the same forest fitted on ``frame.to_numpy()``: no names
    iris: harness.Dataset
    by_harness: RandomForestClassifier  # harness.fit_model: fitted on arrays, names recorded

    @property
    def reversed(self) -> pd.DataFrame:
        return self.frame[self.frame.columns[::-1]]

    @property
    def train_iris(self) -> tuple[np.ndarray, np.ndarray]:
        train = self.by_harness.harness_fit_["train_index"]
        return self.iris.X[train], self.iris.y[train]


@pytest.fixture(scope="module")
def fitted() -> Fitted:
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    frame, y = X.iloc[:200], y.iloc[:200]
    iris = harness.load_dataset("iris")
    return Fitted(
        frame=frame, y=y,
        on_frame=RandomForestRegressor(n_estimators=5, random_state=0).fit(frame, y),
        on_array=RandomForestRegressor(n_estimators=5, random_state=0).fit(frame.to_numpy(),
                                                                           y.to_numpy()),
        iris=iris,
        by_harness=harness.fit_model({"forest": "random_forest", "n_estimators": 5}, iris,
                                     seed=0),
    )


@dataclass
class Refused:
    """One refused input: the call, the exception it must raise, words its message holds."""

    id: str
    call: Callable[[Fitted], Any]
    error: type[Exception]
    words: tuple[str, ...]


def _with(values, **where) -> np.ndarray:
    """A float copy of ``values`` with the given rows replaced (``where={"0": nan}``)."""
    out = np.array(values, dtype=float)
    for row, value in where.items():
        out[int(row.lstrip("r"))] = value
    return out


def _diabetes_y(f: Fitted, value: float) -> np.ndarray:
    y = np.array(f.y, dtype=float)  # a copy: pandas may hand out a read-only view
    y[[3, 7]] = value
    return y


REFUSED = [
    # --- defect 3: column names against the fit -------------------------------------------
    Refused("reordered-frame-saabas",
            lambda f: harness.explain("saabas", f.on_frame, f.reversed),
            BadInputError,
            ("columns of X must be the features the model was fitted on, in fit order",
             "expected ['age', 'sex', 'bmi'", "got ['s6', 's5', 's4'",
             "same names in another order")),
    Refused("reordered-frame-oob-method-names-the-columns-not-the-rows",
            lambda f: harness.explain("mda_bc", f.on_frame, f.reversed, f.y),
            BadInputError, ("expected ['age', 'sex'", "got ['s6', 's5'", "in fit order")),
    Refused("frame-missing-and-unexpected-names",
            lambda f: harness.explain("mdi", f.on_frame,
                                      f.frame.rename(columns={"bmi": "BMI", "s6": "glu"})),
            BadInputError, ("missing: ['bmi', 's6']", "unexpected: ['BMI', 'glu']")),
    Refused("frame-with-a-column-too-few",
            lambda f: harness.explain("mdi", f.on_frame, f.frame.drop(columns="s3")),
            BadInputError, ("missing: ['s3']", "expected ['age'")),
    Refused("harness-model-reordered-frame",
            lambda f: harness.explain("saabas", f.by_harness,
                                      pd.DataFrame(f.iris.X, columns=IRIS)[IRIS[::-1]]),
            BadInputError, ("expected ['sepal length (cm)', 'sepal width (cm)'",
                            "got ['petal width (cm)', 'petal length (cm)'")),
    Refused("harness-model-frame-with-other-names",
            lambda f: harness.explain("mdi", f.by_harness,
                                      pd.DataFrame(f.iris.X, columns=list("abcd"))),
            BadInputError, ("missing: ['sepal length (cm)'", "unexpected: ['a', 'b', 'c', 'd']")),
    Refused("harness-model-oob-reordered-training-frame",
            lambda f: harness.explain("mdi_oob", f.by_harness,
                                      pd.DataFrame(f.train_iris[0], columns=IRIS)[IRIS[::-1]],
                                      f.train_iris[1]),
            BadInputError, ("in fit order", "got ['petal width (cm)'")),
    Refused("oob-method-on-an-array-with-columns-reversed-names-that-cause",
            lambda f: harness.explain("mda_bc", f.on_array, f.frame.to_numpy()[:, ::-1], f.y),
            BadInputError, ("X's columns are not in fit order", "Pass the exact training rows, "
                            "columns in fit order")),
    Refused("column-names-of-mixed-types",
            lambda f: harness.explain("mdi", f.on_frame,
                                      f.frame.set_axis([0, *DIABETES[1:]], axis=1)),
            BadInputError, ("column names of X must all be strings", "int", "str")),
    Refused("runner-style-array-with-names-other-than-the-fit",
            lambda f: validate_explain_inputs(f.by_harness, f.iris.X, f.iris.y,
                                              feature_names=IRIS[::-1]),
            BadInputError, ("in fit order", "expected ['sepal length (cm)'",
                            "got ['petal width (cm)'")),
    Refused("runner-style-array-with-too-few-names",
            lambda f: validate_explain_inputs(f.on_array, f.frame.to_numpy(),
                                              feature_names=DIABETES[:3]),
            BadInputError, ("feature_names must name X's 10 columns; got 3 names",)),
    Refused("names-given-twice-and-different",
            lambda f: validate_explain_inputs(f.on_frame, f.frame, feature_names=DIABETES[::-1]),
            BadInputError, ("feature_names must be X's column names when X has them",)),
    # --- defect 4: y ------------------------------------------------------------------------
    Refused("nan-y-mda-test",
            lambda f: harness.explain("mda_test", f.on_array, f.frame.to_numpy(),
                                      _diabetes_y(f, np.nan)),
            BadInputError, ("y must be finite numbers for a regressor", "2 NaN or infinite",
                            "row 3")),
    Refused("inf-y-tree-sage",
            lambda f: harness.explain("tree_sage", f.on_array, f.frame.to_numpy(),
                                      _diabetes_y(f, np.inf)),
            BadInputError, ("y must be finite numbers for a regressor", "NaN or infinite")),
    Refused("nan-y-oob-method",
            lambda f: harness.explain("mda_bc", f.on_array, f.frame.to_numpy(),
                                      _diabetes_y(f, np.nan)),
            BadInputError, ("y must be finite numbers for a regressor", "NaN or infinite")),
    Refused("string-y-regressor",
            lambda f: harness.explain("tree_sage", f.on_array, f.frame.to_numpy(),
                                      np.array(["a"] * 200)),
            BadInputError, ("y must be finite numbers for a regressor", "not numbers",
                            "'a'")),
    Refused("numeric-strings-y-regressor",
            lambda f: harness.explain("mda_test", f.on_array, f.frame.to_numpy(),
                                      f.y.astype(str).to_numpy()),
            BadInputError, ("y must be finite numbers for a regressor", "not numbers")),
    Refused("y-of-shape-n-by-1",
            lambda f: harness.explain("saabas", f.on_array, f.frame.to_numpy(),
                                      f.y.to_numpy()[:, None]),
            BadInputError, ("y must have shape (200,) to match X", "got (200, 1)")),
    Refused("classifier-y-label-never-fitted",
            lambda f: harness.explain("mda_test", f.by_harness, f.iris.X,
                                      np.where(np.arange(150) < 2, 7, f.iris.y)),
            BadInputError, ("y holds labels the classifier was not fitted on: [7] (2 rows)",
                            "expected labels among [0, 1, 2]")),
    Refused("classifier-y-string-labels",
            lambda f: harness.explain("mda_bc", f.by_harness, *f.train_iris[:1],
                                      f.train_iris[1].astype(str)),
            BadInputError, ("labels the classifier was not fitted on", "'0'",
                            "among [0, 1, 2]")),
    Refused("classifier-y-nan",
            lambda f: harness.explain("tree_sage", f.by_harness, f.iris.X,
                                      _with(f.iris.y, r0=np.nan)),
            BadInputError, ("labels the classifier was not fitted on: [nan] (1 row)",)),
    # --- defect 4: sample_weight ------------------------------------------------------------
    Refused("nan-sample-weight",
            lambda f: harness.explain("tree_sage", f.on_array, f.frame.to_numpy(), f.y,
                                      sample_weight=_with(np.ones(200), r5=np.nan)),
            BadInputError, ("sample_weight must be 200 finite, non-negative numbers with a "
                            "positive sum", "got 1 NaN or infinite value")),
    Refused("negative-sample-weight",
            lambda f: harness.explain("tree_sage", f.on_array, f.frame.to_numpy(), f.y,
                                      sample_weight=_with(np.ones(200), r1=-2.0)),
            BadInputError, ("sample_weight must be 200", "1 negative value", "-2.0")),
    Refused("zero-sample-weight",
            lambda f: harness.explain("sage", f.on_array, f.frame.to_numpy(), f.y,
                                      sample_weight=np.zeros(200)),
            BadInputError, ("sample_weight must be 200", "positive sum", "sum of 0.0")),
    Refused("sample-weight-wrong-shape",
            lambda f: harness.explain("sage", f.on_array, f.frame.to_numpy(), f.y,
                                      sample_weight=np.ones(3)),
            BadInputError, ("sample_weight must be 200", "got shape (3,)")),
    Refused("sample-weight-strings",
            lambda f: harness.explain("sage", f.on_array, f.frame.to_numpy(), f.y,
                                      sample_weight=np.array(["x"] * 200)),
            BadInputError, ("sample_weight must be 200", "not numbers", "'x'")),
    # --- defect 4: seed ---------------------------------------------------------------------
    Refused("seed-negative",
            lambda f: harness.explain("tree_sage", f.on_array, f.frame.to_numpy(), f.y, seed=-1),
            BadInputError, ("seed must be an int in [0, 2**32 - 1]; got -1.",)),
    Refused("seed-too-large",
            lambda f: harness.explain("mda_test", f.on_array, f.frame.to_numpy(), f.y,
                                      seed=2**32),
            BadInputError, ("seed must be an int in [0, 2**32 - 1]; got 4294967296.",)),
    Refused("seed-float",
            lambda f: harness.explain("mdi", f.on_array, f.frame.to_numpy(), seed=1.0),
            BadInputError, ("seed must be an int in [0, 2**32 - 1]; got 1.0 (a float).",)),
    Refused("seed-bool",
            lambda f: harness.explain("mdi", f.on_array, f.frame.to_numpy(), seed=True),
            BadInputError, ("seed must be an int in [0, 2**32 - 1]; got True (a bool).",)),
    Refused("seed-string",
            lambda f: harness.explain("mdi", f.on_array, f.frame.to_numpy(), seed="3"),
            BadInputError, ("seed must be an int in [0, 2**32 - 1]; got '3' (a str).",)),
]


@pytest.mark.parametrize("case", REFUSED, ids=[case.id for case in REFUSED])
def test_refused_input_raises_one_clear_line(fitted, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the refusal is what this row checks
        with pytest.raises(case.error) as info:
            case.call(fitted)
    message = str(info.value)
    assert type(info.value) is case.error, (type(info.value), message)
    for word in case.words:
        assert word in message, (word, message)
    assert "\n" not in message, message


@pytest.mark.parametrize("name", registry.method_names())
def test_every_method_refuses_a_reordered_frame(fitted, name):
    """The check sits in the shared path, so no method can see misnamed columns (the OOB
    methods get their training rows, so only the column order is wrong)."""
    with pytest.raises(BadInputError) as info:
        harness.explain(name, fitted.on_frame, fitted.reversed, fitted.y, seed=0)
    message = str(info.value)
    assert "in fit order" in message and "got ['s6', 's5'" in message, message
    assert "not the rows" not in message


@pytest.mark.parametrize("name", registry.method_names())
def test_every_method_refuses_nan_in_y(fitted, name):
    y = _diabetes_y(fitted, np.nan)
    with pytest.raises(BadInputError, match="y must be finite numbers for a regressor"):
        harness.explain(name, fitted.on_frame, fitted.frame, y, seed=0)


@dataclass
class Accepted:
    """One input accepted with a warning (no name can be misassigned by position alone)."""

    id: str
    call: Callable[[Fitted], harness.Importances]
    reference: Callable[[Fitted], harness.Importances]  # the same values, unambiguous input
    warns: str | None  # words of the one warning, or None for no warning
    names: list[str]


ACCEPTED = [
    Accepted("array-for-a-model-fitted-on-a-frame",
             lambda f: harness.explain("saabas", f.on_frame, f.frame.to_numpy()),
             lambda f: harness.explain("saabas", f.on_frame, f.frame),
             "X has no column names, but the RandomForestRegressor was fitted with feature "
             "names; its columns are taken to be ['age', 'sex'", DIABETES),
    Accepted("frame-for-a-model-fitted-on-an-array",
             lambda f: harness.explain("saabas", f.on_array, f.frame),
             lambda f: harness.explain("saabas", f.on_array, f.frame.to_numpy()),
             "X has column names, but the RandomForestRegressor was fitted without feature "
             "names", DIABETES),
    Accepted("frame-in-fit-order-for-a-harness-model",
             lambda f: harness.explain("saabas", f.by_harness,
                                       pd.DataFrame(f.iris.X, columns=IRIS)),
             lambda f: harness.explain("saabas", f.by_harness, f.iris.X), None, IRIS),
    Accepted("frame-reordered-back-into-fit-order",
             lambda f: harness.explain("saabas", f.on_frame,
                                       f.reversed[list(f.on_frame.feature_names_in_)]),
             lambda f: harness.explain("saabas", f.on_frame, f.frame), None, DIABETES),
    Accepted("frame-with-integer-column-labels-is-positional",
             lambda f: harness.explain("mdi", f.on_array, pd.DataFrame(f.frame.to_numpy())),
             lambda f: harness.explain("mdi", f.on_array, f.frame.to_numpy()), None,
             [str(j) for j in range(10)]),
    Accepted("classifier-y-as-floats-of-its-labels",
             lambda f: harness.explain("mda_test", f.by_harness, f.iris.X,
                                       f.iris.y.astype(float), seed=3),
             lambda f: harness.explain("mda_test", f.by_harness, f.iris.X, f.iris.y,
                                       seed=np.int64(3)), None, IRIS),
]


@pytest.mark.parametrize("case", ACCEPTED, ids=[case.id for case in ACCEPTED])
def test_accepted_input_warns_and_keeps_the_true_names(fitted, case):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = case.call(fitted)
    about_names = [str(w.message) for w in caught if "names" in str(w.message)]
    if case.warns is None:
        assert not about_names, about_names
    else:
        assert len(about_names) == 1 and case.warns in about_names[0], about_names
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = case.reference(fitted)
    assert result.feature_names == case.names
    np.testing.assert_array_equal(result.values, reference.values)


def test_runner_style_call_passes_its_rows_through_unchanged(fitted):
    """What the runner would call: a plain array, the dataset's names, the model's seed."""
    X, y = fitted.train_iris
    weight = np.linspace(0.0, 1.0, len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the runner's own rows must not warn
        data = validate_explain_inputs(fitted.by_harness, X, y, sample_weight=weight,
                                       seed=np.uint32(2**32 - 1), feature_names=IRIS)
    assert data.feature_names == IRIS and data.task == "classification"
    np.testing.assert_array_equal(data.X, X)
    np.testing.assert_array_equal(data.y, y)
    np.testing.assert_array_equal(data.sample_weight, weight)
