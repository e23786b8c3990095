"""Exact expected MDI of randomized trees grown on a finite table, for any K and depth.

For a discrete problem given as a finite table (support rows of ``X`` with their probabilities and
``Y``), :func:`expected_mdi` computes the expectation, over the randomness of the tree
construction, of the unnormalised MDI of one tree, ``Imp(X_m) = sum_t p(t) Delta i(s_t, t)`` in
bits (Louppe et al. 2013, Eq. 1, entropy impurity). It recurses over the nodes a tree can reach,
``(row subset, used variables, depth)``, memoised, summing over every split the node can choose
with its exact probability. Ties between equally good candidates are resolved as the tree does.

Two growing rules are offered.

``rule="sklearn"``: scikit-learn's ``ExtraTreesClassifier(criterion="entropy",
max_features=K, max_depth=D, bootstrap=False)`` (``RandomSplitter``) fitted on the rows with
``sample_weight`` proportional to the probabilities, or on rows repeated in proportion to them.
Facts read in scikit-learn 1.9 (``sklearn/tree/_splitter.pyx``, ``node_split_random``;
``_partitioner.pyx``; ``_criterion.pyx``; ``_tree.pyx``, ``DepthFirstTreeBuilder.build``):

* Features are drawn one at a time without replacement, uniformly among the features not yet
  drawn at this node (Fisher-Yates, ``rand_int(n_drawn_constants, f_i - n_found_constants)``);
  features already known to be constant (found constant in an ancestor) stay in the pool.
* Every draw counts toward K: ``n_visited_features`` is incremented before a drawn feature is
  recognised as known constant (``n_drawn_constants``) or found constant (``max - min <=
  FEATURE_THRESHOLD = 1e-7``, ``n_found_constants``). The loop runs while ``n_visited < K`` or
  all visited features were constant, and while undrawn non-known-constant features remain. So
  the candidates are the non-constant features among the first K of a uniform random order of
  all p features (hypergeometric number), or, if none of those K is non-constant, the first
  non-constant one. Which constants are already "known" does not change this law, so the state
  of a node is its row subset (plus its depth when ``max_depth`` is set). The documented
  consequence: at least one valid split is always evaluated, even past K features.
* Each candidate draws one threshold uniformly in ``[min, max)`` of its values in the node (in
  float32, as sklearn stores X); rows with ``x <= threshold`` go left. For distinct values
  ``v_1 < ... < v_m`` the cut after ``v_c`` has probability ``(v_{c+1} - v_c) / (v_m - v_1)``;
  a binary feature always gives the same split.
* The candidate with the largest proxy improvement ``-(w_L H_L + w_R H_R)`` wins, compared with
  a strict ``>`` in draw order: among tied candidates the first drawn wins, and as the draw order
  is exchangeable each tied candidate wins with equal probability.
* A node is a leaf when it is pure (``impurity <= EPSILON``), when ``depth >= max_depth`` (root
  depth 0), or when no feature is non-constant; a zero-improvement split is still made
  (``min_impurity_decrease = 0``). ``min_samples_split = 2`` counts rows, not weight, but only
  a single-row node could be stopped by it and such a node is pure, so weights and repeated rows
  give the same trees. ``Entropy`` uses ``log(x) = ln(x) / ln(2)``: ``tree_.impurity`` is in bits.

``rule="paper"``: the multiway trees of Louppe et al. (2013), "Effect of randomization": at
each node K variables are drawn uniformly among those not yet used on the branch (all of them if
fewer than K remain), the one with the largest ``Delta i`` (the conditional mutual information
with Y in the node) wins, ties uniformly, and the node gets one child per value. A used variable
is exhausted. An unused variable that is constant in the node stays drawable: it scores 0 and,
if it wins, makes a no-op split that uses it up and one level of depth.

How they differ: sklearn draws K among all p features and lets the constant ones (used binary
variables included) consume draws, but always evaluates at least one non-constant feature;
the paper draws K among the unused ones, constants included, and may then split on a constant.
Binary splits on thresholds (sklearn) and multiway splits (paper) also differ for variables with
more than two values. At K = 1 both give Thm 1 (Louppe et al. 2013, Eq. 2) on binary tables;
with ``max_depth=D``, ``rule="paper"`` gives its truncation at ``k < D`` (Geurts 2016), which
sklearn matches only while no unused variable is constant in a node above depth D. At K = p on
binary tables the fully grown trees of both rules have the same expected MDI.

The published LED columns K = 2..7 (Louppe et al. 2013) match ``rule="paper"`` within their
Monte Carlo noise (max deviation 0.0045 bits), not ``rule="sklearn"`` (up to 0.013 bits), while
``rule="sklearn"`` matches scikit-learn's own forests (``tests/oracle/test_exact_mdi.py``).

Ties between split improvements are detected up to ``TIE_TOLERANCE`` bits. scikit-learn breaks
a tie of exact arithmetic by draw order only if its floating-point sums of ``-p log2 p`` over
classes agree bit for bit, as they do when the nonzero class weights within each child are all
equal (the LED table with one row per digit); otherwise rounding may break a real tie instead.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from harness.core.errors import BadInputError, InvalidParameterError
from harness.core.params import Interval, NoneValue, Options, Param, validate_params

FEATURE_THRESHOLD = 1e-7  # sklearn/tree/_partitioner.pxd: max - min <= this means constant
TIE_TOLERANCE = 1e-12  # bits; improvements closer than this are ties
MAX_TERM_COLUMNS = 16  # expected_mdi_terms keeps p * 2**p values per node

_PARAMS = {
    "max_features": Param(1, (Interval(int, 1, None), NoneValue())),
    "max_depth": Param(None, (Interval(int, 1, None), NoneValue())),
    "rule": Param("sklearn", (Options({"sklearn", "paper"}),)),
}


def expected_mdi(
    X,
    y,
    weights=None,
    max_features: int | None = 1,
    max_depth: int | None = None,
    rule: Literal["sklearn", "paper"] = "sklearn",
) -> np.ndarray:
    """Exact expected unnormalised MDI of one randomized tree on a finite table, in bits.

    ``E[sum_{t: v(t) = X_m} p(t) Delta i(s_t, t)]`` with the entropy impurity (Louppe et al.
    2013, Eq. 1), the expectation taken over the random choices of the tree construction
    (see the module docstring for both rules). For fully grown trees the values sum to
    ``I(X; Y)`` (Louppe et al. 2013, Thm 2); at ``max_features=1`` on binary inputs they equal
    Thm 1 (Eq. 2), truncated at depth ``max_depth`` for ``rule="paper"``.

    Parameters
    ----------
    X : array-like of shape (n, p)
        Support rows; real numbers (bool, int or float), each distinct value of a column a level.
    y : array-like of shape (n,)
        Class of each row (any sortable labels).
    weights : array-like of shape (n,), optional
        Non-negative probabilities or counts of the rows, normalised to sum 1; ``None`` gives equal
        weights. Rows of weight 0 are not in the support and are dropped (fit scikit-learn on the
        rows of positive weight to compare); duplicate ``(x, y)`` rows are merged.
    max_features : int or None, default=1
        K, the number of variables drawn at each node; ``None`` means p.
    max_depth : int or None, default=None
        Nodes at this depth (root 0) are leaves; ``None`` grows trees fully.
    rule : {"sklearn", "paper"}, default="sklearn"
        scikit-learn's ``RandomSplitter`` or the multiway trees of the paper.

    Returns
    -------
    ndarray of shape (p,)
        Expected importance of each column, in bits.

    Raises
    ------
    BadInputError
        For data that is not a finite table of real-valued levels.
    InvalidParameterError
        For ``max_features``, ``max_depth`` or ``rule`` outside their allowed values.
    """
    params = validate_params(
        "expected_mdi",
        _PARAMS,
        {"max_features": max_features, "max_depth": max_depth, "rule": rule},
    )
    X, y, w = _validated_table(X, y, weights, params["rule"])
    p = X.shape[1]
    k = p if params["max_features"] is None else params["max_features"]
    if k > p:
        raise InvalidParameterError(
            f"The 'max_features' parameter of expected_mdi must be an int in [1, {p}] (the "
            f"number of columns of X) or None. Got {k!r} instead."
        )
    return _Recursion(X, y, w, k, params["max_depth"], params["rule"]).run()


def _validated_table(X, y, weights, rule: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Checked support: float levels (float32-rounded for sklearn), class codes, probabilities."""
    X = np.asarray(X)
    if X.dtype.kind not in "biuf" or X.ndim != 2 or X.size == 0:
        raise BadInputError(
            "X must be a non-empty 2-D array (n, p) of real numbers (bool, int or float), each "
            "distinct value of a column being one level of a discrete variable; code categories "
            f"as numbers. Got an array of dtype {X.dtype} and shape {X.shape}."
        )
    X = X.astype(np.float64)
    if not np.all(np.isfinite(X)):
        # the oracle enumerates splits x <= t of discrete levels; scikit-learn's routing of
        # missing values (a learned direction per node) is not part of that law
        raise BadInputError(
            f"X must be finite (a table of discrete levels; the exact oracle has no "
            f"missing-value routing); got {int(np.isnan(X).sum())} NaN and "
            f"{int(np.isinf(X).sum())} infinite cells.")
    n = X.shape[0]
    y = np.asarray(y)
    if y.shape != (n,) or (y.dtype.kind == "f" and not np.all(np.isfinite(y))):
        raise BadInputError(
            f"y must be a 1-D array of {n} finite class labels, one per row of X; got dtype "
            f"{y.dtype} and shape {y.shape}."
        )
    try:
        y_codes = np.unique(y, return_inverse=True)[1].ravel()
    except TypeError as exc:
        raise BadInputError(f"y must hold sortable class labels; got {exc}.") from None
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n,) or not np.all(np.isfinite(w) & (w >= 0)) or w.sum() <= 0:
        raise BadInputError(
            f"weights must be None or a 1-D array of {n} finite, non-negative numbers with a "
            f"positive sum; got shape {w.shape} and values {np.ravel(w)[:5].tolist()}..."
        )
    if rule == "sklearn":
        X32 = X.astype(np.float32).astype(np.float64)  # the values the splitter compares
        for j in range(X.shape[1]):
            levels = np.unique(X32[:, j])
            collide = len(levels) < len(np.unique(X[:, j]))
            if collide or (len(levels) > 1 and np.diff(levels).min() <= FEATURE_THRESHOLD):
                raise BadInputError(
                    f"Column {j} of X has distinct levels that are equal or closer than "
                    f"scikit-learn's FEATURE_THRESHOLD = {FEATURE_THRESHOLD:g} in float32; "
                    "the splitter would not tell them apart. Got levels "
                    f"{np.unique(X[:, j])[:6].tolist()}..."
                )
        X = X32
    keep = w > 0
    rows, inverse = np.unique(
        np.column_stack([X[keep], y_codes[keep]]), axis=0, return_inverse=True
    )
    merged = np.bincount(inverse.ravel(), weights=w[keep], minlength=len(rows))
    return rows[:, :-1], rows[:, -1].astype(np.int64), merged / merged.sum()


