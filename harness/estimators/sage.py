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

Control variates (``controls``): most of the variance of a score comes from the row, not from
the permutation, and per-row quantities whose mean over all rows is known exactly can absorb
it. Given such quantities z(x) (q per row, with exact mean μ), the regression estimator
(Owen 2013, *Monte Carlo theory, methods and examples*, Sec. 8.9; Glasserman 2004, Sec. 4.1)

    φ̂_j = mean(s_j) − β̂_jᵀ (mean(z) − μ),   β̂_j the least-squares slope of s_j on z,

is consistent, and its standard error is σ̂_j (1/N + dᵀ C_zz⁻¹ d)^½ with σ̂_j² the residual
variance (N − q − 1 degrees of freedom), d = mean(z) − μ and C_zz the centred cross-product
of z. Tree SAGE uses the row's total drop ℓ(f_∅) − ℓ(f_all) and its first-step drops
ℓ(f_∅) − ℓ(f_{j}) for every j, all read from per-forest tables. The controls are the same for
every feature, so the slopes sum to that of Σ_j s_j = total drop on z, which is exactly 1 on
the total drop and 0 elsewhere: the values then sum to the exact mean total drop over all
rows (efficiency, now without sampling error).

Position controls (``position_controls``): the rest of a score's variance comes mostly from
where its feature falls in π (a feature entering early drops the loss by about its first-step
drop, entering late by less). The permutation is drawn independently of the row, so any
product g(π) h(x) has the exact mean E[g(π)] E[h(x)]: each feature's rank r_j (mean
(p − 1)/2), [r_j = 0] d_j(x) (mean μ_j / p) and r_j d_j(x) (mean (p − 1) μ_j / 2), with d_j
the first-step drop and μ_j its exact mean over the rows, join the row controls (4p + 1 in
all). On Friedman #1 (RF 300, 8192 samples) they leave 0.162 of the largest score variance
against 0.293 with the row controls alone: 1.8x fewer samples to the same threshold.

Surrogate controls (``surrogate``): the drops of the same sample in an additive game whose
scores are closed-form, f̃_S(x) = f_∅(x) + Σ_{j∈S} a_j(x) under the squared loss
(:class:`AdditiveSurrogate`; a from a local additive explanation), follow the position and the
row together; their mean over π is exact for every row. With the forest's Saabas
contributions as a, on Friedman #1 the row and surrogate controls leave 0.047 of the plain
means' largest score variance (0.044 with the position controls too) against 0.293 with the
row controls alone: 6x fewer samples to the same threshold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

CE_CLIP = 1e-12  # sage's CrossEntropyLoss clips probabilities to [eps, 1 - eps]
#: A batch sized to reach the threshold aims this much past the predicted sample count: on
#: Friedman #1 an exact aim fell a few samples short, and a quarter batch more followed.
PREDICTION_MARGIN = 1.05
#: Samples whose controls are built and merged at once: with 4p + 1 controls, a whole batch
#: of them (and its centred copy) would be the estimator's largest arrays.
UPDATE_ROWS = 64
#: a score whose residual sum of squares is at most this share of its centred sum of
#: squares is fitted exactly by the controls (rounding leaves about 1e-13 of it)
EXACT_FIT = 1e-9


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

    def update(self, batch: np.ndarray, controls: np.ndarray | None = None) -> None:
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
    def values(self) -> np.ndarray:
        return self.mean

    @property
    def std(self) -> np.ndarray:
        """Standard error of the mean (sage's ``ImportanceTracker.std``)."""
        return np.sqrt(self.squares) / max(self.n, 1)

    def ratio(self) -> float:
        """sage's convergence ratio max std / (max value − min value)."""
        gap = max(float(self.values.max() - self.values.min()), 1e-12)
        return float(self.std.max()) / gap

    def converged(self, thresh: float) -> bool:
        return self.n >= 2 and self.ratio() < thresh


