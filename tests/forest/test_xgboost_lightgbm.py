"""XGBoost and LightGBM models read through the forest view are exact against each library's
own code: its raw margin, its TreeSHAP (``pred_contribs`` / ``pred_contrib``), XGBoost's
Saabas (``approx_contribs``), its gain importance, its leaves on rows with missing values, and
shap's TreeExplainer on the same models.

Tolerances: XGBoost sums its float32 leaves in float32, so its margins and contributions are
compared at 2e-5 (measured: at most 1.5e-6 on these models); LightGBM computes in float64
(measured: at most 5e-15), compared at 1e-10.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from packaging.version import Version

import harness
from harness.core.errors import BadInputError, MethodSkipped
from harness.forest.flat import leaf_index
from harness.forest.view import forest_view

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")

P, N_TREES, DEPTH = 5, 30, 4
TOLERANCE = {"xgboost": 2e-5, "lightgbm": 1e-10}
TASKS = ("regression", "binary", "multiclass")


def _data(n: int = 300, seed: int = 0, nan: float = 0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, P))
    X[:, 4] = np.round(X[:, 4])  # ties at the thresholds: x == t must route as the library
    signal = X[:, 0] + np.sin(3 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3]
    y = signal + 0.3 * rng.normal(size=n)
    if nan:
        X[rng.random(X.shape) < nan] = np.nan
    return X, {"regression": y, "binary": (y > 0).astype(int),
               "multiclass": np.digitize(y, [-0.5, 0.7])}


X_FIT, Y_FIT = _data()
X_NEW, _ = _data(120, seed=1)
_MODELS: dict = {}


def _model(library: str, task: str):
    """30 trees of depth 4, fitted once per session."""
    key = (library, task)
    if key not in _MODELS:
        if library == "xgboost":
            cls = xgb.XGBRegressor if task == "regression" else xgb.XGBClassifier
            model = cls(n_estimators=N_TREES, max_depth=DEPTH, n_jobs=1)
        else:
            cls = lgb.LGBMRegressor if task == "regression" else lgb.LGBMClassifier
            model = cls(n_estimators=N_TREES, max_depth=DEPTH, num_leaves=15, n_jobs=1,
                        min_child_samples=5, verbose=-1)
        _MODELS[key] = model.fit(X_FIT, Y_FIT[task])
    return _MODELS[key]


def _margin(model, X) -> np.ndarray:
    """The library's own raw score, (n, n_outputs)."""
    if type(model).__module__.startswith("xgboost"):
        if isinstance(model, xgb.Booster):
            return model.predict(xgb.DMatrix(X), output_margin=True).reshape(len(X), -1)
        return model.predict(X, output_margin=True).reshape(len(X), -1)
    return np.asarray(model.predict(X, raw_score=True)).reshape(len(X), -1)


def _library_contributions(model, X, approximate: bool = False) -> np.ndarray:
    """The library's own TreeSHAP (or Saabas) as (n, p + 1, n_outputs), bias last."""
    if type(model).__module__.startswith("xgboost"):
        contributions = model.get_booster().predict(
            xgb.DMatrix(X), pred_contribs=True, approx_contribs=approximate)
    else:
        contributions = model.predict(X, pred_contrib=True)
    contributions = np.asarray(contributions)
    if contributions.ndim == 3:  # XGBoost multiclass: (n, classes, p + 1)
        return contributions.transpose(0, 2, 1)
    # LightGBM multiclass: (n, classes * (p + 1)), class-major
    return contributions.reshape(len(X), -1, P + 1).transpose(0, 2, 1)


def _all_outputs(values: np.ndarray) -> np.ndarray:
    return values.reshape(values.shape[0], P, -1)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_view_output_is_the_library_margin(library, task):
    model = _model(library, task)
    view = forest_view(model)
    assert view.output_unit == ("prediction" if task == "regression" else "margin")
    assert view.link == {"regression": "identity", "binary": "logistic",
                         "multiclass": "softmax"}[task]
    expected = _margin(model, X_NEW)
    np.testing.assert_allclose(view.output(X_NEW), expected, rtol=0,
                               atol=TOLERANCE[library])
    # the view's leaves are the library's: one-to-one with pred_leaf in every tree
    _same_leaves(model, view, X_NEW)


