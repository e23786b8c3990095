"""SHAFF steps 1 and 3: subsets drawn from the forest's paths, and the Shapley regression.

Bénard, Biau, Da Veiga, Scornet, "SHAFF: Fast and consistent SHApley eFfect estimates via
random Forests", AISTATS 2022 (arXiv 2105.11724), Sec. 3; seed 002 (Scornet's slides),
"SHAFF: SHApley efFects via random Forests", steps 1-3:

1. The variable sets U met along the forest's root-to-node paths (nodes of depth 1 to
   ``path_depth``) are counted; their frequencies p̂(U) are the importance-sampling law from
   which K subsets are drawn (with replacement); each drawn U is paired with its complement.
2. (:mod:`harness.kernels.reroute.subset_projection`) v̂(U), the out-of-bag explained
   variance of the forest projected on U.
3. Sh = argmin_β (1/K) Σ_U w(U) / p̂(U) (v̂(U) − β·1_U)², with the Shapley kernel
   w(U) = (p − 1) / (C(p, |U|) |U| (p − |U|)) (Lundberg & Lee 2017) and the efficiency
   constraint Σ_j β_j = v̂({1..p}).

In high dimension (issue 20: p = 200, 128 draws gave 126 distinct pairs for 200 coefficients,
an underdetermined regression answered by its minimum-norm solution) two things keep step 3
well posed and its variance low (:func:`design`): the sets of size 1 and p − 1 enter exactly
(a stratum of the same loss, not sampled), the other path sets are importance-sampled as in
the paper, with K growing with p (:func:`default_n_subsets`); and the regression refuses a
design that does not identify β (:func:`shapley_operator`). Variables no tree splits on are
null players of v̂ and get exactly 0.

When the ``2^p − 2`` proper non-empty subsets are no more than K, all of them are used with
the weights w(U) (no sampling): the regression then returns the exact Shapley values of v̂
(Charnes et al. 1988), which is what the tests exploit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.core.errors import InvalidParameterError
from harness.forest.packed import PackedForest


@dataclass
class SubsetDesign:
    """The subsets U (rows of ``keep``) and their regression weights."""

    keep: np.ndarray  # bool (m, p)
    weight: np.ndarray  # (m,)
    enumerated: bool
    players: np.ndarray  # bool (p,): the variables the forest splits on


def shapley_kernel(p: int, size: np.ndarray) -> np.ndarray:
    """w(U) = (p − 1) / (C(p, |U|) |U| (p − |U|)) for 0 < |U| < p."""
    size = np.asarray(size, dtype=np.int64)
    binom = np.array([math.comb(p, int(s)) for s in size], dtype=float)
    return (p - 1) / (binom * size * (p - size))


def path_subsets(forest: PackedForest, path_depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct variable sets of the root-to-node paths of depth 1..``path_depth``.

    Returns
    -------
    keep : ndarray of bool (m, p)
        The sets, full set excluded.
    frequency : ndarray (m,)
        Their share among all counted paths (p̂(U) restricted to the kept sets).
    """
    p = forest.n_features
    found: dict[bytes, list] = {}
    for t in range(forest.n_trees):
        start = forest.offsets[t]
        stack = [(0, np.zeros(p, dtype=bool), 0)]
        while stack:
            node, used, depth = stack.pop()
            if depth >= 1:
                entry = found.setdefault(used.tobytes(), [used, 0])
                entry[1] += 1
            at = start + node
            if depth == path_depth or forest.left[at] == -1:
                continue
            below = used.copy()
            below[forest.feature[at]] = True
            stack.append((int(forest.left[at]), below, depth + 1))
            stack.append((int(forest.right[at]), below, depth + 1))
    sets = [entry for entry in found.values() if not entry[0].all()]
    if not sets:
        return np.zeros((0, p), dtype=bool), np.zeros(0)
    keep = np.array([entry[0] for entry in sets])
    count = np.array([entry[1] for entry in sets], dtype=float)
    return keep, count / count.sum()


def all_subsets(p: int) -> np.ndarray:
    """Every proper non-empty subset of ``p`` variables as a bool matrix (2^p − 2, p)."""
    codes = np.arange(1, 2**p - 1)
    return ((codes[:, None] >> np.arange(p)) & 1).astype(bool)


def default_n_subsets(p: int) -> int:
    """K when ``n_subsets`` is not given: ``max(128, 2 p)`` importance-sampled subsets.

    The slides draw "a few hundreds" (seed 002, "SHAFF", step 1) for p of about ten; the
    regression has ``p`` coefficients, so the number of draws grows with ``p`` (issue 20: 128
    draws for 200 coefficients left the regression underdetermined).
    """
    return max(128, 2 * p)


def split_variables(forest: PackedForest) -> np.ndarray:
    """Bool (p,): the variables some node of the forest splits on."""
    used = np.zeros(forest.n_features, dtype=bool)
    used[forest.feature[forest.left != -1]] = True
    return used


