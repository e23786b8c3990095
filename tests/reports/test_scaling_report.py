"""The scaling report: exponents fitted by least squares above the noise floor, and the run
report's "Scaling" section, present exactly where the run folder holds a ``scaling.json``."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from harness.bench.scaling import POINT_COLUMNS, fit_exponents, growth_fit
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


def test_exponents_are_the_order_of_the_growing_part(points):
    stated = {"linear": {"n": 1}, "quadratic": {"n": 1}, "flat": {"n": 0}}
    table = fit_exponents(points, stated).set_index("method")
    # four points (the skipped one has no time): the growth fit a + c n^k, exact here
    assert table.at["linear", "exponent"] == pytest.approx(1.0, abs=1e-12)
    assert table.at["linear", "n_points"] == 4
    assert "growth fit a + c x^k over 4 points" in table.at["linear", "note"]
    # t = max(0.01, 1e-9 n^2): a flat 10 ms, then n^2; no a + c n^k is exact on the kink
    assert table.at["quadratic", "exponent"] == pytest.approx(2.0, abs=0.05)
    assert [table.at[m, "agrees"] for m in ("quadratic", "linear")] == [False, True]
    # a flat curve: no point reaches twice the fastest, so the slope over every point
    assert abs(table.at["flat", "exponent"]) < 0.05
    assert table.at["flat", "agrees"] == True  # noqa: E712 (a numpy bool)
    assert "fitted over every point" in table.at["flat", "note"]


@pytest.mark.parametrize("k", [0.5, 1.0, 1.5, 2.0])
def test_growth_fit_separates_the_flat_part_from_the_growing_one(k):
    """t = a + c x^k with a flat part that hides the growth over half the sizes: the growth
    fit returns k, a and c; the slope above twice the fastest point (the rule it replaced)
    reads less than k (between 0.5 and 1 x k), the bias that flagged a + c p costs."""
    x = np.array([5.0, 10, 30, 100, 300, 1000, 3000, 10_000])
    a, c = 0.05, 0.05 / 700.0 ** k  # c x^k reaches a at x = 700, between two sizes
    k_fit, a_fit, c_fit = growth_fit(x, a + c * x ** k)
    assert k_fit == pytest.approx(k, abs=1e-9)
    assert (a_fit, c_fit) == (pytest.approx(a, rel=1e-6), pytest.approx(c, rel=1e-6))
    rows = [{**dict.fromkeys(POINT_COLUMNS), "method": "sum", "axis": "p", "size": size,
             "x": size, "seconds": t, "cpu_seconds": t, "runs": 1, "status": "ok"}
            for size, t in zip(x, a + c * x ** k)]
    table = fit_exponents(pd.DataFrame(rows, columns=list(POINT_COLUMNS)),
                          {"sum": {"p": k}}).set_index("method")
    assert table.at["sum", "exponent"] == pytest.approx(k, abs=1e-9)
    assert table.at["sum", "agrees"] == True  # noqa: E712
    assert (table.at["sum", "x_min"], table.at["sum", "x_max"]) == (1000.0, 10_000.0)
    t = a + c * x ** k
    above = t >= 2 * t.min()
    old = np.polyfit(np.log(x[above]), np.log(t[above]), 1)[0]
    assert 0.5 * k < old < k


def test_three_points_take_the_slope_above_the_floor():
    """Three points would fit a + c x^k exactly, noise and all: the slope rule instead."""
    x = np.array([10.0, 100.0, 1000.0])
    rows = [{**dict.fromkeys(POINT_COLUMNS), "method": "few", "axis": "n", "size": size,
             "x": size, "seconds": t, "cpu_seconds": t, "runs": 1, "status": "ok"}
            for size, t in zip(x, 1e-4 * x)]
    table = fit_exponents(pd.DataFrame(rows, columns=list(POINT_COLUMNS)),
                          {"few": {"n": 1}}).set_index("method")
    assert table.at["few", "exponent"] == pytest.approx(1.0, abs=1e-12)
    assert "growth fit" not in table.at["few", "note"]
    assert table.at["few", "n_points"] == 2  # 1 ms is below twice the fastest point


def test_a_span_of_sizes_too_short_is_not_judged():
    """Two sizes 2x apart (a budget that stopped an axis early): a 25 % noise moves their
    slope by 0.32, so the exponent is shown but not called a disagreement; at 3x and more
    (here 4x), judged where the slope can contradict the statement: above it (stated 0,
    0.46), not below it over points under twice the fastest (stated 1, 0.16), since a flat
    part plus a growing one has a slope between 0 and the growing part's order."""
    def two(method, seconds, sizes):
        return [{**row, "size": x, "x": x}
                for row, x in zip(_points(method, np.array(seconds)), sizes)]

    rows = (two("short", [0.1, 0.12], (5.0, 10.0)) + two("wider", [0.1, 0.125], (5.0, 20.0))
            + two("steeper", [0.1, 0.19], (5.0, 20.0)))
    table = fit_exponents(pd.DataFrame(rows, columns=list(POINT_COLUMNS)),
                          {"short": {"n": 1}, "wider": {"n": 1},
                           "steeper": {"n": 0}}).set_index("method")
    assert table.at["short", "agrees"] is None
    assert "not judged: sizes 5 to 10 span less than 3x" in table.at["short", "note"]
    assert table.at["wider", "agrees"] is None  # slope 0.16 against 1: a lower bound
    assert "(a lower bound)" in table.at["wider", "note"]
    assert table.at["steeper", "exponent"] == pytest.approx(np.log(1.9) / np.log(4))
    assert table.at["steeper", "agrees"] is False  # 0.46 against 0, over 4x


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
    assert "2.02 (stated 1)" in page  # the quadratic method's fitted and stated exponents
    assert "1.00 (stated 0 to 1)" in page  # a stated sum of terms shows its range
    assert {"scaling.png", "scaling_exponents.csv"} <= {path.name for path in written}


