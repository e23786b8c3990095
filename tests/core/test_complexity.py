"""Stated orders of cost as ranges (:mod:`harness.core.complexity`): the rule that the
log-log slope of a sum of power laws lies between their exponents, checked on random sums
(the property the scaling bench's verdicts rest on), and the reading of a statement."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.complexity import outside_range, stated_label, stated_range


def _slope(x: np.ndarray, t: np.ndarray) -> float:
    return float(np.polyfit(np.log(x), np.log(t), 1)[0])


@pytest.mark.parametrize("seed", range(20))
def test_least_squares_slope_of_a_sum_of_power_laws_lies_in_their_range(seed):
    rng = np.random.default_rng(seed)
    exponents = rng.uniform(-1.0, 3.0, size=rng.integers(2, 5))
    weights = 10.0 ** rng.uniform(-6, 2, size=exponents.size)  # terms of any relative size
    x = np.sort(10.0 ** rng.uniform(0, 5, size=rng.integers(2, 9)))
    x = np.unique(x)
    if x.size < 2:
        x = np.array([1.0, 10.0])
    t = (weights[:, None] * x[None, :] ** exponents[:, None]).sum(axis=0)
    slope = _slope(x, t)
    assert exponents.min() - 1e-9 <= slope <= exponents.max() + 1e-9
    assert outside_range(slope, exponents.min(), exponents.max()) == 0.0


def test_a_slope_outside_one_term_is_caught():
    """The rule can fail: t = p^2 + 1 is no sum of p^0 and p^1 terms."""
    x = np.array([10.0, 100.0, 1000.0])
    slope = _slope(x, 1.0 + x ** 2)
    assert outside_range(slope, 0.0, 1.0) > 0.9
    assert outside_range(-0.5, 0.0, 1.0) == -0.5
    assert outside_range(1.2, 1.0, 1.0) == pytest.approx(0.2)


def test_statements_read_as_ranges():
    assert stated_range(1) == (1.0, 1.0)
    assert stated_range((1, 0)) == (0.0, 1.0)
    assert stated_range(None) is None
    assert stated_label(0.0, 1.0) == "0 to 1"
    assert stated_label(1.5, 1.5) == "1.5"
    assert stated_label(float("nan"), float("nan")) == ""
    for bad in ((), ("1",), float("inf"), (0, float("nan"))):
        with pytest.raises(ValueError, match="a stated order is a finite exponent"):
            stated_range(bad)
