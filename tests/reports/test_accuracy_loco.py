"""The accuracy report sets the permutation/projection methods beside LOCO where no closed
form exists, on a tiny hand-written run whose answers are known exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.core.types import Dataset, GroundTruth, TruthVector
from harness.reports import accuracy, accuracy_loco
from harness.run.cell_result import CellResult
from harness.run.results import RunResults
from harness.run.store import Store

FEATURES = ["f0", "f1", "f2", "f3"]
PSI = np.array([0.8, 0.6, 0.4, 0.2])  # sum 2: normalised (0.4, 0.3, 0.2, 0.1)
SE = np.full(4, 0.1)  # normalised 0.05


def _cell(store: Store, dataset: str, method: str, values: np.ndarray,
          std: np.ndarray | None = None) -> None:
    name = method.split("[")[0]
    meta = {"key": f"{dataset}|rf|0|{method}", "dataset": dataset, "dataset_name": dataset,
            "model": "rf", "model_name": "rf", "seed": 0, "method": method,
            "method_name": name, "explain_on": "train", "dataset_params": {},
            "model_params": {}, "method_params": {}}
    store.record_cell(meta, CellResult(
        status="done", scope="global", unit="u", explains="e", feature_names=FEATURES,
        time_explain=1.0, time_predict=0.5, n_explained=6, values=values, std=std,
        base_values=None, sample_index=None))


@pytest.fixture
def results(tmp_path: Path):
    rng = np.random.default_rng(0)
    truth = GroundTruth(relevant=np.array([True, True, False, False]), quantities={
        "exact": TruthVector(np.array([0.5, 0.3, 0.2, 0.0]), "u", "exact", ())})
    with Store(tmp_path) as store:
        for name, dataset_truth in (("plain", None), ("closed", truth)):
            store.record_dataset(f"{name}|0", Dataset(
                name=name, X=rng.random((6, 4)), y=rng.random(6), task="regression",
                feature_names=FEATURES, truth=dataset_truth), 0)
            store.record_model({
                "key": f"{name}|rf|0", "dataset": name, "model": "rf", "seed": 0,
                "task": "regression", "fit_time": 1.0, "score": 0.5, "score_name": "r2",
                "n_train": 6, "n_test": 2, "n_features": 4, "feature_names": FEATURES,
                "predict_time": 0.01})
            _cell(store, name, "loco", PSI, SE)
            _cell(store, name, "sobol_mda", 3 * PSI)  # the same profile
        _cell(store, "plain", "mda_test", 3 * PSI[::-1])  # the reversed profile
        _cell(store, "plain", "mdi", PSI[::-1])  # not a permutation/projection method
    opened = RunResults.open(tmp_path)
    yield opened
    opened.close()


def test_each_permutation_method_is_set_beside_loco_with_its_standard_error(results):
    table = accuracy_loco.loco_table(results)
    assert set(table["dataset"]) == {"plain"}  # "closed" has a global truth
    assert sorted(table["method"].unique()) == ["mda_test", "sobol_mda"]
    sobol = table[table["method"] == "sobol_mda"]
    np.testing.assert_allclose(sobol["loco"], [0.4, 0.3, 0.2, 0.1])
    np.testing.assert_allclose(sobol["loco_se"], 0.05)
    np.testing.assert_allclose(sobol["difference"], 0.0, atol=1e-15)
    mda = table[table["method"] == "mda_test"]
    np.testing.assert_allclose(mda["estimate"], [0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(mda["z"], [-6.0, -2.0, 2.0, 6.0])
    summary = accuracy_loco.loco_summary(table).set_index("method")
    assert summary.loc["sobol_mda", "spearman"] == pytest.approx(1.0)
    assert summary.loc["mda_test", "spearman"] == pytest.approx(-1.0)
    assert summary.loc["mda_test", "within_2se"] == 0.5
    assert summary.loc["mda_test", "max_abs_difference"] == pytest.approx(0.3)


def test_the_report_writes_the_loco_comparison(results, tmp_path):
    (tmp_path / "out").mkdir()
    section = accuracy.build(results, tmp_path / "out")
    names = {path.name for path in (tmp_path / "out").iterdir()}
    assert {"accuracy_loco.csv", "accuracy_loco.png"} <= names
    assert "each method beside LOCO" in section.html and "within_2se" in section.html


def test_the_figure_keeps_each_model_beside_its_own_loco(results):
    table = accuracy_loco.loco_table(results)
    other = table.assign(model="other_forest", estimate=table["estimate"] * 0.5)
    both = pd.concat([table, other], ignore_index=True)
    figure = accuracy_loco.loco_figure(both, {})
    drawn = {ax.get_title(): ax for ax in figure.axes if ax.axison}
    assert len(drawn) == 2 and all("plain" in title for title in drawn)
    for model, rows in both.groupby("model"):
        (ax,) = [ax for title, ax in drawn.items() if title.endswith(model)]
        # one errorbar container per method, each with that model's points only
        points = sorted(y for c in ax.containers for y in c.lines[0].get_ydata())
        np.testing.assert_allclose(points, np.sort(rows["estimate"].to_numpy()))
