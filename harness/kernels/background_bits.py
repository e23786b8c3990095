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


#: Parallel tasks of :func:`background_directions`, each a contiguous range of nodes: a
#: node's bits do not depend on the others, so the result is the same for any number.
DIRECTION_TASKS = 16


@njit(cache=True, nogil=True)
def _directions_tasks(left, feature, threshold, missing_left, columns, n_background,
                      n_tasks, directions, first, last):
    """Tasks ``first, ..., last - 1`` of :func:`background_directions`: task k fills the rows
    of the nodes in its k-th of ``n_tasks`` contiguous ranges. A word's 64 compares run
    over a padded column (a constant trip count, which LLVM turns into vector compares:
    5.7 -> 4.1 ms on the bench's case C); the padding's bits are masked off."""
    n_nodes, n_words = directions.shape
    for task in range(first, last):
        for node in range(task * n_nodes // n_tasks, (task + 1) * n_nodes // n_tasks):
            if left[node] == -1:
                continue
            cut, missing = threshold[node], missing_left[node]
            j = feature[node]
            for word in range(n_words):
                bits = np.uint64(0)
                for b in range(64):
                    bits |= left_bit(np.float64(columns[j, 64 * word + b]), cut,
                                     missing) << np.uint64(b)
                directions[node, word] = bits & word_rows(n_background, word)


def background_directions(left, feature, threshold, missing_left, offsets, Z32):
    """Which background rows go left at each node: bit b % 64 of word b // 64 of row ``node``
    is set if background row b goes left, shape (total_nodes, ceil(B / 64)) uint64.

    The rows' values of each feature are first laid out contiguously, so that a node's bits
    come from one branch-free pass over its feature's values (:func:`left_bit`). The nodes
    are split into :data:`DIRECTION_TASKS` ranges run in parallel
    (:func:`harness.core.tasks.run_tasks`): on the bench's case C (Friedman #1, 300 trees)
    with 30 background rows, this step took 7 % of interventional TreeSHAP's time on one
    thread, and it all ran serially.
    """
    n_background = Z32.shape[0]
    columns = np.zeros((Z32.shape[1], 64 * ((n_background + 63) // 64)), dtype=np.float32)
    columns[:, :n_background] = Z32.T  # each feature's values contiguous, padded to words
    directions = np.zeros((offsets[-1], (n_background + 63) // 64), dtype=np.uint64)
    n_tasks = max(1, min(DIRECTION_TASKS, int(offsets[-1])))
    run_tasks(_directions_tasks, n_tasks, left, feature, threshold, missing_left, columns,
              n_background, n_tasks, directions)
    return directions


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


@njit(cache=True, nogil=True)
def _reached_sums_tasks(left, right, value, offsets, directions, n_background, stack_size,
                        sums, first, last):
    """Tasks ``first, ..., last - 1`` of :func:`background_mean_output`: task t adds tree
    t's output of every background row into ``sums[t]``, by a depth-first descent whose
    stack holds each pending node with the background rows that reach it."""
    stack_node = np.empty(stack_size, dtype=np.int64)
    stack_reach = np.empty(stack_size, dtype=np.uint64)
    for t in range(first, last):
        start = offsets[t]
        for word in range(directions.shape[1]):
            stack_node[0], stack_reach[0] = 0, word_rows(n_background, word)
            top = 1
            while top:
                top -= 1
                node, reach = stack_node[top], stack_reach[top]
                at = start + node
                if left[at] == -1:
                    count = np.float64(popcount(reach))
                    for c in range(value.shape[1]):
                        sums[t, c] += count * value[at, c]
                    continue
                goes = directions[at, word]
                for child, held in ((right[at], reach & ~goes), (left[at], reach & goes)):
                    if held:
                        stack_node[top], stack_reach[top] = child, held
                        top += 1


def background_mean_output(left, right, value, offsets, directions,
                           n_background) -> np.ndarray:
    """Mean over the trees and the background rows of the tree outputs, (n_values,): the
    base value of interventional explanations, E_z f(z), from the bits of
    :func:`background_directions` (each tree is descended once by all its background rows
    at once, a branch entered only by the rows that go there, so no row walk repeats the
    predict). Trees are tasks; their sums are added in tree order, the same bits on any
    number of threads."""
    n_trees = offsets.size - 1
    sums = np.zeros((n_trees, value.shape[1]))
    stack_size = int(np.diff(offsets).max())  # a tree's nodes: more than its stack holds
    run_tasks(_reached_sums_tasks, n_trees, left, right, value, offsets, directions,
              n_background, stack_size, sums)
    total = np.zeros(value.shape[1])
    for t in range(n_trees):
        total += sums[t]
    return total / (n_trees * n_background)