def _candidate_size_law(rule: str, n_pool: int, p: int, k: int) -> np.ndarray:
    """``P(j candidates)`` for j = 0..n_pool, the j candidates a uniform subset of the pool.

    sklearn: the pool is the non-constant features; j is hypergeometric (the non-constant ones
    among the first K of a random order of all p), with j = 0 turned into 1 (the search goes on
    to the first non-constant feature). paper: the pool is the unused variables, j = min(K, n).
    """
    law = np.zeros(n_pool + 1)
    if rule == "paper":
        law[min(k, n_pool)] = 1.0
        return law
    total = math.comb(p, k)
    for j in range(min(k, n_pool) + 1):
        law[j] = math.comb(n_pool, j) * math.comb(p - n_pool, k - j) / total
    law[1] += law[0]
    law[0] = 0.0
    return law


def _tie_classes(gains: np.ndarray) -> np.ndarray:
    """Integer rank of each gain, equal for gains within ``TIE_TOLERANCE`` of their neighbour."""
    order = np.argsort(gains, kind="stable")
    steps = np.diff(gains[order]) > TIE_TOLERANCE
    ranks = np.empty(len(gains), dtype=np.int64)
    ranks[order] = np.concatenate([[0], np.cumsum(steps)])
    return ranks


def _win_probabilities(
    options: list[tuple[np.ndarray, np.ndarray]], size_law: np.ndarray
) -> list[np.ndarray]:
    """Probability that each split option of each pool feature is the one the node makes.

    ``options[f] = (probabilities, gains)`` of the splits feature f can propose. Option c of f
    wins when f is a candidate, proposes c, and no other candidate proposes a larger gain; with
    t tied candidates it wins with probability 1/(t+1) = integral of u**t on [0, 1]. Summing
    over uniform candidate subsets of size j gives
    ``P = q_f(c) sum_j P(j) / C(n, j) * int_0^1 e_{j-1}({a_h + b_h u}_{h != f}) du``, with
    ``a_h = P(gain_h < g)``, ``b_h = P(gain_h = g)`` and ``e`` the elementary symmetric
    polynomials, expanded as the coefficients of ``prod_h (1 + s (a_h + b_h u))``.
    """
    n = len(options)
    ranks = _tie_classes(np.concatenate([gains for _, gains in options]))
    bounds = np.cumsum([0] + [len(gains) for _, gains in options])
    rank_of = [ranks[bounds[f] : bounds[f + 1]] for f in range(n)]
    size_weight = np.array([size_law[j] / math.comb(n, j) for j in range(1, n + 1)])
    integrate = 1.0 / np.arange(1, n + 1)
    out = []
    for f, (probs, _) in enumerate(options):
        wins = np.zeros(len(probs))
        for c, (q, rank) in enumerate(zip(probs, rank_of[f])):
            poly = np.zeros((n, n))  # poly[s, u]: coefficient of s**s u**u
            poly[0, 0] = 1.0
            for h in range(n):
                if h != f:
                    below = options[h][0][rank_of[h] < rank].sum()
                    equal = options[h][0][rank_of[h] == rank].sum()
                    grown = poly.copy()
                    grown[1:] += below * poly[:-1]
                    grown[1:, 1:] += equal * poly[:-1, :-1]
                    poly = grown
            wins[c] = q * size_weight @ (poly @ integrate)
        out.append(wins)
    return out


