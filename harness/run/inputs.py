"""Validation of what a method explains: X against the model, y, sample_weight and seed.

One function, :func:`validate_explain_inputs`, turns what a caller passes into the
:class:`~harness.core.method.ExplainData` every method sees, or raises one
:class:`~harness.core.errors.BadInputError` naming what is allowed and what was received.
``harness.explain`` calls it, and the runner can call it on the rows it builds.

Column names follow scikit-learn's ``feature_names_in_`` rule (``BaseEstimator.
_check_feature_names``): when X has string column names and the model knows the names it was
fitted on (``feature_names_in_``, or the names ``harness.fit_model`` records in
``harness_fit_``), they must be the same names in the same order. When only one side has
names, the columns are taken by position (the only reading a plain array has) and, as
scikit-learn does, a warning says so; the result is labelled with the names the side that has
them gives, never relabelled.
"""

from __future__ import annotations

import numbers
import os
import sys
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.sparse import issparse

from harness.core.errors import BadInputError
from harness.core.method import ExplainData
from harness.forest.view import adapter_of, forest_view

SEED_MAX = 2**32 - 1
_SHOWN = 12  # names listed in full up to this many; longer lists are cut
_HINTS = {"feature_names_in_": "list(model.feature_names_in_)",
          "harness.fit_model": "model.harness_fit_['feature_names']",
          "xgboost Booster": "model.feature_names",
          "lightgbm Booster": "model.feature_name()"}


def check_seed(seed: object) -> int:
    """Return ``seed`` as an int, or raise unless it is an int in [0, 2**32 - 1].

    Bools and floats are refused even when integral: ``seed=1.0`` is most likely a mistake,
    and ``True`` is not a seed.
    """
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise BadInputError(f"seed must be an int in [0, 2**32 - 1]; got {seed!r} "
                            f"(a {type(seed).__name__}).")
    if not 0 <= seed <= SEED_MAX:
        raise BadInputError(f"seed must be an int in [0, 2**32 - 1]; got {int(seed)}.")
    return int(seed)


def _show(names: Sequence[object]) -> str:
    """A list of names for a one-line message (cut after ``_SHOWN`` names)."""
    names = [_plain(n) for n in names]
    if len(names) <= _SHOWN:
        return repr(names)
    return f"{repr(names[:_SHOWN - 2])[:-1]}, ... ({len(names) - _SHOWN + 2} more)]"


