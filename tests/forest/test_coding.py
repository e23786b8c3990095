"""The rank coding preserves every comparison of the model it codes, NaN included."""

import numpy as np
import pytest

from harness.forest.coding import ThresholdCoding


def _draws(rng, thresholds):
    # values on, just beside (one float32 and one float64 ulp) and between the thresholds
    near = np.concatenate([thresholds, np.nextafter(thresholds, np.inf),
                           np.nextafter(thresholds, -np.inf),
                           np.nextafter(thresholds.astype(np.float32), np.float32(np.inf)),
                           np.nextafter(thresholds.astype(np.float32), np.float32(-np.inf))])
    return np.concatenate([near, rng.normal(size=200), [np.nan, -np.inf, np.inf]])


@pytest.mark.parametrize("rule", ["<=", "<"])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_codes_compare_as_the_library_does(rule, precision):
    rng = np.random.default_rng(0)
    features = np.array([0, 0, 1, 0, 1, 1])
    thresholds = rng.normal(size=6)
    thresholds[3] = thresholds[0]  # a threshold shared by two nodes
    coding = ThresholdCoding.from_splits(3, features, thresholds, rule, precision)
    coded_thresholds = coding.code_thresholds(features, thresholds)
    x = _draws(rng, thresholds)
    X = np.column_stack([x, x, x])
    codes = coding.encode(X)
    assert codes.dtype == np.float32 and codes.flags.c_contiguous
    cast = x.astype(np.float32).astype(np.float64) if precision == "float32" else x
    for node, (j, t) in enumerate(zip(features, thresholds)):
        t_lib = np.float64(np.float32(t)) if precision == "float32" else t
        library = cast <= t_lib if rule == "<=" else cast < t_lib
        ours = codes[:, j] <= coded_thresholds[node]
        np.testing.assert_array_equal(ours[~np.isnan(x)], library[~np.isnan(x)])
    assert np.isnan(codes[np.isnan(x)]).all()
    assert not np.isnan(codes[:, 2]).any() or np.isnan(x).any()  # unsplit feature: all rank 0
    assert set(np.unique(codes[~np.isnan(x), 2])) == {0.0}
