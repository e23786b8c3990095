"""A test oracle: Shapley values by enumerating subsets (Shapley 1953), for vector games."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np


def shapley_by_subsets(p: int, value: Callable[[tuple[int, ...]], np.ndarray]) -> np.ndarray:
    """phi_j = Σ_{S ⊆ others} |S|! (p − |S| − 1)! / p! [v(S ∪ {j}) − v(S)], shape (p, ...).

    ``value`` maps a tuple of player indices to a scalar or an array (e.g. one value per
    class); each coalition is evaluated once.
    """
    cache: dict[frozenset, np.ndarray] = {}

    def v(subset) -> np.ndarray:
        key = frozenset(subset)
        if key not in cache:
            cache[key] = np.asarray(value(tuple(sorted(key))), dtype=float)
        return cache[key]

    phi = np.zeros((p, *v(()).shape))
    for j in range(p):
        others = [k for k in range(p) if k != j]
        for size in range(p):
            weight = math.factorial(size) * math.factorial(p - size - 1) / math.factorial(p)
            for subset in itertools.combinations(others, size):
                phi[j] += weight * (v(subset + (j,)) - v(subset))
    return phi