def _library_leaves(model, X) -> np.ndarray:
    if type(model).__module__.startswith("xgboost"):
        booster = model if isinstance(model, xgb.Booster) else model.get_booster()
        return booster.predict(xgb.DMatrix(X, missing=getattr(model, "missing", np.nan)),
                               pred_leaf=True).reshape(len(X), -1)
    return np.asarray(model.predict(X, pred_leaf=True)).reshape(len(X), -1)


def _same_leaves(model, view, X) -> None:
    """Every row reaches, in each tree, the leaf the library's pred_leaf names (the two
    numberings differ: the pairs (ours, theirs) must be a one-to-one map)."""
    theirs = _library_leaves(model, X)
    coded = view.rows(X)
    assert theirs.shape[1] == view.n_trees
    for t, tree in enumerate(view.trees):
        ours = leaf_index(tree, coded)
        pairs = set(zip(ours.tolist(), theirs[:, t].tolist()))
        assert len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs}), t


def _split_values(model) -> dict[int, np.ndarray]:
    """Each feature's split thresholds, as the library's own table lists them."""
    if type(model).__module__.startswith("xgboost"):
        table = model.get_booster().trees_to_dataframe()
        table = table[table["Feature"] != "Leaf"]
        features = table["Feature"].str.lstrip("f").astype(int)
        return {j: table["Split"][features == j].to_numpy(float) for j in range(P)}
    table = model.booster_.trees_to_dataframe()
    table = table[table["split_feature"].notna()]
    features = table["split_feature"].str.replace("Column_", "").astype(int)
    return {j: table["threshold"][features == j].to_numpy(float) for j in range(P)}


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_rows_at_the_thresholds_route_as_the_library(library):
    """Values on each threshold and one float64 / float32 step either side: XGBoost compares
    float32(x) < t, LightGBM x <= t in float64."""
    model = _model(library, "regression")
    rng = np.random.default_rng(4)
    X = np.empty((400, P))
    for j, thresholds in _split_values(model).items():
        t32 = thresholds.astype(np.float32)
        near = np.concatenate([
            thresholds, np.nextafter(thresholds, np.inf), np.nextafter(thresholds, -np.inf),
            np.nextafter(t32, np.float32(np.inf)), np.nextafter(t32, np.float32(-np.inf))])
        X[:, j] = rng.choice(near, size=len(X))
    view = forest_view(model)
    np.testing.assert_allclose(view.output(X), _margin(model, X), rtol=0,
                               atol=TOLERANCE[library])


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_treeshap_equals_the_library_treeshap_and_adds_up_to_the_margin(library, task):
    model = _model(library, task)
    result = harness.explain("treeshap", model, X_NEW, output="all_classes")
    phi = _all_outputs(result.values)
    base = np.asarray(result.base_values).reshape(len(X_NEW), -1)
    theirs = _library_contributions(model, X_NEW)
    tol = TOLERANCE[library]
    np.testing.assert_allclose(phi, theirs[:, :P], rtol=0, atol=tol)
    np.testing.assert_allclose(base, theirs[:, P], rtol=0, atol=tol)
    np.testing.assert_allclose(base + phi.sum(axis=1), _margin(model, X_NEW), rtol=0, atol=tol)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_treeshap_equals_shap_tree_explainer(library, task):
    shap = pytest.importorskip("shap")
    if library == "xgboost" and Version(shap.__version__) < Version("0.50"):
        # XGBoost >= 3.1 writes base_score as a list, which shap reads from 0.50 (shap PR 4187)
        pytest.skip(f"shap {shap.__version__} cannot read XGBoost {xgb.__version__} models")
    model = _model(library, task)
    explainer = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
    theirs = np.asarray(explainer.shap_values(X_NEW, check_additivity=False))
    if theirs.ndim == 2:
        theirs = theirs[:, :, None]
    result = harness.explain("treeshap", model, X_NEW, output="all_classes")
    # shap runs its float32-thresholded C++ walk on both libraries' models
    np.testing.assert_allclose(_all_outputs(result.values), theirs, rtol=0, atol=2e-5)
    np.testing.assert_allclose(np.asarray(result.base_values).reshape(len(X_NEW), -1)[0],
                               np.atleast_1d(explainer.expected_value), rtol=0, atol=2e-5)


@pytest.mark.parametrize("task", TASKS)
def test_saabas_equals_xgboost_approx_contribs(task):
    model = _model("xgboost", task)
    result = harness.explain("saabas", model, X_NEW, output="all_classes")
    theirs = _library_contributions(model, X_NEW, approximate=True)
    np.testing.assert_allclose(_all_outputs(result.values), theirs[:, :P], rtol=0, atol=2e-5)
    base = np.asarray(result.base_values).reshape(len(X_NEW), -1)
    np.testing.assert_allclose(base, theirs[:, P], rtol=0, atol=2e-5)


