"""Exact path-dependent TreeSHAP by Gauss-Legendre quadrature of the Shapley integral.

The game is that of Lundberg et al. 2020 (Alg. 1, shap's ``tree_path_dependent``): absent
features are integrated out with the node covers. A leaf l whose root path splits on the unique
features F_l adds v_l Π_{j∈S∩F_l} O_j Π_{j∈F_l∖S} Z_j to v(S), where Z_j is the product of the
cover ratios cover(child)/cover(parent) along the path's edges on j and O_j ∈ {0, 1} says
whether x follows all of them. Writing the Shapley weight as a Beta integral,
|S|!(d-1-|S|)!/d! = ∫_0^1 t^|S| (1-t)^(d-1-|S|) dt, the leaf's share of feature i becomes

    φ_i(l) = v_l (O_i - Z_i) ∫_0^1 Π_{j∈F_l∖{i}} g_j(t) dt,   g_j(t) = t O_j + (1-t) Z_j,

the integral of a polynomial of degree |F_l| - 1 (Yu, Bhatt et al. 2022, "Linear TreeShap",
build the same polynomial; we integrate it by quadrature instead of interpolating it).
Gauss-Legendre quadrature with m = ⌈max_l |F_l| / 2⌉ nodes on [0, 1] is exact for it and,
its weights and every factor g_j being positive, adds no cancellation: the result is exact
up to ~1e-15 relative rounding at any depth, with no Vandermonde conditioning.

The leaf's shares of a repeated feature telescope over its splits, so the integral splits
into one term per edge of the path: the edge into node c on feature j pays
v_l ∫ coef_c(t) G_l(t) dt to φ_j, where coef_c depends on the covers and on whether x
left j's branch before c, leaves it at c, or follows it through c (see ``_tree_tables``).
Everything that does not depend on x (cover products, the factors G gains along an edge,
coef, the preorder of the nodes, the leaves' sparse values) is tabulated once per tree, so
the per-row work is a single preorder pass with no division; entering a node updates
G(t_k) at the m nodes. The leaf shares are then summed in one of two ways, per tree:

- top-down: a leaf at depth d sums coef · G for its d edges and scatters the shares,
  O(N m + Σ_l d_l (m + nnz_l)) per row and tree (N nodes, d_l leaf depth, nnz_l non-zero
  leaf values): the better one for many outputs (10 classes);
- bottom-up (Linear TreeShap's order): every node c keeps A_c(t_k) = Σ_{l below c} v_l G_l(t_k)
  and its edge pays coef_c · A_c once, O(N m n_values): the better one for regression.

shap's algorithm costs O(Σ_l d_l^2) with a division per step. Rows go through the pass by
batches of LANES, which share the walk's bookkeeping and unpredictable branches (the walk
does not depend on x); the lanes are the innermost axis of every per-row buffer, so the
arithmetic is vectorised across rows, and rows never mix. Loops over the lanes run to a
length read from an array shape: with the compile-time constant LANES, LLVM unrolls them
before its loop vectoriser sees them, and numba leaves the SLP vectoriser off, so they
would stay scalar (measured 2x slower on deep multi-class trees).
Routing is the view's rule (:func:`harness.forest.packed.goes_left`): a coded row goes left
when x_j <= threshold, or when x_j is NaN and the node sends missing values left (computed
branch-free across the lanes).
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from numba import njit

from harness.forest.packed import PackedForest, as_float32_rows
from harness.kernels.tree_groups import sum_by_groups, tree_groups

#: Rows explained together (last axis of the per-row buffers): they share one tree walk.
LANES = 8
#: Batches of rows per task: a task builds each tree's tables once for all its batches
#: (about as much work as explaining 10 rows on Friedman #1), so a block this large pays them
#: back within 1%.
CHUNK_BATCHES = 256
#: Bytes that the tree groups' extra output arrays may take together (each tree's tables are
#: then built by one task only; :mod:`harness.kernels.tree_groups`).
GROUP_BUDGET = 16 << 20
#: How each tree is explained: the cheaper pass by :func:`_bottom_up_cheaper`, or one forced.
SWEEPS = {"auto": 0, "top_down": 1, "bottom_up": 2}


@njit(cache=True)
def _bottom_up_cheaper(depth, leaf_start, m, width):
    """Whether the bottom-up pass costs fewer multiply-adds than the top-down one on a tree.

    Top-down pays d_l (m + nnz_l) at each leaf l; bottom-up pays about m (2 n_values + 2)
    at every node and m nnz_l at each leaf (the operation counts of the two passes).
    """
    top, up = 0, 0
    for i in range(depth.size):
        nnz = leaf_start[i + 1] - leaf_start[i]
        up += m * (2 * width + 2) + nnz * m
        if nnz:
            top += depth[i] * (m + nnz)
    return up < top


def gauss_legendre_table(m_max: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [0, 1] for every rule size 1..m_max.

    Row m holds the m-node rule in its first m entries; it integrates polynomials of degree
    up to 2m - 1 exactly.
    """
    nodes = np.zeros((m_max + 1, max(m_max, 1)))
    weights = np.zeros_like(nodes)
    for m in range(1, m_max + 1):
        x, w = np.polynomial.legendre.leggauss(m)
        nodes[m, :m] = (x + 1.0) / 2.0
        weights[m, :m] = w / 2.0
    return nodes, weights


