"""Rank coding of rows against a model's split thresholds, for libraries that do not route in
scikit-learn's float32.

The kernels compare float32 rows with float32 thresholds (:meth:`ForestView.rows`). A library
that compares in float64 (HistGradientBoosting, LightGBM) or with ``x < t`` (XGBoost) is read
exactly by replacing each value with its rank among the split thresholds of its feature: with
the sorted distinct thresholds ``T_j`` of feature j,

- rule ``x <= t`` (left when at most the threshold): ``code(x) = #{t in T_j : t < x}``, and
  threshold ``T_j[k]`` becomes ``k``; then ``x <= T_j[k]`` iff ``code(x) <= k``;
- rule ``x < t`` (left when below): ``code(x) = #{t in T_j : t <= x}``, ``T_j[k]`` becomes
  ``k``; then ``x < T_j[k]`` iff ``code(x) <= k``.

Every comparison any tree of the model makes is preserved, so every kernel (paths, TreeSHAP,
SAGE, permutations: they only compare values with thresholds) gives the model's own routing.
Ranks are exact in float32 up to 2**24 thresholds per feature. NaN stays NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.core.errors import BadInputError

#: float32 represents every integer up to this exactly
MAX_THRESHOLDS = 2**24


@dataclass(frozen=True)
class ThresholdCoding:
    """The rank coding of one model (see the module docstring).

    Attributes
    ----------
    thresholds : tuple of ndarray
        Sorted distinct thresholds of each feature (float64; empty when never split on).
    rule : {"<=", "<"}
        Go left when ``x <= t`` or when ``x < t``.
    precision : {"float64", "float32"}
        The precision the library compares in (rows and thresholds are rounded to it).
    """

    thresholds: tuple[np.ndarray, ...]
    rule: str
    precision: str

    @classmethod
    def from_splits(cls, n_features: int, features: np.ndarray, thresholds: np.ndarray,
                    rule: str, precision: str) -> ThresholdCoding:
        """The coding of a model whose internal nodes split ``features`` at ``thresholds``."""
        if rule not in ("<=", "<") or precision not in ("float64", "float32"):
            raise ValueError(f"rule must be '<=' or '<' and precision 'float64' or 'float32'; "
                             f"got {rule!r}, {precision!r}.")
        features = np.asarray(features, dtype=np.int64)
        thresholds = _as_precision(thresholds, precision)
        per_feature = tuple(np.unique(thresholds[features == j]) for j in range(n_features))
        largest = max((t.size for t in per_feature), default=0)
        if largest > MAX_THRESHOLDS:
            raise BadInputError(f"A feature is split at {largest} distinct thresholds; the "
                                f"rank coding holds at most {MAX_THRESHOLDS} per feature.")
        return cls(per_feature, rule, precision)

    @property
    def _side(self) -> str:
        return "left" if self.rule == "<=" else "right"

    def code_thresholds(self, features: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
        """The rank of each split's threshold among its feature's thresholds (float64)."""
        codes = np.zeros(len(features), dtype=np.float64)
        thresholds = _as_precision(thresholds, self.precision)
        for j, levels in enumerate(self.thresholds):
            at = np.flatnonzero(np.asarray(features) == j)
            if at.size:
                codes[at] = np.searchsorted(levels, thresholds[at], side="left")
        return codes

    def encode(self, X: np.ndarray) -> np.ndarray:
        """Rows (n, p) as float32 ranks, C-contiguous; NaN stays NaN."""
        X = _as_precision(X, self.precision)
        codes = np.empty(X.shape, dtype=np.float32)
        for j, levels in enumerate(self.thresholds):
            column = X[:, j]
            codes[:, j] = np.searchsorted(levels, column, side=self._side)
            codes[np.isnan(column), j] = np.nan
        return codes


def _as_precision(values: np.ndarray, precision: str) -> np.ndarray:
    """float64 values, rounded through float32 first where the library compares in float32."""
    values = np.asarray(values, dtype=np.float64)
    return values.astype(np.float32).astype(np.float64) if precision == "float32" else values
