"""Contract tests over every registered method and dataset (like parametrize_with_checks)."""

from __future__ import annotations

import numpy as np
import pytest

import harness
from harness.core import registry
from harness.core.errors import InvalidParameterError, MethodSkipped, UnknownNameError

TINY = {
    "classification": ("iris", {"forest": "extra_trees", "n_estimators": 8,
                                "bootstrap": True}),
    "regression": ("linear_gaussian", {"forest": "random_forest", "n_estimators": 8,
                                       "max_depth": 5}),
}
TINY_PARAMS = {"linear_gaussian": {"n_samples": 80}}


@pytest.fixture(scope="module")
def tiny_models():
    fitted = {}
    for task, (name, spec) in TINY.items():
        ds = harness.load_dataset(name, **TINY_PARAMS.get(name, {}))
        fitted[task] = (ds, harness.fit_model(spec, ds, seed=0))
    return fitted


@pytest.mark.parametrize("name", registry.method_names())
@pytest.mark.parametrize("task", sorted(TINY))
def test_method_contract(name, task, tiny_models):
    ds, model = tiny_models[task]
    cls = registry.get_method_class(name)
    if cls.missing_packages():
        pytest.skip(f"{name} needs {cls.missing_packages()}")
    # the OOB methods take the training rows, mda_test the held-out ones (Method.rows)
    rows = {None: np.arange(40), "train": model.harness_fit_["train_index"],
            "test": model.harness_fit_["test_index"]}[cls.rows]
    X, y = ds.X[rows], ds.y[rows]
    try:
        first = harness.explain(name, model, X, y, seed=3)
    except MethodSkipped:
        assert task not in cls.tasks
        return
    assert first.scope == cls.scope
    assert first.feature_names == ds.feature_names
    expected = (ds.n_features,) if cls.scope == "global" else (len(rows), ds.n_features)
    assert first.values.shape == expected
    assert np.all(np.isfinite(first.values))
    assert first.unit and first.explains
    assert first.time_explain >= 0
    assert first.method == name
    second = harness.explain(name, model, X, y, seed=3)
    np.testing.assert_array_equal(first.values, second.values)


@pytest.mark.parametrize("name", registry.method_names())
def test_method_parameters_are_validated(name):
    cls = registry.get_method_class(name)
    with pytest.raises(InvalidParameterError, match=f"{name} has no parameter 'bogus'"):
        cls(bogus=1)
    for param_name, param in cls.parameters.items():
        assert any(c.is_satisfied_by(param.default) for c in param.constraints)
        with pytest.raises(InvalidParameterError) as info:
            cls(**{param_name: object()})
        message = str(info.value)
        assert message.startswith(f"The {param_name!r} parameter of {name} must be ")
        assert message.endswith(" instead.")


@pytest.mark.parametrize("name", registry.dataset_names())
def test_dataset_contract(name):
    ds = harness.load_dataset(name)
    again = harness.load_dataset(name)
    assert ds.X.ndim == 2 and ds.X.dtype == np.float64
    assert ds.y.shape == (ds.n_samples,)
    assert len(ds.feature_names) == ds.n_features
    assert ds.task in ("classification", "regression")
    assert np.all(np.isfinite(ds.X))
    np.testing.assert_array_equal(ds.X, again.X)
    if ds.truth is not None:
        assert ds.truth.relevant.shape == (ds.n_features,)
        for quantity in ds.truth.quantities.values():
            assert quantity.values.shape[-1] == ds.n_features


def test_error_message_format_of_the_issue():
    with pytest.raises(InvalidParameterError) as info:
        harness.explain("treeshap", None, np.zeros((1, 1)), n_background=0)
    assert str(info.value) == ("The 'n_background' parameter of treeshap must be an int in "
                               "[1, inf). Got 0 instead.")


