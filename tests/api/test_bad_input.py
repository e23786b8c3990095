"""Bad input through the public API: one line naming what is allowed and what was received,
the right exception type, and nothing written."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.sparse import csr_matrix
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression

import harness
from harness.core.errors import (
    BadInputError,
    InvalidParameterError,
    MethodSkipped,
    UnknownNameError,
)
from harness.forest.sklearn import sklearn_routes_nan_as_fitted


@pytest.fixture(scope="module")
def fitted():
    ds = harness.load_dataset("iris")
    model = harness.fit_model({"forest": "random_forest", "n_estimators": 5}, ds, seed=0)
    return ds, model


def _cases(ds, model, out):
    X, y = ds.X, ds.y
    test = model.harness_fit_["test_index"]
    inf = X.copy()
    inf[0, 0] = np.inf
    huge = X.copy()
    huge[3, 2] = -1e39  # finite, but infinite as the float32 that scikit-learn routes
    return [
        (lambda: harness.explain("nope", model, X), UnknownNameError,
         "Unknown method 'nope'. Available methods: conditional_permutation, local_mdi,"),
        (lambda: harness.explain("mdi", model, X, bogus=1), InvalidParameterError,
         "mdi has no parameter 'bogus'. Allowed parameters: normalize."),
        (lambda: harness.explain("tree_sage", model, X, y, thresh=2.0), InvalidParameterError,
         "The 'thresh' parameter of tree_sage must be a float in (0, 1). Got 2.0 instead."),
        (lambda: harness.explain("mdi", LinearRegression().fit(X, y), X), BadInputError,
         "Expected a fitted tree model of a kind the harness reads (scikit-learn "
         "RandomForestClassifier, "),
        (lambda: harness.explain("mdi", RandomForestClassifier(), X), BadInputError,
         "The RandomForestClassifier is not fitted; call fit() first."),
        (lambda: harness.explain("saabas", model, inf), BadInputError,
         "X must hold finite numbers"
         + (" or NaN (missing values, which this model routes)"
            if sklearn_routes_nan_as_fitted() else "") + "; got 1 infinite cell."),
        (lambda: harness.explain("saabas", model, huge), BadInputError,
         "X must hold values within float32's range (|x| <= 3.4e38), in which scikit-learn's "
         "trees route rows and its predict refuses the others; got 1 cell beyond it (the "
         "first: -1e+39 in row 3, column 2)."),
        (lambda: harness.explain("saabas", model, X[:, :2]), BadInputError,
         "X has 2 columns but the model was fitted on 4 features."),
        (lambda: harness.explain("saabas", model, X[0]), BadInputError,
         "X must be a 2-D array (n_samples, n_features); got shape (4,)."),
        (lambda: harness.explain("saabas", model, csr_matrix(X)), BadInputError,
         "X must be a dense numeric 2-D array; got a scipy sparse csr_matrix of shape "
         "(150, 4): pass X.toarray()."),
        (lambda: harness.explain("mda_bc", model, X), MethodSkipped,
         "mda_bc needs the targets y of the explained rows; none were given."),
        (lambda: harness.explain("mda_bc", model, X[test], y[test]), BadInputError,
         "The OOB methods need the training rows the forest was fitted on, in order"),
        (lambda: harness.explain("tree_sage", model, X, y, sample_weight=-np.ones(len(X))),
         BadInputError,
         "sample_weight must be 150 finite, non-negative numbers with a positive sum; got 150 "
         "negative values (smallest -1.0)."),
        (lambda: harness.explain("saabas", model, X, y[:3]), BadInputError,
         "y must have shape (150,) to match X; got (3,)."),
        (lambda: harness.load_dataset("led", n_samples=0), InvalidParameterError,
         "The 'n_samples' parameter of led must be None or an int in [1, inf). Got 0"),
        (lambda: harness.fit_model({"forest": "gbm"}, ds), UnknownNameError,
         "Unknown model 'gbm'. Available models: decision_tree, extra_trees, "
         "gradient_boosting, hist_gradient_boosting, lightgbm, random_forest, xgboost."),
        (lambda: harness.compare(datasets=[], out=out), BadInputError,
         "The grid has no datasets; give at least one."),
        (lambda: harness.compare(datasets=["iris"], methods=["mdi"], seeds=["a"], out=out),
         BadInputError, "seeds must be a list of distinct ints in [0, 2**32 - 1], or None "
                        "for [0]; got ['a']."),
        (lambda: harness.compare(datasets=["iris"], methods=["mdi"], executor="nope",
                                 out=out), BadInputError,
         "executor must be one of dask, inprocess, process; got 'nope'."),
        (lambda: harness.compare(datasets=["iris"], methods=["mdi"], max_memory=-5, out=out),
         BadInputError, "max_memory must be a number of bytes > 0 or None; got -5."),
        (lambda: harness.compare(datasets=["iris"], methods=["mdi"], explain_on="some",
                                 out=out), BadInputError,
         "explain_on must be one of train, test, all; got 'some'."),
        (lambda: harness.load_results(out), BadInputError, "No results in"),
    ]


def test_every_bad_input_gives_one_clear_line_and_writes_nothing(fitted, tmp_path):
    ds, model = fitted
    out = tmp_path / "never"
    for call, error, expected in _cases(ds, model, out):
        with pytest.raises(error) as info:
            call()
        message = str(info.value)
        assert expected in message, (expected, message)
        assert "\n" not in message, message
        assert not out.exists()


def test_a_frame_with_missing_values_is_read_as_scikit_learn_reads_it(fitted):
    """pd.NA of a nullable column is NaN, as scikit-learn's check_array reads it: the frame
    is explained as the float frame with NaN is (or refused with the same message where
    this scikit-learn routes no NaN)."""
    ds, model = fitted
    frame = pd.DataFrame(ds.X[:6], columns=ds.feature_names).astype("Float64")
    frame.iloc[2, 1] = pd.NA
    with_nan = frame.astype(float)
    assert np.isnan(with_nan.iloc[2, 1])
    outcomes = []
    for rows in (frame, with_nan):
        try:
            outcomes.append(harness.explain("saabas", model, rows).values)
        except BadInputError as exc:
            outcomes.append(str(exc))
    if isinstance(outcomes[1], str):
        assert outcomes[0] == outcomes[1]
    else:
        np.testing.assert_array_equal(outcomes[0], outcomes[1])


def test_a_value_beyond_float32_is_refused_as_scikit_learn_refuses_it(fitted):
    ds, model = fitted
    X = ds.X[:5].copy()
    X[1, 0] = 1e39
    with pytest.raises(ValueError, match="too large for dtype"):
        model.predict(X)
    for method in ("saabas", "treeshap", "local_mdi"):
        with pytest.raises(BadInputError, match="within float32's range"):
            harness.explain(method, model, X)


def test_a_wrapped_tree_model_is_refused_with_what_to_pass_instead():
    # a Pipeline or a fitted search is not read; the refusal names what to explain, and
    # doing so explains the wrapper's own prediction (TreeSHAP adds up to pipeline.predict)
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = np.random.default_rng(0).normal(size=(120, 4))
    y = X[:, 0] + X[:, 1] * X[:, 2]
    pipeline = make_pipeline(StandardScaler(), RandomForestRegressor(8, random_state=0))
    pipeline.fit(X, y)
    with pytest.raises(BadInputError, match=r"got Pipeline\. For a Pipeline, explain its last "
                                            r"step, model\[-1\], on the rows "
                                            r"model\[:-1\]\.transform\(X\)"):
        harness.explain("treeshap", pipeline, X[:5])
    shap = harness.explain("treeshap", pipeline[-1], pipeline[:-1].transform(X[:5]))
    np.testing.assert_allclose(shap.values.sum(axis=1) + shap.base_values,
                               pipeline.predict(X[:5]), atol=1e-10)
    search = GridSearchCV(RandomForestRegressor(4, random_state=0), {"max_depth": [2, 3]},
                          cv=2).fit(X, y)
    with pytest.raises(BadInputError, match=r"explain model\.best_estimator_\."):
        harness.explain("saabas", search, X[:5])