class _Recursion:
    """Memoised expected importance of the subtree below each reachable node."""

    def __init__(
        self, X, y, w, k: int, max_depth: int | None, rule: str, by_branch: bool = False
    ) -> None:
        self.X, self.y, self.w = X, y, w
        self.k, self.max_depth, self.rule = k, max_depth, rule
        self.p = X.shape[1]
        # by_branch: total[m, B] (B the bit mask of the variables used above the node) instead
        # of total[m]; the paper rule's memo key already holds B, so subtrees are reusable.
        self.shape = (self.p, 2**self.p) if by_branch else (self.p,)
        self.n_classes = int(y.max()) + 1
        self.memo: dict[tuple, np.ndarray] = {}

    def run(self) -> np.ndarray:
        return self.node(np.arange(len(self.y)), 0, 0)

    def entropy(self, rows: np.ndarray) -> tuple[float, float]:
        """Weight of the rows and entropy of Y among them, in bits."""
        counts = np.bincount(self.y[rows], weights=self.w[rows], minlength=self.n_classes)
        total = counts.sum()
        share = counts[counts > 0] / total
        return float(total), float(-(share * np.log2(share)).sum())

    def gain(self, weight: float, impurity: float, children: list[np.ndarray]) -> float:
        """``Delta i = i(t) - sum_c p(c | t) i(c)`` of a split of a node."""
        after = 0.0
        for rows in children:
            child_weight, child_impurity = self.entropy(rows)
            after += child_weight * child_impurity
        return impurity - after / weight

    def node(self, rows: np.ndarray, used: int, depth: int) -> np.ndarray:
        key = (rows.tobytes(), used, depth if self.max_depth is not None else 0)
        if key not in self.memo:
            self.memo[key] = self.expand(rows, used, depth)
        return self.memo[key]

    def expand(self, rows: np.ndarray, used: int, depth: int) -> np.ndarray:
        total = np.zeros(self.shape)
        pure = len(np.unique(self.y[rows])) == 1
        if pure or (self.max_depth is not None and depth >= self.max_depth):
            return total
        values = self.X[rows]
        varying = values.max(axis=0) > values.min(axis=0)
        if self.rule == "sklearn":
            pool = [j for j in range(self.p) if varying[j]]
        else:
            pool = [j for j in range(self.p) if not used >> j & 1]
            if not any(varying[pool]):
                return total  # every further split is a no-op: no more impurity decrease
        if not pool:
            return total
        weight, impurity = self.entropy(rows)
        options, children = [], []
        for j in pool:
            levels = np.unique(values[:, j])
            if self.rule == "sklearn":  # a threshold cut after levels[c], uniform threshold
                parts = [
                    [rows[values[:, j] <= cut], rows[values[:, j] > cut]] for cut in levels[:-1]
                ]
                probs = np.diff(levels) / (levels[-1] - levels[0])
            else:  # one child per level
                parts = [[rows[values[:, j] == level] for level in levels]]
                probs = np.ones(1)
            gains = np.array([self.gain(weight, impurity, part) for part in parts])
            options.append((probs, gains))
            children.append(parts)
        size_law = _candidate_size_law(self.rule, len(pool), self.p, self.k)
        wins = _win_probabilities(options, size_law)
        for f, j in enumerate(pool):
            for c, chance in enumerate(wins[f]):
                if chance > 0:
                    where = (j, used) if len(self.shape) == 2 else j
                    total[where] += chance * weight * options[f][1][c]
                    below = used | 1 << j if self.rule == "paper" else 0
                    for child in children[f][c]:
                        total += chance * self.node(child, below, depth + 1)
        return total


