"""What a plugin author sees: a name, parameters and one ``_explain``; an entry point adds it.

The README's example method (tests/_support/plugin_package) is installed the way pip leaves
a package (a ``*.dist-info`` folder with ``entry_points.txt`` on the path) and run through
``python -m harness compare``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import harness
from harness import Method
from harness.core.method import ExplainData

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "tests" / "_support" / "plugin_package" / "prediction_correlation.py"


def _install(site: Path) -> None:
    shutil.copy(PLUGIN, site / "prediction_correlation.py")
    info = site / "prediction_correlation-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: prediction-correlation\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[harness.methods]\nprediction_correlation = "
        "prediction_correlation:PredictionCorrelation\n")


def test_an_installed_plugin_runs_through_compare_via_its_entry_point(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _install(site)
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "compare", "-d", "diabetes", "--model",
         "random_forest[n_estimators=5]", "-m", "prediction_correlation",
         "prediction_correlation[power=2]", "--out", str(out), "--no-progress"],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "cells: 2 total, 2 done" in completed.stdout
    table = harness.load_results(out).pivot_table(index="feature", columns="method",
                                                  values="value")
    once, squared = table["prediction_correlation"], table["prediction_correlation[power=2]"]
    np.testing.assert_allclose(squared, once**2, rtol=1e-12)
    assert ((once >= 0) & (once <= 1)).all()


class ReturnsValues(Method):
    name, scope, family = "returns_values", "global", "test"
    unit, explains = "one", "nothing"

    def _explain(self, model, data, rng):
        return np.arange(data.X.shape[1], dtype=float)


class ForgetsItsUnit(ReturnsValues):
    unit = ""


class ReturnsOtherNames(ReturnsValues):
    def _explain(self, model, data, rng):
        return harness.Importances(np.zeros(data.X.shape[1]), "global",
                                   list(reversed(data.feature_names)), "one", "x")


class ReturnsLocalValues(ReturnsValues):
    def _explain(self, model, data, rng):
        return harness.Importances(np.zeros(data.X.shape), "local", data.feature_names, "1", "x")


def _data(n_features: int = 3) -> ExplainData:
    return ExplainData(X=np.zeros((4, n_features)), y=None,
                       feature_names=["a", "b", "c"][:n_features], task="regression")


def test_the_base_class_fills_in_scope_names_unit_and_what_is_explained():
    result = ReturnsValues().explain(None, _data(), np.random.default_rng(0))
    assert (result.scope, result.feature_names, result.unit) == ("global", ["a", "b", "c"], "one")
    assert result.method == "returns_values" and result.time_explain >= 0
    np.testing.assert_array_equal(result.values, [0.0, 1.0, 2.0])


@pytest.mark.parametrize(("method", "words"), [
    (ForgetsItsUnit, "must declare the class attributes 'unit' and 'explains'"),
    (ReturnsOtherNames, "expected ['a', 'b', 'c']"),
    (ReturnsLocalValues, "declared 'global' but returned 'local'"),
])
def test_a_result_that_breaks_the_contract_is_refused(method, words):
    with pytest.raises(TypeError) as raised:
        method().explain(None, _data(), np.random.default_rng(0))
    assert words in str(raised.value)
