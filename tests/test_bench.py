"""``python -m harness bench``: bad input, and the ratio table on a tiny case."""

from __future__ import annotations

import json

import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.ensemble import RandomForestRegressor

from harness import bench
from harness.cli import main


def test_unknown_case_is_one_line_exit_2(capsys):
    assert main(["bench", "--case", "nope", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "Unknown bench case 'nope'. Available bench cases: C, benard2022, sage-A2," in err


def test_bench_table_divides_each_method_by_predict(tmp_path, monkeypatch, capsys):
    tiny = bench.BenchCase(
        "tiny", "Friedman #1, 200 rows, 10 trees",
        lambda: make_friedman1(n_samples=200, random_state=0),
        lambda: RandomForestRegressor(n_estimators=10, random_state=0),
        ("mda_bc", "sobol_mda"), {"mda_bc": 1e9, "sobol_mda": 1e-9})
    monkeypatch.setitem(bench.CASES, "tiny", tiny)
    out = tmp_path / "bench.json"
    assert main(["bench", "--case", "tiny", "--repeat", "1", "--out", str(out),
                 "--no-progress"]) == 0
    rows = json.loads(out.read_text())
    assert [row["method"] for row in rows] == ["mda_bc", "sobol_mda"]
    for row in rows:
        assert np.isclose(row["ratio_to_predict"], row["seconds"] / row["predict_seconds"])
    assert [row["meets_target"] for row in rows] == [True, False]
    assert "2 timings, 1 miss their target" in capsys.readouterr().out