def _total_gain(model) -> np.ndarray:
    if type(model).__module__.startswith("xgboost"):
        scores = model.get_booster().get_score(importance_type="total_gain")
        return np.array([scores.get(f"f{j}", 0.0) for j in range(P)])
    return model.booster_.feature_importance(importance_type="gain")


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_mdi_is_the_library_total_gain(library, task):
    model = _model(library, task)
    view = forest_view(model)
    assert view.impurity_unit == "gain" and view.capabilities == frozenset()
    result = harness.explain("mdi", model, X_NEW)
    assert result.unit == "gain"
    # mdi is the mean over the view's trees of each tree's summed gains
    np.testing.assert_allclose(result.values * view.n_trees, _total_gain(model), rtol=1e-6)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_normalised_mdi_is_the_mean_of_per_tree_normalised_gains(library):
    model = _model(library, "regression")
    per_tree = []
    for t in range(N_TREES):  # one tree per round: each round's gains by the library
        if library == "xgboost":
            scores = model.get_booster()[t:t + 1].get_score(importance_type="total_gain")
            gains = np.array([scores.get(f"f{j}", 0.0) for j in range(P)])
        else:
            booster = model.booster_
            # (iteration=0 would mean every iteration)
            before = booster.feature_importance("gain", iteration=t) if t else 0.0
            gains = booster.feature_importance("gain", iteration=t + 1) - before
        per_tree.append(gains / gains.sum())
    expected = np.mean(per_tree, axis=0)
    result = harness.explain("mdi", model, X_NEW, normalize=True)
    np.testing.assert_allclose(result.values, expected / expected.sum(), rtol=1e-6)


def test_local_mdi_is_skipped_without_node_impurities():
    with pytest.raises(MethodSkipped, match="node impurit"):
        harness.explain("local_mdi", _model("xgboost", "regression"), X_NEW)


def test_boosters_trained_directly_read_as_their_wrappers():
    y = Y_FIT["binary"]
    boosters = [
        xgb.train({"objective": "binary:logistic", "max_depth": DEPTH, "nthread": 1},
                  xgb.DMatrix(X_FIT, label=y), num_boost_round=N_TREES),
        xgb.train({"objective": "binary:logitraw", "max_depth": DEPTH, "nthread": 1},
                  xgb.DMatrix(X_FIT, label=y), num_boost_round=N_TREES),
        lgb.train({"objective": "binary", "num_leaves": 15, "verbose": -1, "num_threads": 1},
                  lgb.Dataset(X_FIT, label=y), num_boost_round=N_TREES),
    ]
    for booster in boosters:
        view = forest_view(booster)
        if isinstance(booster, xgb.Booster):
            margin = booster.predict(xgb.DMatrix(X_NEW), output_margin=True)
        else:
            margin = booster.predict(X_NEW, raw_score=True)
        np.testing.assert_allclose(view.output(X_NEW)[:, 0], margin, rtol=0,
                                   atol=2e-5)


NAMED = ["mean radius", "b", "c", "d", "e"]  # LightGBM stores the first as "mean_radius"


@pytest.mark.parametrize("make", [
    lambda frame, y: xgb.train({"max_depth": DEPTH, "nthread": 1},
                               xgb.DMatrix(frame, label=y), num_boost_round=N_TREES),
    lambda frame, y: lgb.train({"num_leaves": 15, "verbose": -1, "num_threads": 1},
                               lgb.Dataset(frame, label=y), num_boost_round=N_TREES),
    lambda frame, y: lgb.LGBMRegressor(n_estimators=N_TREES, num_leaves=15, verbose=-1,
                                       n_jobs=1).fit(frame, y),
], ids=["xgboost Booster", "lightgbm Booster", "LGBMRegressor"])
def test_a_model_fitted_on_a_frame_checks_the_frame_it_explains(make):
    # a raw booster keeps the frame's names: a reordered frame was explained by position
    # (LightGBM's own predict does the same without a word); and LightGBM's "mean_radius"
    # is the frame's "mean radius" (the wrapper was refused on its own frame)
    import pandas as pd

    frame = pd.DataFrame(X_FIT, columns=NAMED)
    model = make(frame, Y_FIT["regression"])
    reordered = frame[NAMED[::-1]]
    hint = ("X[model.feature_names]" if isinstance(model, xgb.Booster)  # the frame's names
            else "X[['mean radius', 'b', 'c', 'd', 'e']]")  # LightGBM's are not the frame's
    with pytest.raises(BadInputError, match="same names in another order") as refused:
        harness.explain("saabas", model, reordered)
    assert str(refused.value).endswith(f"e.g. {hint}.")
    shap = harness.explain("treeshap", model, frame[:20])
    assert shap.feature_names == NAMED
    if isinstance(model, xgb.Booster):
        margin = model.predict(xgb.DMatrix(frame[:20]), output_margin=True)
    else:
        margin = model.predict(frame[:20], raw_score=True)
    np.testing.assert_allclose(shap.values.sum(axis=1) + shap.base_values, margin,
                               rtol=0, atol=2e-5)


