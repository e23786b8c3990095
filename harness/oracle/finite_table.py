"""Exact information-theoretic oracle for a discrete distribution given as a finite table.

The distribution is the list of its support rows ``(x, y)`` with their probabilities. From it,
:class:`DiscreteDistribution` computes exact (conditional) entropies in bits and the asymptotic
MDI importances of totally randomized trees:

* global: Louppe et al. (2013), Thm 1, Eq. 2, optionally truncated at depth ``d`` as in
  Geurts (2016, "pruning all trees up to depth D = d");
* local: Sutera et al. (2021), Thm 2, Eq. 10.

Both are Shapley values (Sutera et al. 2021, Thm 1 and Eq. 13), which :func:`shapley_values`
computes by the independent route of enumerating every permutation of the players.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

MAX_EXACT_FEATURES = 20  # the sums over all 2**p subsets stop being practical beyond this
MAX_PERMUTATION_FEATURES = 8  # 8! = 40320 permutations
_PROB_TOLERANCE = 1e-9


def shapley_values(p: int, value_fn: Callable[[tuple[int, ...]], float]) -> np.ndarray:
    """Shapley values of a p-player game (p <= 8) by enumerating all p! orderings.

    ``phi_m`` is the mean, over all orderings, of the marginal contribution
    ``v(S + {m}) - v(S)`` of player ``m`` to the set ``S`` of players before it (Shapley 1953;
    Sutera et al. 2021, Eq. 1 written over permutations). ``value_fn`` maps a sorted tuple of
    player indices to the value of that coalition. Returns an array of shape (p,).
    """
    if not isinstance(p, (int, np.integer)) or not 1 <= p <= MAX_PERMUTATION_FEATURES:
        raise ValueError(
            f"Brute-force Shapley values need 1 <= p <= {MAX_PERMUTATION_FEATURES} players "
            f"({MAX_PERMUTATION_FEATURES}! orderings at most); got p={p!r}."
        )
    members = [tuple(j for j in range(p) if mask >> j & 1) for mask in range(2**p)]
    value = np.array([float(value_fn(players)) for players in members])
    phi = np.zeros(p)
    for order in itertools.permutations(range(p)):
        mask = 0
        for player in order:
            phi[player] += value[mask | 1 << player] - value[mask]
            mask |= 1 << player
    return phi / math.factorial(p)


def _subset_coefficients(p: int, depth: int | None) -> np.ndarray:
    """Coefficient of ``H(Y | X_M)`` in the importance of each feature, for every subset M.

    Rewriting Eq. 2 as ``sum_B w(|B|) [H(Y|B) - H(Y|B, X_m)]``, the entropy given the subset
    ``M`` (bit j of the row index set iff X_j is in M) enters with ``+w(|M|)`` for ``m`` not in
    ``M`` and with ``-w(|M| - 1)`` for ``m`` in ``M``. Only terms with ``|B| < depth`` are kept.
    """
    d = p if depth is None else min(depth, p)
    inside = ((np.arange(2**p)[:, None] >> np.arange(p)) & 1).astype(bool)
    size = inside.sum(axis=1)
    # w(k) = 1 / (C(p, k) (p - k)) for k < p (Eq. 2); w(p) is never used: 0 pads the index
    weights = np.array([1.0 / (math.comb(p, k) * (p - k)) for k in range(p)] + [0.0])
    plus = np.where(size < d, weights[np.minimum(size, p)], 0.0)
    minus = np.where((size >= 1) & (size <= d), weights[np.maximum(size - 1, 0)], 0.0)
    return np.where(inside, -minus[:, None], plus[:, None])


class DiscreteDistribution:
    """A finite joint distribution of discrete inputs ``X`` and a discrete output ``Y``.

    Parameters
    ----------
    X : array-like of shape (n, p)
        Support rows; any values that ``numpy.unique`` can sort (ints, floats, strings).
    y : array-like of shape (n,)
        Output value of each row.
    prob : array-like of shape (n,)
        Probability of each row: non-negative, summing to 1. Duplicate ``(x, y)`` rows are
        merged by adding their probabilities; rows of probability 0 are not in the support.

    Notes
    -----
    All entropies are in bits (log base 2). Sums over subsets walk the 2**p subsets once,
    depth first, refining a dense group code of the rows by one column per step.
    """

    def __init__(self, X, y, prob) -> None:
        X, y, prob = np.asarray(X), np.asarray(y), np.asarray(prob, dtype=float)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"X must be a non-empty 2-D array (n, p); got shape {X.shape}.")
        n = X.shape[0]
        if y.shape != (n,) or prob.shape != (n,):
            raise ValueError(
                f"y and prob must both have shape ({n},) to match X of shape {X.shape}; "
                f"got y of shape {y.shape} and prob of shape {prob.shape}."
            )
        valid = np.isfinite(prob) & (prob >= 0)
        if not np.all(valid):
            raise ValueError(f"prob must be finite and >= 0 everywhere; got {prob[~valid][0]!r}.")
        if abs(prob.sum() - 1.0) > _PROB_TOLERANCE:
            raise ValueError(
                f"prob must sum to 1 (tolerance {_PROB_TOLERANCE:g}); got a sum of {prob.sum()!r}."
            )
        keep = prob > 0
        self._support_x = X[keep]
        codes = [np.unique(column, return_inverse=True)[1].ravel() for column in X[keep].T]
        y_codes = np.unique(y[keep], return_inverse=True)[1].ravel()
        rows, inverse = np.unique(np.column_stack([*codes, y_codes]), axis=0, return_inverse=True)
        self._inverse = inverse.ravel()
        self._x, self._y = rows[:, :-1].astype(np.int64), rows[:, -1].astype(np.int64)
        self._prob = np.bincount(self._inverse, weights=prob[keep], minlength=len(rows))
        self._card = self._x.max(axis=0) + 1
        self._n_y = int(self._y.max()) + 1
        self._row_of_x: dict[tuple, int] | None = None
        self._entropy_cache: dict[tuple[int, ...], float] = {}
        self._all_entropies: np.ndarray | None = None

    @classmethod
    def from_dataset(cls, dataset) -> DiscreteDistribution:
        """The distribution whose support is the rows of a :class:`~harness.core.types.Dataset`.

        Row probabilities are ``dataset.sample_weight`` normalised to sum 1 if it is set,
        else ``1 / n`` each (the empirical distribution).
        """
        weight = dataset.sample_weight
        weight = np.ones(len(dataset.X)) if weight is None else np.asarray(weight, dtype=float)
        return cls(dataset.X, dataset.y, weight / weight.sum())

    @property
    def n_features(self) -> int:
        return int(self._x.shape[1])

    @property
    def support_size(self) -> int:
        """Number of distinct ``(x, y)`` rows of positive probability."""
        return int(self._x.shape[0])

    def _subset(self, S: Iterable[int]) -> tuple[int, ...]:
        subset = tuple(sorted({int(j) for j in S}))
        if subset and (subset[0] < 0 or subset[-1] >= self.n_features):
            raise ValueError(
                f"Feature indices must be in [0, {self.n_features - 1}]; got {subset}."
            )
        return subset

    def _refine(self, group: np.ndarray, k: int, j: int) -> tuple[np.ndarray, int]:
        """Dense group code of the rows by (current group, value of X_j)."""
        key = group * self._card[j] + self._x[:, j]
        size = k * int(self._card[j])
        if size <= max(8 * len(key), 1 << 20):
            present = np.zeros(size, dtype=bool)
            present[key] = True
            remap = np.cumsum(present) - 1
            return remap[key], int(remap[-1] + 1)
        uniques, inverse = np.unique(key, return_inverse=True)
        return inverse.ravel(), len(uniques)

    def _group_entropies(self, group: np.ndarray, k: int) -> tuple[np.ndarray, float]:
        """Entropy of Y within each group, and its mean ``H(Y | group)``."""
        joint = np.bincount(
            group * self._n_y + self._y, weights=self._prob, minlength=k * self._n_y
        ).reshape(k, self._n_y)
        marginal = joint.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(joint > 0, -joint * np.log2(joint / marginal[:, None]), 0.0)
        per_group = terms.sum(axis=1)
        return per_group / marginal, float(per_group.sum())

    def _groups(self, subset: tuple[int, ...]) -> tuple[np.ndarray, int]:
        group, k = np.zeros(self.support_size, dtype=np.int64), 1
        for j in subset:
            group, k = self._refine(group, k, j)
        return group, k

    def _walk(self) -> Iterator[tuple[int, np.ndarray, int]]:
        """Yield ``(mask, group code, number of groups)`` for all 2**p subsets, depth first."""
        p = self.n_features

        def visit(mask: int, group: np.ndarray, k: int, start: int):
            yield mask, group, k
            for j in range(start, p):
                child, k_child = self._refine(group, k, j)
                yield from visit(mask | (1 << j), child, k_child, j + 1)

        yield from visit(0, *self._groups(()), 0)

    def entropy(self, S: Sequence[int] = ()) -> float:
        """Conditional entropy ``H(Y | X_S)`` in bits; ``S = ()`` gives ``H(Y)``."""
        subset = self._subset(S)
        if subset not in self._entropy_cache:
            self._entropy_cache[subset] = self._group_entropies(*self._groups(subset))[1]
        return self._entropy_cache[subset]

    def mutual_information(self, S: Sequence[int]) -> float:
        """``I(Y; X_S) = H(Y) - H(Y | X_S)`` in bits."""
        return self.entropy(()) - self.entropy(S)

    def conditional_mutual_information(self, m: int, B: Sequence[int] = ()) -> float:
        """``I(X_m; Y | X_B) = H(Y | X_B) - H(Y | X_B, X_m)`` in bits."""
        B = self._subset(B)
        return self.entropy(B) - self.entropy(B + self._subset((m,)))

    def local_entropy(self, S: Sequence[int], x_row) -> float:
        """``H(Y | X_S = x_S)``: entropy of Y in the event ``X_S = x_S`` (not averaged)."""
        group, k = self._groups(self._subset(S))
        index = self._locate([x_row])[0]
        return float(self._group_entropies(group, k)[0][group[index]])

    def _check_depth(self, depth: int | None) -> None:
        integer = isinstance(depth, (int, np.integer)) and not isinstance(depth, bool)
        if depth is not None and not (integer and depth >= 1):
            raise ValueError(f"depth must be None or an int >= 1; got {depth!r}.")
        if self.n_features > MAX_EXACT_FEATURES:
            raise ValueError(
                f"Exact importances enumerate 2**p subsets and allow at most "
                f"{MAX_EXACT_FEATURES} features; this distribution has {self.n_features}."
            )

    def thm1(self, depth: int | None = None) -> np.ndarray:
        """Asymptotic MDI of totally randomized trees, in bits (Louppe et al. 2013, Eq. 2).

        ``Imp(X_m) = sum_{k=0}^{p-1} 1/(C(p,k)(p-k)) sum_{B in P_k(V^-m)} I(X_m; Y | B)``.
        With ``depth=d``, only the terms ``k < d`` are kept: the importance of trees pruned at
        depth d (Geurts 2016, ``Imp^{D=d}``); ``depth >= p`` is the full sum.

        Returns
        -------
        ndarray of shape (p,)
        """
        self._check_depth(depth)
        if self._all_entropies is None:
            entropies = np.empty(2**self.n_features)
            for mask, group, k in self._walk():
                entropies[mask] = self._group_entropies(group, k)[1]
            self._all_entropies = entropies
        return self._all_entropies @ _subset_coefficients(self.n_features, depth)

    def _locate(self, x_rows) -> np.ndarray:
        """Index of a support row sharing each query's x; ValueError if outside the support."""
        x_rows = np.asarray(x_rows)
        if x_rows.ndim != 2 or x_rows.shape[1] != self.n_features:
            raise ValueError(f"x_rows must have shape (q, {self.n_features}); got {x_rows.shape}.")
        if self._row_of_x is None:
            pairs = zip(map(tuple, self._support_x.tolist()), self._inverse.tolist())
            self._row_of_x = dict(pairs)
        index = [self._row_of_x.get(tuple(row), -1) for row in x_rows.tolist()]
        if -1 in index:
            i = index.index(-1)
            raise ValueError(
                f"x_rows[{i}] = {x_rows[i].tolist()} is not in the support of X "
                "(it has probability 0)."
            )
        return np.array(index, dtype=np.int64)

    def local_thm2(self, x_rows, depth: int | None = None) -> np.ndarray:
        """Asymptotic local MDI at each row, in bits (Sutera et al. 2021, Thm 2, Eq. 10).

        ``Imp(X_m, x) = sum_k 1/(C(p,k)(p-k)) sum_{B in P_k(V^-m)}
        [H(Y | B = x_B) - H(Y | B = x_B, X_m = x_m)]``, where the entropies are those of the
        conditional distribution of Y in the event (pointwise, not averaged). ``depth``
        truncates the sum at ``k < depth`` as in :meth:`thm1`.

        Parameters
        ----------
        x_rows : array-like of shape (q, p)
            Points of the support of X.

        Returns
        -------
        ndarray of shape (q, p)
        """
        self._check_depth(depth)
        index = self._locate(x_rows)
        p = self.n_features
        coefficients = _subset_coefficients(p, depth)
        out = np.zeros((len(index), p))
        chunk = max(1, min(2**p, (1 << 22) // max(len(index), 1)))
        masks: list[int] = []
        values: list[np.ndarray] = []
        for mask, group, k in self._walk():
            masks.append(mask)
            values.append(self._group_entropies(group, k)[0][group[index]])
            if len(masks) == chunk:
                out += np.array(values).T @ coefficients[masks]
                masks, values = [], []
        if masks:
            out += np.array(values).T @ coefficients[masks]
        return out

    def shapley_bruteforce(
        self, value_fn: Callable[[tuple[int, ...]], float] | None = None
    ) -> np.ndarray:
        """Shapley values over all p! orderings, by default of ``v(S) = I(Y; X_S)``.

        By Sutera et al. (2021), Thm 1, Eq. 7, these equal :meth:`thm1`; the computation
        shares no code with it beyond the entropies. Needs p <= 8.
        """
        return shapley_values(self.n_features, value_fn or self.mutual_information)
