"""Exact random-subspace arithmetic and convergence of RS/SRS (seed 004, part 3).

Everything here is computed from the slides' own formulas and idealisations:

* "RS for feature selection: convergence": the probability that a tree's q features contain
  one feature of degree k together with its minimal conditioning, C(p-k-1, q-k-1) / C(p, q),
  its inverse (the mean number of trees until it happens) and the probability that a tree
  draws none of r relevant features, C(p-r, q) / C(p, q); all as exact fractions.
* "SRS convergence in specific scenarios (exact computations)": the mean number of trees
  until RS and SRS have found the k features of a *chaining* (X_i shows its relevance only
  given X_1..X_{i-1}) or a *clique* (each X_i only given all the others), under the slides'
  assumptions: K = q, every relevant feature strongly relevant, the same variable at every
  node of a level. Our reading of the last assumption: a tree whose q features hold a prefix
  X_1..X_m of the chain finds all of them (it splits on X_1, then X_2, ...); a tree holding
  the whole clique finds one member, the last of the clique in the tree's level order
  (uniform), the others having zero importance given the members above them. The expected
  counts are then exact sums over a Markov chain (no simulation).
* "SRS convergence: numerical simulations in mixed setting": random degrees (at most 5) and
  minimal conditionings, r = 20 relevant among p = 500, q = 25 and 50. The page simulates
  the same idealisation: a relevant feature is found by a tree whose q features hold it and
  its minimal conditioning. Degrees and conditionings are drawn along a random order of the
  relevant features (each conditioning among the features before it), which makes the
  distribution PC-like as the slides' theorem requires.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def with_conditioning(p: int, q: int, k: int) -> Fraction:
    """P(a tree's q features hold one given feature of degree k and its minimal
    conditioning) = C(p-k-1, q-k-1) / C(p, q) (seed 004, "RS ... convergence")."""
    _check(p, q, k + 1)
    return Fraction(math.comb(p - k - 1, q - k - 1), math.comb(p, q))


def none_relevant(p: int, q: int, r: int) -> Fraction:
    """P(a tree's q features hold none of r relevant features) = C(p-r, q) / C(p, q)."""
    _check(p, q, 0)
    return Fraction(math.comb(p - r, q), math.comb(p, q))


def _check(p: int, q: int, need: int) -> None:
    if not (isinstance(p, int) and isinstance(q, int) and 1 <= q <= p and 0 <= need <= q):
        raise ValueError(f"need integers 1 <= q <= p and at most q features to place; got "
                         f"p={p!r}, q={q!r}, {need} features")


def _all_in(n: int, m: int, j: int) -> Fraction:
    """P(j given features all among m drawn uniformly without replacement from n)."""
    if j > m:
        return Fraction(0)
    return Fraction(math.comb(n - j, m - j), math.comb(n, m))


def chaining_rs(p: int, q: int, k: int) -> Fraction:
    """Mean trees until RS finds a k-chain: geometric, success when X_1..X_k are all drawn."""
    return 1 / _all_in(p, q, k)


def chaining_srs(p: int, q: int, k: int, alpha: float = 1.0) -> Fraction:
    """Mean trees until SRS finds a k-chain, exactly, for αq ≥ k (the found prefix always in
    R): from j found, a tree finds X_{j+1}..X_{j+m} when they are among the q − j features
    drawn from the p − j others and X_{j+m+1} is not."""
    if alpha * q < k:
        raise ValueError(f"exact only when every found feature fits in R: need αq >= k; got "
                         f"alpha={alpha}, q={q}, k={k}")
    expected = [Fraction(0)] * (k + 1)
    for j in range(k - 1, -1, -1):
        n, m = p - j, q - j
        # P(prefix of length exactly s among the unfound ones), s = 0..k-j
        prefix = [_all_in(n, m, s) for s in range(k - j + 1)] + [Fraction(0)]
        exact = [prefix[s] - prefix[s + 1] if s < k - j else prefix[s]
                 for s in range(k - j + 1)]
        stay = exact[0]
        moves = sum(exact[s] * expected[j + s] for s in range(1, k - j + 1))
        expected[j] = (1 + moves) / (1 - stay)
    return expected[0]


def clique_rs(p: int, q: int, k: int) -> Fraction:
    """Mean trees until RS finds a k-clique: each tree holding the whole clique finds one
    uniform member (coupon collector): (1 / P(all k drawn)) · k · H_k."""
    harmonic = sum(Fraction(1, i) for i in range(1, k + 1))
    return k * harmonic / _all_in(p, q, k)


def clique_srs(p: int, q: int, k: int, alpha: float = 1.0) -> Fraction:
    """Mean trees until SRS finds a k-clique, exactly, for αq ≥ k: from j found (all in R),
    a tree holds the clique when the k − j others are among its q − j drawn from p − j, and
    finds a new member with probability (k − j) / k."""
    if alpha * q < k:
        raise ValueError(f"exact only when every found feature fits in R: need αq >= k; got "
                         f"alpha={alpha}, q={q}, k={k}")
    return sum(k / ((k - j) * _all_in(p - j, q - j, k - j)) for j in range(k))


#: the slides' approximations ("Average number N of iterations to find all k variables")
APPROXIMATIONS = {
    "chaining RS": lambda p, q, k: (p / q) ** k,
    "chaining SRS": lambda p, q, k: k * p / q,
    "clique RS": lambda p, q, k: k * (math.log(k) + 1) * (p / q) ** k,
    "clique SRS": lambda p, q, k: (p / q) ** k,
}
EXACT = {"chaining RS": chaining_rs, "chaining SRS": chaining_srs,
         "clique RS": clique_rs, "clique SRS": clique_srs}


def mixed_structure(rng: np.random.Generator, r: int = 20, max_degree: int = 5
                    ) -> list[np.ndarray]:
    """Random minimal conditionings of r relevant features (see the module docstring)."""
    structure = []
    for i in range(r):
        degree = int(rng.integers(0, min(max_degree, i) + 1))
        structure.append(np.sort(rng.choice(i, size=degree, replace=False)) if degree
                         else np.zeros(0, dtype=np.int64))
    return structure


def trees_to_find_all(structure: list[np.ndarray], p: int, q: int, alpha: float,
                      rng: np.random.Generator, max_trees: int) -> int:
    """Trees SRS (RS for α = 0) grows until every relevant feature is found under the
    idealisation of the module docstring; ``max_trees + 1`` if not found by then."""
    r = len(structure)
    found = np.zeros(r, dtype=bool)
    for t in range(1, max_trees + 1):
        in_f = np.flatnonzero(found)
        n_r = min(int(alpha * q), in_f.size)
        drawn = np.zeros(r, dtype=bool)
        drawn[rng.choice(in_f, n_r, replace=False)] = True
        # C: q - |R| of the p - |R| features not in R; the relevant ones not in R come first
        others = np.flatnonzero(~drawn)
        picks = rng.choice(p - n_r, q - n_r, replace=False)
        drawn[others[picks[picks < others.size]]] = True
        for i in np.flatnonzero(drawn & ~found):
            if drawn[structure[i]].all():
                found[i] = True
        if found.all():
            return t
    return max_trees + 1


def rs_lower_bound(structure: list[np.ndarray], p: int, q: int) -> float:
    """Mean trees until RS finds the hardest feature alone: 1 / P(it and its minimal
    conditioning drawn); a lower bound of RS's mean time to find all."""
    return max(float(1 / with_conditioning(p, q, len(b))) for b in structure)