@pytest.mark.parametrize("objective", ["reg:absoluteerror", "reg:pseudohubererror",
                                       "reg:quantileerror", "reg:squaredlogerror"])
def test_xgboost_regression_objectives_base_score(objective):
    y = np.abs(Y_FIT["regression"]) if objective == "reg:squaredlogerror" else Y_FIT["regression"]
    extra = {"quantile_alpha": 0.3} if objective == "reg:quantileerror" else {}
    model = xgb.XGBRegressor(n_estimators=10, max_depth=3, objective=objective, n_jobs=1,
                             **extra)
    model.fit(X_FIT, y)
    view = forest_view(model)
    np.testing.assert_allclose(view.output(X_NEW), _margin(model, X_NEW), rtol=0,
                               atol=2e-5)


def test_early_stopping_reads_the_trees_predict_uses():
    X_valid, y_valid = _data(100, seed=2)
    xgb_model = xgb.XGBRegressor(n_estimators=200, max_depth=DEPTH, learning_rate=0.5,
                                 early_stopping_rounds=3, n_jobs=1)
    xgb_model.fit(X_FIT, Y_FIT["regression"], eval_set=[(X_valid, y_valid["regression"])],
                  verbose=False)
    lgb_model = lgb.LGBMRegressor(n_estimators=200, learning_rate=0.5, num_leaves=15,
                                  verbose=-1, n_jobs=1)
    lgb_model.fit(X_FIT, Y_FIT["regression"], eval_set=[(X_valid, y_valid["regression"])],
                  callbacks=[lgb.early_stopping(3, verbose=False)])
    for model in (xgb_model, lgb_model):
        view = forest_view(model)
        assert view.n_trees < 200
        np.testing.assert_allclose(view.output(X_NEW), _margin(model, X_NEW),
                                   rtol=0, atol=2e-5)


# --- missing values: routed as each library routes them -------------------------------------

def _nan_models():
    X_nan, y = _data(nan=0.15)
    X_zero = np.where(np.isnan(X_nan), 0.0, X_nan)
    X_sentinel = np.where(np.isnan(X_nan), -999.0, X_nan)
    lgb_args = {"n_estimators": N_TREES, "num_leaves": 15, "verbose": -1, "n_jobs": 1,
                "min_child_samples": 5}
    return {
        # NaN to each node's default child
        "xgboost-nan": xgb.XGBRegressor(n_estimators=N_TREES, max_depth=DEPTH, n_jobs=1)
        .fit(X_nan, y["regression"]),
        # the wrapper's missing value is missing
        "xgboost-sentinel": xgb.XGBRegressor(n_estimators=N_TREES, max_depth=DEPTH, n_jobs=1,
                                             missing=-999.0).fit(X_sentinel, y["regression"]),
        # missing_type NaN
        "lightgbm-nan": lgb.LGBMClassifier(**lgb_args).fit(X_nan, y["binary"]),
        # missing_type None: fitted without NaN, NaN read as 0.0
        "lightgbm-none": lgb.LGBMRegressor(**lgb_args).fit(X_zero, y["regression"]),
        # missing_type Zero: 0.0 and NaN to the default child
        "lightgbm-zero": lgb.LGBMRegressor(zero_as_missing=True, **lgb_args)
        .fit(X_zero, y["regression"]),
    }


def _rows_with_missing():
    X, _ = _data(200, seed=3, nan=0.25)
    X[::7, 4] = 0.0  # exact zeros, the Zero missing type's other missing value
    X[1::7, 3] = 1e-36  # below LightGBM's zero threshold
    return X


@pytest.fixture(scope="module")
def nan_models():
    return _nan_models()


