"""The per-dataset report on a hand-written run folder: invariants checked against the stored
arrays and against the datasets themselves (never against the report's own output alone)."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.text
import numpy as np
import pandas as pd
import pytest
from PIL import Image
from sklearn.datasets import load_iris

from harness.core.types import Dataset
from harness.reports import per_dataset, value_ranges
from harness.reports.index import build_reports, default_reports
from harness.run.cell_result import CellResult
from harness.run.results import RunResults
from harness.run.store import Store

IRIS = load_iris()
IRIS_FEATURES = ["sepal length (cm)", "sepal width (cm)", "petal length (cm)",
                 "petal width (cm)"]
PLAIN_FEATURES = [f"v{j}" for j in range(20)]  # more than the 15 bars and 12 swarm rows
ROWS = np.array([3, 10, 50, 51, 120, 149])  # iris rows the local methods explain
RNG = np.random.default_rng(7)
TREESHAP = RNG.normal(size=(len(ROWS), 4, 3))  # per class, as for a classifier
SAABAS = RNG.normal(size=(len(ROWS), 4))
MDI = np.array([0.1, 0.05, 0.6, 0.25])
MDI_STD = np.array([0.01, 0.02, 0.03, 0.04])
SHAFF_OUT = np.array([0.2, -0.27, 0.5, 0.3])  # x1 below 0: outside [0, 1]
SOBOL_IN = np.array([0.0, 0.01, 0.7, 1.0])  # on the bounds: inside
MODEL_1 = "extra_trees[max_features=1]"
MODEL_3 = "extra_trees[max_features=3]"


def _record(store: Store, dataset: str, model: str, method: str, values: np.ndarray,
            scope: str = "global", std: np.ndarray | None = None,
            rows: np.ndarray | None = None, max_features: int = 1, n_estimators: int = 10,
            features: list[str] = IRIS_FEATURES, seed: int = 0) -> None:
    name = method.split("[")[0]
    meta = {"key": f"{dataset}|{model}|{seed}|{method}", "dataset": dataset,
            "dataset_name": dataset, "model": model, "model_name": "extra_trees", "seed": seed,
            "method": method, "method_name": name, "explain_on": "train",
            "dataset_params": {"n_samples": None} if dataset == "iris" else {},
            "model_params": {"n_estimators": n_estimators, "max_features": max_features},
            "method_params": {}}
    store.record_cell(meta, CellResult(
        status="done", scope=scope, unit="fraction of Var(Y)", explains=f"{name} quantity",
        feature_names=features, time_explain=1.0, time_predict=0.5,
        n_explained=len(values), values=values, std=std, base_values=None,
        sample_index=(ROWS if rows is None else rows) if scope == "local" else None))


def _write_run(folder: Path, models: dict[str, dict]) -> Path:
    """iris with the given models (name -> model params) and the unregistered "plain"."""
    with Store(folder) as store:
        store.record_dataset("plain|0", Dataset(
            name="plain", X=np.zeros((8, 20)), y=np.zeros(8), task="regression",
            feature_names=PLAIN_FEATURES), 0)
        for model, params in models.items():
            _record(store, "iris", model, "treeshap", TREESHAP, "local", **params)
            _record(store, "iris", model, "saabas", SAABAS, "local", **params)
            _record(store, "iris", model, "mdi", MDI, std=MDI_STD, **params)
            _record(store, "iris", model, "sobol_mda", SOBOL_IN, **params)
        first = next(iter(models))
        _record(store, "iris", first, "shaff[n_subsets=32]", SHAFF_OUT, **models[first])
        _record(store, "plain", "rf", "local_mdi", RNG.random((8, 20)), "local",
                rows=np.arange(8), features=PLAIN_FEATURES)
        _record(store, "plain", "rf", "mdi", RNG.random(20), features=PLAIN_FEATURES)
    return folder


TWO_K = {MODEL_1: {"max_features": 1}, MODEL_3: {"max_features": 3}}


@pytest.fixture
def built(tmp_path, monkeypatch):
    """The sections of the TWO_K run, the output folder, and every figure before saving."""
    figures = []
    save = per_dataset.save_figure

    def keep(figure, path):
        figures.append((figure, path))
        return save(figure, path)

    monkeypatch.setattr(per_dataset, "save_figure", keep)
    run = _write_run(tmp_path / "run", TWO_K)
    out = tmp_path / "out"
    out.mkdir()
    results = RunResults.open(run)
    try:
        sections = per_dataset.build(results, out)
    finally:
        results.close()
    return sections, out, figures


def _by_title(sections):
    return {section.title: section for section in sections}


def test_one_section_per_dataset_and_every_file_returned(built):
    sections, out, _ = built
    assert [s.title for s in sections] == ["Dataset: iris", "Dataset: plain"]
    returned = [path for section in sections for path in section.files]
    assert all(path.exists() for path in returned)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in returned)
    for section in sections:
        assert section.error is None
        for path in section.figure_files:  # each figure is placed in the section's text
            assert f'src="{path.name}"' in section.html


def test_bars_are_normalised_and_their_std_scaled_by_the_same_factor(built):
    sections, out, _ = built
    table = pd.read_csv(out / "dataset_iris_importances.csv")
    sums = table.groupby(["model", "method"])["normalised"].apply(lambda v: v.abs().sum())
    np.testing.assert_allclose(sums, 1.0)
    assert len(sums) == 2 * 4 + 1  # every done cell of seed 0
    mdi = table[(table["model"] == MODEL_3) & (table["method"] == "mdi")]
    np.testing.assert_allclose(mdi["normalised_std"], MDI_STD / MDI.sum())
    np.testing.assert_allclose(mdi["value"], MDI)
    saabas = table[(table["model"] == MODEL_1) & (table["method"] == "saabas")]
    magnitude = np.abs(SAABAS)  # local: mean |local| and its standard error over samples
    np.testing.assert_allclose(saabas["normalised_std"],
                               magnitude.std(axis=0, ddof=1) / np.sqrt(len(ROWS))
                               / magnitude.mean(axis=0).sum())


def test_only_a_value_outside_the_declared_range_gets_a_note(built):
    sections, _, _ = built
    page = _by_title(sections)["Dataset: iris"].html
    notes = re.findall(r'<p class="range-note">(.*?)</p>', page)
    assert len(notes) == 1  # sobol_mda on its bounds 0 and 1, mdi positive: no note
    assert "shaff[n_subsets=32]" in notes[0] and "sepal width (cm)" in notes[0]
    assert "−0.27" in notes[0] and "[0, 1]" in notes[0]
    assert "range-note" not in _by_title(sections)["Dataset: plain"].html


@pytest.mark.parametrize("method, expected", [
    ("shaff", (0.0, 1.0)), ("sobol_mda", (0.0, 1.0)), ("mdi", (0.0, None)),
    ("mda_bc", (0.0, None)), ("mda_test", (0.0, None)), ("treeshap", (None, None)),
    ("no_such_method", (None, None)),
])
def test_declared_range_is_the_method_class_attribute(method, expected):
    assert value_ranges.declared_range(method) == expected


@pytest.mark.parametrize("values, low, high, expected", [
    ([-0.1, 0.0, 0.5, 1.0], 0.0, 1.0, [True, False, False, False]),
    ([0.2, 1.2], 0.0, 1.0, [False, True]),
    ([-5.0, 1e9], None, None, [False, False]),
    ([-1e-17, 0.3], 0.0, None, [False, False]),  # rounding below 0 is not flagged
    ([-1e-3, 0.3], 0.0, None, [True, False]),
])
def test_outside_range(values, low, high, expected):
    assert value_ranges.outside_range(np.array(values), low, high).tolist() == expected


@pytest.mark.parametrize("models, has_k_plot", [
    (TWO_K, True),
    ({MODEL_1: {"max_features": 1}}, False),
    # two models, same K: they differ in the number of trees only
    ({"a": {"max_features": 2, "n_estimators": 10}, "b": {"max_features": 2,
                                                         "n_estimators": 20}}, False),
])
def test_k_plot_only_when_models_differ_in_max_features(tmp_path, models, has_k_plot):
    run = _write_run(tmp_path, models)
    results = RunResults.open(run)
    try:
        sections = _by_title(per_dataset.build(results, tmp_path))
    finally:
        results.close()
    assert ((tmp_path / "dataset_iris_k.png").exists()) is has_k_plot
    assert ("Agreement against K" in sections["Dataset: iris"].html) is has_k_plot
    assert not (tmp_path / "dataset_plain_k.png").exists()


def test_beeswarm_has_a_dot_per_explained_sample_coloured_by_the_dataset(built):
    _, out, _ = built
    dots = pd.read_csv(out / "dataset_iris_local.csv")
    assert set(dots["method"]) == {"treeshap"}  # preferred over saabas
    counts = dots.groupby(["model", "feature"]).size()
    assert (counts == len(ROWS)).all() and len(counts) == 2 * 4
    assert dots["value_label"].iloc[0].startswith("|value| summed over the classes")
    one = dots[(dots["model"] == MODEL_1) & (dots["feature"] == "petal length (cm)")]
    np.testing.assert_allclose(one["sample"], ROWS)
    np.testing.assert_allclose(one["value"], np.abs(TREESHAP[:, 2, :]).sum(axis=1))
    np.testing.assert_allclose(one["feature_value"], IRIS.data[ROWS, 2])
    colour, x = one["colour"].to_numpy(), IRIS.data[ROWS, 2]
    assert 0 <= colour.min() < colour.max() <= 1  # ranks scaled to [0, 1], ties averaged
    # ordered as the feature values, tied values (rows 3 and 10) alike
    np.testing.assert_array_equal(np.sign(colour[:, None] - colour[None]),
                                  np.sign(x[:, None] - x[None]))


def test_beeswarm_keeps_twelve_rows_and_goes_grey_without_the_dataset(built):
    sections, out, _ = built
    dots = pd.read_csv(out / "dataset_plain_local.csv")
    assert dots["feature"].nunique() == 12 and (dots.groupby("feature").size() == 8).all()
    assert dots["colour"].isna().all()
    assert "Grey dots" in _by_title(sections)["Dataset: plain"].html
    bars = pd.read_csv(out / "dataset_plain_importances.csv")
    assert bars["feature"].nunique() == 20  # the CSV keeps every feature; the figure 15
    assert "The 15 features of largest mean normalised importance of 20" in \
        _by_title(sections)["Dataset: plain"].html


def test_figures_are_readable_at_their_natural_size(built):
    _, _, figures = built
    assert {path.name for _, path in figures} >= {
        "dataset_iris_importances.png", "dataset_iris_local.png",
        "dataset_iris_k.png", "dataset_plain_local.png"}
    for figure, path in figures:
        sizes = [text.get_fontsize() for text in figure.findobj(matplotlib.text.Text)
                 if text.get_visible() and text.get_text().strip()]
        assert min(sizes) >= 9, path.name
        image = Image.open(path)
        assert image.size[0] <= 1150, path.name  # shown unscaled in the ~1200 px column
        if "min_font_px" in image.text:  # written by save_figure, where it records it
            assert float(image.text["min_font_px"]) >= 12.4, path.name


def test_page_opens_the_dataset_sections_first_and_shows_each_figure_once(tmp_path):
    run = _write_run(tmp_path, TWO_K)
    assert list(default_reports())[0] == "Per dataset"
    build_reports(run)
    page = (run / "index.html").read_text()
    headings = re.findall(r'<h2 id="section-[^"]*">([^<]*)</h2>', page)
    assert headings[1:4] == ["Dataset: iris", "Dataset: plain", "Correlation"]
    assert page.count('src="dataset_iris_importances.png"') == 1
    assert page.index('src="dataset_iris_importances.png"') < page.index("Raw values (seed 0")


def test_a_run_of_unregistered_datasets_and_methods_still_gets_its_sections(run_folder, tmp_path):
    """The shared toy run (conftest.py): nothing there is registered, so no dataset can be
    loaded again (grey dots, said so) and no method declares a range (no note)."""
    results = RunResults.open(run_folder)
    try:
        sections = per_dataset.build(results, tmp_path)
    finally:
        results.close()
    assert [s.title for s in sections] == ["Dataset: plain", "Dataset: toy"]
    toy = _by_title(sections)["Dataset: toy"]
    assert "range-note" not in toy.html and "Grey dots" in toy.html
    dots = pd.read_csv(tmp_path / "dataset_toy_local.csv")
    assert set(dots["method"]) == {"lmdi"}  # none preferred: the first local method by name
    assert dots["colour"].isna().all()
    assert "cannot be loaded here" in dots["no_colour_because"].iloc[0]
