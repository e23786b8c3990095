"""SHAFF: projected forests against a set-based brute force, the Shapley regression against
the Shapley formula, efficiency, null variables, and the analytic Shapley effects."""

from __future__ import annotations

import itertools
import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_friedman1
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

import harness
from harness.api import load_dataset
from harness.estimators import shaff as shaff_estimators
from harness.estimators.shaff import (
    PackedSets,
    all_subsets,
    design,
    projected_game,
    shapley_kernel,
    shapley_operator,
    streamed_shapley,
)
from harness.forest.inbag import target_matrix
from harness.forest.packed import as_float32_rows
from harness.forest.view import forest_view
from harness.kernels.reroute.projection import projected_oob_shift
from harness.kernels.reroute.subset_projection import (
    SubsetProjector,
    projected_oob_predictions,
)
from tests._support.shapley_by_subsets import shapley_by_subsets

warnings.filterwarnings("ignore", message="Some inputs do not have OOB scores")


def _frontiers(tree, x32, keep):
    """Projected descent of x, level by level: at depth d, the set of nodes reached at depth d
    with the leaves reached above (splits on variables outside ``keep`` send x both ways).
    The last set is the leaves reached, the projected cell; written from the definition, with
    explicit node sets and none of the kernel's shortcuts."""
    levels, frontier, done = [], [0], []
    while frontier:
        levels.append(frozenset(done + frontier))
        deeper = []
        for node in frontier:
            if tree.children_left[node] == -1:
                done.append(node)
            elif keep[tree.feature[node]]:
                go_left = np.float64(x32[tree.feature[node]]) <= tree.threshold[node]
                deeper.append(tree.children_left[node] if go_left
                              else tree.children_right[node])
            else:
                deeper += [tree.children_left[node], tree.children_right[node]]
        frontier = deeper
    levels.append(frozenset(done))
    return levels


def _brute_force_projection(model, X, targets, keep):
    """In-bag mean of the projected cell of each OOB row, or, when no in-bag row shares the
    cell, of the deepest level of its descent that some in-bag row shares (the Sobol-MDA
    reference rule)."""
    X32 = X.astype(np.float32)
    counts = forest_view(model).inbag.counts
    total = np.zeros(targets.shape)
    for t, estimator in enumerate(model.estimators_):
        tree = estimator.tree_
        cells: dict[frozenset, list] = {}
        for i in np.flatnonzero(counts[:, t]):
            for level in set(_frontiers(tree, X32[i], keep)):
                cell = cells.setdefault(level, [0.0, 0.0])
                cell[0] += counts[i, t]
                cell[1] = cell[1] + counts[i, t] * targets[i]
        for i in np.flatnonzero(counts[:, t] == 0):
            shared = [level for level in _frontiers(tree, X32[i], keep) if level in cells]
            total[i] += cells[shared[-1]][1] / cells[shared[-1]][0]
    return total


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_projected_forest_equals_a_set_based_brute_force(task):
    if task == "regression":
        X, y = make_friedman1(n_samples=120, n_features=5, noise=0.3, random_state=0)
        model = RandomForestRegressor(n_estimators=6, min_samples_leaf=2, random_state=0)
    else:
        X, y = load_iris(return_X_y=True)
        model = RandomForestClassifier(n_estimators=6, random_state=0)
    model.fit(X, y)
    forest = forest_view(model).packed
    targets = target_matrix(forest_view(model), y)
    p = X.shape[1]
    keep = np.vstack([all_subsets(p), np.zeros(p, bool), np.ones(p, bool)])
    total, _ = projected_oob_predictions(forest, as_float32_rows(X),
                                         forest_view(model).inbag.counts, targets, keep)
    for s in range(len(keep)):
        expected = _brute_force_projection(model, X, targets, keep[s])
        np.testing.assert_allclose(total[s], expected, rtol=0, atol=1e-10)


def test_projection_without_one_variable_is_the_sobol_mda_projection():
    """U = all but j is the Sobol-MDA projection, whose kernel follows the reference C++
    (ranger ``sobol-mda`` fork) and was written independently (descent from the first split
    on j): the two must agree row by row, walked-back cells included. The previous SHAFF
    rule (cover-weighted mean of the reached leaves) differed wherever a cell was empty."""
    X, y = make_friedman1(n_samples=200, n_features=6, noise=0.5, random_state=1)
    model = RandomForestRegressor(n_estimators=12, random_state=0).fit(X, y)
    view = forest_view(model)
    targets = target_matrix(view, y)
    keep = np.vstack([~np.eye(6, dtype=bool), np.ones(6, dtype=bool)])
    total, walked = projected_oob_predictions(view.packed, as_float32_rows(X),
                                              view.inbag.counts, targets, keep)
    shift = projected_oob_shift(view.packed, as_float32_rows(X), view.inbag.counts, targets)
    assert walked[:6].min() > 0  # fully grown trees: cells without an in-bag row occur
    np.testing.assert_allclose(total[:6, :, 0] - total[6, :, 0], shift[:, :, 0].T, rtol=0,
                               atol=1e-10)