@pytest.mark.parametrize("name", ["xgboost-nan", "xgboost-sentinel", "lightgbm-nan",
                                  "lightgbm-none", "lightgbm-zero"])
def test_rows_with_missing_values_reach_the_library_leaves(nan_models, name):
    model = nan_models[name]
    X = _rows_with_missing()
    if name == "xgboost-sentinel":
        X = np.where(np.isnan(X), -999.0, X)
    view = forest_view(model)
    _same_leaves(model, view, X)
    # and each leaf's value is the library's: the sum over the trees of the reached leaves
    coded = view.rows(X)
    values = np.mean([tree.value[leaf_index(tree, coded)] for tree in view.trees], axis=0)
    np.testing.assert_allclose(values, _margin(model, X), rtol=0, atol=2e-5)


@pytest.mark.parametrize("name", ["xgboost-nan", "lightgbm-nan", "lightgbm-zero"])
def test_kernels_on_rows_with_missing_values(nan_models, name):
    from harness.kernels.treeshap.path_dependent import path_dependent_shap

    model = nan_models[name]
    X = _rows_with_missing()
    view = forest_view(model)
    coded = view.rows(X)
    margin = _margin(model, X)
    np.testing.assert_allclose(view.output(X), margin, rtol=0, atol=2e-5)
    phi, base = path_dependent_shap(view.packed, coded)
    theirs = _library_contributions(model, X)
    np.testing.assert_allclose(phi, theirs[:, :P], rtol=0, atol=2e-5)
    np.testing.assert_allclose(base + phi.sum(axis=1), margin, rtol=0, atol=2e-5)


# --- what is refused, with one clear error ----------------------------------------------------

def _refused():
    import pandas as pd

    X, y = X_FIT[:100], Y_FIT["regression"][:100]
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(P)])
    frame["x4"] = pd.Categorical(np.abs(X[:, 4]).astype(int))
    few = {"n_estimators": 3, "n_jobs": 1}
    lgb_few = {"n_estimators": 3, "n_jobs": 1, "verbose": -1, "min_child_samples": 5}
    return [
        ("dart", lambda: xgb.XGBRegressor(booster="dart", **few).fit(X, y)),
        ("gblinear", lambda: xgb.XGBRegressor(booster="gblinear", **few).fit(X, y)),
        ("categorical", lambda: xgb.XGBRegressor(enable_categorical=True, tree_method="hist",
                                                 **few).fit(frame, y)),
        ("multi-output", lambda: xgb.XGBRegressor(
            multi_strategy="multi_output_tree", tree_method="hist", **few)
            .fit(X, np.column_stack([y, y]))),
        ("2 targets", lambda: xgb.XGBRegressor(**few).fit(X, np.column_stack([y, y]))),
        ("count:poisson", lambda: xgb.XGBRegressor(objective="count:poisson", **few)
            .fit(X, np.abs(y))),
        ("rank:", lambda: xgb.XGBRanker(**few).fit(X, (y > 0).astype(int),
                                                   qid=np.repeat(np.arange(10), 10))),
        ("dart", lambda: lgb.LGBMRegressor(boosting_type="dart", **lgb_few).fit(X, y)),
        ("categorical", lambda: lgb.LGBMRegressor(**lgb_few).fit(frame, y)),
        ("'rf' boosting", lambda: lgb.LGBMRegressor(boosting_type="rf", subsample=0.7,
                                                    subsample_freq=1, **lgb_few).fit(X, y)),
        ("linear trees", lambda: lgb.LGBMRegressor(linear_tree=True, **lgb_few).fit(X, y)),
        ("poisson", lambda: lgb.LGBMRegressor(objective="poisson", **lgb_few)
            .fit(X, np.abs(y))),
        ("multiclassova", lambda: lgb.LGBMClassifier(objective="multiclassova", **lgb_few)
            .fit(X, np.digitize(y, [-0.5, 0.7]))),
        ("not fitted", lambda: xgb.XGBRegressor()),
        ("not fitted", lambda: lgb.LGBMClassifier()),
    ]


@pytest.mark.parametrize("what, make", _refused(), ids=[w for w, _ in _refused()])
def test_refused_models_raise_one_clear_error(what, make):
    model = make()
    with pytest.raises(BadInputError, match=what):
        forest_view(model)


def test_import_harness_does_not_import_the_libraries():
    code = ("import sys, harness, harness.forest.view; "
            "assert not {'xgboost', 'lightgbm'} & set(sys.modules), 'imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
