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

With G_l(t) = Π_{j∈F_l} g_j(t), the share is v_l ∫ G_l(t) (O_i - Z_i) / g_i(t) dt, and the
ratio takes one of two forms: (1 - Z_i) / (t + (1-t) Z_i) when x follows i's splits
(O_i = 1), and -1 / (1 - t) when it does not, the same for every feature x fails. At the
quadrature nodes t_k with weights w_k, a leaf therefore pays

    φ_i(l) = v_l Σ_k r_i(t_k) G_l(t_k),   r_i = w_k (1 - Z_i) / g_i(t_k)  or  -w_k / (1 - t_k),

where Z_i (so r_i) is fixed by the path's last edge on i and does not depend on x. Everything
that does not depend on x (cover products, the factors G gains along an edge, r at each
node's edge, each leaf's last edge on each of its features, the preorder of the nodes, the
leaves' sparse values) is tabulated once per tree (``_tree_tables``), so the per-row work is
a single preorder pass with no division: entering a node multiplies G(t_k) by the factor of
its edge, and a leaf at depth d with u_l unique features pays u_l + 1 sums over the m nodes
and scatters u_l shares, O(N m + Σ_l u_l (m + nnz_l)) per row and tree (N nodes, nnz_l
non-zero leaf values). shap's algorithm costs O(Σ_l d_l^2) with a division per step.

Rows go through the pass by batches of LANES, which share the walk's bookkeeping and
unpredictable branches (the walk does not depend on x); the lanes are the innermost axis of
every per-row buffer, so the arithmetic is vectorised across rows, and rows never mix. Loops
over the lanes run to a length read from an array shape: with the compile-time constant
LANES, LLVM unrolls them before its loop vectoriser sees them, and numba leaves the SLP
vectoriser off, so they would stay scalar (measured 2x slower). numba compiles
:func:`_batch_shap` on its own first, with the width unknown, so its lane loops are
vectorised; LLVM then inlines it, when it optimises the module of the entry point
(:func:`_forest_shap_tasks`), into :func:`_explain_trees`, which allocates the buffers, so the
width is a constant there and the vector loops lose their run-time checks. That module is
what numba's cache holds and what runs. A process that compiles the kernel itself instead
links the call to the standalone compile of :func:`_explain_trees`, in which the batch is not
inlined: the same bits at 2-2.6x the time (100 rows, digits / ExtraTrees K = 1: 0.43 s
against 0.17 s; Friedman #1 / RF 300: 0.50 s against 0.25 s). The harness compiles in worker
processes and runs from the cache (:mod:`harness.run.first_import`), and speed experiments
on this kernel must compare cache-loaded code. A task of at most NARROW rows (a row or a
few explained) runs on buffers NARROW wide, also allocated in :func:`_explain_trees` (a
second inlined call); a short batch fills its lanes by repeating its last row.
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
from harness.kernels.no_alias import NOALIAS
from harness.kernels.tree_groups import sum_by_groups, tree_groups

#: Rows explained together (last axis of the per-row buffers): they share one tree walk.
LANES = 16
#: Lanes of a task with this many rows or fewer (a single row explained): half the work of
#: a full batch.
NARROW = LANES // 2
#: Batches of rows per task: a task builds each tree's tables once for all its batches
#: (about as much work as explaining 10 rows on Friedman #1), so a block this large pays them
#: back within 1%.
CHUNK_BATCHES = 256
#: Bytes that the tree groups' extra output arrays may take together (each tree's tables are
#: then built by one task only; :mod:`harness.kernels.tree_groups`).
GROUP_BUDGET = 16 << 20


def gauss_legendre_table(m_max: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [0, 1] for every rule size 1..m_max.

    Row m holds the m-node rule in its first m entries; it integrates polynomials of degree
    up to 2m - 1 exactly. The table is computed once per size (numpy's ``leggauss`` takes
    0.3 ms for sizes 1..6, serial time in a 4 ms explain on two threads) and copied out.
    """
    nodes, weights = _gauss_legendre_table(m_max)
    return nodes.copy(), weights.copy()


@functools.lru_cache(maxsize=64)
def _gauss_legendre_table(m_max: int) -> tuple[np.ndarray, np.ndarray]:
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
    cover(child)/cover(parent) of the path's edges on j before (through) this edge and
    g(t) = t + (1-t) Z. The edge is of kind 0 if x left j's branch at an earlier edge, 1 if
    it leaves it here, 2 if it follows it through here; along it G is multiplied by
    ``factor[i, kind, k]``: Z_new/Z_prev, (1-t) Z_new/g_prev, g_new/g_prev at node t_k.
    ``follow_share[i, k]`` = w_k (1 - Z_new) / g_new(t_k) is what a leaf below whose last
    edge on j this is pays to φ_j per unit of v_l G(t_k) when x follows j;
    ``exit_share[k]`` = -w_k / (1 - t_k) when it does not (module docstring).
    ``prev_depth`` is the depth of the nearest edge on j above (``none`` if there is none).
    Leaf i's non-zero values are ``leaf_value[leaf_start[i]:leaf_start[i + 1]]`` of classes
    ``leaf_class``, and the depths of its path's last edge on each of its features are
    ``last_edge[edge_start[i]:edge_start[i + 1]]``; internal nodes have none of either, and
    leaves have ``split_feature`` 0.
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
    deepest_depth = 0
    n_features = 1
    for c in range(n):
        if left[start + c] >= 0:
            n_features = max(n_features, feature[start + c] + 1)
    # the path's last edge on each feature, kept as the walk goes down and restored as it
    # comes back up (each edge set and restored once)
    last_on = np.zeros(n_features, dtype=np.int64)
    replaced = np.zeros(n + 1, dtype=np.int64)
    feature_on_path = np.zeros(n + 1, dtype=np.int64)
    current = 0
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
            d = depth[i]
            while current >= d:  # leave the path's edges at depth d and below
                last_on[feature_on_path[current]] = replaced[current]
                current -= 1
            same = last_on[j]  # position of the nearest edge on j above (0: none)
            replaced[d], feature_on_path[d], last_on[j], current = same, j, i, d
            unique[i] = unique[pi] + (same == 0)
            if same > 0:
                combined_prev[i] = combined[same]
                prev_depth[i] = depth[same]
            combined[i] = combined_prev[i] * (cover[start + c] / cover[start + p])
            deepest_depth = max(deepest_depth, depth[i])
        if left[start + c] >= 0:
            top += 1
            stack[top] = right[start + c]
            top += 1
            stack[top] = left[start + c]
        else:
            deepest = max(deepest, unique[i])
    m = max(1, (deepest + 1) // 2)
    factor = np.ones((n, 3, m))
    follow_share = np.zeros((n, m))
    exit_share = np.empty(m)
    for k in range(m):
        exit_share[k] = -q_weights[m, k] / (1.0 - q_nodes[m, k])
    # node by node, with one reciprocal per g: two divisions per (node, k)
    for i in range(1, n):
        z_prev, z_new = combined_prev[i], combined[i]
        ratio = z_new / z_prev
        for k in range(m):
            t, w = q_nodes[m, k], q_weights[m, k]
            over_prev = 1.0 / (t + (1.0 - t) * z_prev)
            g_new = t + (1.0 - t) * z_new
            factor[i, 0, k] = ratio
            factor[i, 1, k] = (1.0 - t) * z_new * over_prev
            factor[i, 2, k] = g_new * over_prev
            follow_share[i, k] = w * (1.0 - z_new) / g_new
    # the node arrays in preorder, written as loops: numba compiles array expressions
    # (fancy indexing, broadcasting, cumsum) into seconds of machinery for a few lines
    split_feature = np.zeros(n, dtype=np.int64)  # 0 at leaves
    split_threshold = np.empty(n)
    split_missing = np.empty(n, dtype=np.bool_)
    leaf_start = np.zeros(n + 1, dtype=np.int64)
    edge_start = np.zeros(n + 1, dtype=np.int64)
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
        edge_start[i + 1] = edge_start[i] + (unique[i] if nnz else 0)
    leaf_class = np.empty(leaf_start[n], dtype=np.int64)
    leaf_value = np.empty(leaf_start[n])
    for i in range(n):
        at, entry = start + order[i], leaf_start[i]
        if left[at] < 0:
            for cls in range(value.shape[1]):
                if value[at, cls] != 0:
                    leaf_class[entry], leaf_value[entry] = cls, value[at, cls]
                    entry += 1
    marked = np.zeros(n_features, dtype=np.bool_)
    last_edge = np.empty(edge_start[n], dtype=np.int64)
    prev_on_path = np.empty(deepest_depth + 1, dtype=np.int64)  # prev_depth of the path's edges
    superseded = np.zeros(none + 1, dtype=np.bool_)
    for i in range(n):  # preorder: prev_on_path[1:d] holds the ancestors' edges
        d = depth[i]
        prev_on_path[d] = prev_depth[i]
        if edge_start[i + 1] == edge_start[i]:
            continue
        entry = edge_start[i]
        for e in range(d, 0, -1):  # an edge is the last on its feature unless a deeper one
            if not superseded[e]:  # on the same feature names it as its prev_depth
                last_edge[entry] = e
                entry += 1
            superseded[prev_on_path[e]] = True
        for e in range(d + 1):
            superseded[e] = False
    for i in range(1, n):  # the features split on, ascending (np.unique without its sort)
        marked[edge_feature[i]] = True
    n_used = 0
    for j in range(n_features):
        n_used += marked[j]
    used = np.empty(n_used, dtype=np.int64)
    n_used = 0
    for j in range(n_features):
        if marked[j]:
            used[n_used] = j
            n_used += 1
    return (m, depth, is_left, split_feature, split_threshold, split_missing, edge_feature,
            prev_depth, factor, follow_share, exit_share, leaf_start, leaf_class, leaf_value,
            edge_start, last_edge, used)


@njit(cache=True, error_model="numpy", fastmath={"contract"}, inline="always")
def _extend_path(i, d, m, is_left, prev_depth, factor, path, goes_left, on, on_mask, kind):
    """Extend every lane's G = ``path[d]`` by node i's edge, of kind 0, 1 or 2 (see
    :func:`_tree_tables`) depending on whether the lane's row left the edge's feature branch
    earlier, leaves it here, or follows it; ``on[d]`` records whether it still follows it,
    and ``on_mask[d]`` the same as 1.0 or 0.0. The lanes are the innermost axis, so every
    loop over them is one vector operation."""
    lanes = path.shape[2]
    side, before = is_left[i], prev_depth[i]
    for r in range(lanes):
        kind[r] = on[before, r] * (1 + (goes_left[d - 1, r] == side))
        on[d, r] = kind[r] == 2
        on_mask[d, r] = 1.0 if kind[r] == 2 else 0.0
    for k in range(m):
        f0, f1, f2 = factor[i, 0, k], factor[i, 1, k], factor[i, 2, k]
        for r in range(lanes):
            follows, leaves = kind[r] == 2, kind[r] == 1
            path[d, k, r] = path[d - 1, k, r] * (f2 if follows else (f1 if leaves else f0))


@njit(cache=True, error_model="numpy", fastmath={"contract"}, **NOALIAS)
def _batch_shap(xb, phi, m, depth, is_left, split_feature, split_threshold, split_missing,
                edge_feature, prev_depth, factor, follow_share, exit_share, leaf_start,
                leaf_class, leaf_value, edge_start, last_edge, path, goes_left, on, on_mask,
                feature_at, node_at, kind, failed, share):
    """Add one tree's Shapley values of LANES rows (columns of ``xb``) into ``phi``.

    ``phi`` is (p, n_values, LANES). One pass over the nodes in preorder, the same for every
    lane, so the bookkeeping (and its unpredictable branches) is shared by the batch.
    Entering the node at depth d sets ``path[d]`` = G(t_k) from its parent's, still in
    place. A leaf sums the exit shares against G once (``failed``: what it pays every
    feature its row fails), then, for each feature of its path, the follow share of the
    path's last edge on it, and pays each feature the sum its row's O_j selects, scaled by
    each leaf value. Lanes never mix, so a row's result does not depend on its batch.

    Every array argument is an allocation of its own (:data:`harness.kernels.no_alias.
    NOALIAS`): LLVM then keeps the sums over k in registers instead of storing them back at
    each step, and drops the run-time overlap checks (digits / ExtraTrees K = 1: 0.230 s
    against 0.175 s, the same bits).
    """
    lanes = path.shape[2]
    for k in range(m):
        for r in range(lanes):
            path[0, k, r] = 1.0
    for i in range(depth.size):
        d = depth[i]
        if d > 0:
            feature_at[d] = edge_feature[i]
            node_at[d] = i
            _extend_path(i, d, m, is_left, prev_depth, factor, path, goes_left, on, on_mask,
                         kind)
        if edge_start[i + 1] == edge_start[i]:  # a split (or a leaf that pays nothing)
            j, cut, nan_left = split_feature[i], split_threshold[i], split_missing[i]
            for r in range(lanes):  # x <= cut, or NaN where missing values go left
                x = xb[j, r]
                goes_left[d, r] = (x <= cut) | ((x != x) & nan_left)
            continue
        for r in range(lanes):
            failed[r] = 0.0
        for k in range(m):
            a = exit_share[k]
            for r in range(lanes):
                failed[r] += a * path[d, k, r]
        for entry in range(edge_start[i], edge_start[i + 1]):
            e = last_edge[entry]
            node = node_at[e]
            for r in range(lanes):
                share[r] = 0.0
            for k in range(m):
                a = follow_share[node, k]
                for r in range(lanes):
                    share[r] += a * path[d, k, r]
            # share where the row follows j, else failed: a blend by a mask of 1.0 or 0.0
            # (exact), which vectorises where a select between the two loads did not
            for r in range(lanes):
                mask = on_mask[e, r]
                share[r] = share[r] * mask + failed[r] * (1.0 - mask)
            j = feature_at[e]
            for v in range(leaf_start[i], leaf_start[i + 1]):
                cls, value = leaf_class[v], leaf_value[v]
                for r in range(lanes):
                    phi[j, cls, r] += value * share[r]


@njit(cache=True, error_model="numpy")
def _load_rows(X32, first, rows, used, xb):
    """Features ``used`` (those the tree splits on: the walk reads no other) of rows
    ``first, ..., first + rows - 1`` of ``X32`` into the columns of ``xb``; the lanes beyond
    them repeat the last row. Loading the tree's features only keeps the cost of a batch
    free of p: loading every feature cost O(p) per tree and row, the larger part of the
    time at p = 10^4."""
    for r in range(xb.shape[1]):
        row = first + min(r, rows - 1)
        for j in used:
            xb[j, r] = X32[row, j]


@njit(cache=True, error_model="numpy")
def _add_rows(phi, used, first, rows, out):
    """Add the first ``rows`` lanes of ``phi`` to rows ``first, ...`` of ``out``, and clear
    ``phi`` for the next batch."""
    for j in used:
        for cls in range(phi.shape[1]):
            for r in range(rows):
                out[first + r, j, cls] += phi[j, cls, r]
            for r in range(phi.shape[2]):
                phi[j, cls, r] = 0.0


@njit(cache=True, error_model="numpy")
def _explain_trees(left, right, feature, threshold, missing, cover, value, offsets, X32,
                   max_depth, q_nodes, q_weights, first_tree, last_tree, first_batch,
                   last_batch, out):
    """Add trees ``first_tree``, ..., ``last_tree - 1`` (in order) of the rows of batches
    ``first_batch``, ..., ``last_batch - 1`` into ``out``, with buffers of their own.

    Each tree's tables are built once here and serve every batch of the range. ``phi``
    collects a batch's shares of one tree before they join ``out``. The per-lane buffers
    are LANES wide, or NARROW wide when the range holds at most NARROW rows (a row or a few
    explained); both sets are allocated here (see the module docstring), the unused one
    with no rows, so a task holds one width's buffers only.
    """
    n, p, width = out.shape
    m_max = q_nodes.shape[1]
    first_row, stop_row = first_batch * LANES, min(n, last_batch * LANES)
    narrow = stop_row - first_row <= NARROW
    wide = 0 if narrow else 1  # leading sizes of the unused set are 0
    feature_at = np.zeros(max_depth + 1, dtype=np.int64)
    node_at = np.zeros(max_depth + 1, dtype=np.int64)
    xb = np.empty((p * wide, LANES))
    phi = np.zeros((p * wide, width, LANES))
    path = np.empty(((max_depth + 1) * wide, m_max, LANES))
    goes_left = np.zeros(((max_depth + 1) * wide, LANES), dtype=np.int64)
    on = np.zeros(((max_depth + 2) * wide, LANES), dtype=np.int64)
    on_mask = np.zeros(((max_depth + 2) * wide, LANES))
    kind = np.zeros(LANES * wide, dtype=np.int64)
    failed = np.zeros(LANES * wide)
    share = np.zeros(LANES * wide)
    narrow_xb = np.empty((p * (1 - wide), NARROW))
    narrow_phi = np.zeros((p * (1 - wide), width, NARROW))
    narrow_path = np.empty(((max_depth + 1) * (1 - wide), m_max, NARROW))
    narrow_goes_left = np.zeros(((max_depth + 1) * (1 - wide), NARROW), dtype=np.int64)
    narrow_on = np.zeros(((max_depth + 2) * (1 - wide), NARROW), dtype=np.int64)
    narrow_on_mask = np.zeros(((max_depth + 2) * (1 - wide), NARROW))
    narrow_kind = np.zeros(NARROW * (1 - wide), dtype=np.int64)
    narrow_failed = np.zeros(NARROW * (1 - wide))
    narrow_share = np.zeros(NARROW * (1 - wide))
    if narrow:  # x follows every edge of a feature not yet split on
        narrow_on[max_depth + 1] = 1
        narrow_on_mask[max_depth + 1] = 1.0
    else:
        on[max_depth + 1] = 1
        on_mask[max_depth + 1] = 1.0
    for t in range(first_tree, last_tree):
        (m, depth, is_left, split_feature, split_threshold, split_missing, edge_feature,
         prev_depth, factor, follow_share, exit_share, leaf_start, leaf_class, leaf_value,
         edge_start, last_edge, used) = _tree_tables(
            left, right, feature, threshold, missing, cover, value, offsets[t],
            offsets[t + 1], q_nodes, q_weights, max_depth + 1)
        for batch in range(first_batch, last_batch):
            first = batch * LANES
            rows = min(LANES, n - first)
            if narrow:
                _load_rows(X32, first, rows, used, narrow_xb)
                _batch_shap(narrow_xb, narrow_phi, m, depth, is_left, split_feature,
                            split_threshold, split_missing, edge_feature, prev_depth, factor,
                            follow_share, exit_share, leaf_start, leaf_class, leaf_value,
                            edge_start, last_edge, narrow_path, narrow_goes_left, narrow_on,
                            narrow_on_mask, feature_at, node_at, narrow_kind, narrow_failed,
                            narrow_share)
                _add_rows(narrow_phi, used, first, rows, out)
            else:
                _load_rows(X32, first, rows, used, xb)
                _batch_shap(xb, phi, m, depth, is_left, split_feature, split_threshold,
                            split_missing, edge_feature, prev_depth, factor, follow_share,
                            exit_share, leaf_start, leaf_class, leaf_value, edge_start,
                            last_edge, path, goes_left, on, on_mask, feature_at, node_at,
                            kind, failed, share)
                _add_rows(phi, used, first, rows, out)


@njit(cache=True, nogil=True, error_model="numpy")
def _forest_shap_tasks(left, right, feature, threshold, missing, cover, value, offsets, X32,
                       max_depth, q_nodes, q_weights, n_chunks, n_groups, out, others, first,
                       last):
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
                       out if group == 0 else others[group - 1])


def forest_shap(left, right, feature, threshold, missing, cover, value, offsets, X32,
                max_depth, q_nodes, q_weights, n_chunks, n_groups, out) -> None:
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
                  q_weights, n_chunks, n_groups)


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


def path_dependent_shap(forest: PackedForest, X: np.ndarray,
                        threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
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

    Returns
    -------
    phi : ndarray of shape (n, p, n_values)
        φ_j(x) for every output (class probabilities, or the regression prediction).
    base : ndarray of shape (n_values,)
        The expected value; base + Σ_j φ_j(x) = the forest's prediction at x.
    """
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
                    max(forest.max_depth, 1), q_nodes, q_weights, n_chunks, n_groups, out)
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
                np.zeros((2, 1, 1)))