def design(forest: PackedForest, n_subsets: int, path_depth: int,
           rng: np.random.Generator) -> SubsetDesign:
    """The subsets and weights of SHAFF's regression (see the module docstring).

    The players are the variables the forest splits on: the projected forest ignores a
    variable it never splits on, so v̂(U ∪ {j}) = v̂(U) for such a j (a null player of v̂,
    whose Shapley value is exactly 0) and the Shapley values of the others are those of the
    game restricted to them. Below, ``p`` is their number and complements are taken among
    them.

    The loss of Bénard et al. (2022, step 3) is ``(1/K) Σ_{U drawn} w(U) / p̂(U)
    (v̂(U) − β·1_U)²``, a Monte-Carlo estimate of ``Σ_U w(U) (v̂(U) − β·1_U)²`` over the sets
    met along the forest's paths and their complements. It is computed here in two strata,
    which keeps its target and removes most of its variance:

    - the ``2 p`` sets of size 1 and ``p − 1`` (which carry 2 of the kernel's total mass
      ``Σ_s (p − 1) / (s (p − s))``, about 2 ln p, and which make the regression well posed:
      under Σ β = v̂(all), a singleton and its complement pin β_j) enter with their exact
      weights w(U), without sampling;
    - the path sets of sizes 2 to ``p − 2`` are drawn ``n_subsets`` times from p̂ restricted
      to them, ``q(U) = p̂(U) / P̂(2 ≤ |U| ≤ p − 2)``, each draw with weight
      ``w(U) / (K q(U))``, and each drawn set is paired with its complement (same weight,
      since w(U) = w(U^c)), as in the paper.

    With ``2^p − 2 ≤ n_subsets`` every subset is used with its weight w(U) instead.
    """
    players = split_variables(forest)
    index = np.flatnonzero(players)
    p = len(index)

    def spread(rows: np.ndarray) -> np.ndarray:
        """Rows over the players, written over all the forest's variables."""
        full = np.zeros((len(rows), forest.n_features), dtype=bool)
        full[:, index] = rows
        return full

    if p == 0:
        return SubsetDesign(np.zeros((0, forest.n_features), dtype=bool), np.zeros(0),
                            enumerated=True, players=players)
    if 2**p - 2 <= n_subsets:
        keep = all_subsets(p)
        return SubsetDesign(spread(keep), shapley_kernel(p, keep.sum(axis=1)),
                            enumerated=True, players=players)
    single = np.eye(p, dtype=bool)
    rows = [single, ~single]
    weights = [shapley_kernel(p, np.ones(p)), shapley_kernel(p, np.full(p, p - 1))]
    candidates, frequency = path_subsets(forest, path_depth)
    candidates = candidates[:, index]  # paths only meet players
    size = candidates.sum(axis=1)
    inner = (size >= 2) & (size <= p - 2)
    candidates, frequency = candidates[inner], frequency[inner]
    if len(candidates) and n_subsets > 0:
        law = frequency / frequency.sum()
        drawn = rng.choice(len(candidates), size=n_subsets, p=law)
        multiplicity = np.bincount(drawn, minlength=len(candidates))
        chosen = np.flatnonzero(multiplicity)
        base = candidates[chosen]
        weight = (multiplicity[chosen] * shapley_kernel(p, base.sum(axis=1))
                  / law[chosen] / n_subsets)
        rows += [base, ~base]  # each U with its complement, same weight
        weights += [weight, weight]
    keep, weight = np.vstack(rows), np.concatenate(weights)
    merged: dict[bytes, int] = {}
    unique, summed = [], []
    for row, w in zip(keep, weight, strict=True):
        at = merged.setdefault(row.tobytes(), len(unique))
        if at == len(unique):
            unique.append(row)
            summed.append(0.0)
        summed[at] += w
    return SubsetDesign(spread(np.array(unique)), np.array(summed), enumerated=False,
                        players=players)


def shapley_operator(keep: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The linear map of the constrained regression: β = A v + b v_full.

    Minimises Σ_U weight(U) (v(U) − β·1_U)² subject to Σ_j β_j = v_full; the KKT system
    [[2 Zᵀ W Z, 1], [1ᵀ, 0]] [β; λ] = [2 Zᵀ W v; v_full] is solved once for the operator.
    It has one solution exactly when Zᵀ W Z is definite on {Σ β = 0}, i.e. when the subsets
    identify every contrast between the variables; otherwise the regression is
    underdetermined and is refused (no minimum-norm answer that would look like an
    estimate).

    Raises
    ------
    InvalidParameterError
        When the subsets do not determine β (too few distinct subsets for the variables).
    """
    Z = keep.astype(float)
    p = Z.shape[1]
    scale = weight.max() if len(weight) else 1.0  # β does not change when W is scaled
    kkt = np.zeros((p + 1, p + 1))
    kkt[:p, :p] = 2.0 * Z.T @ ((weight / scale)[:, None] * Z)
    kkt[:p, p] = 1.0
    kkt[p, :p] = 1.0
    rank = np.linalg.matrix_rank(kkt)
    if rank < p + 1:
        raise InvalidParameterError(
            f"SHAFF's regression is underdetermined: its {len(keep)} subsets identify "
            f"{rank - 1} of the {p - 1} contrasts between the {p} variables (the weighted "
            "design must have rank p - 1 under the efficiency constraint). Use more subsets "
            f"('n_subsets') or include every singleton. Got {len(keep)} subsets for {p} "
            "variables.")
    rhs = np.zeros((p + 1, Z.shape[0] + 1))
    rhs[:p, :-1] = 2.0 * (Z * (weight / scale)[:, None]).T
    rhs[p, -1] = 1.0
    solution = np.linalg.solve(kkt, rhs)[:p]
    return solution[:, :-1], solution[:, -1]