class RegressionMeans(Welford):
    """Running regression estimator of the mean scores with control variates of known mean
    (see the module docstring): scores and controls are merged into one running mean and
    co-moment matrix (Chan, Golub, LeVeque 1979), and the slopes are fitted when read."""

    def __init__(self, p: int, control_means: np.ndarray, leading: int | None = None) -> None:
        """``leading``: a number of leading controls that the fit uses alone while the
        samples are too few for all of them (default: all or none)."""
        self.p = p
        self.control_means = np.asarray(control_means, dtype=float)
        self.leading = self.control_means.size if leading is None else leading
        self.n = 0
        size = p + self.control_means.size
        self.joint_mean = np.zeros(size)
        self.comoment = np.zeros((size, size))
        self._fitted: tuple[np.ndarray, np.ndarray] | None = None

    def update(self, batch: np.ndarray, controls: np.ndarray | None = None) -> None:
        size = batch.shape[0]
        if size == 0:
            return
        centred = np.hstack([batch, controls])
        batch_mean = centred.mean(axis=0)
        centred -= batch_mean
        delta = batch_mean - self.joint_mean
        total = self.n + size
        self.joint_mean = self.joint_mean + delta * (size / total)
        # in place: one (p + q)^2 temporary at a time (4p + 1 controls make them large)
        self.comoment += centred.T @ centred
        self.comoment += np.outer(delta, delta * (self.n * size / total))
        self.n = total
        self._fitted = None

    @property
    def mean(self) -> np.ndarray:
        return self.joint_mean[:self.p]

    def _fit(self) -> tuple[np.ndarray, np.ndarray]:
        """The adjusted values and their standard errors, fitted once per update on the
        controls that the samples allow (:meth:`_usable`)."""
        if self._fitted is None:
            self._fitted = self._solve()
        return self._fitted

    def _usable(self) -> int:
        """How many controls the fit uses: all of them once the samples are more than twice
        as many, else the ``leading`` ones on the same condition, else none (plain means)."""
        for count in (self.control_means.size, self.leading):
            if self.n > 2 * (count + 1):
                return count
        return 0

    def _solve(self) -> tuple[np.ndarray, np.ndarray]:
        p, n = self.p, self.n
        scores = self.comoment[:p, :p].diagonal()
        plain_std = np.sqrt(scores) / max(n, 1)  # the plain means' (Welford's)
        used = self._usable()
        if used == 0:
            return self.mean.copy(), plain_std
        zz, zs = self.comoment[p:p + used, p:p + used], self.comoment[p:p + used, :p]
        scale = np.sqrt(zz.diagonal())  # solved on unit-variance controls, for conditioning
        scale[scale == 0] = 1.0
        # pseudo-inverse and rank from one eigendecomposition (collinear controls allowed),
        # applied as V diag(1/λ) Vᵀ without forming it (one q x q array besides V)
        unit = zz / scale[:, None]
        unit /= scale
        eigenvalues, vectors = np.linalg.eigh(unit)
        del unit
        kept = eigenvalues > 1e-12 * max(float(np.abs(eigenvalues).max()), 1e-300)
        vectors, eigenvalues = vectors[:, kept], eigenvalues[kept]
        rank = int(kept.sum())
        slopes = vectors @ ((vectors.T @ (zs / scale[:, None])) / eigenvalues[:, None])
        slopes /= scale[:, None]
        gap = self.joint_mean[p:p + used] - self.control_means[:used]
        values = self.mean - slopes.T @ gap
        unexplained = scores - np.sum(zs * slopes, axis=0)
        residual = np.maximum(unexplained, 0.0) / (n - rank - 1)
        projected = vectors.T @ (gap / scale)
        leverage = 1.0 / n + float(np.sum(projected**2 / eigenvalues))
        std = np.sqrt(residual * leverage)
        # A score the controls fit exactly leaves no residual to estimate its error from:
        # a rare feature whose few nonzero scores are its own first-step drops (digits'
        # pixel 48, nonzero in 4 of 1797 rows, got -8e-5 with a std of 0). The plain mean's
        # standard error is reported there: the controls' reduction cannot be measured.
        exact_fit = (scores > 0) & (unexplained <= EXACT_FIT * scores)
        std[exact_fit] = plain_std[exact_fit]
        return values, std

    @property
    def values(self) -> np.ndarray:
        return self._fit()[0]

    @property
    def std(self) -> np.ndarray:
        return self._fit()[1]

    def ratio(self) -> float:
        values, std = self._fit()
        return float(std.max()) / max(float(values.max() - values.min()), 1e-12)

    def converged(self, thresh: float) -> bool:
        return self._usable() > 0 and self.ratio() < thresh