def expected_mdi_terms(X, y, weights=None, max_features: int | None = 1) -> np.ndarray:
    """Exact expected MDI of one paper-rule tree split by the branch above each node, in bits.

    Entry ``[m, B]`` (``B`` a bit mask over the columns, bit j for column j) is
    ``E[sum_{t: v(t) = X_m, branch(t) = B} p(t) Delta i(t)]``: the part of the expected
    importance of ``X_m`` (Louppe et al. 2013, Eq. 1) made at nodes whose ancestors split on
    exactly the variables ``B`` (``rule="paper"`` of :func:`expected_mdi`: multiway splits, K
    drawn among the unused variables). Summing over ``B`` gives :func:`expected_mdi`; summing
    over the masks of ``|B| = k`` gives the degree-k term of the second-level decomposition
    (seed 000, Eq. 2, outer sum). At ``max_features=1`` entry ``[m, B]`` equals
    ``I(X_m; Y | B) / (C(p, |B|) (p - |B|))`` (the proof sketch of Thm 1: a branch B is drawn
    with probability ``1/C(p, k)`` and ends on ``X_m`` in ``1/(p - k)`` of the cases), so the
    third level of the decomposition can be checked term by term; at larger K only some
    ``(m, B)`` are reached (masking).

    Parameters
    ----------
    X, y, weights, max_features
        As in :func:`expected_mdi`; at most :data:`MAX_TERM_COLUMNS` columns.

    Returns
    -------
    ndarray of shape (p, 2**p)
    """
    params = validate_params(
        "expected_mdi_terms",
        {"max_features": _PARAMS["max_features"]},
        {"max_features": max_features},
    )
    X, y, w = _validated_table(X, y, weights, "paper")
    p = X.shape[1]
    if p > MAX_TERM_COLUMNS:
        raise BadInputError(
            f"expected_mdi_terms keeps one value per (variable, subset of variables): X may "
            f"have at most {MAX_TERM_COLUMNS} columns; got {p}."
        )
    k = p if params["max_features"] is None else params["max_features"]
    if k > p:
        raise InvalidParameterError(
            f"The 'max_features' parameter of expected_mdi_terms must be an int in [1, {p}] "
            f"(the number of columns of X) or None. Got {k!r} instead."
        )
    return _Recursion(X, y, w, k, None, "paper", by_branch=True).run()


def degree_terms(terms: np.ndarray) -> np.ndarray:
    """Sum ``terms[m, B]`` (from :func:`expected_mdi_terms`) over the masks of each size k.

    Returns
    -------
    ndarray of shape (p, p)
        ``[m, k]``: the degree-k term of ``Imp(X_m)`` (seed 000, Eq. 2, outer sum).
    """
    p = terms.shape[0]
    if terms.shape != (p, 2**p):
        raise ValueError(f"terms must have shape (p, 2**p); got {terms.shape}.")
    sizes = np.array([bin(mask).count("1") for mask in range(2**p)])
    return np.stack([terms[:, sizes == k].sum(axis=1) for k in range(p)], axis=1)