def test_depth_is_not_judged_where_the_leaves_grow_faster_than_the_depth():
    """A depth axis whose trees double their leaves per level (as capped sklearn trees do)
    measures the walks' cost per step too: shown, not judged; one whose leaves grow no faster
    than the depth (a tree size held) is judged as any axis, and so is a method stating no
    growth with the depth at all."""
    depths = np.array([2.0, 4.0, 6.0, 8.0])
    rows = []
    for method, leaves in (("doubling", 2.0 ** depths), ("held", depths * 8),
                           ("own_trees", 2.0 ** depths)):
        rows += [{**dict.fromkeys(POINT_COLUMNS), "method": method, "axis": "depth",
                  "size": d, "x": d, "seconds": t, "cpu_seconds": t, "runs": 1,
                  "status": "ok", "mean_leaves": leaf}
                 for d, t, leaf in zip(depths, 1e-3 * depths ** 2, leaves)]
    table = fit_exponents(pd.DataFrame(rows, columns=list(POINT_COLUMNS)),
                          {"doubling": {"depth": 1}, "held": {"depth": 1},
                           "own_trees": {"depth": 0}}).set_index("method")
    assert table.at["doubling", "exponent"] == pytest.approx(2.0, abs=1e-9)
    assert table.at["doubling", "agrees"] is None
    assert "the leaves per tree grow 64x while the depth grows 4.0x" in table.at[
        "doubling", "note"]
    assert table.at["held", "agrees"] == False  # noqa: E712 (2 against 1, judged)
    # a method stating no growth with the depth (rs, srs grow their own trees) is judged
    assert table.at["own_trees", "agrees"] == False  # noqa: E712 (2 against 0)


def test_n_is_judged_with_the_growth_of_trees_grown_on_the_rows():
    """Forests grown on the n rows (the out-of-bag family) have trees that grow with n. A
    cost n x leaves (a projected descent visiting up to every node) agrees with a stated
    order 1 in n plus the leaves' exponent; n x leaves^2 and n^2 do not, and a fixed forest
    (leaves constant) gets no allowance, so n x leaves is then judged against 1 alone."""
    sizes = np.array([100.0, 300.0, 1000.0, 3000.0])
    growing = np.array([52.0, 99.0, 156.0, 195.0])
    cases = {"n_leaves": (sizes * growing, growing), "n_leaves2": (sizes * growing ** 2, growing),
             "n_squared": (sizes ** 2, growing),
             "fixed_forest": (sizes * growing, np.full(4, 156.0))}
    rows = []
    for method, (work, leaves) in cases.items():
        rows += [{**dict.fromkeys(POINT_COLUMNS), "method": method, "axis": "n", "size": x,
                  "x": x, "seconds": 1e-7 * w, "cpu_seconds": 1e-7 * w, "runs": 1,
                  "status": "ok", "mean_leaves": leaf}
                 for x, w, leaf in zip(sizes, work, leaves)]
    table = fit_exponents(pd.DataFrame(rows, columns=list(POINT_COLUMNS)),
                          {name: {"n": 1} for name in cases}).set_index("method")
    allowance = math.log(195 / 52) / math.log(30)  # 0.39
    assert table.at["n_leaves", "exponent"] == pytest.approx(1 + allowance, abs=0.05)
    assert table.at["n_leaves", "agrees"] == True  # noqa: E712 (a numpy bool)
    assert "grow 3.8x in leaves: judged against 1, + 0.39" in table.at["n_leaves", "note"]
    assert table.at["n_leaves2", "agrees"] == False  # noqa: E712 (1.78 against 1.39)
    assert table.at["n_squared", "agrees"] == False  # noqa: E712
    assert table.at["fixed_forest", "agrees"] == False  # noqa: E712 (1.39 against 1)
    assert "in leaves" not in table.at["fixed_forest", "note"]