def position_means(row_means: np.ndarray, n_features: int) -> np.ndarray:
    """Exact means of :func:`position_terms` given the exact means of the row controls
    (total drop, then the first-step drops of the ``n_features`` features)."""
    first = np.asarray(row_means, dtype=float)[1:n_features + 1]
    middle = (n_features - 1) / 2
    return np.concatenate([np.full(n_features, middle), first / n_features, middle * first])


def position_terms(row_controls: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """Each sample's feature ranks r_j in its permutation, [r_j = 0] d_j and r_j d_j, with
    d_j the first-step drops (columns 1..p of the row controls), shape (m, 3p): see the
    module docstring."""
    m, p = perms.shape
    ranks = np.empty((m, p))
    np.put_along_axis(ranks, perms, np.broadcast_to(np.arange(p, dtype=float), (m, p)),
                      axis=1)
    first = row_controls[:, 1:p + 1]
    return np.hstack([ranks, (ranks == 0) * first, ranks * first])


@dataclass(frozen=True)
class AdditiveSurrogate:
    """An additive stand-in for the coalition values, f̃_S(x) = f_∅(x) + Σ_{j∈S} a_j(x),
    under the squared loss against a target t(x), whose SAGE game has closed-form scores.

    With b = f_∅(x) − t(x) and A_π(j) the sum of a over the features before j in π, feature
    j's loss drop is (b + A_π(j))² − (b + A_π(j) + a_j)² = −a_j² − 2 a_j (b + A_π(j)); a
    feature k ≠ j precedes j in half the permutations, so its mean over π is
    −a_j (2b + Σ_k a_k), exactly. These drops track the true ones closely when a is a local
    additive explanation (Saabas: the forest's own path contributions), and their exact means
    make them control variates (module docstring).

    Attributes
    ----------
    contributions : ndarray of shape (n, p)
        a_j(x) of every row.
    offset : ndarray of shape (n,)
        b(x) = f_∅(x) − t(x).
    """

    contributions: np.ndarray
    offset: np.ndarray

    def drops(self, rows: np.ndarray, perms: np.ndarray) -> np.ndarray:
        """The surrogate's loss drops of each sample's features, shape (m, p)."""
        a = self.contributions[rows]
        ordered = np.take_along_axis(a, perms, axis=1)
        before = np.empty_like(a)
        np.put_along_axis(before, perms, np.cumsum(ordered, axis=1) - ordered, axis=1)
        return -a * (a + 2.0 * (self.offset[rows, None] + before))

    def mean_drops(self, row_weights: np.ndarray | None = None) -> np.ndarray:
        """The exact mean of :meth:`drops` over the rows (weighted) and permutations, (p,)."""
        a = self.contributions
        per_row = -a * (2.0 * self.offset[:, None] + a.sum(axis=1, keepdims=True))
        return np.average(per_row, axis=0, weights=row_weights)


def next_batch_size(tracker: Welford, thresh: float, batch_size: int) -> int:
    """Samples of the next batch: ``batch_size``, or fewer (at least a quarter of it) when
    the convergence ratio, which falls as 1/√n, predicts the threshold sooner: n (ratio /
    thresh)² samples in all, times PREDICTION_MARGIN. The rule is checked after every batch
    either way; a batch sized to the prediction only spares the samples that a whole batch
    would draw past it (half a batch on average)."""
    ratio = tracker.ratio()
    if not np.isfinite(ratio) or ratio <= 0:
        return batch_size
    remaining = tracker.n * (PREDICTION_MARGIN * (ratio / thresh) ** 2 - 1.0)
    return int(min(batch_size, max(-(-batch_size // 4), np.ceil(remaining))))


def _sample_controls(controls: np.ndarray, surrogate: AdditiveSurrogate | None,
                     positions: bool, rows: np.ndarray, perms: np.ndarray, part: slice,
                     mirror: int) -> np.ndarray:
    """The controls of samples ``part`` of a batch (the rows', the surrogate's drops, the
    position terms), each averaged with its antithetic twin ``mirror`` samples further when
    ``mirror`` is not 0 (as the scores are)."""
    def of(index: slice) -> np.ndarray:
        row_controls = controls[rows[index]]
        pieces = [row_controls]
        if surrogate is not None:
            pieces.append(surrogate.drops(rows[index], perms[index]))
        if positions:
            pieces.append(position_terms(row_controls, perms[index]))
        return np.hstack(pieces) if len(pieces) > 1 else row_controls

    sample = of(part)
    if mirror:
        sample = (sample + of(slice(part.start + mirror, part.stop + mirror))) / 2
    return sample


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
    controls: np.ndarray | None = None,
    position_controls: bool = False,
    surrogate: AdditiveSurrogate | None = None,
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
    controls : ndarray (n, q), optional
        Control variates of every row, column 0 the row's total drop ℓ(f_∅) − ℓ(f_all); their
        exact means are taken over the rows (weighted by ``row_weights``). ``mean_total_drop``
        is then the exact mean of column 0, which the values sum to.
    position_controls : bool
        With ``controls`` whose columns 1..p are the first-step drops ℓ(f_∅) − ℓ(f_{j}):
        add each sample's feature ranks and their products with those drops (exact means
        from the permutation's independence of the row; module docstring).
    surrogate : AdditiveSurrogate, optional
        With ``controls``: add each sample's loss drops in this additive game, whose exact
        means are known (:class:`AdditiveSurrogate`).
    on_batch : callable, optional
        Called after each batch with (samples so far, current convergence ratio).
    """
    n = targets.shape[0]
    probabilities = None
    if row_weights is not None:
        probabilities = np.asarray(row_weights, dtype=float) / np.sum(row_weights)
    if controls is None:
        tracker = Welford(n_features)
    else:
        row_means = np.average(controls, axis=0, weights=row_weights)
        means = [row_means]
        if surrogate is not None:
            means.append(surrogate.mean_drops(row_weights))
        leading = sum(len(part) for part in means)
        if position_controls:
            means.append(position_means(row_means, n_features))
        # the row and surrogate controls alone until the samples allow the position terms
        tracker = RegressionMeans(n_features, np.concatenate(means), leading=leading)
    drops: list[float] = []
    converged = False
    size = batch_size
    while tracker.n < max_permutations:
        size = min(size, max_permutations - tracker.n)
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
        for first in range(0, size, UPDATE_ROWS):  # the controls of a few samples at a time
            part = slice(first, min(size, first + UPDATE_ROWS))
            tracker.update(scores[part], None if controls is None else _sample_controls(
                controls, surrogate, position_controls, rows, perms, part,
                size if antithetic else 0))
        drops.extend(total.tolist())
        if on_batch is not None:
            on_batch(tracker.n, tracker.ratio())
        if tracker.converged(thresh):
            converged = True
            break
        size = next_batch_size(tracker, thresh, batch_size)
    mean_total_drop = float(np.mean(drops)) if controls is None else float(
        tracker.control_means[0])
    return SageEstimate(values=tracker.values.copy(), std=tracker.std, n_samples=tracker.n,
                        converged=converged, mean_total_drop=mean_total_drop)
