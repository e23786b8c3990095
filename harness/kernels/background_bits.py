"""Background rows as bits: which of up to 64 background rows go left at each node, as one
word, so that kernels walking many background rows at once (the marginal imputation of
tree SAGE, interventional TreeSHAP) route them all with one AND per node.

Routing is the view's rule (:func:`harness.forest.packed.goes_left`): a coded row goes left
when ``z_j <= threshold``, or when ``z_j`` is NaN and the node sends missing values left.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from harness.core.tasks import run_tasks
from harness.forest.packed import left_bit

ALL_ROWS = ~np.uint64(0)


@njit(cache=True)
def feature_columns(X32, first, last):
    """Rows ``first``, ..., ``last - 1`` of ``X32`` feature by feature, shape (p, rows):
    the values a split compares, contiguous, for the kernels that route many rows at once
    into the bits of a word (written as loops: numba compiles a transpose into generic code)."""
    columns = np.empty((X32.shape[1], last - first), dtype=np.float32)
    for i in range(first, last):
        for j in range(X32.shape[1]):
            columns[j, i - first] = X32[i, j]
    return columns


@njit(cache=True, inline='always')
def popcount(m):
    """Number of set bits of a uint64."""
    m = m - ((m >> np.uint64(1)) & np.uint64(0x5555555555555555))
    m = (m & np.uint64(0x3333333333333333)) + ((m >> np.uint64(2)) & np.uint64(0x3333333333333333))
    m = (m + (m >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((m * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True)
def word_rows(n_background, word):
    """Bit set of the background rows held by ``word`` (64 of them, fewer in the last)."""
    n_rows = min(64, n_background - 64 * word)
    return ALL_ROWS if n_rows == 64 else (np.uint64(1) << np.uint64(n_rows)) - np.uint64(1)


#: Parallel tasks of :func:`background_directions`, each a contiguous range of trees: a
#: node's bits do not depend on the others, and a tree's sum is its own, so the result is the
#: same for any number.
DIRECTION_TASKS = 16


@njit(cache=True, nogil=True)
def _tree_directions(left, feature, threshold, missing_left, columns, n_background, start,
                     end, directions):
    """The bits of nodes ``start, ..., end - 1`` (one tree). A word's 64 compares run over a
    padded column (a constant trip count, which LLVM turns into vector compares: 5.7 -> 4.1
    ms on the bench's case C), 32 of them for a word of at most 32 rows (the bench's 30
    background rows: 5.9 -> 4.9 ms for the routing); the padding's bits are masked off."""
    for node in range(start, end):
        if left[node] == -1:
            continue
        cut, missing = threshold[node], missing_left[node]
        j = np.uint64(feature[node])
        for word in range(directions.shape[1]):
            if n_background - 64 * word <= 32:
                bits = _left_bits(columns, j, 64 * word, 32, cut, missing)
            else:
                bits = _left_bits(columns, j, 64 * word, 64, cut, missing)
            directions[node, word] = bits & word_rows(n_background, word)


@njit(cache=True, inline="always")
def _left_bits(columns, j, first, lanes, cut, missing):
    """Bit b set if ``columns[j, first + b]`` goes left, b < ``lanes``; called with a
    literal ``lanes``, so that the inlined loop keeps a constant trip count."""
    bits = np.uint64(0)
    for b in range(lanes):
        bits |= left_bit(np.float64(columns[j, first + b]), cut, missing) << np.uint64(b)
    return bits


@njit(cache=True, nogil=True)
def _tree_reached_sum(left, right, value, start, directions, n_background, stack_node,
                      stack_reach, total):
    """Add the tree starting at ``start``'s output of every background row into ``total``,
    by a depth-first descent whose stack holds each pending node with the background rows
    that reach it (a branch is entered only by the rows that go there); nodes and stack
    positions index unsigned (no negative-index wraparound)."""
    origin = np.uint64(start)
    for word in range(directions.shape[1]):
        stack_node[0], stack_reach[0] = 0, word_rows(n_background, word)
        top = np.uint64(1)
        while top:
            top -= np.uint64(1)
            node, reach = stack_node[top], stack_reach[top]
            at = origin + np.uint64(node)
            if left[at] == -1:
                count = np.float64(popcount(reach))
                for c in range(value.shape[1]):
                    total[c] += count * value[at, c]
                continue
            goes = directions[at, word]
            # both children pushed, the top one kept only if rows go there (branch-free)
            stack_node[top], stack_reach[top] = right[at], reach & ~goes
            top += np.uint64((reach & ~goes) != 0)
            stack_node[top], stack_reach[top] = left[at], reach & goes
            top += np.uint64((reach & goes) != 0)


