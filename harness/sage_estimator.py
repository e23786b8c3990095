"""Permutation sampling for SAGE (Covert, Lundberg, Lee 2020, Sec. 4) over coalition curves.

A sample is a row (x, y), drawn with replacement (with probability proportional to the row
weights, if any), and a uniformly random feature permutation π; its score for feature
j = π_k is the loss drop ℓ(f_{S_{k-1}}(x), y) − ℓ(f_{S_k}(x), y). The SAGE value is the mean
score; its standard error is tracked with Welford's algorithm and sampling stops, as in
sage's ``PermutationEstimator``, once max_j std_j / (max_j φ_j − min_j φ_j) < ``thresh`` (or
when ``max_permutations`` samples are reached). With ``antithetic=True`` each sample pairs π
with its reverse on the same row and scores their mean (a control variate: a feature early in
π is late in its reverse), which keeps the estimator unbiased and the std honest.

For every sample the scores sum to ℓ(f_∅(x), y) − ℓ(f_all(x), y), so the values sum to the
mean of that difference over the samples (efficiency).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

CE_CLIP = 1e-12  # sage's CrossEntropyLoss clips probabilities to [eps, 1 - eps]


def cross_entropy(curves: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """−log of the true class's probability (nats), clipped as sage does."""
    return -np.log(np.clip(curves, CE_CLIP, 1.0 - CE_CLIP))


def squared_error(curves: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """(f_S(x) − y)² for every coalition of every sample."""
    return (curves - targets[:, None]) ** 2


@dataclass
class SageEstimate:
    values: np.ndarray
    std: np.ndarray
    n_samples: int
    converged: bool
    mean_total_drop: float  # mean over samples of ℓ(f_∅) − ℓ(f_all): Σ values (efficiency)


class Welford:
    """Running mean and standard error of the mean of (m, p) batches (Welford's update,
    merged a batch at a time as in Chan, Golub, LeVeque 1979)."""

    def __init__(self, p: int) -> None:
        self.n = 0
        self.mean = np.zeros(p)
        self.squares = np.zeros(p)

    def update(self, batch: np.ndarray) -> None:
        size = batch.shape[0]
        if size == 0:
            return
        batch_mean = batch.mean(axis=0)
        delta = batch_mean - self.mean
        total = self.n + size
        self.mean = self.mean + delta * (size / total)
        self.squares = (self.squares + ((batch - batch_mean) ** 2).sum(axis=0)
                        + delta**2 * (self.n * size / total))
        self.n = total

    @property
    def std(self) -> np.ndarray:
        """Standard error of the mean (sage's ``ImportanceTracker.std``)."""
        return np.sqrt(self.squares) / max(self.n, 1)

    def converged(self, thresh: float) -> bool:
        if self.n < 2:
            return False
        gap = max(float(self.mean.max() - self.mean.min()), 1e-12)
        return float(self.std.max()) / gap < thresh


def estimate_sage(
    curves: Callable[[np.ndarray, np.ndarray], np.ndarray],
    loss: Callable[[np.ndarray, np.ndarray], np.ndarray],
    targets: np.ndarray,
    n_features: int,
    rng: np.random.Generator,
    *,
    thresh: float,
    batch_size: int,
    max_permutations: int,
    antithetic: bool = True,
    row_weights: np.ndarray | None = None,
    on_batch: Callable[[int, float], None] | None = None,
) -> SageEstimate:
    """Sample (row, permutation) pairs until convergence; see the module docstring.

    Parameters
    ----------
    curves : callable
        ``curves(rows, perms) -> (n_pairs, p + 1)``: f_{S_0}(x), ..., f_{S_p}(x) of each pair
        (the output column the loss reads).
    loss : callable
        ``loss(curves, targets_of_pairs) -> (n_pairs, p + 1)``.
    targets : ndarray (n,)
        What the loss compares with, per row (regression y, or unused for cross-entropy).
    on_batch : callable, optional
        Called after each batch with (samples so far, current convergence ratio).
    """
    n = targets.shape[0]
    probabilities = None
    if row_weights is not None:
        probabilities = np.asarray(row_weights, dtype=float) / np.sum(row_weights)
    tracker = Welford(n_features)
    drops: list[float] = []
    converged = False
    while tracker.n < max_permutations:
        size = min(batch_size, max_permutations - tracker.n)
        rows = rng.choice(n, size=size, p=probabilities)
        perms = np.argsort(rng.random((size, n_features)), axis=1)
        if antithetic:
            rows = np.concatenate([rows, rows])
            perms = np.concatenate([perms, perms[:, ::-1]])
        losses = loss(curves(rows, perms), targets[rows])
        scores = np.empty((len(rows), n_features))
        np.put_along_axis(scores, perms, losses[:, :-1] - losses[:, 1:], axis=1)
        total = losses[:, 0] - losses[:, -1]
        if antithetic:
            scores = (scores[:size] + scores[size:]) / 2
            total = (total[:size] + total[size:]) / 2
        tracker.update(scores)
        drops.extend(total.tolist())
        gap = max(float(tracker.mean.max() - tracker.mean.min()), 1e-12)
        if on_batch is not None:
            on_batch(tracker.n, float(tracker.std.max()) / gap)
        if tracker.converged(thresh):
            converged = True
            break
    return SageEstimate(values=tracker.mean.copy(), std=tracker.std, n_samples=tracker.n,
                        converged=converged, mean_total_drop=float(np.mean(drops)))