def _caller_level() -> int:
    """``stacklevel`` that points a warning at the first caller outside the package."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1  # the function that warns is level 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _plain(value: object) -> object:
    """numpy scalars as Python ones, so messages read 'a' and 7, not np.str_('a')."""
    return value.item() if isinstance(value, np.generic) else value


def column_names(X: object) -> list[str] | None:
    """The column names of X as scikit-learn reads them, or None for positional columns.

    Names count only when every column label is a string (a frame made from an array has
    labels 0..p-1, which are positions); a mix of strings and other labels is refused, as
    scikit-learn refuses it.
    """
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    labels = list(columns)
    strings = [isinstance(label, str) for label in labels]
    if labels and all(strings):
        return labels
    if any(strings):
        kinds = sorted({type(label).__name__ for label in labels})
        raise BadInputError(f"The column names of X must all be strings (or none be); got a "
                            f"mix of {', '.join(kinds)}: {_show(labels)}.")
    return None


def fitted_names(model: object, adapter: object) -> tuple[list[str] | None, str]:
    """The feature names ``model`` was fitted on, in order, and where they come from
    (``adapter``: the model's, :func:`harness.forest.view.adapter_of`).

    ``feature_names_in_`` (set by scikit-learn when fitted on a frame with string names) comes
    first; else the names ``harness.fit_model`` records (it fits on arrays); else those a raw
    XGBoost or LightGBM booster keeps (its adapter's ``booster_feature_names``); else none.
    """
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        return [str(n) for n in names], "feature_names_in_"
    record = getattr(model, "harness_fit_", None)
    recorded = record.get("feature_names") if isinstance(record, dict) else None
    if recorded is not None and len(recorded) == getattr(model, "n_features_in_", -1):
        return [str(n) for n in recorded], "harness.fit_model"
    booster_names = getattr(adapter, "booster_feature_names", None)
    names = booster_names(model) if booster_names is not None else None
    if names is not None:
        return names, f"{adapter.library} Booster"
    return None, ""


def _names_mismatch(expected: list[str], got: list[str], source: str,
                    given: list[str] | None = None) -> str:
    """The one-line refusal of column names that differ from the fit's (``got``: X's names
    as the library stores them; ``given``: as X has them, where they differ)."""
    message = (f"The columns of X must be the features the model was fitted on, in fit order: "
               f"expected {_show(expected)}; got {_show(got)}.")
    got_set, expected_set = set(got), set(expected)
    missing = [n for n in expected if n not in got_set]
    unexpected = [n for n in got if n not in expected_set]
    if missing or unexpected:
        parts = [f"missing: {_show(missing)}" if missing else "",
                 f"unexpected: {_show(unexpected)}" if unexpected else ""]
        message += f" Names {'; '.join(part for part in parts if part)}."
    elif len(got) != len(expected):
        repeated = sorted({n for n in got if got.count(n) > 1})
        message += f" X repeats {_show(repeated)}."
    else:
        first = next(j for j, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b)
        in_fit_order = _HINTS[source]
        if given is not None:  # the stored names are not X's: list X's own in fit order
            by_stored = dict(zip(got, given, strict=True))
            in_fit_order = repr([by_stored[name] for name in expected])
        message += (f" They are the same names in another order (column {first} is {got[first]!r}"
                    f", expected {expected[first]!r}); select them in fit order, e.g. "
                    f"X[{in_fit_order}].")
    return message


def check_feature_names(model: object, X: object,
                        feature_names: Sequence[str] | None = None) -> list[str] | None:
    """Check X's column names against the model's; return the names that label the result.

    Parameters
    ----------
    model : fitted forest
    X : array-like or DataFrame
    feature_names : sequence of str, optional
        Names of X's columns when X is a plain array (the runner passes the dataset's); if X
        has names too, both must agree.

    Returns
    -------
    list of str or None
        The names of X's columns in order (None: positional, labelled by
        :func:`validate_explain_inputs`).

    Raises
    ------
    BadInputError
        When both X and the model have names and they are not the same names in the same
        order (scikit-learn raises there too).
    """
    given = column_names(X)
    if feature_names is not None:
        explicit = [str(n) for n in feature_names]
        if given is not None and given != explicit:
            raise BadInputError(f"feature_names must be X's column names when X has them: "
                                f"X has {_show(given)}; got feature_names={_show(explicit)}.")
        given = explicit
    adapter = adapter_of(model)
    expected, source = fitted_names(model, adapter)
    kind = type(model).__name__
    if given is not None and expected is not None:
        # as the library stores them (LightGBM: spaces as underscores); labelled as given
        as_fitted = getattr(adapter, "name_as_fitted", str)
        stored = [as_fitted(name) for name in given]
        if stored != expected:
            raise BadInputError(_names_mismatch(expected, stored, source,
                                                given if stored != given else None))
        return given
    if given is not None:
        warnings.warn(
            f"X has column names, but the {kind} was fitted without feature names; its "
            f"columns are taken as the fit's columns in the same order and labelled "
            f"{_show(given)}.", UserWarning, stacklevel=_caller_level())
        return given
    if expected is not None:
        if source != "harness.fit_model":  # fitted on a frame: a plain array is ambiguous
            warnings.warn(
                f"X has no column names, but the {kind} was fitted with feature names; its "
                f"columns are taken to be {_show(expected)} in that order.", UserWarning,
                stacklevel=_caller_level())
        return expected
    return None


def _numbers(values: object, name: str, allowed: str) -> np.ndarray:
    """``values`` as float64, refusing strings and other non-numbers (even '1.5')."""
    array = np.asarray(values)
    numeric = array.dtype.kind in "biuf" or (
        array.dtype.kind == "O"
        and all(isinstance(v, numbers.Real) and not isinstance(v, str) for v in array.flat))
    if not numeric:
        example = next((v for v in array.flat
                        if not isinstance(v, (numbers.Real, np.number))), None)
        shown = f", e.g. {_plain(example)!r}" if example is not None else ""
        raise BadInputError(f"{name} must be {allowed}; got values that are not numbers (dtype "
                            f"{array.dtype}{shown}).")
    return array.astype(np.float64)


def check_y(model: object, y: object, n_rows: int) -> np.ndarray | None:
    """Validate the targets of the explained rows against the model.

    A regressor's y must be ``n_rows`` finite numbers (returned as float64), or for a
    multi-output regressor with k outputs, (``n_rows``, k) of them; a classifier's labels must
    all be among ``model.classes_`` (returned in ``classes_``'s dtype, so that the kernels'
    class lookups compare like with like); a multi-output classifier's (``n_rows``, k) labels,
    column j among output j's classes (returned as given: no kernel reads them, as only
    methods that take no targets explain multi-output models).
    """
    if y is None:
        return None
    target = np.asarray(y)
    view = forest_view(model)
    expected = (n_rows,) if view.n_outputs == 1 else (n_rows, view.n_outputs)
    if target.shape != expected:
        outputs = ("" if view.n_outputs == 1 else
                   f" (one column per output of this multi-output {view.kind})")
        raise BadInputError(f"y must have shape {expected} to match X{outputs}; got "
                            f"{target.shape}.")
    if view.output_classes is not None:  # each column among its own output's classes
        for j, classes in enumerate(view.output_classes):
            _check_labels(classes, target[:, j], f"output {j} of the classifier")
        return target
    if view.classifier:
        return _check_labels(view.classes, target)
    allowed = "finite numbers for a regressor"
    values = _numbers(target, "y", allowed)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        row = np.unravel_index(bad[0], values.shape)[0]
        raise BadInputError(f"y must be {allowed}; got {bad.size} NaN or infinite "
                            f"value{'s' if bad.size > 1 else ''} (first at row {row}).")
    return values


def _is_class(value: object, known: set) -> bool:
    try:
        return _plain(value) in known  # by equality, as the kernels' lookup: 1.0 is class 1
    except TypeError:  # unhashable, so not a label
        return False


def _check_labels(classes: np.ndarray, target: np.ndarray, fitted: str = "the classifier"
                  ) -> np.ndarray:
    """A classifier's targets, all among its ``classes``, in the dtype of ``classes``
    (``fitted`` names what was fitted on them, for the message)."""
    classes = np.asarray(classes)
    known = set(classes.tolist())
    try:
        distinct = pd.unique(target)  # hashed in one pass; the rows are looped over on error
    except TypeError:
        distinct = target
    unknown = [_plain(v) for v in distinct if not _is_class(v, known)]
    if unknown:
        rows = sum(not _is_class(v, known) for v in target.tolist())
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise BadInputError(
            f"y holds labels {fitted} was not fitted on: {_show(unknown[:5])}{more} "
            f"({rows} row{'s' if rows > 1 else ''}); expected labels among "
            f"{_show(classes.tolist())}.")
    return target.astype(classes.dtype)


def check_sample_weight(sample_weight: object, n_rows: int) -> np.ndarray | None:
    """Validate row weights: ``n_rows`` finite, non-negative numbers with a positive sum."""
    if sample_weight is None:
        return None
    allowed = f"{n_rows} finite, non-negative numbers with a positive sum"
    weight = _numbers(sample_weight, "sample_weight", allowed)
    if weight.shape != (n_rows,):
        raise BadInputError(f"sample_weight must be {allowed}; got shape {weight.shape}.")
    bad = int(np.count_nonzero(~np.isfinite(weight)))
    if bad:
        raise BadInputError(f"sample_weight must be {allowed}; got {bad} NaN or infinite "
                            f"value{'s' if bad > 1 else ''}.")
    negative = int(np.count_nonzero(weight < 0))
    if negative:
        raise BadInputError(f"sample_weight must be {allowed}; got {negative} negative "
                            f"value{'s' if negative > 1 else ''} (smallest {weight.min()}).")
    total = float(weight.sum())
    if not 0 < total < np.inf:
        raise BadInputError(f"sample_weight must be {allowed}; got a sum of {total}.")
    return weight


def check_X(model: object, X: object, feature_names: Sequence[str] | None = None
            ) -> tuple[np.ndarray, list[str]]:
    """Validate the rows to explain: names in fit order, 2-D, right width, finite numbers
    or NaN where the model routes missing values (``ForestView.routes_missing``); never
    infinite.

    Returns X as float64 and the names of its columns in order.
    """
    view = forest_view(model)
    n_features = view.n_features
    names = check_feature_names(model, X, feature_names)
    array = _float_rows(X)
    if array.ndim != 2:
        raise BadInputError(f"X must be a 2-D array (n_samples, n_features); got shape "
                            f"{array.shape}.")
    if array.shape[1] != n_features:
        raise BadInputError(f"X has {array.shape[1]} columns but the model was fitted on "
                            f"{n_features} features.")
    if array.shape[0] == 0:
        raise BadInputError("X has no rows; expected at least one row to explain.")
    _check_values(view, array)
    if names is not None and len(names) != array.shape[1]:
        raise BadInputError(f"feature_names must name X's {array.shape[1]} columns; got "
                            f"{len(names)} names: {_show(names)}.")
    if names is None:
        columns = getattr(X, "columns", None)  # positional labels, e.g. 0..p-1 of a frame
        names = ([str(c) for c in columns] if columns is not None
                 else [f"x{j}" for j in range(array.shape[1])])
    # C order, whatever the caller's layout (a frame's values are often Fortran-ordered): the
    # kernels then meet the one layout that prepare() compiled them for
    return np.ascontiguousarray(array), names


def _float_rows(X: object) -> np.ndarray:
    """X as a float64 array, read as scikit-learn reads it: a DataFrame's missing values
    (``pd.NA`` of its nullable columns) become NaN; a sparse matrix is refused by name."""
    if issparse(X):
        raise BadInputError(
            f"X must be a dense numeric 2-D array; got a scipy sparse {type(X).__name__} "
            f"of shape {X.shape}: pass X.toarray().")
    try:
        if hasattr(X, "columns") and callable(getattr(X, "to_numpy", None)):
            return X.to_numpy(dtype=float, na_value=np.nan)
        return np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise BadInputError(
            f"X must be a numeric 2-D array; could not convert it: {exc}"
        ) from exc


def _check_values(view, array: np.ndarray) -> None:
    """Refuse infinite cells always, NaN cells unless the model routes missing values."""
    if np.all(np.isfinite(array)):
        return
    n_inf = int(np.count_nonzero(np.isinf(array)))
    n_nan = int(np.count_nonzero(np.isnan(array)))
    allowed = ("finite numbers or NaN (missing values, which this model routes)"
               if view.routes_missing else "finite numbers")
    if n_inf:
        raise BadInputError(f"X must hold {allowed}; got {n_inf} infinite "
                            f"cell{'s' if n_inf > 1 else ''}.")
    if not view.routes_missing:
        raise BadInputError(
            f"X contains {n_nan} NaN cell{'s' if n_nan > 1 else ''}, but this {view.kind} "
            f"({view.library}) does not route missing values as it was fitted (its predict "
            f"refuses NaN, or, for scikit-learn before 1.8, sends a NaN elsewhere than fit "
            f"did); expected {allowed}.")


def validate_explain_inputs(
    model: object, X: object, y: object = None, sample_weight: object = None,
    seed: object = 0, feature_names: Sequence[str] | None = None,
) -> ExplainData:
    """Check everything a method will see and build its :class:`ExplainData`.

    Parameters
    ----------
    model : fitted scikit-learn RandomForest/ExtraTrees
    X : array-like or DataFrame of shape (n, p)
        Rows to explain; string column names are checked against the fit's
        (:func:`check_feature_names`). Finite, or NaN where the model routes missing values
        (:attr:`~harness.forest.view.ForestView.routes_missing`); never infinite.
    y : array-like of shape (n,) or (n, k), optional
        Finite numbers for a regressor ((n, k) for a multi-output regressor with k outputs);
        labels among ``model.classes_`` for a classifier.
    sample_weight : array-like of shape (n,), optional
        Finite, non-negative, with a positive sum.
    seed : int
        Checked only (an int in [0, 2**32 - 1]); the caller seeds the method's generator.
    feature_names : sequence of str, optional
        Names of X's columns when X is a plain array (checked like a frame's names).

    Returns
    -------
    ExplainData
        X as float64 with columns in fit order, names, task, y and weights as checked.

    Raises
    ------
    BadInputError
        On the first input that breaks these rules, naming what is allowed and what was
        received.
    """
    check_seed(seed)
    array, names = check_X(model, X, feature_names)
    n_rows = array.shape[0]
    view = forest_view(model)
    return ExplainData(
        X=array, y=check_y(model, y, n_rows), feature_names=names,
        task="classification" if view.classifier else "regression",
        sample_weight=check_sample_weight(sample_weight, n_rows), n_outputs=view.n_outputs,
    )