def test_unknown_names_list_what_exists():
    with pytest.raises(UnknownNameError) as info:
        harness.explain("nope", None, np.zeros((1, 1)))
    assert str(info.value) == ("Unknown method 'nope'. Available methods: "
                               + ", ".join(registry.method_names()) + ".")
    with pytest.raises(UnknownNameError, match="Available datasets: breast_cancer, diabetes"):
        harness.load_dataset("nope")
    with pytest.raises(UnknownNameError, match="Available models: decision_tree, extra_trees"):
        harness.fit_model({"forest": "gbm"}, harness.load_dataset("iris"))


def test_list_methods_reports_installation():
    table = harness.list_methods()
    assert set(table["name"]) == set(registry.method_names())
    assert {"name", "scope", "family", "tasks", "parameters", "installed"} <= set(table.columns)
    row = table.set_index("name").loc["treeshap"]
    assert row["parameters"]["perturbation"] == "tree_path_dependent"


def test_explain_rejects_what_is_not_a_fitted_forest(iris):
    from sklearn.ensemble import ExtraTreesClassifier
    from sklearn.linear_model import LogisticRegression

    X, y = iris
    with pytest.raises(harness.BadInputError,
                       match="Expected a fitted tree model of a kind the harness reads"):
        harness.explain("mdi", LogisticRegression().fit(X, y), X)
    with pytest.raises(harness.BadInputError, match="not fitted"):
        harness.explain("mdi", ExtraTreesClassifier(), X)
    model = ExtraTreesClassifier(3, random_state=0).fit(X, y)
    with pytest.raises(harness.BadInputError, match="X has 3 columns but the model"):
        harness.explain("local_mdi", model, X[:, :3])
    bad = X.copy()
    bad[0, 0] = np.inf  # NaN is routed as the model routes it; inf never is
    with pytest.raises(harness.BadInputError, match="infinite"):
        harness.explain("local_mdi", model, bad)
    with pytest.raises(MethodSkipped, match="output=7 is not a class index"):
        harness.explain("saabas", model, X, output=7)


def test_explain_accepts_user_forests_and_dataframes(iris):
    import pandas as pd
    from sklearn.ensemble import RandomForestClassifier

    X, y = iris
    frame = pd.DataFrame(X, columns=["sl", "sw", "pl", "pw"])
    model = RandomForestClassifier(5, random_state=0).fit(frame, y)
    imp = harness.explain("local_mdi", model, frame)
    assert imp.feature_names == ["sl", "sw", "pl", "pw"]
    assert imp.unit == "gini"


@pytest.fixture(scope="module")
def xor_population():
    # the XOR table as an explicit distribution: 8 rows, weights 0.0125 to 0.2375
    ds = harness.load_dataset("xor")
    return ds, harness.fit_model({"forest": "random_forest", "n_estimators": 10}, ds, seed=0)


QUICK = {"sage": {"n_background": 8, "thresh": 0.2}, "tree_sage": {"thresh": 0.2},
         "rs": {"n_trees": 10}, "srs": {"n_trees": 10}, "shaff": {"n_subsets": 8},
         "loco": {"n_folds": 2}}


@pytest.mark.parametrize("name", [name for name in registry.installed_method_names()
                                  if registry.get_method_class(name).scope == "global"])
def test_a_global_method_honours_weighted_rows_or_declines_them(name, xor_population):
    # a method that treats the rows as equally likely estimated its value for the uniform
    # distribution over the support (every OOB and held-out method ran on XOR's table in
    # the default compare); it now declines, and equal weights change nothing
    ds, model = xor_population
    cls = registry.get_method_class(name)
    params = QUICK.get(name, {})
    if cls.weighted_rows is None:
        with pytest.raises(MethodSkipped, match="treats the rows as equally likely"):
            harness.explain(name, model, ds.X, ds.y, sample_weight=ds.sample_weight, **params)
    else:
        assert cls.weighted_rows in ("honoured", "irrelevant")
        harness.explain(name, model, ds.X, ds.y, sample_weight=ds.sample_weight, **params)
    equal = harness.explain(name, model, ds.X, ds.y, seed=3, sample_weight=np.full(8, 2.0),
                            **params)
    if cls.weighted_rows != "honoured":
        plain = harness.explain(name, model, ds.X, ds.y, seed=3, **params)
        np.testing.assert_array_equal(equal.values, plain.values)
