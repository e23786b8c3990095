"""Breiman's 7-segment LED digits, with the exact importances of Louppe et al. (2013)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from harness.core.dataset import DatasetSource
from harness.core.errors import InvalidParameterError
from harness.core.params import Interval, NoneValue, Param
from harness.core.types import Dataset, GroundTruth, TruthVector, sage_population_truth
from harness.oracle.finite_table import DiscreteDistribution

SEGMENTS = ("top", "upper-left", "upper-right", "middle", "lower-left", "lower-right", "bottom")

# Row d: the segments lit for digit d, in the order of SEGMENTS (X1..X7).
DIGIT_SEGMENTS = np.array(
    [
        [1, 1, 1, 0, 1, 1, 1],  # 0
        [0, 0, 1, 0, 0, 1, 0],  # 1
        [1, 0, 1, 1, 1, 0, 1],  # 2
        [1, 0, 1, 1, 0, 1, 1],  # 3
        [0, 1, 1, 1, 0, 1, 0],  # 4
        [1, 1, 0, 1, 0, 1, 1],  # 5
        [1, 1, 0, 1, 1, 1, 1],  # 6
        [1, 0, 1, 0, 0, 1, 0],  # 7
        [1, 1, 1, 1, 1, 1, 1],  # 8
        [1, 1, 1, 1, 0, 1, 1],  # 9
    ],
    dtype=np.int64,
)

# 2**21 admits the 24-variable LED of Louppe et al. (2013) (7 segments + 17 irrelevant bits,
# 10 * 2**17 rows) as a population
MAX_POPULATION_ROWS = 2**21


def _all_bits(width: int) -> np.ndarray:
    """Every 0/1 vector of length ``width``, shape (2**width, width)."""
    return ((np.arange(2**width)[:, None] >> np.arange(width)[::-1]) & 1).astype(np.int64)


def led_population(noise: float, n_irrelevant: int = 0):
    """Support and probabilities of the LED distribution.

    Digits are equiprobable; each segment is flipped independently with probability
    ``noise``; the ``n_irrelevant`` extra bits are independent fair coins.

    Returns
    -------
    X : ndarray of shape (m, 7 + n_irrelevant)
    y : ndarray of shape (m,)
    prob : ndarray of shape (m,)
    """
    if noise == 0:
        X, y, prob = DIGIT_SEGMENTS, np.arange(10), np.full(10, 0.1)
    else:
        patterns = _all_bits(7)
        flips = (patterns[None, :, :] != DIGIT_SEGMENTS[:, None, :]).sum(axis=2)
        X = np.tile(patterns, (10, 1))
        y = np.repeat(np.arange(10), len(patterns))
        prob = 0.1 * (noise**flips * (1.0 - noise) ** (7 - flips)).ravel()
    if n_irrelevant:
        bits = _all_bits(n_irrelevant)
        X = np.hstack([np.repeat(X, len(bits), axis=0), np.tile(bits, (len(X), 1))])
        y = np.repeat(y, len(bits))
        prob = np.repeat(prob, len(bits)) / len(bits)
    return X, y, prob


@functools.lru_cache(maxsize=8)
def _segment_distribution(noise: float) -> DiscreteDistribution:
    return DiscreteDistribution(*led_population(noise))


class LED(DatasetSource):
    """Seven-segment display of the digits 0-9 (Breiman et al. 1984; Louppe et al. 2013).

    Features X1..X7 are the segments, in this order: X1 top, X2 upper-left, X3 upper-right,
    X4 middle, X5 lower-left, X6 lower-right, X7 bottom (7 with three segments, 6 and 9 with
    six). This numbering reproduces the "Thm. 1" column of the LED table of Louppe et al.
    (2013): 0.412, 0.581, 0.531, 0.542, 0.656, 0.225, 0.372 (sum log2 10 = 3.321). The table
    truncates to 3 decimals (exact values 0.41269, 0.58154, 0.53116, 0.54213, 0.65658,
    0.22582, 0.37201); no other numbering of the segments matches it.

    Extra features R1, R2, ... are independent fair bits. Ground truth is for the population
    distribution: Louppe et al. (2013), Thm 1, Eq. 2 ("thm1") and Sutera et al. (2021),
    Thm 2, Eq. 10 at each row of X ("thm2_local"). The irrelevant bits are null players, so
    they get 0 and leave the segments' values unchanged (Louppe et al. 2013, Thm 3 and 5;
    Sutera et al. 2021, Sec. 4.3): both are computed on the 7 segments alone.
    """

    name = "led"
    task = "classification"
    summary = "7-segment LED digits (10 classes); exact Thm 1 / Thm 2 importances"
    parameters = {
        "n_samples": Param(
            None,
            (NoneValue(), Interval(int, 1, None)),
            "None: the population as an explicit distribution (weighted rows); "
            "an int: that many rows drawn at random",
        ),
        "noise": Param(
            0.0, (Interval(float, 0.0, 0.5),), "probability that each segment is flipped"
        ),
        "n_irrelevant": Param(
            0, (Interval(int, 0, None),), "number of extra independent uniform random bits"
        ),
    }

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        if self.params["n_samples"] is None:
            base_rows = 10 * (2**7 if self.params["noise"] > 0 else 1)
            limit = int(np.log2(MAX_POPULATION_ROWS // base_rows))
            if self.params["n_irrelevant"] > limit:
                raise InvalidParameterError(
                    f"The 'n_irrelevant' parameter of led must be an int in [0, {limit}] "
                    f"when n_samples=None and noise={self.params['noise']!r} (the population "
                    f"has {base_rows} * 2**n_irrelevant rows, at most {MAX_POPULATION_ROWS}). "
                    f"Got {self.params['n_irrelevant']!r} instead."
                )

    def _load(self, params: dict[str, Any], seed: int) -> Dataset:
        noise, n_irrelevant, n = params["noise"], params["n_irrelevant"], params["n_samples"]
        weight = None
        if n is None:
            X, y, weight = led_population(noise, n_irrelevant)
        else:
            rng = np.random.default_rng(seed)
            y = rng.integers(0, 10, size=n)
            segments = DIGIT_SEGMENTS[y] ^ (rng.random((n, 7)) < noise)
            X = np.hstack([segments, rng.integers(0, 2, size=(n, n_irrelevant))])
        X = X.astype(np.float64)
        y = y.astype(np.int64)
        segments_only = _segment_distribution(noise)
        zeros = np.zeros(n_irrelevant)
        thm1 = np.concatenate([segments_only.thm1(), zeros])
        local = segments_only.local_thm2(X[:, :7])
        local = np.hstack([local, np.zeros((len(X), n_irrelevant))])
        truth = GroundTruth(
            relevant=np.array([True] * 7 + [False] * n_irrelevant),
            quantities={
                "thm1": TruthVector(
                    thm1,
                    unit="bits",
                    description="Asymptotic MDI of totally randomized trees, Louppe et al. "
                    "(2013), Thm 1, Eq. 2",
                    compares_to=("mdi",),
                ),
                "sage_population": sage_population_truth(thm1),
                "thm2_local": TruthVector(
                    local,
                    unit="bits",
                    description="Asymptotic local MDI at each row, Sutera et al. (2021), "
                    "Thm 2, Eq. 10",
                    compares_to=("local_mdi",),
                ),
            },
        )
        names = [f"X{k}" for k in range(1, 8)] + [f"R{k}" for k in range(1, n_irrelevant + 1)]
        return Dataset(
            name=self.name,
            X=X,
            y=y,
            task="classification",
            feature_names=names,
            truth=truth,
            sample_weight=weight,
            population=n is None,
            description="7-segment LED digits; segments X1..X7 = " + ", ".join(SEGMENTS),
        )
