"""``standard_error_of_mean``: the ``std`` of methods that average trees or rows."""

import numpy as np

from harness.core.types import standard_error_of_mean


def test_two_samples_one_apart_on_each_side_of_their_mean_give_one_half_of_their_gap():
    # std(ddof=1) of (1, 3) is sqrt(2); over sqrt(2) samples: 1
    assert np.allclose(standard_error_of_mean(np.array([[1.0, 0.0], [3.0, 0.0]])), [1.0, 0.0])


def test_it_shrinks_as_one_over_the_root_of_the_number_of_samples():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(40_000, 3))
    assert np.allclose(standard_error_of_mean(draws) * np.sqrt(len(draws)), 1.0, atol=0.02)


def test_fewer_than_two_samples_have_no_standard_error():
    assert standard_error_of_mean(np.ones((1, 4))) is None
    assert standard_error_of_mean(np.empty((0, 4))) is None
