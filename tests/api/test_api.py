"""The public API exactly as DESIGN.md shows it, and third-party plugin discovery."""

from __future__ import annotations

import numpy as np
import pytest

import harness
from harness.core import registry


def test_design_example_end_to_end(tmp_path):
    ds = harness.load_dataset("led")
    model = harness.fit_model({"forest": "extra_trees", "n_estimators": 20, "max_features": 1,
                               "criterion": "entropy"}, ds, seed=0)
    imp = harness.explain("local_mdi", model, ds.X, ds.y, seed=0)
    assert imp.values.shape == (10, 7) and imp.unit == "bits"
    res = harness.compare(
        datasets=["led", "iris"],
        models=[{"forest": "extra_trees", "n_estimators": 5, "max_features": 1}],
        methods=["mdi", "local_mdi"], seeds=[0], out=tmp_path / "x", reports=False,
    )
    assert res.exit_code == 0
    df = harness.load_results(tmp_path / "x")
    assert set(df["method"]) == {"mdi", "local_mdi"}
    assert {"dataset", "model", "seed", "feature", "value", "p_model_n_estimators",
            "p_model_max_features", "model_score"} <= set(df.columns)
    assert len(df) == 2 * (7 + 4)
    # the stored global MDI is the API's MDI of the same model (fitted once per cell group)
    led = df[(df["dataset"] == "led") & (df["method"] == "mdi")]["value"].to_numpy()
    np.testing.assert_allclose(led.sum(), np.log2(10), atol=1e-12)
    cells = harness.load_results(tmp_path / "x", kind="cells")
    assert list(cells["status"].unique()) == ["done"]
    local = harness.load_results(tmp_path / "x", kind="local")
    assert len(local) == 10 * 7 + 112 * 4  # LED explains its 10 rows; iris its train split
    with pytest.raises(harness.BadInputError, match="kind must be one of"):
        harness.load_results(tmp_path / "x", kind="nope")
    with pytest.raises(harness.BadInputError, match="results.sqlite is missing"):
        harness.load_results(tmp_path / "nothing")
    forced = harness.compare(datasets=["led"], models=[{"n_estimators": 5, "max_features": 1}],
                             methods=["mdi"], out=tmp_path / "x", force=True, reports=False)
    assert forced.reused == 0 and forced.done == 1


def test_entry_point_plugins_are_discovered(monkeypatch):
    targets = {
        "method": {"constant_plugin": "tests._support.plugin_example:ConstantImportance",
                   "mdi": "tests._support.plugin_example:ConstantImportance",
                   "broken_plugin": "tests._support.plugin_example:DoesNotExist"},
        "dataset": {},
    }
    monkeypatch.setattr(registry, "_entry_point_targets",
                        lambda group: targets["method" if group.endswith("methods")
                                              else "dataset"])
    registry._classes.cache_clear()
    try:
        with pytest.warns(UserWarning) as caught:
            names = registry.method_names()
        messages = " ".join(str(w.message) for w in caught)
        assert "constant_plugin" in names and "broken_plugin" not in names
        assert "Cannot load method 'broken_plugin'" in messages
        assert "built-in method has that name" in messages
        assert registry.get_method_class("mdi").__module__ == "harness.methods.mdi"
    finally:
        registry._classes.cache_clear()


def test_explain_takes_the_label_an_importance_carries():
    # the label Importances.method and the reports write names the same configuration:
    # explained again from it, TreeSHAP gives the same values and still adds up to predict
    from sklearn.ensemble import RandomForestRegressor

    X = np.random.default_rng(0).random((120, 4))
    model = RandomForestRegressor(10, random_state=0).fit(X, X[:, 0] + X[:, 1] * X[:, 2])
    first = harness.explain("treeshap", model, X[:6], perturbation="interventional",
                            n_background=25)
    assert first.method == "treeshap[n_background=25,perturbation=interventional]"
    again = harness.explain(first.method, model, X[:6])
    np.testing.assert_array_equal(again.values, first.values)
    np.testing.assert_allclose(again.values.sum(axis=1) + again.base_values,
                               model.predict(X[:6]), atol=1e-12)
    with pytest.raises(harness.BadInputError, match="names a grid of 2 configurations"):
        harness.explain("treeshap[n_background=[10,20]]", model, X[:6])
    with pytest.raises(harness.BadInputError, match=r"both set \['n_background'\]"):
        harness.explain("treeshap[n_background=10]", model, X[:6], n_background=20)


def test_a_local_method_on_weighted_rows_is_summarised_with_the_weights(tmp_path):
    # XOR's table is a distribution (weights 0.0125 to 0.2375): mean |local| over its rows
    # was the uniform mean over the support; the global view is now the weighted mean, in
    # the Importances, in the stored results and in the reports' tables alike
    ds = harness.load_dataset("xor")
    spec = {"forest": "random_forest", "n_estimators": 10}
    model = harness.fit_model(spec, ds, seed=0)
    shap = harness.explain("treeshap", model, ds.X, ds.y, sample_weight=ds.sample_weight)
    magnitude = np.abs(shap.values).reshape(len(ds.X), ds.X.shape[1], -1).sum(axis=2)
    weighted = (ds.sample_weight[:, None] * magnitude).sum(axis=0) / ds.sample_weight.sum()
    np.testing.assert_array_equal(shap.row_weights, ds.sample_weight)
    np.testing.assert_allclose(shap.global_view(), weighted, rtol=1e-12)
    assert np.abs(weighted - magnitude.mean(axis=0)).max() > 1e-3  # the weights matter here
    equal = harness.explain("treeshap", model, ds.X, ds.y, sample_weight=np.ones(len(ds.X)))
    assert equal.row_weights is None
    harness.compare(datasets=["xor"], models=[spec], methods=["treeshap"], seeds=[0],
                    out=tmp_path / "run")
    stored = harness.load_results(tmp_path / "run")
    np.testing.assert_allclose(stored["value"].to_numpy(), weighted, rtol=1e-12)
    import pandas as pd

    page = pd.read_csv(tmp_path / "run" / "dataset_xor_importances.csv")
    np.testing.assert_allclose(page["value"].to_numpy(), weighted, rtol=1e-9)