@njit(cache=True, error_model="numpy")
def _tree_tables(left, right, feature, threshold, missing, cover, value, start, stop, q_nodes,
                 q_weights, none):
    """Everything about one tree that does not depend on the explained row, in preorder.

    Position i of every array is the i-th node of a depth-first preorder walk. For the edge
    into that node on feature j, let Z_prev (Z_new) be the product of the cover ratios
    cover(child)/cover(parent) of the path's edges on j before (through) this edge,
    g(t) = t + (1-t) Z and, at the quadrature nodes t_k with weights w_k, r(Z) = w_k (1-Z)/g.
    The edge is of kind 0 if x left j's branch at an earlier edge, 1 if it leaves it here,
    2 if it follows it through here. Along the edge G is multiplied by ``factor[i, kind]``:
    Z_new/Z_prev, (1-t) Z_new/g_prev, g_new/g_prev; a leaf l below adds
    v_l ``coef[i, kind]`` ⊙ G_l to φ_j: 0, -w_k/(1-t_k) - r(Z_prev), r(Z_new) - r(Z_prev)
    (the differences telescope over repeated splits on j). ``prev_depth`` is the depth of
    the nearest edge on j above (``none`` if there is none). Leaf i's non-zero values are
    ``leaf_value[leaf_start[i]:leaf_start[i + 1]]`` of classes ``leaf_class``; internal
    nodes have none, and leaves have ``split_feature`` 0.
    """
    n = stop - start
    parent = np.full(n, -1, dtype=np.int64)
    for c in range(n):
        if left[start + c] >= 0:
            parent[left[start + c]] = c
            parent[right[start + c]] = c
    order = np.empty(n, dtype=np.int64)
    position = np.empty(n, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    edge_feature = np.full(n, -1, dtype=np.int64)
    prev_depth = np.full(n, none, dtype=np.int64)
    is_left = np.zeros(n, dtype=np.int64)
    combined = np.ones(n)
    combined_prev = np.ones(n)
    unique = np.zeros(n, dtype=np.int64)
    deepest = 0
    stack = np.empty(n, dtype=np.int64)
    top = 0
    stack[0] = 0
    for i in range(n):  # preorder, so ancestors are done before their descendants
        c = stack[top]
        top -= 1
        order[i], position[c] = c, i
        p = parent[c]
        if p >= 0:
            j = feature[start + p]
            pi = position[p]
            edge_feature[i] = j
            depth[i] = depth[pi] + 1
            is_left[i] = left[start + p] == c
            same = p
            while same > 0 and edge_feature[position[same]] != j:  # nearest edge on j above
                same = parent[same]
            unique[i] = unique[pi] + (same <= 0)
            if same > 0:
                combined_prev[i] = combined[position[same]]
                prev_depth[i] = depth[position[same]]
            combined[i] = combined_prev[i] * (cover[start + c] / cover[start + p])
        if left[start + c] >= 0:
            top += 1
            stack[top] = right[start + c]
            top += 1
            stack[top] = left[start + c]
        else:
            deepest = max(deepest, unique[i])
    m = max(1, (deepest + 1) // 2)
    factor = np.ones((n, 3, m))
    coef = np.zeros((n, 3, m))
    exit_coef = np.empty(m)  # -w_k / (1 - t_k), the same at every node
    for k in range(m):
        exit_coef[k] = -q_weights[m, k] / (1.0 - q_nodes[m, k])
    # node by node, with one reciprocal per g: two divisions per (node, k) instead of five
    # (table building is about a tenth of explaining 100 rows)
    for i in range(1, n):
        z_prev, z_new = combined_prev[i], combined[i]
        ratio = z_new / z_prev
        for k in range(m):
            t, w = q_nodes[m, k], q_weights[m, k]
            over_prev = 1.0 / (t + (1.0 - t) * z_prev)
            g_new = t + (1.0 - t) * z_new
            r_prev = w * (1.0 - z_prev) * over_prev
            factor[i, 0, k] = ratio
            factor[i, 1, k] = (1.0 - t) * z_new * over_prev
            factor[i, 2, k] = g_new * over_prev
            coef[i, 1, k] = exit_coef[k] - r_prev
            coef[i, 2, k] = w * (1.0 - z_new) / g_new - r_prev
    # the node arrays in preorder, written as loops: numba compiles array expressions
    # (fancy indexing, broadcasting, cumsum) into seconds of machinery for a few lines
    split_feature = np.zeros(n, dtype=np.int64)  # 0 at leaves
    split_threshold = np.empty(n)
    split_missing = np.empty(n, dtype=np.bool_)
    leaf_start = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        at = start + order[i]
        split_threshold[i], split_missing[i] = threshold[at], missing[at] != 0
        nnz = 0
        if left[at] < 0:
            for cls in range(value.shape[1]):
                nnz += value[at, cls] != 0
        else:
            split_feature[i] = feature[at]
        leaf_start[i + 1] = leaf_start[i] + nnz
    leaf_class = np.empty(leaf_start[n], dtype=np.int64)
    leaf_value = np.empty(leaf_start[n])
    for i in range(n):
        at, entry = start + order[i], leaf_start[i]
        if left[at] < 0:
            for cls in range(value.shape[1]):
                if value[at, cls] != 0:
                    leaf_class[entry], leaf_value[entry] = cls, value[at, cls]
                    entry += 1
    n_marked = 1
    for i in range(1, n):
        n_marked = max(n_marked, edge_feature[i] + 1)
    marked = np.zeros(n_marked, dtype=np.bool_)
    for i in range(1, n):  # the features split on, ascending (np.unique without its sort)
        marked[edge_feature[i]] = True
    n_used = 0
    for j in range(n_marked):
        n_used += marked[j]
    used = np.empty(n_used, dtype=np.int64)
    n_used = 0
    for j in range(n_marked):
        if marked[j]:
            used[n_used] = j
            n_used += 1
    return (m, depth, is_left, split_feature, split_threshold, split_missing, edge_feature,
            prev_depth, factor, coef, leaf_start, leaf_class, leaf_value, used)


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _enter_node(i, d, m, is_left, prev_depth, factor, coef, path, edge_coef, goes_left, on,
                kind):
    """Extend every lane's G = ``path[d]`` and its edge's ``coef`` row by node i's edge.

    The edge is of kind 0, 1 or 2 (see :func:`_tree_tables`) depending on whether the lane's
    row left the edge's feature branch earlier, leaves it here, or follows it; ``on[d]``
    records whether it still follows it. The lanes are the innermost axis, so every loop
    over them is one vector operation.
    """
    lanes = path.shape[2]
    side, before = is_left[i], prev_depth[i]
    for r in range(lanes):
        kind[r] = on[before, r] * (1 + (goes_left[d - 1, r] == side))
        on[d, r] = kind[r] == 2
    for k in range(m):
        f0, f1, f2 = factor[i, 0, k], factor[i, 1, k], factor[i, 2, k]
        c1, c2 = coef[i, 1, k], coef[i, 2, k]
        for r in range(lanes):
            follows, leaves = kind[r] == 2, kind[r] == 1
            path[d, k, r] = path[d - 1, k, r] * (f2 if follows else (f1 if leaves else f0))
            edge_coef[d, k, r] = c2 if follows else (c1 if leaves else 0.0)


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _batch_top_down(xb, phi, m, depth, is_left, split_feature, split_threshold, split_missing,
                    edge_feature, prev_depth, factor, coef, leaf_start, leaf_class, leaf_value,
                    path, edge_coef, goes_left, on, feature_at, kind, share):
    """Add one tree's Shapley values of LANES rows (columns of ``xb``) into ``phi``.

    ``phi`` is (p, n_values, LANES). One pass over the nodes in preorder, the same for every
    lane, so the bookkeeping (and its unpredictable branches) is shared by the batch.
    Entering the node at depth d sets ``path[d]`` = G(t_k) and ``edge_coef[d]`` from the
    entries of its ancestors, still in place. A leaf at depth d pays each edge e of its path
    Σ_k edge_coef[e, k] G(t_k), scaled by each leaf value. Lanes never mix, so a row's result
    does not depend on its batch.
    """
    lanes = path.shape[2]
    for k in range(m):
        for r in range(lanes):
            path[0, k, r] = 1.0
    for i in range(depth.size):
        d = depth[i]
        if d > 0:
            feature_at[d] = edge_feature[i]
            _enter_node(i, d, m, is_left, prev_depth, factor, coef, path, edge_coef,
                        goes_left, on, kind)
        if leaf_start[i + 1] == leaf_start[i]:
            j, cut, nan_left = split_feature[i], split_threshold[i], split_missing[i]
            for r in range(lanes):  # x <= cut, or NaN where missing values go left
                x = xb[j, r]
                goes_left[d, r] = (x <= cut) | ((x != x) & nan_left)
            continue
        for e in range(1, d + 1):
            for r in range(lanes):
                share[r] = 0.0
            for k in range(m):
                for r in range(lanes):
                    share[r] += edge_coef[e, k, r] * path[d, k, r]
            j = feature_at[e]
            for entry in range(leaf_start[i], leaf_start[i + 1]):
                cls, value = leaf_class[entry], leaf_value[entry]
                for r in range(lanes):
                    phi[j, cls, r] += value * share[r]


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _batch_bottom_up(xb, phi, m, depth, is_left, split_feature, split_threshold,
                     split_missing, edge_feature, prev_depth, factor, coef, leaf_start,
                     leaf_class, leaf_value, path, edge_coef, acc, goes_left, on, feature_at,
                     kind, left_at):
    """Same result as :func:`_batch_top_down`, summing the leaves up the tree instead.

    Edge e into node c pays Σ_k coef_c(t_k) Σ_{leaves l below c} v_l G_l(t_k), so each node
    keeps A_c(t_k) = Σ_{l below c} v_l G_l(t_k) in ``acc[depth, class, k]``: a leaf sets it
    to v_l G_l; a finished node pays its edge from it and passes it to its parent (a left
    child, finished first, sets the parent's; a right child adds to it). Entering a node at
    depth d finishes the nodes at depths >= d. Cost O(N m n_values) per row instead of
    O(Σ_l d_l (m + nnz_l)): the better one for few outputs.
    """
    lanes = path.shape[2]
    width = phi.shape[1]
    for k in range(m):
        for r in range(lanes):
            path[0, k, r] = 1.0
    current = 0
    for i in range(depth.size):
        d = depth[i]
        if d > 0:
            for level in range(current, d - 1, -1):
                _finish_node(phi, acc, edge_coef, feature_at[level], left_at[level], level, m,
                             width)
            feature_at[d] = edge_feature[i]
            left_at[d] = is_left[i]
            _enter_node(i, d, m, is_left, prev_depth, factor, coef, path, edge_coef,
                        goes_left, on, kind)
        current = d
        if leaf_start[i + 1] == leaf_start[i]:
            j, cut, nan_left = split_feature[i], split_threshold[i], split_missing[i]
            for r in range(lanes):  # x <= cut, or NaN where missing values go left
                x = xb[j, r]
                goes_left[d, r] = (x <= cut) | ((x != x) & nan_left)
            continue
        for cls in range(width):
            for k in range(m):
                for r in range(lanes):
                    acc[d, cls, k, r] = 0.0
        for entry in range(leaf_start[i], leaf_start[i + 1]):
            cls, value = leaf_class[entry], leaf_value[entry]
            for k in range(m):
                for r in range(lanes):
                    acc[d, cls, k, r] = value * path[d, k, r]
    for level in range(current, 0, -1):
        _finish_node(phi, acc, edge_coef, feature_at[level], left_at[level], level, m, width)


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _finish_node(phi, acc, edge_coef, j, first_child, level, m, width):
    """The node at ``level`` is done: its edge (on feature j) pays from A_c, which then
    sets (first child) or adds to its parent's."""
    lanes = acc.shape[3]
    for cls in range(width):
        for k in range(m):
            for r in range(lanes):
                phi[j, cls, r] += edge_coef[level, k, r] * acc[level, cls, k, r]
            if first_child:
                for r in range(lanes):
                    acc[level - 1, cls, k, r] = acc[level, cls, k, r]
            else:
                for r in range(lanes):
                    acc[level - 1, cls, k, r] += acc[level, cls, k, r]


@njit(cache=True, error_model="numpy")
def _explain_trees(left, right, feature, threshold, missing, cover, value, offsets, X32,
                   max_depth, q_nodes, q_weights, first_tree, last_tree, first_batch,
                   last_batch, out, sweep):
    """Add trees ``first_tree``, ..., ``last_tree - 1`` (in order) of the rows of batches
    ``first_batch``, ..., ``last_batch - 1`` into ``out``, with buffers of their own.

    Each tree's tables are built once here and serve every batch of the range. Each tree is
    explained by the top-down or the bottom-up pass, whichever costs fewer operations for it
    (``sweep`` 1 or 2 forces one, see SWEEPS). ``phi`` collects a batch's shares of one tree
    before they join ``out``.
    """
    n, p, width = out.shape
    m_max = q_nodes.shape[1]
    xb = np.empty((p, LANES))
    phi = np.zeros((p, width, LANES))
    path = np.empty((max_depth + 1, m_max, LANES))
    edge_coef = np.zeros((max_depth + 1, m_max, LANES))
    acc = np.empty((max_depth + 1, width, m_max, LANES))
    goes_left = np.zeros((max_depth + 1, LANES), dtype=np.int64)
    on = np.zeros((max_depth + 2, LANES), dtype=np.int64)
    on[max_depth + 1] = 1  # x follows every edge of a feature not yet split on
    feature_at = np.zeros(max_depth + 1, dtype=np.int64)
    left_at = np.zeros(max_depth + 1, dtype=np.int64)
    kind = np.zeros(LANES, dtype=np.int64)
    share = np.zeros(LANES)
    for t in range(first_tree, last_tree):
        (m, depth, is_left, split_feature, split_threshold, split_missing, edge_feature,
         prev_depth, factor, coef, leaf_start, leaf_class, leaf_value, used) = _tree_tables(
            left, right, feature, threshold, missing, cover, value, offsets[t],
            offsets[t + 1], q_nodes, q_weights, max_depth + 1)
        bottom_up = sweep == 2 or (sweep == 0 and _bottom_up_cheaper(depth, leaf_start, m,
                                                                     width))
        for batch in range(first_batch, last_batch):
            rows = min(LANES, n - batch * LANES)
            for r in range(LANES):  # short batches repeat their last row
                row = batch * LANES + min(r, rows - 1)
                for j in range(p):
                    xb[j, r] = X32[row, j]
            if bottom_up:
                _batch_bottom_up(xb, phi, m, depth, is_left, split_feature,
                                 split_threshold, split_missing, edge_feature, prev_depth,
                                 factor, coef, leaf_start, leaf_class, leaf_value, path,
                                 edge_coef, acc, goes_left, on, feature_at, kind, left_at)
            else:
                _batch_top_down(xb, phi, m, depth, is_left, split_feature,
                                split_threshold, split_missing, edge_feature, prev_depth,
                                factor, coef, leaf_start, leaf_class, leaf_value, path,
                                edge_coef, goes_left, on, feature_at, kind, share)
            for j in used:
                for cls in range(width):
                    for r in range(rows):
                        out[batch * LANES + r, j, cls] += phi[j, cls, r]
                    for r in range(LANES):
                        phi[j, cls, r] = 0.0


@njit(cache=True, nogil=True, error_model="numpy")
def _forest_shap_tasks(left, right, feature, threshold, missing, cover, value, offsets, X32,
                       max_depth, q_nodes, q_weights, n_chunks, n_groups, sweep, out, others,
                       first, last):
    """Tasks ``first, ..., last - 1`` of :func:`forest_shap`: task (group, chunk) adds the
    trees of group ``group`` for the rows of block ``chunk`` into ``out`` (group 0) or
    ``others[group - 1]``."""
    n = out.shape[0]
    n_trees = offsets.size - 1
    n_batches = (n + LANES - 1) // LANES
    for task in range(first, last):
        group, chunk = task // n_chunks, task % n_chunks
        _explain_trees(left, right, feature, threshold, missing, cover, value, offsets, X32,
                       max_depth, q_nodes, q_weights, group * n_trees // n_groups,
                       (group + 1) * n_trees // n_groups, chunk * n_batches // n_chunks,
                       (chunk + 1) * n_batches // n_chunks,
                       out if group == 0 else others[group - 1], sweep)


def forest_shap(left, right, feature, threshold, missing, cover, value, offsets, X32,
                max_depth, q_nodes, q_weights, n_chunks, n_groups, out, sweep) -> None:
    """Sum over trees of every row's Shapley values into ``out`` (n, p, n_values).

    Rows go by batches of LANES (row i always in batch i // LANES); batches are split into
    ``n_chunks`` contiguous blocks and trees into ``n_groups`` contiguous groups, one task
    per (group, block) (:func:`harness.core.tasks.run_tasks`). A group's sums go to an array
    of its own (the first group's to ``out``) and are added to ``out`` in group order at the
    end, so each row's arithmetic is fixed by the two counts, which the caller derives from
    the sizes alone: the result is the same bit for bit on any number of threads. Tree groups
    split the work of few rows without building a tree's tables in more than one task.
    """
    sum_by_groups(_forest_shap_tasks, n_groups * n_chunks, out, n_groups, left, right,
                  feature, threshold, missing, cover, value, offsets, X32, max_depth, q_nodes,
                  q_weights, n_chunks, n_groups, sweep)


def work_split(n_rows: int, n_trees: int, out_bytes: int) -> tuple[int, int]:
    """``(n_chunks, n_groups)`` of :func:`forest_shap`: blocks of CHUNK_BATCHES batches of
    rows, and groups of trees (:func:`harness.kernels.tree_groups.tree_groups`, within
    GROUP_BUDGET). The groups fix the order in which each row's trees are added, so the
    results do not depend on the number of threads; the row blocks do not change them."""
    n_batches = -(-n_rows // LANES)
    n_chunks = max(1, n_batches // CHUNK_BATCHES)
    n_groups = tree_groups(n_trees, out_bytes, GROUP_BUDGET)
    return n_chunks, n_groups


def expected_value(forest: PackedForest) -> np.ndarray:
    """shap's ``expected_value``: the trees' root values (cover-weighted means), averaged."""
    return forest.value[forest.offsets[:-1]].mean(axis=0)


def path_dependent_shap(forest: PackedForest, X: np.ndarray, threads: int | None = None,
                        sweep: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """Exact path-dependent TreeSHAP values of a forest (Lundberg et al. 2020, Alg. 1).

    Equals shap's ``TreeExplainer(model, feature_perturbation="tree_path_dependent")`` up to
    rounding (see the module docstring for the quadrature form of the Shapley sum).

    Parameters
    ----------
    forest : PackedForest
        A forest view's ``packed`` field.
    X : ndarray of shape (n, p)
        Rows to explain, coded by the view (:meth:`harness.forest.view.ForestView.rows`).
    threads : int, optional
        numba threads for this call (default: numba's current setting). Each row's result
        is the same whatever the number of threads.
    sweep : {"auto", "top_down", "bottom_up"}
        How each tree's leaf shares are summed (module docstring): per leaf along its path,
        or per node up the tree; "auto" takes the one with fewer operations, tree by tree.
        All three give the same values up to rounding.

    Returns
    -------
    phi : ndarray of shape (n, p, n_values)
        φ_j(x) for every output (class probabilities, or the regression prediction).
    base : ndarray of shape (n_values,)
        The expected value; base + Σ_j φ_j(x) = the forest's prediction at x.
    """
    if sweep not in SWEEPS:
        raise ValueError(f"sweep must be one of {sorted(SWEEPS)}, got {sweep!r}")
    X32 = as_float32_rows(X)
    n, p = X32.shape
    m_max = max(1, (min(forest.max_depth, p) + 1) // 2)
    q_nodes, q_weights = gauss_legendre_table(m_max)
    out = np.zeros((n, p, forest.n_values))
    previous = numba.get_num_threads()
    if threads is not None:
        numba.set_num_threads(threads)
    try:
        n_chunks, n_groups = work_split(n, forest.n_trees, out.nbytes)
        forest_shap(forest.left, forest.right, forest.feature, forest.threshold,
                    forest.missing_left, forest.cover, forest.value, forest.offsets, X32,
                    max(forest.max_depth, 1), q_nodes, q_weights, n_chunks, n_groups, out,
                    SWEEPS[sweep])
    finally:
        numba.set_num_threads(previous)
    return out / forest.n_trees, expected_value(forest)


@functools.cache
def compile_kernel() -> None:
    """Compile (or load from numba's cache) the kernel, on a one-split stump."""
    q_nodes, q_weights = gauss_legendre_table(1)
    forest_shap(np.array([1, -1, -1]), np.array([2, -1, -1]), np.array([0, -2, -2]),
                np.array([0.5, -2.0, -2.0]), np.zeros(3, dtype=np.uint8),
                np.array([2.0, 1.0, 1.0]),
                np.array([[0.5], [0.0], [1.0]]), np.array([0, 3]),
                np.array([[0.0], [1.0]], dtype=np.float32), 1, q_nodes, q_weights, 1, 1,
                np.zeros((2, 1, 1)), 0)