def test_projection_on_all_variables_is_the_oob_prediction():
    X, y = make_friedman1(n_samples=150, n_features=5, random_state=2)
    model = RandomForestRegressor(n_estimators=20, oob_score=True, random_state=0).fit(X, y)
    forest = forest_view(model).packed
    counts = forest_view(model).inbag.counts
    total, n_fallback = projected_oob_predictions(
        forest, as_float32_rows(X), counts, target_matrix(forest_view(model), y),
        np.ones((1, 5), dtype=bool))
    n_oob = (counts == 0).sum(axis=1)
    scored = n_oob > 0
    np.testing.assert_allclose(total[0, scored, 0] / n_oob[scored],
                               model.oob_prediction_[scored], rtol=0, atol=1e-12)
    assert n_fallback[0] == 0


def test_the_regression_over_all_subsets_is_the_shapley_formula():
    p = 5
    rng = np.random.default_rng(0)
    v = {frozenset(): 0.0, frozenset(range(p)): 0.0}
    for size in range(1, p):
        for subset in itertools.combinations(range(p), size):
            v[frozenset(subset)] = rng.random()
    v[frozenset(range(p))] = 1.7
    keep = all_subsets(p)
    weight = shapley_kernel(p, keep.sum(axis=1))
    operator, full_weight = shapley_operator(keep, weight)
    values = np.array([v[frozenset(np.flatnonzero(row))] for row in keep])
    estimate = operator @ values + full_weight * 1.7
    expected = shapley_by_subsets(p, lambda subset: v[frozenset(subset)])
    np.testing.assert_allclose(estimate, expected, rtol=0, atol=1e-10)


def _streaming_inputs(n_samples: int, n_features: int, model):
    """A forest fitted on Friedman #1 and the arguments of :func:`streamed_shapley` before
    the subsets: (forest, coded rows, in-bag counts, OOB tree counts, targets)."""
    X, y = make_friedman1(n_samples=n_samples, n_features=n_features, noise=0.5,
                          random_state=0)
    view = forest_view(model.fit(X, y))
    view.build("inbag", "packed")
    return view, (view.packed, view.rows(X), view.inbag.counts, view.inbag.n_oob_trees,
                  target_matrix(view, y))


def test_the_streamed_effects_are_the_shapley_formula_of_the_projected_game(monkeypatch):
    """SHAFF projects and regresses its sets in chunks (``GAME_CHUNK_BYTES``, at least
    ``GAME_CHUNK_SETS`` sets) and never holds the whole game. With every subset of 5 variables
    and chunks of one set, the effects must still be the Shapley formula of the projected
    game v̂(U) − v̂(∅), that game computed set by set with :func:`projected_game` (all
    subsets enumerated: no regression error)."""
    view, inputs = _streaming_inputs(
        200, 5, RandomForestRegressor(n_estimators=20, min_samples_leaf=3, random_state=0))
    subsets = design(view.packed, 1000, 4, np.random.default_rng(0))
    assert subsets.enumerated and subsets.players.all()
    monkeypatch.setattr(shaff_estimators, "GAME_CHUNK_BYTES", 1)
    monkeypatch.setattr(shaff_estimators, "GAME_CHUNK_SETS", 1)  # the least sets per chunk
    streamed = streamed_shapley(*inputs, subsets)
    keep = np.vstack([all_subsets(5), np.ones((1, 5), dtype=bool)])
    game = projected_game(*inputs, keep).terms.mean(axis=1)
    value = {frozenset(np.flatnonzero(row)): v for row, v in zip(keep, game, strict=True)}
    value[frozenset()] = 0.0
    expected = shapley_by_subsets(5, lambda subset: value[frozenset(subset)])
    np.testing.assert_allclose(streamed.effects.mean(axis=1), expected, rtol=0, atol=1e-12)
    assert streamed.explained.mean() == pytest.approx(game[-1], abs=1e-14)