@njit(cache=True, nogil=True)
def _routing_tasks(left, right, feature, threshold, missing_left, value, offsets, columns,
                   n_background, n_tasks, stack_size, directions, sums, first, last):
    """Tasks ``first, ..., last - 1`` of :func:`background_routing`: task k fills the bits of
    the trees in its k-th of ``n_tasks`` contiguous ranges and, when ``sums`` has a row per
    tree, adds each tree's outputs of the background rows into its row, while the tree's
    nodes are still in cache."""
    n_trees = offsets.size - 1
    stack_node = np.empty(stack_size, dtype=np.int64)
    stack_reach = np.empty(stack_size, dtype=np.uint64)
    for task in range(first, last):
        for t in range(task * n_trees // n_tasks, (task + 1) * n_trees // n_tasks):
            _tree_directions(left, feature, threshold, missing_left, columns, n_background,
                             offsets[t], offsets[t + 1], directions)
            if sums.shape[0] > 0:
                _tree_reached_sum(left, right, value, offsets[t], directions, n_background,
                                  stack_node, stack_reach, sums[t])


def background_routing(left, right, feature, threshold, missing_left, value, offsets, Z32,
                       mean_output: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Which background rows go left at each node, and (``mean_output``) the mean over the
    trees and the background rows of the tree outputs, E_z f(z), shape (n_values,): the base
    value of interventional explanations.

    The bits: bit b % 64 of word b // 64 of row ``node`` is set if background row b goes
    left, shape (total_nodes, ceil(B / 64)) uint64. The rows' values of each feature are
    first laid out contiguously, so that a node's bits come from one branch-free pass over
    its feature's values (:func:`left_bit`). The mean: each tree is descended once by all
    its background rows at once, right after its bits are computed (no row walk repeats the
    forest's predict: on the bench's case C that predict was 5.5 ms of interventional
    TreeSHAP's 77). The trees are split into :data:`DIRECTION_TASKS` ranges run in parallel
    (:func:`harness.core.tasks.run_tasks`); the trees' sums are added in tree order, the same
    bits on any number of threads.
    """
    n_background, n_trees = Z32.shape[0], offsets.size - 1
    columns = np.zeros((Z32.shape[1], 64 * ((n_background + 63) // 64)), dtype=np.float32)
    columns[:, :n_background] = Z32.T  # each feature's values contiguous, padded to words
    directions = np.zeros((offsets[-1], (n_background + 63) // 64), dtype=np.uint64)
    sums = np.zeros((n_trees if mean_output else 0, value.shape[1]))
    n_tasks = max(1, min(DIRECTION_TASKS, n_trees))
    stack_size = int(np.diff(offsets).max())  # a tree's nodes: more than its stack holds
    run_tasks(_routing_tasks, n_tasks, left, right, feature, threshold, missing_left, value,
              offsets, columns, n_background, n_tasks, stack_size, directions, sums)
    if not mean_output:
        return directions, None
    # in tree order, as a loop over the trees would add them (cumsum is sequential; a
    # reduction may sum pairwise), without a Python step per tree: 0.23 ms on 500 trees
    total = np.cumsum(sums, axis=0)[-1] if n_trees else np.zeros(value.shape[1])
    return directions, total / (n_trees * n_background)


def background_directions(left, feature, threshold, missing_left, offsets, Z32) -> np.ndarray:
    """The bits of :func:`background_routing` alone (no tree is descended, so no right
    children or node values are read)."""
    no_values = np.zeros((0, 1))
    return background_routing(left, left, feature, threshold, missing_left, no_values,
                              offsets, Z32, mean_output=False)[0]
