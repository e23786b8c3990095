"""Exact asymptotic local and global MDI for any impurity, and the examples of Sutera et al. 2021.

Seed 003 (Sutera, Louppe, Huynh-Thu, Wehenkel, Geurts 2021):

* Thm 2 (Eq. 10) gives the local MDI of an infinite forest of fully grown totally randomized
  trees grown on an infinite sample, ``Imp(X_m, x) = sum_k 1/(C(p,k)(p-k)) sum_{B in P_k(V^-m)}
  [i(Y | B = x_B) - i(Y | B = x_B, X_m = x_m)]``, with ``i`` the population impurity of Y in an
  event; Appendix F (Eq. 20) replaces the entropy by the variance for regression. Averaged
  over P(X) it gives the global MDI (Eq. 11; Louppe et al. 2013, Eq. 2 for the entropy).
* Eq. 13 and Eqs. 22-23: these are Shapley values of ``v_loc(S; x) = i(Y) - i(Y | S = x_S)``
  (local) and ``v(S) = i(Y) - E[i(Y | S)]`` (global); efficiency gives Eq. 12 / Eq. 24.

:func:`asymptotic_local_mdi` and :func:`asymptotic_global_mdi` compute Eq. 10 / Eq. 20 by
enumerating the 2**p subsets of a finite distribution, for the entropy (bits), the Gini index
or the variance; :func:`local_characteristic` gives ``v_loc`` so that the Shapley values can be
computed by the independent route of :func:`harness.oracle.finite_table.shapley_values`.
:func:`example1_table` and :func:`example2_table` are the two distributions of Appendix B
(Tables 1 and 2) as weighted support rows. The entropy case is also in
:meth:`harness.oracle.finite_table.DiscreteDistribution.local_thm2`; this module is a second
implementation (pointwise impurities computed directly, not via the shared subset walk), used
to cross-check it and to extend it to the Gini and variance impurities.
"""

from __future__ import annotations

import math

import numpy as np

from harness.core.errors import BadInputError, InvalidParameterError

IMPURITIES = ("entropy", "gini", "variance")
MAX_FEATURES = 16  # 2**16 subsets: beyond this an exact enumeration is not practical here
_PROB_TOLERANCE = 1e-9


