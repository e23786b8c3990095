"""Reports computed from a hand-written run folder whose answers are known exactly."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from harness.reports import accuracy, correlation, timing
from harness.reports.base import rowwise_pearson, rowwise_spearman
from harness.reports.index import build_reports, default_reports
from harness.run.store import Store


def _pair(table: pd.DataFrame, a: str, b: str, dataset: str = "toy") -> pd.DataFrame:
    return table[(table["dataset"] == dataset) & (table["method_a"] == a)
                 & (table["method_b"] == b)]


def test_rowwise_correlations_known_values():
    a = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [0.1, 0.1, 0.1 + 2e-17]])
    b = np.array([[2.0, 4.0, 7.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    pearson = rowwise_pearson(a, b)
    assert pearson[0] == pytest.approx(np.corrcoef(a[0], b[0])[0, 1])
    assert np.isnan(pearson[1:]).all()
    assert rowwise_spearman(a, b)[0] == pytest.approx(1.0)


def test_local_correlations_per_sample(results):
    per_sample = correlation.local_correlations(results)
    assert list(per_sample.columns) == ["dataset", "model", "seed", "method_a", "method_b",
                                        "sample", "pearson", "spearman"]
    shap = _pair(per_sample, "lmdi", "lshap")
    assert shap["sample"].tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(shap[["pearson", "spearman"]].to_numpy()[:4], 1.0)
    assert shap[["pearson", "spearman"]].iloc[4].isna().all()  # constant row
    reverse = _pair(per_sample, "lmdi", "lrev")
    np.testing.assert_allclose(reverse["spearman"].to_numpy()[:4], -1.0)
    assert (reverse["pearson"].to_numpy()[:4] < 0).all()
    np.testing.assert_allclose(_pair(per_sample, "lmdi", "lmulti")["pearson"][:4], 1.0)
    subset = _pair(per_sample, "lmdi", "lsub")  # aligned on the shared rows 1 and 3
    assert subset["sample"].tolist() == [1, 3]
    np.testing.assert_allclose(subset["pearson"], 1.0)
    assert len(_pair(per_sample, "lmdi", "lshap", dataset="plain")) == 5
    signed = _pair(correlation.local_correlations(results, signed=True), "lmdi", "lshap")
    np.testing.assert_allclose(signed["pearson"].to_numpy()[:4], -1.0)


def test_summarise_local_table4(results):
    summary = correlation.summarise_local(correlation.local_correlations(results))
    shap = _pair(summary, "lmdi", "lshap").set_index("correlation")
    for kind in ("pearson", "spearman"):
        row = shap.loc[kind]
        assert row["mean"] == pytest.approx(1.0)
        assert row["std"] == pytest.approx(0.0, abs=1e-12)
        assert row["fraction_ge_0.90"] == row["fraction_ge_0.75"] == 1.0
        assert (row["n_samples"], row["n_undefined"]) == (5, 1)
    reverse = _pair(summary, "lmdi", "lrev").set_index("correlation").loc["spearman"]
    assert reverse["mean"] == pytest.approx(-1.0)
    assert reverse["fraction_ge_0.75"] == 0.0
    assert _pair(summary, "lmdi", "lsub")["n_samples"].tolist() == [2, 2]


def test_global_agreement_ranks(results):
    agreement = correlation.global_agreement(results)
    perm = _pair(agreement, "gmdi", "gperm").iloc[0]
    assert perm["spearman"] == pytest.approx(-0.2)  # 1 - 6 * 12 / (4 * 15)
    assert perm["kendall"] == pytest.approx(0.0)  # 3 concordant, 3 discordant pairs
    # normalised to sum |v| = 1: 0.45 + 0.2 + 0.15 + 0.1
    assert perm["l1_distance"] == pytest.approx(0.9)
    local = _pair(agreement, "lmdi (mean |local|)", "lshap (mean |local|)").iloc[0]
    assert local["spearman"] == pytest.approx(1.0)
    assert local["l1_distance"] == pytest.approx(0.0, abs=1e-12)


def test_timing_table(results):
    table = timing.timing_table(results).set_index("method")
    assert len(table) == 9  # done cells only
    gmdi = table.loc["gmdi"]
    assert gmdi["ratio_to_predict"] == pytest.approx(4.0)
    assert gmdi["time_per_sample"] == pytest.approx(0.4)
    assert gmdi["fit_time"] == pytest.approx(3.0)
    assert "p_model_n_estimators" in table.columns


def test_model_scores(results):
    scores = accuracy.model_scores(results)
    assert scores[["dataset", "score", "score_name", "n_train", "n_test"]].values.tolist() == [
        ["plain", 0.9, "accuracy", 6, 2], ["toy", 0.9, "accuracy", 6, 2]]


def test_truth_comparison(results):
    table = accuracy.truth_comparison(results)
    assert set(table["dataset"]) == {"toy"}
    exact = table[table["truth"] == "exact"].set_index("method")
    assert exact.loc["gmdi", "spearman"] == pytest.approx(1.0)
    assert exact.loc["gmdi", "max_abs_error"] == pytest.approx(0.0)
    assert exact.loc["gperm", "spearman"] == pytest.approx(-0.2)
    assert np.isnan(exact.loc["gperm", "max_abs_error"])  # not in compares_to
    assert np.isnan(exact.loc["lmdi", "max_abs_error"])
    local = table[table["truth"] == "exact_local"]
    assert local["method"].tolist() == ["lmdi"]  # the only local method in compares_to
    row = local.iloc[0]
    assert row["max_abs_error"] == pytest.approx(0.0)
    assert row["mean_sample_pearson"] == pytest.approx(1.0)
    assert (row["n_samples"], row["n_undefined"]) == (5, 1)
    precision = table[table["truth"] == "relevant"].set_index("method")["precision_relevant"]
    assert precision["gmdi"] == 1.0
    assert precision["gperm"] == 0.5  # top 2 are f1 (relevant) and f2 (not)


def _linked(page: str) -> set[str]:
    return set(re.findall(r'href="([^"]+)"', page))


def test_build_reports_writes_and_links_everything(run_folder):
    written = build_reports(run_folder)
    assert written[-1] == run_folder / "index.html"
    assert all(path.exists() for path in written)
    names = {path.name for path in written}
    assert {"results.csv", "cells.csv", "correlation_local_per_sample.csv",
            "correlation_local_summary.csv", "correlation_global.csv", "timing.csv",
            "model_scores.csv", "accuracy.csv", "correlation_heatmaps.png",
            "correlation_sorted.png", "timing_ratio_to_predict.png",
            "accuracy_truth_toy.png"} <= names
    assert "accuracy_truth_plain.png" not in names  # no ground truth
    page = (run_folder / "index.html").read_text()
    on_disk = {p.name for p in run_folder.iterdir() if p.suffix in (".csv", ".png")}
    assert on_disk <= _linked(page)
    assert on_disk == names - {"index.html"}
    assert "= 13 cells: 9 done, " in page  # the grid line
    for status in ("skipped", "not_installed", "error", "timeout"):  # grouped, collapsed
        assert f"<details><summary><strong>{status}</strong> × " in page
    assert "ValueError: boom" in page and "timed out after 1 s" in page
    for panel in ("panel-relate", "panel-trust", "panel-cost"):
        assert f'id="{panel}"' in page
    anchors = set(re.findall(r'href="#([^"]+)"', page))
    assert anchors and all(f'id="{anchor}"' in page for anchor in anchors)
    assert {"section-environment", "section-cells-not-done", "section-timing"} <= anchors
    assert "fraction_ge_0.90" in page and "accuracy" in page
    cells = pd.read_csv(run_folder / "cells.csv")
    assert len(cells) == 13 and (cells["status"] == "done").sum() == 9


def test_failing_report_is_shown_and_others_still_written(run_folder):
    def broken(results, out_dir):
        (out_dir / "partial.csv").write_text("a\n1\n")
        raise RuntimeError("deliberate failure in a report")

    reports = {"Broken": broken, **default_reports()}
    written = build_reports(run_folder, reports=reports)
    page = (run_folder / "index.html").read_text()
    assert "This report failed" in page and "deliberate failure in a report" in page
    for name in ("correlation_local_summary.csv", "timing.csv", "accuracy.csv"):
        assert run_folder / name in written
    # what the failed report left behind is still linked
    assert "partial.csv" in _linked(page)
    on_disk = {p.name for p in run_folder.iterdir() if p.suffix in (".csv", ".png")}
    assert on_disk <= _linked(page)


def test_empty_run_still_writes_index(tmp_path):
    Store(tmp_path).close()
    written = build_reports(tmp_path)
    page = (tmp_path / "index.html").read_text()
    assert "This report failed" not in page
    assert {p.name for p in written} >= {"results.csv", "cells.csv", "timing.csv"}


def _files_and_page(folder) -> tuple[dict[str, bytes], str]:
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".png")}
    page = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "", (folder / "index.html").read_text())
    return files, page


def test_reports_built_in_processes_equal_the_reports_built_here(run_folder, monkeypatch):
    """Two forked report processes write the same files, byte for byte, and the same page
    (but its build time) as one build in the caller; a report that fails in its process is
    still shown with its error."""
    from harness.reports import index

    def broken(results, out_dir):
        raise RuntimeError("deliberate failure in a report")

    reports = {"Broken": broken, **default_reports()}
    monkeypatch.setattr(index, "REPORT_PROCESSES", 1)
    build_reports(run_folder, reports=reports)
    here = _files_and_page(run_folder)
    monkeypatch.setattr(index, "REPORT_PROCESSES", 2)
    assert index._report_processes(len(reports) + 2) == 2 or len(_usable()) == 1
    build_reports(run_folder, reports=reports)
    forked = _files_and_page(run_folder)
    assert forked[0].keys() == here[0].keys() and len(here[0]) > 5
    for name, content in here[0].items():
        assert forked[0][name] == content, name
    assert forked[1] == here[1]
    assert "deliberate failure in a report" in forked[1]


def _usable() -> set[int]:
    import os

    return os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else {0}


def test_a_report_whose_process_dies_gets_an_error_and_the_others_are_written(run_folder,
                                                                            monkeypatch):
    """A report that kills its process (as a crash in native code would) is shown as
    failed; every other report is still built, also those its crash interrupted."""
    import os

    from harness.reports import index

    if index._report_processes(4) == 1:
        pytest.skip("one core or no fork here: the reports are built in the caller")

    def crashing(results, out_dir):
        os._exit(3)

    reports = {**default_reports(), "Crashing": crashing}
    written = build_reports(run_folder, reports=reports)
    page = (run_folder / "index.html").read_text()
    assert "the process building this report died" in page
    assert page.count("This report failed") == 1
    for name in ("correlation_local_summary.csv", "timing.csv", "accuracy.csv"):
        assert run_folder / name in written