def test_the_streamed_chunks_hold_one_game_at_a_time(monkeypatch):
    """SHAFF's memory must not grow with its sets: the projector keeps the forest view's in-bag
    counts without a copy (n × n_trees), and a chunk's game terms are released before the
    next chunk is projected. Measured at the start of every chunk's projection, the memory
    in use may not exceed the first chunk's by half a chunk's game (a chunk's terms are
    ``chunk × n`` floats, 1 MB here)."""
    view, inputs = _streaming_inputs(
        2000, 8, RandomForestRegressor(n_estimators=4, max_depth=6, random_state=0))
    projector = SubsetProjector.build(view.packed, inputs[1], inputs[2], inputs[4])
    assert np.shares_memory(projector.counts, view.inbag.counts)
    subsets = design(view.packed, 200, 4, np.random.default_rng(0))
    in_use, explained_shares = [], shaff_estimators.explained_shares

    def measured(*args):
        in_use.append(tracemalloc.get_traced_memory()[0])
        return explained_shares(*args)

    monkeypatch.setattr(shaff_estimators, "explained_shares", measured)
    tracemalloc.start()
    try:
        streamed_shapley(*inputs, subsets)
    finally:
        tracemalloc.stop()
    n_rows = len(inputs[1])
    chunk = max(shaff_estimators.GAME_CHUNK_SETS,
                shaff_estimators.GAME_CHUNK_BYTES // (n_rows * 8))
    assert len(in_use) >= 4  # the ends, then at least three chunks
    assert max(in_use[2:]) - in_use[1] < chunk * n_rows * 8 / 2, in_use


def test_packed_sets_read_back_as_the_bool_matrix():
    """The design holds its sets as bits (an eighth of the bools, for as long as SHAFF
    runs); read back whole, by rows or restricted to some variables, they must be the bool
    matrix's."""
    rng = np.random.default_rng(3)
    keep = rng.random((700, 203)) < rng.random((700, 1))  # p not a multiple of 8
    sets = PackedSets.of(keep)
    assert sets.shape == keep.shape and len(sets) == 700
    assert sets.bits.nbytes == 700 * 26
    np.testing.assert_array_equal(sets[:], keep)
    np.testing.assert_array_equal(sets[5], keep[5])
    np.testing.assert_array_equal(sets[100:357], keep[100:357])
    chosen = rng.random(203) < 0.6
    np.testing.assert_array_equal(sets.columns(chosen)[:], keep[:, chosen])
    assert sets[:].dtype == bool


@pytest.mark.parametrize("n_subsets", [1000, 24])
def test_efficiency_and_a_variable_never_split_on(n_subsets):
    """All 126 subsets (exact Shapley of v̂: the null variable gets 0 to rounding), or 24
    drawn ones (a regression: measured |Sh| of the null variable 0.002)."""
    X, y = make_friedman1(n_samples=300, n_features=6, noise=0.5, random_state=0)
    X = np.column_stack([X, np.full(len(X), 0.25)])
    model = RandomForestRegressor(n_estimators=30, min_samples_leaf=3, random_state=0)
    model.fit(X, y)
    result = harness.explain("shaff", model, X, y, n_subsets=n_subsets, seed=3)
    assert result.extra["all_subsets"] == (n_subsets == 1000)
    assert result.values.sum() == pytest.approx(result.extra["explained_variance"], abs=1e-10)
    assert abs(result.values[-1]) < (1e-12 if n_subsets == 1000 else 0.01)
    assert result.values[:5].min() > 0.02  # the five Friedman variables are all active


@pytest.mark.parametrize("name, tolerance", [("ishigami", 0.06), ("linear_gaussian", 0.06)])
def test_shaff_is_near_the_analytic_shapley_effects(name, tolerance):
    """n = 2000, 100 trees (min_samples_leaf 3, max_features 0.5). Measured |error| on seeds
    0-2 (n = 3000, 200 trees): at most 0.043 on Ishigami (the forest explains 0.91 of
    Var(Y), so every effect is a little low) and 0.025 on the correlated Gaussian groups."""
    dataset = load_dataset(name, seed=0, n_samples=2000)
    model = RandomForestRegressor(n_estimators=100, min_samples_leaf=3, max_features=0.5,
                                  random_state=0).fit(dataset.X, dataset.y)
    result = harness.explain("shaff", model, dataset.X, dataset.y, seed=0)
    truth = dataset.truth.quantities["shapley_effect"].values
    assert np.abs(result.values - truth).max() < tolerance, (result.values, truth)
    assert np.argsort(-result.values)[:2].tolist() == np.argsort(-truth)[:2].tolist() \
        or name == "linear_gaussian"  # tied pairs in the Gaussian groups


def test_the_projection_does_not_depend_on_how_the_subsets_are_grouped():
    """The subsets run in interleaved groups, one parallel task each, reusing the group's
    buffers from subset to subset: with one group, three, or one per subset, every subset
    must come out the same bit for bit (no cell of a previous subset or tree leaks in, and
    the result is independent of the number of threads)."""
    X, y = make_friedman1(n_samples=150, n_features=5, noise=0.3, random_state=4)
    model = RandomForestRegressor(n_estimators=8, min_samples_leaf=2, random_state=0)
    view = forest_view(model.fit(X, y))
    forest = view.packed
    keep = np.vstack([all_subsets(5), np.zeros(5, bool), np.ones(5, bool)])
    arguments = (forest, as_float32_rows(X), view.inbag.counts, target_matrix(view, y), keep)
    one_group = projected_oob_predictions(*arguments, n_groups=1)
    for n_groups in (3, len(keep)):
        grouped = projected_oob_predictions(*arguments, n_groups=n_groups)
        assert np.array_equal(grouped[0], one_group[0])
        assert np.array_equal(grouped[1], one_group[1])
