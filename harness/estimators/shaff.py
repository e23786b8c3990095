"""SHAFF steps 1 and 3: the subsets U, and the Shapley regression.

Bénard, Biau, Da Veiga, Scornet, "SHAFF: Fast and consistent SHApley eFfect estimates via
random Forests", AISTATS 2022 (arXiv 2105.11724), Sec. 3; seed 002 (Scornet's slides),
"SHAFF: SHApley efFects via random Forests", steps 1-3:

1. K subsets U are drawn and each is paired with its complement. The paper draws them from
   the frequencies p̂(U) of the variable sets met along the forest's root-to-node paths
   (``sampling="paths"``, nodes of depth 1 to ``path_depth``).
2. (:func:`projected_game`, on :mod:`harness.kernels.reroute.subset_projection`) v̂(U),
   the out-of-bag explained variance of the forest projected on U. The method takes steps 2
   and 3 together in chunks of sets (:class:`StreamedShapley`), so that its memory does not
   grow with K.
3. Sh = argmin_β (1/K) Σ_U w(U) / p̂(U) (v̂(U) − β·1_U)², with the Shapley kernel
   w(U) = (p − 1) / (C(p, |U|) |U| (p − |U|)) (Lundberg & Lee 2017) and the efficiency
   constraint Σ_j β_j = v̂({1..p}).

Both steps 1 and 3 keep the paper's target, the Shapley-kernel loss over all subsets, whose
minimiser is the exact Shapley value of v̂ (Charnes et al. 1988); what changes below is how
its Monte-Carlo estimate is formed, because in high dimension (issue 20: p = 200) the
paper's estimate is far from its target at any affordable K:

- **Which sets** (:func:`design`, ``sampling="kernel"``, the default). Paths of depth ≤ 4
  give sets of at most 4 variables, and their complements at least p − 4: at p = 200 the
  sizes 5 to 195, which carry 64 % of the kernel's mass Σ_s (p − 1) / (s (p − s)), are
  never drawn, so the importance-weighted loss does not estimate the Shapley loss (with
  the exact game of the p = 200 linear Gaussian model in place of v̂, the path design
  missed the closed form by up to 0.12 for any K). The default draws the sizes from the
  kernel itself: the sets of size 1 and p − 1 exactly, then K / 2 sets of sizes 2..p/2
  allocated to the sizes in proportion to the kernel mass of {s, p − s} (stratified, so
  the share of every size is exact), each uniform among the sets of its size and paired
  with its complement (antithetic, as in the paper), with weight w(U) C(p, s) / n_s; a size
  with no more sets than draws is enumerated. ``sampling="paths"`` keeps the paper's
  path-frequency law (with the sets of size 1 and p − 1 taken exactly, so that β is
  identified).
- **The regression** (:func:`shapley_operator`). The fitted model is
  β·1_U + h(|U|), an additive game plus a free effect per size, with Σ_j β_j = 0 and
  Sh = β + v̂(all) / p. Both parts have known Shapley values (an additive game's are its
  coefficients; a game of |U| alone gives every player v(all) / p), so the estimate is
  exact for either kind of game whatever sets are drawn, and with every subset it is the
  exact Shapley value (the size effects are then orthogonal to the within-size contrasts;
  checked against the Shapley formula in the tests). It is a control variate: the rise of
  v̂ with |U| (steep and concave, v̂ of a few variables already near v̂(all) when the inputs
  are correlated) is the largest non-additive part of the game and is removed exactly,
  instead of being aliased into β by the random imbalance of each variable's presence
  across sizes. Measured with the exact game of ``linear_gaussian[preset=benard2022]``
  (p = 200, 4 draws of the design): the worst error of the plain regression is 0.047 at
  K = 4000 (0.035 at 8000); with the size effects 0.008 at K = 4000.
- **How many** (:func:`default_n_subsets`, :func:`draw_until_converged`): batches of
  K = max(128, 20 p) draws; the slides' "a few hundreds" for p of about ten, and a number
  growing with p as the paper's consistency condition asks (assumption (A4): K_n → ∞ faster
  than n M_n). Every batch is two half designs, whose estimates differ by the design's own
  error; the method draws batches until half their difference (root mean square over the
  effects) is at most 2.5 % of the effects' range, sage's convergence rule
  (:class:`StreamedShapley`). With the exact game of the p = 200 model one batch
  (K = 4000) left an error of sd 0.003 per effect, as large as the gap between X1's
  block-mates (0.010) and the weak signals (0.015): the top five shared 2 or 3 of 5. The
  rule stopped at 3 or 4 batches there (error 0.0012-0.0014; top five 5 of 5 on 4 of 6
  draws, 4 of 5 on the others).

The regression refuses a design that does not identify β (:func:`shapley_operator`).
Variables no tree splits on are null players of v̂ and get exactly 0. When the ``2^p − 2``
proper non-empty subsets are no more than K, all of them are used with the weights w(U)
(no sampling) and the result is the exact Shapley value of v̂.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from harness.core.errors import InvalidParameterError
from harness.forest.inbag import target_variance
from harness.forest.packed import PackedForest
from harness.kernels.reroute.subset_projection import SubsetProjector

#: Sets per block when :class:`PackedSets` are rewritten whole.
SET_BLOCK = 256


@dataclass(frozen=True)
class PackedSets:
    """Variable sets, one row of bits each (``np.packbits`` along the variables): a bit per
    (set, variable), an eighth of a bool matrix. SHAFF holds its sets from the design to the
    last chunk of projections: at p = 200, a batch's 4 400 sets take 0.11 MB as bits,
    0.88 MB as bools. Read as bools a block of sets at a time (``sets[rows]``)."""

    bits: np.ndarray  # uint8 (m, ceil(p / 8))
    n_features: int

    @classmethod
    def of(cls, keep: np.ndarray) -> PackedSets:
        """The sets of a bool (m, p) matrix."""
        keep = np.asarray(keep, dtype=bool)
        return cls(np.packbits(keep, axis=-1), keep.shape[-1])

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.bits), self.n_features

    def __len__(self) -> int:
        return len(self.bits)

    def __getitem__(self, rows) -> np.ndarray:
        """The sets ``rows`` (an index, a slice or an index array) as bools."""
        return np.unpackbits(self.bits[rows], axis=-1, count=self.n_features).view(bool)

    def columns(self, chosen: np.ndarray) -> PackedSets:
        """The sets restricted to the variables ``chosen`` (bool (p,)), block by block."""
        width = int(np.count_nonzero(chosen))
        bits = np.empty((len(self), (width + 7) // 8), dtype=np.uint8)
        for rows in _chunks(len(self), SET_BLOCK):
            bits[rows] = np.packbits(self[rows][:, chosen], axis=-1)
        return PackedSets(bits, width)


@dataclass(frozen=True)
class Draws:
    """Sets of a design, as bits (``np.packbits`` along the variables), with their weight in
    it and in its two half designs."""

    bits: np.ndarray  # uint8 (m, ceil(p / 8))
    weight: np.ndarray  # (m,)
    #: (m, 2): the weight of each set in the two halves of the design (:func:`kernel_subsets`)
    halves: np.ndarray

    @classmethod
    def of(cls, keep: np.ndarray, weight: np.ndarray, halves: np.ndarray) -> Draws:
        """The sets of a bool (m, p) matrix."""
        return cls(np.packbits(keep, axis=1), weight, halves)

    @classmethod
    def exact(cls, keep: np.ndarray, weight: np.ndarray) -> Draws:
        """Sets taken without sampling: in both halves with their weight."""
        return cls.of(keep, weight, np.column_stack([weight, weight]))

    @classmethod
    def join(cls, parts: list[Draws], p: int) -> Draws:
        if not parts:
            return cls(np.zeros((0, (p + 7) // 8), dtype=np.uint8), np.zeros(0),
                       np.zeros((0, 2)))
        return cls(np.vstack([part.bits for part in parts]),
                   np.concatenate([part.weight for part in parts]),
                   np.vstack([part.halves for part in parts]))


@dataclass
class SubsetDesign:
    """The subsets U (rows of ``sets``) and their regression weights."""

    sets: PackedSets  # (m, p)
    weight: np.ndarray  # (m,)
    enumerated: bool
    players: np.ndarray  # bool (p,): the variables the forest splits on
    #: (m, 2): each set's weight in the two half designs whose difference estimates the
    #: design's own error (:func:`kernel_subsets`); the exact sets are in both
    halves: np.ndarray

    @property
    def keep(self) -> np.ndarray:
        """Every set as a bool (m, p) matrix (for inspection: SHAFF reads ``sets`` a block
        at a time)."""
        return self.sets[:]


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
    """K of a batch when ``n_subsets`` is not given: ``max(128, 20 p)`` drawn subsets (with
    their complements, beside the ``2 p`` sets of size 1 and ``p − 1`` of the first batch).

    The slides draw "a few hundreds" (seed 002, "SHAFF", step 1) for p of about ten; the
    regression has ``p`` coefficients and the consistency of SHAFF needs K to grow (seed 002,
    assumption (A4)). 20 p: with the exact game of the p = 200 linear Gaussian model
    (issue 20), K = 4000 put the design's error at sd 0.003 per effect (worst 0.008-0.010),
    a first batch from which the convergence rule of :func:`draw_until_converged` goes on;
    128 and 400 draws left errors of 0.1 and more.
    """
    return max(128, 20 * p)


def split_variables(forest: PackedForest) -> np.ndarray:
    """Bool (p,): the variables some node of the forest splits on."""
    used = np.zeros(forest.n_features, dtype=bool)
    used[forest.feature[forest.left != -1]] = True
    return used


def kernel_subsets(p: int, n_subsets: int, rng: np.random.Generator) -> Draws:
    """Sets of sizes 2..p − 2, drawn by size from the Shapley kernel (``sampling="kernel"``).

    The kernel gives the sizes s and p − s together the mass
    ``M_s = (p − 1) / (s (p − s))`` each (``C(p, s) w(s)``). ``n_subsets // 2`` draws are
    shared among s = 2..⌊p/2⌋ in proportion to that mass (largest remainders), each draw a
    uniform s-set U paired with its complement; a draw of size s < p − s gets
    ``M_s / n_s``, and so does its complement (each size keeps its exact mass). At
    s = p / 2 both sets of a pair are of that size and share its mass. A size with no more
    sets than the draws it is given is enumerated instead, every set with w(U).

    Halves: the first ⌈n_s / 2⌉ draws of each size form half 0, the others half 1, each
    half with its size's whole mass (weight ``M_s / m`` for the m draws of that half), so
    that each half is a design of its own and their estimates differ by the design's
    error alone (:class:`StreamedShapley`). A size drawn once, and an enumerated size, is
    in both halves with its weight (no error of its own to see).
    """
    sizes = np.arange(2, p // 2 + 1)
    if len(sizes) == 0 or n_subsets < 2:
        return Draws.join([], p)
    mass = (p - 1) / (sizes * (p - sizes))
    pair_mass = np.where(2 * sizes == p, mass, 2.0 * mass)
    n_pairs = n_subsets // 2
    share = pair_mass / pair_mass.sum() * n_pairs
    count = np.floor(share).astype(np.int64)
    count[np.argsort(-(share - count), kind="stable")[:n_pairs - count.sum()]] += 1
    parts = []
    for s, n_s, m_s in zip(sizes, count, mass, strict=True):
        s, n_s = int(s), int(n_s)
        population = math.comb(p, s)
        middle = 2 * s == p
        if population <= (2 * n_s if middle else n_s):
            every = _sets_of_size(p, s)
            weight = np.full(len(every), m_s / population)
            parts.append(Draws.exact(every, weight))
            if not middle:
                parts.append(Draws.exact(~every, weight))
            continue
        if n_s == 0:
            continue
        order = np.argsort(rng.random((n_s, p)), axis=1)[:, :s]
        drawn = np.zeros((n_s, p), dtype=bool)
        np.put_along_axis(drawn, order, True, axis=1)
        pair_share = m_s / 2 if middle else m_s  # each set's share of its size's mass
        first = (n_s + 1) // 2
        halves = np.zeros((n_s, 2))
        if n_s == 1:
            halves[:] = pair_share
        else:
            halves[:first, 0] = pair_share / first
            halves[first:, 1] = pair_share / (n_s - first)
        weight = np.full(n_s, pair_share / n_s)
        parts += [Draws.of(drawn, weight, halves), Draws.of(~drawn, weight, halves)]
    return Draws.join(parts, p)


def _sets_of_size(p: int, s: int) -> np.ndarray:
    """Every s-subset of ``p`` variables as a bool matrix (C(p, s), p)."""
    combos = np.array(list(itertools.combinations(range(p), s)), dtype=np.int64)
    keep = np.zeros((len(combos), p), dtype=bool)
    np.put_along_axis(keep, combos, True, axis=1)
    return keep


def path_draws(forest: PackedForest, index: np.ndarray, n_subsets: int, path_depth: int,
               rng: np.random.Generator) -> Draws:
    """Sets of sizes 2..p − 2 drawn from the path frequencies (``sampling="paths"``).

    The loss of Bénard et al. (2022, step 3) is ``(1/K) Σ_{U drawn} w(U) / p̂(U)
    (v̂(U) − β·1_U)²``: the path sets of sizes 2 to ``p − 2`` are drawn ``n_subsets`` times
    from p̂ restricted to them, ``q(U) = p̂(U) / P̂(2 ≤ |U| ≤ p − 2)``, each draw with weight
    ``w(U) / (K q(U))``, and each drawn set is paired with its complement (same weight,
    since w(U) = w(U^c)), as in the paper. Halves: the first ⌈K / 2⌉ draws and the others,
    each weighted as a design of its own (a single draw is in both).
    """
    p = len(index)
    candidates, frequency = path_subsets(forest, path_depth)
    candidates = candidates[:, index]  # paths only meet players
    size = candidates.sum(axis=1)
    inner = (size >= 2) & (size <= p - 2)
    candidates, frequency = candidates[inner], frequency[inner]
    if not len(candidates) or n_subsets <= 0:
        return Draws.join([], p)
    law = frequency / frequency.sum()
    drawn = rng.choice(len(candidates), size=n_subsets, p=law)
    first = (n_subsets + 1) // 2
    split = [drawn[:first], drawn[first:]] if n_subsets > 1 else [drawn, drawn]
    multiplicity = np.bincount(drawn, minlength=len(candidates))
    chosen = np.flatnonzero(multiplicity)
    base = candidates[chosen]
    per_draw = shapley_kernel(p, base.sum(axis=1)) / law[chosen]
    weight = multiplicity[chosen] * per_draw / n_subsets
    halves = np.column_stack([
        np.bincount(part, minlength=len(candidates))[chosen] * per_draw / len(part)
        for part in split])
    return Draws.join([Draws.of(base, weight, halves), Draws.of(~base, weight, halves)],
                      p)


def design(forest: PackedForest, n_subsets: int, path_depth: int,
           rng: np.random.Generator, sampling: str = "kernel") -> SubsetDesign:
    """The subsets and weights of SHAFF's regression (see the module docstring).

    The players are the variables the forest splits on: the projected forest ignores a
    variable it never splits on, so v̂(U ∪ {j}) = v̂(U) for such a j (a null player of v̂,
    whose Shapley value is exactly 0) and the Shapley values of the others are those of the
    game restricted to them. Below, ``p`` is their number and complements are taken among
    them.

    The weights estimate the Shapley-kernel loss ``Σ_U w(U) (v̂(U) − β·1_U)²`` over all
    proper non-empty U in strata: the ``2 p`` sets of size 1 and ``p − 1`` (which carry 2
    of the kernel's total mass ``Σ_s (p − 1) / (s (p − s))``, about 2 ln p, and which make
    the regression well posed: under Σ β = v̂(all), a singleton and its complement pin
    β_j) enter with their exact weights w(U), without sampling; the sets of sizes 2 to
    ``p − 2`` are drawn ``n_subsets`` times by :func:`kernel_subsets` (``sampling=
    "kernel"``) or :func:`path_draws` (``"paths"``, the paper's law), each with its
    complement. With ``2^p − 2 ≤ n_subsets`` every subset is used with its weight w(U).
    """
    if sampling not in ("kernel", "paths"):
        raise InvalidParameterError(
            "The 'sampling' parameter of SHAFF must be one of 'kernel', 'paths'. "
            f"Got {sampling!r} instead.")
    players = split_variables(forest)
    index = np.flatnonzero(players)
    p = len(index)
    if p == 0 or 2**p - 2 <= n_subsets:
        return design_of(players, Draws.join([], p), enumerate_all=True)
    if sampling == "kernel":
        return design_of(players, kernel_subsets(p, n_subsets, rng))
    return design_of(players, path_draws(forest, index, n_subsets, path_depth, rng))


def design_of(players: np.ndarray, draws: Draws,
              enumerate_all: bool = False) -> SubsetDesign:
    """The design over the ``players`` (bool (n_features,)) of :func:`design`: the sets of
    size 1 and p − 1 with their weights, then ``draws`` (sets over the players),
    a set drawn twice once with its weights summed; with ``enumerate_all``, every proper
    non-empty subset with its weight w(U) instead."""
    index = np.flatnonzero(players)
    p = len(index)

    def spread(bits: np.ndarray) -> PackedSets:
        """Sets over the players (bits), written over all the variables, a block at a
        time."""
        if p == len(players):
            return PackedSets(bits, p)
        spread_bits = np.empty((len(bits), (len(players) + 7) // 8), dtype=np.uint8)
        for rows in _chunks(len(bits), SET_BLOCK):
            full = np.zeros((len(bits[rows]), len(players)), dtype=bool)
            full[:, index] = np.unpackbits(bits[rows], axis=1, count=p).view(bool)
            spread_bits[rows] = np.packbits(full, axis=1)
        return PackedSets(spread_bits, len(players))

    if enumerate_all or p == 0:
        keep = all_subsets(p)
        weight = shapley_kernel(p, keep.sum(axis=1))
        return SubsetDesign(spread(np.packbits(keep, axis=1)), weight, enumerated=True,
                            players=players, halves=np.column_stack([weight, weight]))
    single = np.eye(p, dtype=bool)
    draws = Draws.join([Draws.exact(single, shapley_kernel(p, np.ones(p))),
                        Draws.exact(~single, shapley_kernel(p, np.full(p, p - 1))), draws], p)
    # one row per distinct set, in the order of first appearance, weights summed
    rows = np.ascontiguousarray(draws.bits).view(
        np.dtype((np.void, draws.bits.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    at = rank[inverse.ravel()]
    weight = np.bincount(at, weights=draws.weight, minlength=len(order))
    halves = np.column_stack([np.bincount(at, weights=draws.halves[:, half],
                                          minlength=len(order)) for half in range(2)])
    return SubsetDesign(spread(draws.bits[first[order]]), weight, enumerated=False,
                        players=players, halves=halves)


#: Bytes of projected predictions (sets × rows × outputs) that :class:`StreamedShapley` holds
#: at once, or ``GAME_CHUNK_SETS`` sets if more: the game is projected and regressed in chunks
#: of sets, so SHAFF's memory does not grow with the number of sets (at p = 200, 4 401 sets
#: × 1 000 rows took 35 MB per copy; a chunk of 32 sets takes 0.25 MB).
GAME_CHUNK_BYTES = 1 << 18
#: The fewest sets in a chunk: a projection task per set group on any machine up to 32 cores
#: (a fixed number, never the number of threads: the chunks fix the order of the sums). With
#: 64, the chunk's terms and the projection's own tables (2 threads) took up to 1.7 MB beside
#: the running sums at p = 200 (300 trees); with a batch's other temporaries, the bench's
#: ``shaff-benard2022`` peak read 2.16x the output and the forest (issue 6: at most 2x),
#: 1.85x with 32 and the footprint of :meth:`StreamedShapley.add` trimmed.
GAME_CHUNK_SETS = 32
#: Sets per block of a design's centred indicators (3 (block, p) float temporaries: 0.3 MB
#: at p = 200, beside SHAFF's running sums)
CENTRING_CHUNK = 64
#: Rows per product of a chunk's design with its game terms: the (n_players, n) product
#: is added a block of rows at a time, never held whole beside the running sum.
PRODUCT_COLUMNS = 256


def _chunks(n_rows: int, size: int) -> list[slice]:
    """Consecutive slices of at most ``size`` rows covering ``range(n_rows)``."""
    return [slice(first, min(first + size, n_rows)) for first in range(0, n_rows, size)]


@dataclass(frozen=True)
class CentredDesign:
    """The within-size centring of a design (:func:`centred_design`).

    With z̃_U the indicator of U minus the weighted mean indicator of the sets of its size
    and w(U) its (scaled) weight, the regression's normal matrix is 2 Z̃ᵀ W Z̃ and its
    right-hand side Σ_U 2 w(U) z̃_U v(U) (:meth:`weighted_centred` times the game).
    """

    #: (n_sets,): the weights w(U), scaled (β does not change when W is scaled)
    weight: np.ndarray
    #: (n_sets,): index of each set's size among the sizes present
    group: np.ndarray
    #: (n_sizes, p): weighted mean indicator of the sets of each size
    mean_design: np.ndarray

    def weighted_centred(self, keep: np.ndarray | PackedSets, rows: slice) -> np.ndarray:
        """2 w(U) z̃_U for the sets ``keep[rows]``, one row each."""
        return 2.0 * self.weight[rows, None] * (keep[rows] - self.mean_design[self.group[rows]])


@dataclass(frozen=True)
class ShapleyRegression:
    """Step 3 in a form that takes the game in chunks of sets (:func:`shapley_regression`):
    Sh = inverse · Σ_U 2 w(U) z̃_U v(U) + v(all) / p."""

    #: the design's centring per size, which gives 2 w(U) z̃_U
    centring: CentredDesign
    #: (p, p): the block of the inverse KKT matrix that maps Z̃ᵀ W v to β
    inverse: np.ndarray


def centred_design(keep: np.ndarray | PackedSets, weight: np.ndarray,
                   chunk: int = CENTRING_CHUNK, scale: float | None = None,
                   gram: np.ndarray | None = None) -> tuple[CentredDesign, np.ndarray]:
    """The centring per size of the sets ``keep`` (a bool (n_sets, p) matrix or
    :class:`PackedSets`, read ``chunk`` sets at a time) with ``weight``, and its (p, p) Gram
    matrix 2 Z̃ᵀ W Z̃ (:func:`shapley_regression`), added to ``gram`` when given (a running
    sum over batches: no (p, p) temporary) and returned. ``scale`` divides the weights
    (default: their largest). Sets of weight 0 take no part (a size whose every set has
    weight 0 is left out)."""
    n_rows, p = keep.shape
    if scale is None:
        scale = weight.max() if len(weight) else 1.0
    w = weight / scale
    sizes = [keep[rows].sum(axis=1) for rows in _chunks(n_rows, chunk)]
    _, group = np.unique(np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64),
                         return_inverse=True)
    total = np.bincount(group, weights=w)
    # weight of a row within its size
    share = np.divide(w, total[group], out=np.zeros_like(w), where=total[group] > 0)
    mean_design = np.zeros((len(total), p))
    for rows in _chunks(n_rows, chunk):
        np.add.at(mean_design, group[rows], share[rows, None] * keep[rows])
    if gram is None:
        gram = np.zeros((p, p))
    for rows in _chunks(n_rows, chunk):
        centred = keep[rows] - mean_design[group[rows]]
        gram += (2.0 * w[rows, None] * centred).T @ centred
    return CentredDesign(w, group, mean_design), gram


def constrained_inverse(gram: np.ndarray, n_sets: int, check: bool = True) -> np.ndarray:
    """The (p, p) block of the inverse of [[gram, 1], [1ᵀ, 0]] that maps 2 Z̃ᵀ W v to β under
    Σ_j β_j = 0 (:func:`shapley_regression`; ``n_sets`` for the error message).

    Raises
    ------
    InvalidParameterError
        When the subsets do not determine β (too few distinct subsets for the variables).
    """
    p = len(gram)
    kkt = np.zeros((p + 1, p + 1))
    kkt[:p, :p] = gram
    kkt[:p, p] = 1.0
    kkt[p, :p] = 1.0
    rank = np.linalg.matrix_rank(kkt) if check else p + 1
    if rank < p + 1:
        raise InvalidParameterError(
            f"SHAFF's regression is underdetermined: its {n_sets} subsets identify "
            f"{rank - 1} of the {p - 1} contrasts between the {p} variables (the weighted "
            "design must have rank p - 1 under the efficiency constraint). Use more subsets "
            f"('n_subsets') or include every singleton. Got {n_sets} subsets for {p} "
            "variables.")
    return np.linalg.solve(kkt, np.eye(p + 1)[:, :p])[:p]


def shapley_regression(keep: np.ndarray | PackedSets, weight: np.ndarray,
                       chunk: int = CENTRING_CHUNK) -> ShapleyRegression:
    """The linear map of the regression, factorised: Sh = A v + v_full / p.

    Fits ``v(U) ≈ β·1_U + h(|U|)`` by weighted least squares over the rows of ``keep``,
    with a free h per size present and Σ_j β_j = 0, and gives Sh = β + v_full / p (module
    docstring). By Frisch-Waugh-Lovell, β is the regression of the within-size centred v
    on the within-size centred design Z̃ (weighted means per size removed), solved with the
    KKT system [[2 Z̃ᵀ W Z̃, 1], [1ᵀ, 0]] [β; λ] = [2 Z̃ᵀ W ṽ; 0]. Z̃ 1 = 0 (every row of a
    size holds the same number of ones), and the constraint fixes that direction; the
    system has one solution exactly when Z̃ᵀ W Z̃ has rank p − 1, i.e. when the subsets
    identify every contrast between the variables within their sizes; otherwise the
    regression is underdetermined and is refused (no minimum-norm answer that would look
    like an estimate). Z̃ᵀ W M = 0 because the weighted column sums of Z̃ vanish within
    every size, so the centring of v can be dropped: A = inverse · 2 Z̃ᵀ W. Z̃ is formed
    ``chunk`` sets at a time, from a bool (n_sets, p) matrix or :class:`PackedSets`.

    Raises
    ------
    InvalidParameterError
        When the subsets do not determine β (too few distinct subsets for the variables).
    """
    part, gram = centred_design(keep, weight, chunk)
    return ShapleyRegression(part, constrained_inverse(gram, keep.shape[0]))


def shapley_operator(keep: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The regression of :func:`shapley_regression` as a matrix: Sh = A v + b v_full, with A
    (p, n_sets) and b = 1 / p for every variable."""
    regression = shapley_regression(keep, weight)
    centred = regression.centring.weighted_centred(keep, slice(None))
    operator = regression.inverse @ centred.T
    return operator, np.full(keep.shape[1], 1.0 / keep.shape[1])


def explained_shares(projector: SubsetProjector, n_oob: np.ndarray, keep: np.ndarray,
                     variance: float) -> tuple[np.ndarray, np.ndarray]:
    """Row terms of v̂(U) for each set U (a row of ``keep``), and the projected predictions
    of each set that walked up (:meth:`SubsetProjector.predictions`).

    v̂(U) = 1 − Σ_i ‖target_i − m̂_U^OOB(X_i)‖² / (|I| Σ_k V(target_k)) over the rows I with
    an out-of-bag tree (Bénard et al. 2022, Sec. 3, Eq. of v̂_{M,n}; for classes, the Brier
    score of the projected class probabilities): row i's term is 1 − its squared error
    over ``variance``, Σ_k V(target_k) (:func:`harness.forest.inbag.target_variance`), an
    (n_sets, |I|) array.
    """
    targets = projector.targets
    total, n_walked_up = projector.predictions(keep)
    scored = n_oob > 0
    projected = total[:, scored] if not scored.all() else total
    projected /= n_oob[scored, None]
    projected -= targets[scored][None]
    projected **= 2
    # summed over the outputs into the first one's column: no (sets, rows) copy
    errors = projected[:, :, 0]
    for output in range(1, projected.shape[2]):
        errors += projected[:, :, output]
    errors /= -variance
    errors += 1.0
    return errors, n_walked_up


@dataclass(frozen=True)
class ProjectedGame:
    """v̂(U) − v̂(∅) of :func:`projected_game`, term by term over the scored rows."""

    #: (n_sets, n_scored): row i's term of v̂(U) − v̂(∅), 1 − (squared error of the projected
    #: forest on U) / Σ_k V(target_k), minus the same on no variable; v̂(U) − v̂(∅) is the
    #: row mean
    terms: np.ndarray
    #: v̂(∅), the projection on no variable (the trees' in-bag means), over the same rows
    v_empty: float
    #: (n_sets,): projected (row, tree) predictions that found no in-bag row in their cell
    #: and took a shallower level's (the Sobol-MDA reference rule)
    walked_up: np.ndarray


def projected_game(forest: PackedForest, X32: np.ndarray, counts: np.ndarray,
                   n_oob: np.ndarray, targets: np.ndarray, keep: np.ndarray) -> ProjectedGame:
    """SHAFF step 2: the game v̂(U) − v̂(∅) of the out-of-bag forest projected on each U.

    v̂ is :func:`explained_shares`. It is taken relative to v̂(∅) because the game must have
    v(∅) = 0, and the OOB error of the in-bag means is slightly above Σ_k V(target_k).

    Parameters
    ----------
    forest : PackedForest
        A forest view's ``packed`` field.
    X32 : ndarray (n, p)
        The training rows, coded.
    counts : ndarray (n, n_trees)
        In-bag counts.
    n_oob : ndarray (n,)
        Each row's number of out-of-bag trees.
    targets : ndarray (n, n_values)
        y as a column, or the one-hot classes.
    keep : ndarray of bool (n_sets, p)
        The kept variables U of each set.
    """
    p = keep.shape[1]
    with_empty = np.vstack([keep, np.zeros((1, p), dtype=bool)])
    projector = SubsetProjector.build(forest, X32, counts, targets)
    explained, n_walked_up = explained_shares(projector, n_oob, with_empty,
                                              target_variance(targets, "shaff"))
    return ProjectedGame(terms=explained[:-1] - explained[-1],
                         v_empty=float(explained[-1].mean()), walked_up=n_walked_up[:-1])


@dataclass(frozen=True)
class ShapleyTerms:
    """What :meth:`StreamedShapley.terms` returns, term by term over the scored rows."""

    #: (n_players, n_scored): row i's term of each player's Shapley effect (the effect is
    #: the row mean)
    effects: np.ndarray
    #: (n_scored,): row terms of v̂(all) − v̂(∅)
    explained: np.ndarray
    #: v̂(∅), the projection on no variable (the trees' in-bag means)
    v_empty: float
    #: projected (row, tree) predictions, over every set, that took a shallower level's
    walked_up: int


def row_std(values: np.ndarray, block: int = 16) -> np.ndarray:
    """Sample standard deviation (ddof 1) of each row of ``values``, ``block`` rows at a
    time: temporaries of ``block`` rows, not of the whole (n_players, n) array."""
    std = np.empty(values.shape[0])
    for first in range(0, values.shape[0], block):
        std[first:first + block] = values[first:first + block].std(axis=1, ddof=1)
    return std


@dataclass(frozen=True)
class DesignError:
    """The design's own error (:meth:`StreamedShapley.design_error`)."""

    #: (n_players,): the effects of the whole design (means over the scored rows)
    effects: np.ndarray
    #: (2, n_players): the effects of each half design
    halves: np.ndarray
    #: root mean square over the players of (half 0 − half 1) / 2
    std: float
    #: ``std`` over the range of the effects, max − min (sage's convergence ratio)
    ratio: float


class Game(Protocol):
    """A game of :class:`StreamedShapley`: :class:`ForestGame`, or an exact game (tests)."""

    #: outputs per projected prediction (1, or the classes): sizes the chunks of sets
    width: int

    def __call__(self, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For the bool (m, n_features) sets ``keep``, the (m, n) row terms of v(U) and
        the (m,) counts of projected predictions that walked up."""


class StreamedShapley:
    """SHAFF steps 2 and 3 over designs added batch by batch, the sets in chunks.

    The game of :func:`projected_game` on each batch's sets is regressed by
    :func:`shapley_regression` on the players without holding the (n_sets, n) game: each
    chunk of sets (``GAME_CHUNK_BYTES`` of projected predictions) is projected and its
    weighted, centred indicators times its game terms are summed, Σ_U 2 w(U) z̃_U v(U),
    by row. Every batch is a whole design (the sets of size 1 and p − 1 with their weights,
    then its draws), and the batches together are their sum (B times their mean, which
    leaves β unchanged), with free effects per size *and batch*: a batch's centring z̃ (its
    own weighted mean indicator per size) is final when the batch is projected, so one (p, n)
    sum and one (p, p) Gram matrix hold every batch, and nothing per set is kept. The
    effects are the constrained inverse of the summed Gram matrix times that sum, plus
    (v̂(all) − v̂(∅)) / p. A further batch projects the 2 p exact sets again (10 % of a batch
    at p = 200).

    The design's own error (:meth:`design_error`): every batch is two half designs
    (:func:`kernel_subsets`), regressed the same way on the game's means (a Gram matrix and a
    p-vector each); their effects differ by the design's error alone (the rows and the trees
    are the same). Half their difference estimates the error of the whole design: with the
    exact game of the p = 200 linear Gaussian model (issue 20) in place of v̂, its root mean
    square over the 200 effects was 0.0036-0.0041 where the true one was 0.0026-0.0032
    (K = 4000), 0.0018-0.0019 for 0.0015-0.0018 (K = 8000) and 0.0012 for 0.0011
    (K = 16 000), on 3 draws each: slightly above the truth (its error falls faster than
    1 / √K at small K).
    """

    def __init__(self, game: Game, players: np.ndarray) -> None:
        """``game``: v̂(U) by row for chunks of sets (:class:`Game`); ``players``: bool
        (n_features,), the variables the design is over."""
        n_features = len(players)
        ends = np.vstack([np.zeros((1, n_features), dtype=bool),
                          np.ones((1, n_features), dtype=bool)])
        self.game = game
        self.game_width = game.width
        (self.empty, self.full), walked_ends = game(ends)
        self.players = players
        self.walked_up = int(walked_ends.sum())
        self.enumerated = False  # every subset, with its weight: no design error
        self.scale = 1.0  # the first batch's largest weight divides every weight
        self.n_batches = 0
        self.n_sets = 0  # projected, over every batch
        p = self.n_players
        # the whole design, then its two halves: Gram matrices and Σ 2 w z̃ v̄ of the means
        self.grams = np.zeros((3, p, p))
        self.mean_sums = np.zeros((3, p))
        self.weighted_sum: np.ndarray | None = None  # Σ 2 w z̃ v by row, (p, n)
        self._inverse: np.ndarray | None = None  # of grams[0], since the last batch

    @property
    def n_players(self) -> int:
        return int(self.players.sum())

    def add(self, subsets: SubsetDesign) -> None:
        """Project the sets of ``subsets`` (a batch of :func:`design`), chunk by chunk."""
        keep = subsets.sets if self.players.all() else subsets.sets.columns(self.players)
        self.enumerated |= subsets.enumerated
        if not self.n_batches and len(subsets.weight):
            self.scale = float(subsets.weight.max())
        self.n_batches += 1
        self.n_sets += len(keep)
        self._inverse = None  # solved for fewer batches: not kept beside this one
        if not self.n_players:
            return
        part, _ = centred_design(keep, subsets.weight, scale=self.scale, gram=self.grams[0])
        if self.weighted_sum is None:  # after the batch's centring: not beside its temporaries
            self.weighted_sum = np.zeros((self.n_players, len(self.empty)))
        chunk = max(GAME_CHUNK_SETS,
                    GAME_CHUNK_BYTES // (len(self.empty) * self.game_width * 8))
        means = np.empty(len(keep))
        for rows in _chunks(len(keep), chunk):
            explained, walked = self.game(subsets.sets[rows])
            explained -= self.empty
            self.walked_up += int(walked.sum())
            means[rows] = explained.mean(axis=1)
            centred = part.weighted_centred(keep, rows).T
            self.mean_sums[0] += centred @ means[rows]  # the whole design's, on the way
            for block in _chunks(explained.shape[1], PRODUCT_COLUMNS):  # small temporaries
                self.weighted_sum[:, block] += centred @ explained[:, block]
            del explained, centred  # not alive beside the next chunk's projections
        # the regressions of the game's means on the halves (one centring alive at a time)
        del part
        for half in range(2):
            part, _ = centred_design(keep, subsets.halves[:, half], scale=self.scale,
                                     gram=self.grams[1 + half])
            self._add_means(1 + half, part, keep, means)
            del part

    def _add_means(self, k: int, part: CentredDesign, keep: PackedSets,
                   means: np.ndarray) -> None:
        """Σ_U 2 w z̃_U v̄(U) of the half design ``k`` (1 or 2)."""
        for rows in _chunks(len(keep), CENTRING_CHUNK):
            self.mean_sums[k] += part.weighted_centred(keep, rows).T @ means[rows]

    def design_error(self) -> DesignError:
        """The effects of the design so far, and its error from its two halves."""
        if not self.n_players:
            return DesignError(effects=np.zeros(0), halves=np.zeros((2, 0)), std=0.0,
                               ratio=0.0)
        explained = float((self.full - self.empty).mean()) / self.n_players
        # the halves hold the sets of size 1 and p - 1 as the whole does: identified if it is
        self._inverse = constrained_inverse(self.grams[0], self.n_sets)
        inverses = [self._inverse] + [constrained_inverse(gram, self.n_sets, check=False)
                                         for gram in self.grams[1:]]
        effects = [inverse @ total + explained
                   for inverse, total in zip(inverses, self.mean_sums, strict=True)]
        std = float(np.sqrt(np.mean(((effects[1] - effects[2]) / 2) ** 2)))
        gap = max(float(effects[0].max() - effects[0].min()), 1e-12)
        return DesignError(effects=effects[0], halves=np.array(effects[1:]), std=std,
                           ratio=std / gap)

    def terms(self) -> ShapleyTerms:
        """The effects of every set added, term by term over the scored rows."""
        full, empty = self.full, self.empty
        self.game = None  # from here, (n_players, n) arrays only: at most two at once
        if not self.n_players or self.weighted_sum is None:
            return ShapleyTerms(effects=np.zeros((self.n_players, len(empty))),
                                explained=full - empty, v_empty=float(empty.mean()),
                                walked_up=self.walked_up)
        inverse = self._inverse
        if inverse is None:  # not solved since the last batch
            inverse = constrained_inverse(self.grams[0], self.n_sets)
        effects = inverse @ self.weighted_sum
        self.weighted_sum = None
        effects += (full - empty) / self.n_players
        return ShapleyTerms(effects=effects, explained=full - empty,
                            v_empty=float(empty.mean()), walked_up=self.walked_up)


class ForestGame:
    """The game of SHAFF step 2, v̂(U) by row, for :class:`StreamedShapley`: the out-of-bag
    forest projected on each set (:func:`explained_shares`), the forest's descent tables
    built once for every chunk of sets."""

    def __init__(self, forest: PackedForest, X32: np.ndarray, counts: np.ndarray,
                 n_oob: np.ndarray, targets: np.ndarray) -> None:
        self.variance = target_variance(targets, "shaff")  # the game's v̂ are shares of it
        self.projector = SubsetProjector.build(forest, X32, counts, targets)
        self.n_oob = n_oob

    @property
    def width(self) -> int:
        """Outputs per projected prediction (1, or the classes)."""
        return int(self.projector.targets.shape[1])

    def __call__(self, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return explained_shares(self.projector, self.n_oob, keep, self.variance)


def draw_until_converged(stream: StreamedShapley, batch: Callable[[], SubsetDesign],
                         thresh: float, max_batches: int,
                         progress: Callable[[float], None] | None = None) -> DesignError:
    """Add ``batch()`` (a design of :func:`design`) to ``stream`` until the design's error
    ratio (:meth:`StreamedShapley.design_error`, sage's max − min convergence rule applied
    to the design) is at most ``thresh``, or ``max_batches`` batches are added (a design
    that enumerates every subset has no error: one batch). Returns the last error."""
    first = batch()
    stream.add(first)
    error = stream.design_error()
    while not first.enumerated and error.ratio > thresh and stream.n_batches < max_batches:
        if progress is not None:
            progress(stream.n_batches / max_batches)
        stream.add(batch())
        error = stream.design_error()
    return error


def streamed_shapley(forest: PackedForest, X32: np.ndarray, counts: np.ndarray,
                     n_oob: np.ndarray, targets: np.ndarray,
                     subsets: SubsetDesign) -> ShapleyTerms:
    """SHAFF steps 2 and 3 on one design (:class:`StreamedShapley` with one batch)."""
    stream = StreamedShapley(ForestGame(forest, X32, counts, n_oob, targets),
                             subsets.players)
    stream.add(subsets)
    return stream.terms()
