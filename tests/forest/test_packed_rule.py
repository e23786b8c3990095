"""The routing rule and its branch-free form agree on every kind of value."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from harness.forest.packed import goes_left, left_bit


@njit
def _both(x, cut, missing_left):
    return goes_left(x, cut, missing_left, 0), left_bit(x, cut, missing_left[0])


_ABOVE = np.nextafter(np.float32(0.5), np.float32(1.0))


@pytest.mark.parametrize("missing", [0, 1])
@pytest.mark.parametrize("x", [-np.inf, 0.25, 0.5, _ABOVE, np.inf, np.nan])
def test_left_bit_is_goes_left(x, missing):
    """Below, at and just above the threshold, infinities, and NaN sent either way."""
    rule, bit = _both(np.float32(x), np.float32(0.5), np.array([missing], dtype=np.uint8))
    expected = bool(missing) if np.isnan(x) else np.float32(x) <= np.float32(0.5)
    assert rule == expected
    assert bit == np.uint64(expected)
