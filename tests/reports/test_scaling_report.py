"""The scaling report: exponents fitted by least squares above the noise floor, and the run
report's "Scaling" section, present exactly where the run folder holds a ``scaling.json``."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from harness.bench.scaling import POINT_COLUMNS, fit_exponents
from harness.core import registry
from harness.reports import scaling

SIZES = np.array([1e3, 1e4, 1e5, 1e6])


def _points(method: str, seconds: np.ndarray, axis: str = "n") -> list[dict]:
    return [{**dict.fromkeys(POINT_COLUMNS), "method": method, "axis": axis, "size": x,
             "x": x, "seconds": t, "cpu_seconds": t, "runs": 1, "status": "ok"}
            for x, t in zip(SIZES, seconds)]


@pytest.fixture
def points() -> pd.DataFrame:
    rows = (_points("linear", 1e-6 * SIZES)  # t = 1e-6 n: slope 1 exactly
            # below 10 ms the call's overhead: t = max(0.01, 1e-9 n^2); above it, slope 2
            + _points("quadratic", np.maximum(0.01, 1e-9 * SIZES ** 2))
            + _points("flat", np.array([1e-3, 1.1e-3, 0.95e-3, 1e-3])))
    rows.append({**rows[0], "size": 1e7, "x": math.nan, "seconds": math.nan,
                 "cpu_seconds": math.nan, "status": "skipped", "reason": "predicted 10 s > "
                 "budget 1 s (and every larger size)"})
    return pd.DataFrame(rows, columns=list(POINT_COLUMNS))


def test_exponents_are_least_squares_slopes_above_the_floor(points):
    stated = {"linear": {"n": 1}, "quadratic": {"n": 1}, "flat": {"n": 0}}
    table = fit_exponents(points, stated).set_index("method")
    assert table.at["linear", "exponent"] == pytest.approx(1.0, abs=1e-12)
    # the fastest point is below twice itself, and the skipped one has no time
    assert table.at["linear", "n_points"] == 3
    # only the points at or above 2 x 10 ms: n = 1e4, 1e5, 1e6, on t = 1e-9 n^2
    assert table.at["quadratic", "exponent"] == pytest.approx(2.0, abs=1e-12)
    assert table.at["quadratic", "n_points"] == 3
    assert [table.at[m, "agrees"] for m in ("quadratic", "linear")] == [False, True]
    # a flat curve: no point reaches twice the fastest, so every point is fitted
    assert abs(table.at["flat", "exponent"]) < 0.05
    assert table.at["flat", "agrees"] == True  # noqa: E712 (a numpy bool)
    assert "fitted over every point" in table.at["flat", "note"]


def test_a_span_of_sizes_too_short_is_not_judged():
    """Two sizes 2x apart (a budget that stopped an axis early): a 25 % noise moves their
    slope by 0.32, so the exponent is shown but not called a disagreement; at 3x and more
    (here 4x), judged."""
    two = [{**row, "size": x, "x": x} for row, x in zip(
        _points("short", np.array([0.1, 0.12])), (5.0, 10.0))]
    four = [{**row, "size": x, "x": x} for row, x in zip(
        _points("wider", np.array([0.1, 0.125])), (5.0, 20.0))]
    table = fit_exponents(pd.DataFrame(two + four, columns=list(POINT_COLUMNS)),
                          {"short": {"n": 1}, "wider": {"n": 1}}).set_index("method")
    assert table.at["short", "agrees"] is None
    assert "not judged: sizes 5 to 10 span less than 3x" in table.at["short", "note"]
    assert table.at["wider", "agrees"] is False  # slope 0.16 against 1, over 4x


def test_a_sum_of_terms_is_judged_against_the_range_of_its_exponents():
    """A method stating (0, 1) on p (flat walks plus an (n, p) output): t = 0.05 + 1e-5 p
    agrees (slope between 0 and 1), t = 1e-8 p^2 does not; the same curve stated 1 alone
    is judged against 1."""
    sizes = np.array([10.0, 100.0, 1e3, 1e4])
    sum_curve, square = 0.05 + 1e-5 * sizes, 1e-8 * sizes ** 2
    rows = []
    for method, seconds in (("sum", sum_curve), ("square", square), ("sum_as_1", sum_curve)):
        rows += [{**row, "size": x, "x": x, "axis": "p"}
                 for row, x in zip(_points(method, seconds, "p"), sizes)]
    stated = {"sum": {"p": (0, 1)}, "square": {"p": (0, 1)}, "sum_as_1": {"p": 1}}
    table = fit_exponents(pd.DataFrame(rows, columns=list(POINT_COLUMNS)),
                          stated).set_index("method")
    assert 0.0 < table.at["sum", "exponent"] < 1.0
    assert table.at["sum", "agrees"] == True  # noqa: E712 (a numpy bool)
    assert table.at["sum", "difference"] == 0.0
    assert (table.at["sum", "stated_low"], table.at["sum", "stated"]) == (0.0, 1.0)
    assert table.at["square", "agrees"] == False  # noqa: E712
    assert table.at["square", "difference"] > 0.35
    assert table.at["sum_as_1", "difference"] == pytest.approx(
        table.at["sum", "exponent"] - 1.0)


def test_run_report_shows_scaling_where_the_folder_has_it(run_folder, points):
    assert scaling.build(None, run_folder) == []  # no scaling.json: no section
    exponents = fit_exponents(points, {"linear": {"n": (0, 1)}, "quadratic": {"n": 1}})
    record = {"settings": {"base": {"n": 1000}, "dataset": "d", "model": "m", "repeat": 3,
                           "floor_seconds": 0.001, "floor_factor": 2.0, "budget_seconds": 1.0,
                           "tolerance": 0.35},
              "points": json.loads(points.to_json(orient="records")),
              "exponents": json.loads(exponents.to_json(orient="records"))}
    (run_folder / "scaling.json").write_text(json.dumps(record), encoding="utf-8")
    written = registry.build_reports(run_folder)
    page = (run_folder / "index.html").read_text(encoding="utf-8")
    assert 'id="section-scaling"' in page
    assert 'src="scaling.png"' in page
    assert "2.00 (stated 1)" in page  # the quadratic method's fitted and stated exponents
    assert "1.00 (stated 0 to 1)" in page  # a stated sum of terms shows its range
    assert {"scaling.png", "scaling_exponents.csv"} <= {path.name for path in written}
