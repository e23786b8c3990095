"""SHAFF steps 1 and 3: subsets drawn from the forest's paths, and the Shapley regression.

Bénard, Biau, Da Veiga, Scornet, "SHAFF: Fast and consistent SHApley eFfect estimates via
random Forests", AISTATS 2022 (arXiv 2105.11724), Sec. 3:

1. The variable sets U met along the forest's root-to-node paths (nodes of depth 1 to
   ``path_depth``) are counted; their frequencies p̂(U) are the importance-sampling law from
   which K subsets are drawn (with replacement); each drawn U is paired with its complement.
2. (:mod:`harness.kernels.reroute.subset_projection`) v̂(U), the out-of-bag explained variance of
the forest
   projected on U.
3. Sh = argmin_β Σ_U w(U) / p̂(U) (v̂(U) − β·1_U)², with the Shapley kernel
   w(U) = (p − 1) / (C(p, |U|) |U| (p − |U|)) (Lundberg & Lee 2017) and the efficiency
   constraint Σ_j β_j = v̂({1..p}).

When the ``2^p − 2`` proper non-empty subsets are no more than K, all of them are used with
the weights w(U) (no sampling): the regression then returns the exact Shapley values of v̂
(Charnes et al. 1988), which is what the tests exploit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.forest.packed import PackedForest


@dataclass
class SubsetDesign:
    """The subsets U (rows of ``keep``) and their regression weights."""

    keep: np.ndarray  # bool (m, p)
    weight: np.ndarray  # (m,)
    enumerated: bool


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


def design(forest: PackedForest, n_subsets: int, path_depth: int,
           rng: np.random.Generator) -> SubsetDesign:
    """The subsets and weights of SHAFF's regression (see the module docstring)."""
    p = forest.n_features
    if 2**p - 2 <= n_subsets:
        keep = all_subsets(p)
        return SubsetDesign(keep, shapley_kernel(p, keep.sum(axis=1)), enumerated=True)
    candidates, frequency = path_subsets(forest, path_depth)
    if len(candidates) == 0:  # stumps or constant trees: fall back to the singletons
        candidates, frequency = np.eye(p, dtype=bool), np.full(p, 1.0 / p)
    drawn = rng.choice(len(candidates), size=n_subsets, p=frequency)
    multiplicity = np.bincount(drawn, minlength=len(candidates))
    chosen = np.flatnonzero(multiplicity)
    base = candidates[chosen]
    size = base.sum(axis=1)
    weight = multiplicity[chosen] * shapley_kernel(p, size) / frequency[chosen] / n_subsets
    keep = np.vstack([base, ~base])  # each U with its complement, same weight
    weight = np.concatenate([weight, weight])
    merged: dict[bytes, int] = {}
    rows, weights = [], []
    for row, w in zip(keep, weight, strict=True):
        at = merged.setdefault(row.tobytes(), len(rows))
        if at == len(rows):
            rows.append(row)
            weights.append(0.0)
        weights[at] += w
    return SubsetDesign(np.array(rows), np.array(weights), enumerated=False)


def shapley_operator(keep: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The linear map of the constrained regression: β = A v + b v_full.

    Minimises Σ_U weight(U) (v(U) − β·1_U)² subject to Σ_j β_j = v_full; the KKT system
    [[2 Zᵀ W Z, 1], [1ᵀ, 0]] [β; λ] = [2 Zᵀ W v; v_full] is solved once for the operator
    (least squares, so a variable never met still gets a defined value).
    """
    Z = keep.astype(float)
    p = Z.shape[1]
    kkt = np.zeros((p + 1, p + 1))
    kkt[:p, :p] = 2.0 * Z.T @ (weight[:, None] * Z)
    kkt[:p, p] = 1.0
    kkt[p, :p] = 1.0
    rhs = np.zeros((p + 1, Z.shape[0] + 1))
    rhs[:p, :-1] = 2.0 * (Z * weight[:, None]).T
    rhs[p, -1] = 1.0
    solution = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:p]
    return solution[:, :-1], solution[:, -1]
