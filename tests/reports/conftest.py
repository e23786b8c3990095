"""The hand-written run folder of the report tests: two datasets ("toy" with exact global and
local truths, "plain" without), one random forest "rf", seed 0, and cells whose correlations,
timings and accuracies are known exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.core.types import Dataset, GroundTruth, TruthVector
from harness.run.cell_result import CellResult
from harness.run.results import RunResults
from harness.run.store import Store

FEATURES = ["f0", "f1", "f2", "f3"]
TRUTH_GLOBAL = np.array([0.5, 0.3, 0.15, 0.05])
# Exact local importances of the 6 dataset rows; row 4 is constant (correlation undefined).
TRUTH_LOCAL = np.array([
    [0.4, 0.3, 0.2, 0.1],
    [0.1, 0.5, 0.3, 0.2],
    [0.2, 0.1, 0.6, 0.3],
    [0.3, 0.2, 0.1, 0.7],
    [0.25, 0.25, 0.25, 0.25],
    [0.9, 0.1, 0.1, 0.1],
])
EXPLAINED = np.arange(5)  # dataset rows the local methods explain
A = TRUTH_LOCAL[EXPLAINED]


def _dataset(name: str, truth: GroundTruth | None) -> Dataset:
    rng = np.random.default_rng(0)
    return Dataset(name=name, X=rng.random((6, 4)), y=np.array([0, 1, 0, 1, 0, 1]),
                   task="classification", feature_names=FEATURES, truth=truth)


def _cell(store: Store, method: str, status: str = "done", scope: str = "global",
          values: np.ndarray | None = None, dataset: str = "toy",
          sample_index: np.ndarray | None = None, reason: str | None = None,
          time_explain: float = 1.0, time_predict: float = 0.5) -> None:
    meta = {"key": f"{dataset}|rf|0|{method}", "dataset": dataset, "dataset_name": dataset,
            "model": "rf", "model_name": "rf", "seed": 0, "method": method,
            "method_name": method, "explain_on": "train", "dataset_params": {},
            "model_params": {"n_estimators": 10}, "method_params": {}}
    result = {"status": status, "reason": reason}
    if status == "done":
        result.update({
            "scope": scope, "unit": "bits", "explains": "impurity", "feature_names": FEATURES,
            "time_explain": time_explain, "time_predict": time_predict, "n_explained": 5,
            "values": values, "std": None, "base_values": None,
            "sample_index": (EXPLAINED if sample_index is None else sample_index)
            if scope == "local" else None,
        })
    store.record_cell(meta, CellResult(**result))


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    truth = GroundTruth(
        relevant=np.array([True, True, False, False]),
        quantities={
            "exact": TruthVector(TRUTH_GLOBAL, "bits", "exact global", compares_to=("gmdi",)),
            "exact_local": TruthVector(TRUTH_LOCAL, "bits", "exact local",
                                       compares_to=("lmdi",)),
        },
    )
    with Store(tmp_path) as store:
        for name, dataset_truth in (("toy", truth), ("plain", None)):
            store.record_dataset(f"{name}|0", _dataset(name, dataset_truth), 0)
            store.record_model({
                "key": f"{name}|rf|0", "dataset": name, "model": "rf", "seed": 0,
                "task": "classification", "fit_time": 3.0, "score": 0.9,
                "score_name": "accuracy", "n_train": 6, "n_test": 2, "n_features": 4,
                "feature_names": FEATURES, "predict_time": 0.01,
            })
        _cell(store, "lmdi", scope="local", values=A)
        _cell(store, "lshap", scope="local", values=-2 * A)  # |B| = 2 |A|
        _cell(store, "lrev", scope="local", values=1 / A)  # reverses every ranking
        _cell(store, "lmulti", scope="local", values=np.stack([0.5 * A, -0.5 * A], axis=2))
        _cell(store, "lsub", scope="local", values=3 * A[[3, 1]],
              sample_index=np.array([3, 1]))
        _cell(store, "gmdi", values=TRUTH_GLOBAL, time_explain=2.0, time_predict=0.5)
        _cell(store, "gperm", values=TRUTH_GLOBAL[[3, 0, 1, 2]])
        _cell(store, "gerr", status="error", reason="ValueError: boom")
        _cell(store, "gskip", status="skipped", reason="needs a regression task")
        _cell(store, "gni", status="not_installed", reason="needs sage")
        _cell(store, "gslow", status="timeout", reason="timed out after 1 s")
        rng = np.random.default_rng(1)
        for method in ("lmdi", "lshap"):
            _cell(store, method, scope="local", values=rng.random((5, 4)), dataset="plain")
    return tmp_path


@pytest.fixture
def results(run_folder: Path):
    opened = RunResults.open(run_folder)
    yield opened
    opened.close()