def example1_table(output: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Table 1 of Sutera et al. (2021, Appendix B, Example 1) as weighted support rows.

    Two binary inputs, every combination with probability 1/4, and a binary output with
    ``P(Y_1 = 1 | X)`` = 0.1, 0.5, 0.9, 0.4 and ``P(Y_2 = 1 | X)`` = 0.1, 0.8, 0.7, 0.3 for
    ``(X1, X2)`` = (0,0), (0,1), (1,0), (1,1).

    Parameters
    ----------
    output : {1, 2}
        Which output, Y1 or Y2.

    Returns
    -------
    X : ndarray of shape (8, 2)
    y : ndarray of shape (8,)
    prob : ndarray of shape (8,)
        One row per (x, y) with ``P(x, y) = P(x) P(y | x)``.
    """
    table = {1: (0.1, 0.5, 0.9, 0.4), 2: (0.1, 0.8, 0.7, 0.3)}
    if output not in table:
        raise InvalidParameterError(
            f"The 'output' parameter of example1_table must be 1 or 2 (Y1 or Y2 of Table 1). "
            f"Got {output!r} instead.")
    inputs = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    p_one = np.array(table[output])
    X = np.repeat(inputs, 2, axis=0)
    y = np.tile([0, 1], 4)
    prob = 0.25 * np.column_stack([1 - p_one, p_one]).ravel()
    return X, y, prob


def example2_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Table 2 of Sutera et al. (2021, Appendix B, Example 2) as weighted support rows.

    One binary input, ``P(X1 = 0) = P(X1 = 1) = 1/2``; ``P(Y = 0 | X1 = 0) = 0.5`` and
    ``P(Y = 0 | X1 = 1) = 1``. Rows of probability 0 are left out.
    """
    X = np.array([[0], [0], [1]])
    y = np.array([0, 1, 0])
    prob = np.array([0.25, 0.25, 0.5])
    return X, y, prob


def _checked(X, y, prob, impurity: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if impurity not in IMPURITIES:
        raise InvalidParameterError(
            f"The 'impurity' parameter must be one of {', '.join(IMPURITIES)}. "
            f"Got {impurity!r} instead.")
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0 or X.shape[1] > MAX_FEATURES:
        raise BadInputError(
            f"X must be a non-empty 2-D array (n, p) of discrete levels with 1 <= p <= "
            f"{MAX_FEATURES}; got shape {X.shape}.")
    n = X.shape[0]
    y, prob = np.asarray(y), np.asarray(prob, dtype=float)
    if y.shape != (n,) or prob.shape != (n,):
        raise BadInputError(
            f"y and prob must have shape ({n},) to match X of shape {X.shape}; got "
            f"{y.shape} and {prob.shape}.")
    if not (np.all(np.isfinite(prob)) and np.all(prob >= 0)
            and abs(prob.sum() - 1.0) <= _PROB_TOLERANCE):
        raise BadInputError(
            f"prob must be finite, >= 0 and sum to 1 (tolerance {_PROB_TOLERANCE:g}); got a "
            f"sum of {prob.sum()!r} and a minimum of {prob.min()!r}.")
    if impurity == "variance":
        if y.dtype.kind not in "biuf" or not np.all(np.isfinite(y.astype(float))):
            raise BadInputError(
                f"The variance impurity needs finite numbers in y; got dtype {y.dtype}.")
        y = y.astype(float)
    else:
        y = np.unique(y, return_inverse=True)[1].ravel()
    codes = np.column_stack([np.unique(c, return_inverse=True)[1].ravel() for c in X.T])
    return codes, y, prob


def _event_impurity(y: np.ndarray, prob: np.ndarray, inside: np.ndarray, impurity: str) -> float:
    """Impurity of Y in the event ``inside`` (rows of the support), under P(. | event)."""
    weight = prob[inside]
    total = weight.sum()
    if total <= 0:
        raise BadInputError("the event has probability 0: x is not in the support of X")
    if impurity == "variance":
        values = y[inside]
        mean = weight @ values / total
        return float(weight @ (values - mean) ** 2 / total)
    share = np.bincount(y[inside], weights=weight) / total
    share = share[share > 0]
    if impurity == "entropy":
        return float(-(share * np.log2(share)).sum())
    return float(1.0 - (share**2).sum())


def _weights(p: int) -> np.ndarray:
    """``1 / (C(p, k) (p - k))`` for k = 0..p-1 (Eq. 10; Louppe et al. 2013, Eq. 2)."""
    return np.array([1.0 / (math.comb(p, k) * (p - k)) for k in range(p)])


def local_characteristic(X, y, prob, x, impurity: str = "entropy"):
    """``v_loc(S; x) = i(Y) - i(Y | S = x_S)`` (Eq. 13 for the entropy, Eq. 23 for the
    variance), as a function of a tuple of feature indices."""
    codes, y, prob = _checked(X, y, prob, impurity)
    point = _locate(np.asarray(X), x)
    everything = np.ones(len(y), dtype=bool)
    root = _event_impurity(y, prob, everything, impurity)

    def value(players: tuple[int, ...]) -> float:
        inside = np.all(codes[:, list(players)] == codes[point, list(players)], axis=1)
        return root - _event_impurity(y, prob, inside, impurity)

    return value


def _locate(X: np.ndarray, x) -> int:
    x = np.asarray(x)
    if x.shape != (X.shape[1],):
        raise BadInputError(f"x must have shape ({X.shape[1]},); got {x.shape}.")
    match = np.flatnonzero(np.all(X == x, axis=1))
    if match.size == 0:
        raise BadInputError(f"x = {x.tolist()} is not in the support of X (probability 0).")
    return int(match[0])


def asymptotic_local_mdi(X, y, prob, x_rows, impurity: str = "entropy") -> np.ndarray:
    """Asymptotic local MDI of fully grown totally randomized trees (Eq. 10; Eq. 20).

    Parameters
    ----------
    X : array-like of shape (n, p)
        Support rows of the inputs (discrete levels).
    y : array-like of shape (n,)
        Output of each row: class labels (entropy, Gini) or numbers (variance).
    prob : array-like of shape (n,)
        Probability of each row, summing to 1.
    x_rows : array-like of shape (q, p)
        Points of the support of X to explain.
    impurity : {"entropy", "gini", "variance"}
        Entropy in bits (Thm 2), Gini index, or variance (Appendix F, Eq. 20).

    Returns
    -------
    ndarray of shape (q, p)
        ``Imp(X_m, x)`` for each explained point and feature, in impurity units.
    """
    codes, y, prob = _checked(X, y, prob, impurity)
    X = np.asarray(X)
    x_rows = np.atleast_2d(np.asarray(x_rows))
    points = [_locate(X, x) for x in x_rows]
    p = codes.shape[1]
    weight = _weights(p)
    out = np.zeros((len(points), p))
    for i, point in enumerate(points):
        # pointwise impurity of Y given X_S = x_S, for every subset S (bit j: X_j in S)
        same = codes == codes[point]
        impurity_of = np.empty(2**p)
        for mask in range(2**p):
            members = [j for j in range(p) if mask >> j & 1]
            inside = np.all(same[:, members], axis=1)
            impurity_of[mask] = _event_impurity(y, prob, inside, impurity)
        for m in range(p):
            for mask in range(2**p):
                if not mask >> m & 1:
                    size = bin(mask).count("1")
                    out[i, m] += weight[size] * (impurity_of[mask]
                                                 - impurity_of[mask | 1 << m])
    return out


def asymptotic_global_mdi(X, y, prob, impurity: str = "entropy") -> np.ndarray:
    """Asymptotic global MDI, ``sum_x P(x) Imp(X_m, x)`` (Eq. 11; Eq. 24 for the variance).

    For the entropy this is Louppe et al. (2013)'s Thm 1 (Eq. 2). Returns shape (p,).
    """
    codes, _, prob = _checked(X, y, prob, impurity)
    X = np.asarray(X)
    _, first, inverse = np.unique(codes, axis=0, return_index=True, return_inverse=True)
    p_x = np.bincount(inverse.ravel(), weights=prob)
    local = asymptotic_local_mdi(X, y, prob, X[first], impurity)
    return p_x @ local


def impurity_of_event(X, y, prob, x, features, impurity: str = "entropy") -> float:
    """``i(Y | X_S = x_S)`` for the features S (indices) at the point x; ``()`` gives i(Y)."""
    value = local_characteristic(X, y, prob, x, impurity)
    codes, yy, pp = _checked(X, y, prob, impurity)
    root = _event_impurity(yy, pp, np.ones(len(yy), dtype=bool), impurity)
    return root - value(tuple(features))
