"""Compiled decision-path walks: local MDI and Saabas contributions at the cost of a predict.

Both decompositions credit a per-edge quantity to the feature split on at the edge's parent,
along the path that a row takes in each tree (Sutera et al. 2021, Eq. 8; Saabas 2014):

- local MDI adds ``i(t) - i(t_x)``, the impurity drop from node ``t`` to the child ``t_x``
  that ``x`` enters, to feature ``v(t)``;
- Saabas adds ``v(t_x) - v(t)``, the change of the node value (class probabilities or mean),
  to feature ``v(t)``.

Each row's path is walked and the terms are added in place into the output, so memory is the
output plus the forest. Trees are visited one at a time over a block of rows (a tree's nodes
stay in cache), four rows at a time (the walks are latency-bound); in a tree whose leaves
lie at very different depths, a row that reaches its leaf hands its lane to the next row, so
that the long paths are not walked alone (fully grown forests: 1.2-1.5x faster, the same
bits). For one class per row (the predicted class, Sutera et al.'s default) only that
class's values are carried along the path: the class is guessed from the first trees and the
few rows whose final argmax differs are walked again. Blocks are tasks run on several
threads (:func:`harness.core.tasks.run_tasks`); every output row is written by one thread in
a fixed order (trees in order, edges from the root down), so neither the number of threads
nor the interleaving changes a bit of the result, and one class equals its slice of all
classes.

Routing follows the view's rule (:func:`harness.forest.packed.goes_left`): a coded row goes
left when ``x_j <= threshold``, or when ``x_j`` is NaN and the node sends missing values left.
The walks compare in float32 against the threshold rounded down to float32, which is the same
test (for a float32 ``x``, ``x <= t`` iff ``x`` is at most the largest float32 ``<= t``) on
half the memory.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from numba import njit

from harness.core.tasks import run_tasks
from harness.forest.compact import PathForest, compact_forest
from harness.forest.packed import PackedForest, as_float32_rows, goes_left

#: Rows of a block when every class is accumulated: the block's output stays in cache.
WIDE_BLOCK_ROWS = 256
#: Trees whose mean guesses the predicted class before the walk that accumulates it.
GUESS_TREES = 8


def _block_rows(n: int, limit: int) -> int:
    per_thread = -(-n // numba.get_num_threads())
    return max(1, min(per_thread, limit))


# Each step of a walk loads the node that the previous step chose, so the kernels advance four
# rows at once, each along its own path, and finish the stragglers one at a time. The four
# lanes are written out one by one (their state in scalars, which stay in registers), their
# step in both schedules below: as a function of its own (numba, with or without
# inline="always") the refilled walk ran 6x slower than written out, measured. Rows,
# nodes and split features index unsigned, so no access pays numba's negative-index wraparound
# (Saabas, predicted class, on the bench's A1: 18.7 -> 16.7 ms, the same bits).


@njit(cache=True)
def _walk(kids, feature, threshold, missing, q, k, sign, start, X32, out, i, node, f,
          accumulate):
    """Finish row i's walk from ``node`` (split on ``f``) to its leaf, which it returns
    (``i``, ``k``, ``start`` and ``node`` unsigned, as every caller passes them: one
    specialisation, no wraparound)."""
    while f >= 0:
        j = np.uint64(f)
        child = start + np.uint64(kids[node, np.uint64(goes_left(X32[i, j], threshold[node],
                                                                 missing, node))])
        if accumulate:
            out[i, j] += sign * (q[k, child] - q[k, node])
        node, f = child, feature[child]
    return node


@njit(cache=True)
def _lockstep_tree(kids, feature, threshold, missing, q, column, sign, start, X32, rows, out,
                   accumulate, leaves):
    """Walk ``rows`` down the tree at ``start`` four at a time: the four advance together
    until one reaches its leaf, the other three finish alone, and the next four start; the
    last ``m % 4`` rows walk alone. ``leaves[r]`` is the leaf of ``rows[r]``."""
    m = rows.size
    root = feature[start]
    for r in range(0, m - m % 4, 4):
        i, j = np.uint64(rows[r]), np.uint64(rows[r + 1])
        u, v = np.uint64(rows[r + 2]), np.uint64(rows[r + 3])
        ki, kj = np.uint64(column[i]), np.uint64(column[j])
        ku, kv = np.uint64(column[u]), np.uint64(column[v])
        a = b = c = d = start
        fa = fb = fc = fd = root
        while fa >= 0 and fb >= 0 and fc >= 0 and fd >= 0:
            ca = start + np.uint64(kids[a, np.uint64(goes_left(
                X32[i, np.uint64(fa)], threshold[a], missing, a))])
            cb = start + np.uint64(kids[b, np.uint64(goes_left(
                X32[j, np.uint64(fb)], threshold[b], missing, b))])
            cc = start + np.uint64(kids[c, np.uint64(goes_left(
                X32[u, np.uint64(fc)], threshold[c], missing, c))])
            cd = start + np.uint64(kids[d, np.uint64(goes_left(
                X32[v, np.uint64(fd)], threshold[d], missing, d))])
            if accumulate:
                out[i, np.uint64(fa)] += sign * (q[ki, ca] - q[ki, a])
                out[j, np.uint64(fb)] += sign * (q[kj, cb] - q[kj, b])
                out[u, np.uint64(fc)] += sign * (q[ku, cc] - q[ku, c])
                out[v, np.uint64(fd)] += sign * (q[kv, cd] - q[kv, d])
            a, b, c, d = ca, cb, cc, cd
            fa, fb, fc, fd = feature[a], feature[b], feature[c], feature[d]
        leaves[r] = _walk(kids, feature, threshold, missing, q, ki, sign, start, X32, out,
                          i, a, fa, accumulate)
        leaves[r + 1] = _walk(kids, feature, threshold, missing, q, kj, sign, start, X32,
                              out, j, b, fb, accumulate)
        leaves[r + 2] = _walk(kids, feature, threshold, missing, q, ku, sign, start, X32,
                              out, u, c, fc, accumulate)
        leaves[r + 3] = _walk(kids, feature, threshold, missing, q, kv, sign, start, X32,
                              out, v, d, fd, accumulate)
    for r in range(m - m % 4, m):  # stragglers, one at a time
        i = np.uint64(rows[r])
        leaves[r] = _walk(kids, feature, threshold, missing, q, np.uint64(column[i]), sign,
                          start, X32, out, i, start, root, accumulate)


@njit(cache=True)
def _refilled_tree(kids, feature, threshold, missing, q, column, sign, start, X32, rows, out,
                   accumulate, leaves):
    """Walk ``rows`` (at least four) down the tree at ``start`` in four lanes that advance
    together; a lane whose row reaches its leaf takes the next row, and the four go on. When
    no row is left, the lanes still walking finish alone. ``leaves[r]`` is the leaf of
    ``rows[r]``."""
    m = rows.size
    root = feature[start]
    # a lane: position of its row in rows, the row, its class, its node, the node's split
    pa, xa = 0, np.uint64(rows[0])
    ka, a, fa = np.uint64(column[xa]), start, root
    pb, xb = 1, np.uint64(rows[1])
    kb, b, fb = np.uint64(column[xb]), start, root
    pc, xc = 2, np.uint64(rows[2])
    kc, c, fc = np.uint64(column[xc]), start, root
    pd, xd = 3, np.uint64(rows[3])
    kd, d, fd = np.uint64(column[xd]), start, root
    nxt = 4
    while True:
        while fa >= 0 and fb >= 0 and fc >= 0 and fd >= 0:
            ca = start + np.uint64(kids[a, np.uint64(goes_left(
                X32[xa, np.uint64(fa)], threshold[a], missing, a))])
            cb = start + np.uint64(kids[b, np.uint64(goes_left(
                X32[xb, np.uint64(fb)], threshold[b], missing, b))])
            cc = start + np.uint64(kids[c, np.uint64(goes_left(
                X32[xc, np.uint64(fc)], threshold[c], missing, c))])
            cd = start + np.uint64(kids[d, np.uint64(goes_left(
                X32[xd, np.uint64(fd)], threshold[d], missing, d))])
            if accumulate:
                out[xa, np.uint64(fa)] += sign * (q[ka, ca] - q[ka, a])
                out[xb, np.uint64(fb)] += sign * (q[kb, cb] - q[kb, b])
                out[xc, np.uint64(fc)] += sign * (q[kc, cc] - q[kc, c])
                out[xd, np.uint64(fd)] += sign * (q[kd, cd] - q[kd, d])
            a, b, c, d = ca, cb, cc, cd
            fa, fb, fc, fd = feature[a], feature[b], feature[c], feature[d]
        # the lanes at a leaf take the next rows
        if fa < 0:
            leaves[pa] = a
            if nxt == m:
                break
            pa, xa = nxt, np.uint64(rows[nxt])
            ka, a, fa = np.uint64(column[xa]), start, root
            nxt += 1
        if fb < 0:
            leaves[pb] = b
            if nxt == m:
                break
            pb, xb = nxt, np.uint64(rows[nxt])
            kb, b, fb = np.uint64(column[xb]), start, root
            nxt += 1
        if fc < 0:
            leaves[pc] = c
            if nxt == m:
                break
            pc, xc = nxt, np.uint64(rows[nxt])
            kc, c, fc = np.uint64(column[xc]), start, root
            nxt += 1
        if fd < 0:
            leaves[pd] = d
            if nxt == m:
                break
            pd, xd = nxt, np.uint64(rows[nxt])
            kd, d, fd = np.uint64(column[xd]), start, root
            nxt += 1
    leaves[pa] = _walk(kids, feature, threshold, missing, q, ka, sign, start, X32, out,
                       xa, a, fa, accumulate)
    leaves[pb] = _walk(kids, feature, threshold, missing, q, kb, sign, start, X32, out,
                       xb, b, fb, accumulate)
    leaves[pc] = _walk(kids, feature, threshold, missing, q, kc, sign, start, X32, out,
                       xc, c, fc, accumulate)
    leaves[pd] = _walk(kids, feature, threshold, missing, q, kd, sign, start, X32, out,
                       xd, d, fd, accumulate)


@njit(cache=True)
def _walk_rows(kids, feature, threshold, missing, q, column, sign, offsets, refill, X32, rows,
               out, accumulate, leaf_ptr, leaf_class, leaf_value, prediction):
    """Walk ``rows`` down every tree of ``offsets``: add ``sign * (q[k, t_x] - q[k, t])``, with
    ``k = column[i]``, to ``out[i, v(t)]`` (if ``accumulate``), and the nonzero leaf values
    to ``prediction[i]`` (if it has rows).

    Four rows walk at once (:func:`_lockstep_tree`); in a tree marked in ``refill`` (uneven
    leaves and enough rows: :func:`_refilled`), a lane whose row is done takes the next one
    (:func:`_refilled_tree`), so that the long paths are not walked alone (in an even tree
    that only puts the lanes out of step, so that each stops the four sooner). Either way
    each row's path is walked and added in the same order: the choice changes no bit.
    """
    predicting = prediction.shape[0] > 0
    m = rows.size
    leaves = np.empty(m, dtype=np.int64)
    for t in range(offsets.size - 1):
        start = np.uint64(offsets[t])
        if refill[t] and m >= 4:
            _refilled_tree(kids, feature, threshold, missing, q, column, sign, start, X32,
                           rows, out, accumulate, leaves)
        else:
            _lockstep_tree(kids, feature, threshold, missing, q, column, sign, start, X32,
                           rows, out, accumulate, leaves)
        if predicting:  # apart from the walk, which it would slow down
            for r in range(m):
                for e in range(leaf_ptr[leaves[r]], leaf_ptr[leaves[r] + 1]):
                    prediction[rows[r], leaf_class[e]] += leaf_value[e]


#: Fewest rows of a task's block for which the walks over uneven trees refill their lanes
#: (with fewer, the lanes that finish alone when the rows run out weigh more than the refills
#: gain: breast cancer, 100 rows on 2 threads, 500 fully grown trees: 0.73x with refills)
REFILL_MIN_ROWS = 128


def _refilled(forest: PathForest, block: int) -> np.ndarray:
    """The trees whose walks refill their lanes (:func:`_walk_rows`): the forest's uneven
    trees when a task walks blocks of at least :data:`REFILL_MIN_ROWS` rows, else none."""
    return forest.refill if block >= REFILL_MIN_ROWS else np.zeros_like(forest.refill)


@njit(cache=True, nogil=True)
def _path_sums_tasks(kids, feature, threshold, missing, q, sign, offsets, refill, X32, block,
                     out, first_block, last_block):
    """Blocks of ``block`` rows ``first_block, ..., last_block - 1`` of :func:`_path_sums`."""
    n = X32.shape[0]
    column = np.zeros(n, dtype=np.int64)
    no_ptr, no_class, no_values = np.zeros(1, dtype=np.int64), np.zeros(0, np.int32), np.zeros(0)
    no_prediction = np.zeros((0, 1))
    for b in range(first_block, last_block):
        rows = np.arange(b * block, min(n, (b + 1) * block))
        _walk_rows(kids, feature, threshold, missing, q, column, sign, offsets, refill, X32, rows,
                   out, np.bool_(True), no_ptr, no_class, no_values, no_prediction)


def _path_sums(kids, feature, threshold, missing, q, sign, offsets, refill, X32,
               block) -> np.ndarray:
    """Mean over trees of Σ_{edges t -> t_x on the path of x_i, v(t) = j} sign (q[t_x] - q[t])
    for a node quantity ``q`` of shape (1, n_nodes); blocks of ``block`` rows are tasks
    (:func:`harness.core.tasks.run_tasks`)."""
    n = X32.shape[0]
    out = np.zeros(X32.shape)
    run_tasks(_path_sums_tasks, -(-n // block), kids, feature, threshold, missing, q, sign,
              offsets, refill, X32, block, out)
    out /= offsets.size - 1
    return out


@njit(cache=True)
def _argmax_rows(prediction, rows, chosen):
    for i in rows:  # np.argmax: the first of equal maxima
        best = 0
        for k in range(1, prediction.shape[1]):
            if prediction[i, k] > prediction[i, best]:
                best = k
        chosen[i] = best


@njit(cache=True, nogil=True)
def _saabas_class_tasks(kids, feature, threshold, missing, value_by_class, leaf_ptr, leaf_class,
                        leaf_value, offsets, refill, X32, output, guess_trees, block, out,
                        prediction, chosen, first_block, last_block):
    """Blocks of ``block`` rows ``first_block, ..., last_block - 1`` of
    :func:`_saabas_class`."""
    n, p = X32.shape
    width = prediction.shape[1]
    n_trees = offsets.size - 1
    no_prediction = np.zeros((0, width))
    guess = np.empty(block, dtype=np.int64)
    wrong = np.empty(block, dtype=np.int64)
    # element by element below: numba compiles whole-array expressions (fancy indexing,
    # broadcast in-place division) into seconds of generic code
    for b in range(first_block, last_block):
        rows = np.arange(b * block, min(n, (b + 1) * block))
        if output == -1:
            _walk_rows(kids, feature, threshold, missing, value_by_class, chosen, 1.0,
                       offsets[:guess_trees + 1], refill, X32, rows, out, np.bool_(False),
                       leaf_ptr, leaf_class, leaf_value, prediction)
            _argmax_rows(prediction, rows, chosen)
            for i in rows:
                for k in range(width):
                    prediction[i, k] = 0.0
        for r in range(rows.size):
            guess[r] = chosen[rows[r]]
        _walk_rows(kids, feature, threshold, missing, value_by_class, chosen, 1.0, offsets,
                   refill, X32, rows, out, np.bool_(True), leaf_ptr, leaf_class, leaf_value,
                   prediction)
        for i in rows:
            for k in range(width):
                prediction[i, k] /= n_trees
        if output == -1:
            _argmax_rows(prediction, rows, chosen)
            n_wrong = 0
            for r in range(rows.size):
                if chosen[rows[r]] != guess[r]:
                    wrong[n_wrong] = rows[r]
                    n_wrong += 1
                    for j in range(p):
                        out[rows[r], j] = 0.0
            _walk_rows(kids, feature, threshold, missing, value_by_class, chosen, 1.0, offsets,
                       refill, X32, wrong[:n_wrong], out, np.bool_(True), leaf_ptr, leaf_class,
                       leaf_value, no_prediction)


def _saabas_class(kids, feature, threshold, missing, value_by_class, leaf_ptr, leaf_class,
                  leaf_value, offsets, refill, X32, output, guess_trees, block) -> tuple:
    """Saabas contributions to one class per row: ``output``, or the predicted class if -1.

    The predicted class is known only after the last tree, so it is guessed from the first
    ``guess_trees`` trees; one walk then adds the guessed class's value changes and the leaf
    values, and the rows whose final argmax differs from the guess are walked again. Blocks
    of ``block`` rows are tasks (:func:`harness.core.tasks.run_tasks`).
    """
    n = X32.shape[0]
    out = np.zeros(X32.shape)
    prediction = np.zeros((n, value_by_class.shape[0]))
    chosen = np.full(n, output, dtype=np.int64)
    run_tasks(_saabas_class_tasks, -(-n // block), kids, feature, threshold, missing,
              value_by_class, leaf_ptr, leaf_class, leaf_value, offsets, refill, X32, output,
              guess_trees, block, out, prediction, chosen)
    out /= offsets.size - 1
    return out, prediction, chosen


@njit(cache=True, nogil=True)
def _saabas_all_tasks(kids, feature, threshold, missing, value, offsets, X32, block, out,
                      prediction, first_block, last_block):
    """Blocks of ``block`` rows ``first_block, ..., last_block - 1`` of :func:`_saabas_all`."""
    n = X32.shape[0]
    width = value.shape[1]
    n_trees = offsets.size - 1
    for b in range(first_block, last_block):
        for t in range(n_trees):
            start = offsets[t]
            for i in range(b * block, min(n, (b + 1) * block)):
                node = start
                f = feature[node]
                while f >= 0:
                    child = start + kids[node, np.int64(goes_left(X32[i, f], threshold[node],
                                                                  missing, node))]
                    for k in range(width):
                        out[i, f, k] += value[child, k] - value[node, k]
                    node, f = child, feature[child]
                for k in range(width):
                    prediction[i, k] += value[node, k]


def _saabas_all(kids, feature, threshold, missing, value, offsets, X32, block) -> tuple:
    """Saabas contributions to every class: the full value change along every edge; blocks
    of ``block`` rows are tasks (:func:`harness.core.tasks.run_tasks`)."""
    n, p = X32.shape
    out = np.zeros((n, p, value.shape[1]))
    prediction = np.zeros((n, value.shape[1]))
    run_tasks(_saabas_all_tasks, -(-n // block), kids, feature, threshold, missing, value,
              offsets, X32, block, out, prediction)
    out /= offsets.size - 1
    prediction /= offsets.size - 1
    return out, prediction


def local_mdi_paths(forest: PathForest, X: np.ndarray) -> np.ndarray:
    """Local MDI of every row: mean over trees of the impurity drops on its path, per feature.

    Imp(X_m, x) = 1/N_T Σ_T Σ_{t ∋ x, v(t) = m} [i(t) - i(t_x)] (Sutera et al. 2021,
    Definition 1, Eq. 8), unweighted by node sizes.

    Parameters
    ----------
    forest : PathForest
    X : array-like of shape (n, p)
        Rows coded by the view (:meth:`harness.forest.view.ForestView.rows`).

    Returns
    -------
    ndarray of shape (n, p)
    """
    X32 = as_float32_rows(X)
    packed = forest.packed
    block = _block_rows(X32.shape[0], X32.shape[0])
    return _path_sums(forest.kids, forest.feature, forest.threshold, forest.missing_left,
                      packed.impurity[None, :], -1.0, packed.offsets, _refilled(forest, block),
                      X32, block)


def saabas_paths(forest: PathForest, X: np.ndarray,
                 output: int = -2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Saabas contributions and bias of every row (and the prediction, for classifiers).

    φ_j(x) = 1/M Σ_T Σ_{t ∋ x, v(t) = j} [v(t_x) - v(t)] and bias = 1/M Σ_T v(root_T), so that
    bias + Σ_j φ_j(x) = f(x), the forest's ``predict_proba`` / ``predict`` (Saabas 2014;
    Lundberg et al. 2020, "Saabas").

    Parameters
    ----------
    forest : PathForest
    X : array-like of shape (n, p)
    output : int
        Classifiers: -2 for every class, -1 for each row's predicted class, or a class index.
        Ignored for regressors.

    Returns
    -------
    contributions : ndarray of shape (n, p, n_classes) for every class, else (n, p)
    prediction : ndarray of shape (n, n_classes), or None for a regressor
        Mean over trees of the leaf values (in tree order), what ``predict_proba`` returns.
    bias : ndarray of shape (n_classes,) for every class, else (n,)
        The mean root value (of each row's class).
    """
    packed = forest.packed
    X32 = as_float32_rows(X)
    n = X32.shape[0]
    bias = packed.value[packed.offsets[:-1]].sum(axis=0) / packed.n_trees
    if not packed.classifier:
        block = _block_rows(n, n)
        contributions = _path_sums(forest.kids, forest.feature, forest.threshold,
                                   forest.missing_left, forest.value_by_class, 1.0,
                                   packed.offsets, _refilled(forest, block), X32, block)
        return contributions, None, np.full(n, bias[0])
    if output == -2:
        contributions, prediction = _saabas_all(
            forest.kids, forest.feature, forest.threshold, forest.missing_left, packed.value,
            packed.offsets, X32, _block_rows(n, WIDE_BLOCK_ROWS))
        return contributions, prediction, bias
    block = _block_rows(n, n)
    contributions, prediction, chosen = _saabas_class(
        forest.kids, forest.feature, forest.threshold, forest.missing_left,
        forest.value_by_class, forest.leaf_ptr, forest.leaf_class, forest.leaf_value,
        packed.offsets, _refilled(forest, block), X32, output,
        min(GUESS_TREES, packed.n_trees), block)
    return contributions, prediction, bias[chosen]


@functools.cache
def compile_kernels() -> None:
    """Compile (or load from numba's cache) every walk on a stump, once per process."""
    stump = PackedForest(
        left=np.array([1, -1, -1]), right=np.array([2, -1, -1]), feature=np.array([0, -2, -2]),
        threshold=np.array([0.5, -2.0, -2.0]), value=np.full((3, 2), 0.5), cover=np.ones(3),
        impurity=np.zeros(3), offsets=np.array([0, 3]), max_depth=1, n_features=1,
        classifier=True)
    forest, X = compact_forest(stump), np.array([[0.0], [1.0]])
    local_mdi_paths(forest, X)
    for output in (-2, -1):
        saabas_paths(forest, X, output)
    stump.classifier, stump.value = False, np.full((3, 1), 0.5)
    saabas_paths(compact_forest(stump), X)
