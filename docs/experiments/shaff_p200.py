"""Exploratory: where SHAFF's error at p = 200 comes from (issue 20; session 30's note).

The ``benard2022-shaff`` page sums SHAFF's effects by block over n. This script measures the
two steps apart, on the page's p = 200 design (5 independent blocks of 40 at ρ = 0.9, 2 on X1,
1 on X41, X81, X121, X161, noise 10 % of V[Y]) and forest (mtry = p/3, min_samples_leaf 5):

``game``
    the projected out-of-bag forest's v̂(U) (SHAFF step 2) on block-structured sets against
    the exact v(U) = V(E[Y | X_U]) / V[Y], with the share of projected predictions that took
    a shallower level, and the cross-block interaction v̂(A ∪ B) − v̂(A) − v̂(B) (exactly 0
    for the exact game, which is additive over independent blocks);
``design``
    SHAFF on one forest under three seeds of its subset design and with K = 16 000 subsets,
    summed by block: how much of the error the sampling of subsets (step 1) and the
    regression (step 3) account for;
``forests``
    SHAFF (its defaults) on forests of other mtry (√p, p/3, p) and leaf sizes at the given n,
    summed by block, with the mean effect of X1's block-mates (exact 0.010) and of the weak
    signals (exact 0.015), and how many of the exact top five it shares: whether another
    forest than the page's puts the weak signals above X1's block-mates;
``fitted``
    the Shapley effects of the fitted forest's own function f under the exact input law,
    v_f(U) = V(E[f(X) | X_U]) / V[Y] (Monte Carlo: fresh draws of X, their other columns
    completed from the exact Gaussian conditionals, the same draws for every set), through
    SHAFF's subset design and regression, beside SHAFF's on the same forest: what an exact
    explainer of this forest's predictions would return, against SHAFF's projected forests
    (which average in-bag Y over each projected cell instead of the forest's leaf values).

Run from the repository root, e.g. ``python docs/experiments/shaff_p200.py game --n 3000``
(seconds), ``... design --n 1000`` (about 3 minutes on 2 cores) or ``... forests --n 1000``
(about 30 s per forest at 100 trees), ``... fitted --n 1000 --outer 500 --inner 8`` (about
10 minutes on 2 cores for 4 batches of 4000 sets). It reads SHAFF's step 2
directly, which a reproduction page may not (the targets' import contract).
"""

from __future__ import annotations

import argparse

import numpy as np

import harness
from harness.datasets.linear_gaussian import block_equicorrelation, conditional_variance
from harness.estimators.shaff import (
    StreamedShapley,
    design_of,
    draw_until_converged,
    kernel_subsets,
)
from harness.estimators.shaff import projected_game as shaff_game
from harness.forest.inbag import target_matrix
from harness.forest.packed import packed_output
from harness.forest.view import forest_view
from harness.reports.targets._shaff_blocks import PAGE_NOISE, page_forest
from harness.reports.targets.benard2022_shaff import Setting

P, BLOCK, RHO = 200, 40, 0.9


def design_data(n: int, seed: int):
    """The page's p = 200 data set (``Setting(200, RHO)``) and its coefficients."""
    coef = np.zeros(P)
    coef[0] = 2.0
    coef[BLOCK::BLOCK] = 1.0
    return Setting(P, RHO).dataset(seed, n_samples=n), coef


def exact_game(keep: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """v(U) by Gaussian conditioning, one linear solve per set and block."""
    sigma = block_equicorrelation(P, RHO, 5)
    a = sigma @ coef
    var_y = float(coef @ a) / (1.0 - PAGE_NOISE)  # Var(Y) = Var(m(X)) / (1 - noise share)
    values = np.zeros(len(keep))
    for i, row in enumerate(keep):
        for block in np.split(np.arange(P), 5):
            kept = block[row[block]]
            if len(kept):
                values[i] += a[kept] @ np.linalg.solve(sigma[np.ix_(kept, kept)], a[kept])
    return values / var_y


def projected_game(model, X, y, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """v̂(U) − v̂(∅) for each row of ``keep`` (SHAFF step 2) and each set's walked-up share."""
    view = forest_view(model)
    game = shaff_game(view.packed, view.rows(X), view.inbag.counts, view.inbag.n_oob_trees,
                      target_matrix(view, y), keep)
    return game.terms.mean(axis=1), game.walked_up / view.inbag.n_oob_trees.sum()


def run_game(model, dataset, coef) -> None:
    names = ["block 1", "blocks 2-5", "the 5 signals", "all"]
    keep = np.zeros((4, P), dtype=bool)
    keep[0, :BLOCK] = keep[1, BLOCK:] = keep[3] = True
    keep[2, ::BLOCK] = True
    rng = np.random.default_rng(1)
    for _ in range(6):  # A: half of block 1, B: half of the rest, then A ∪ B
        a = np.zeros(P, dtype=bool)
        a[rng.choice(BLOCK, BLOCK // 2, replace=False)] = True
        b = np.zeros(P, dtype=bool)
        b[BLOCK + rng.choice(P - BLOCK, (P - BLOCK) // 2, replace=False)] = True
        keep = np.vstack([keep, a, b, a | b])
    game, walked = projected_game(model, dataset.X, dataset.y, keep)
    exact = exact_game(keep, coef)
    for i, name in enumerate(names):
        print(f"{name:14s} v̂ {game[i]:.3f}  exact {exact[i]:.3f}  walked up {walked[i]:.0%}")
    pairs = game[4:].reshape(-1, 3)
    print("v̂(A ∪ B) − v̂(A) − v̂(B):", np.round(pairs[:, 2] - pairs[:, 0] - pairs[:, 1], 3))


def run_design(model, dataset) -> None:
    for seed, n_subsets in [(0, None), (1, None), (2, None), (0, 16_000)]:
        values = np.asarray(harness.explain("shaff", model, dataset.X, dataset.y, seed=seed,
                                            n_subsets=n_subsets).values)
        print(f"design seed {seed}, K {n_subsets or 'default'}: X1 {values[0]:.4f}, weak "
              f"{np.round(values[BLOCK::BLOCK], 4)}, block 1 {values[:BLOCK].sum():.3f}, "
              f"blocks 2-5 {values[BLOCK:].sum():.3f}")


#: (mtry, min_samples_leaf) of the ``forests`` part; ``forests --min-samples-leaf L`` runs L
FOREST_SETTINGS = (("sqrt", 5), (0.33, 5), (1.0, 5), (0.33, 20))


def run_forests(dataset, n_trees: int, seed: int, leaves: list[int]) -> None:
    truth = dataset.truth.quantities["shapley_effect"].values
    settings = FOREST_SETTINGS if not leaves else tuple((0.33, leaf) for leaf in leaves)
    for mtry, leaf in settings:
        model = page_forest(dataset, n_trees, seed, leaf, mtry, n_jobs=2)
        result = harness.explain("shaff", model, dataset.X, dataset.y, seed=seed)
        values = np.asarray(result.values)
        mates = np.delete(np.arange(BLOCK), 0)
        top = len(set(np.argsort(-values)[:5]) & set(np.argsort(-truth)[:5]))
        print(f"mtry {mtry}, leaf {leaf}: X1 {values[0]:.4f}, X1's block-mates "
              f"{values[mates].mean():.4f}, weak signals {values[BLOCK::BLOCK].mean():.4f}, "
              f"block 1 {values[:BLOCK].sum():.3f}, blocks 2-5 {values[BLOCK:].sum():.3f}, "
              f"max |error| {np.abs(values - truth).max():.4f}, top five {top} of 5, walked "
              f"up {result.extra['walked_up_share']:.0%}", flush=True)


class FittedForestGame:
    """v_f(U) = V(E[f(X) | X_U]) / V[Y] of the forest's predictions f, a game of
    :class:`StreamedShapley` (one row: the game itself), by :func:`conditional_variance` on
    ``n_outer`` fresh draws of X with ``n_inner`` completions each, the same draws for every
    set (common random numbers: the sets' differences, which the effects are, carry less of
    the Monte-Carlo noise than the values)."""

    width = 1

    def __init__(self, model, var_y: float, n_outer: int, n_inner: int, seed: int) -> None:
        packed = forest_view(model).packed
        self.predict = lambda rows: packed_output(packed, rows.astype(np.float32))[:, 0]
        rng = np.random.default_rng(seed)
        self.X = rng.multivariate_normal(np.zeros(P), block_equicorrelation(P, RHO, 5),
                                         size=n_outer)
        self.normals = rng.standard_normal((n_outer, n_inner, P))
        self.var_y = var_y

    def __call__(self, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        values = [conditional_variance(self.predict, self.X, row, RHO, 5, self.normals)
                  for row in keep]
        return np.array(values)[:, None] / self.var_y, np.zeros(len(keep))


def effects_line(values: np.ndarray, truth: np.ndarray) -> str:
    """X1, its block-mates, the weak signals and their block-mates, the block sums and the
    exact top five shared."""
    weak = np.arange(BLOCK, P, BLOCK)
    weak_mates = np.setdiff1d(np.arange(BLOCK, P), weak)
    shared = len(set(np.argsort(-values)[:5]) & set(np.argsort(-truth)[:5]))
    return (f"X1 {values[0]:.4f}, X1's block-mates {values[1:BLOCK].mean():.4f}, weak signals "
            f"{values[weak].mean():.4f}, their block-mates {values[weak_mates].mean():.4f}, "
            f"block 1 {values[:BLOCK].sum():.3f}, blocks 2-5 {values[BLOCK:].sum():.3f}, top "
            f"five {shared} of 5")


def run_fitted(model, dataset, coef, n_outer: int, n_inner: int, seed: int) -> None:
    truth = dataset.truth.quantities["shapley_effect"].values
    var_y = float(coef @ block_equicorrelation(P, RHO, 5) @ coef) / (1.0 - PAGE_NOISE)
    shaff = np.asarray(harness.explain("shaff", model, dataset.X, dataset.y, seed=seed).values)
    print(f"exact:  {effects_line(truth, truth)}")
    print(f"SHAFF:  {effects_line(shaff, truth)}", flush=True)
    game = FittedForestGame(model, var_y, n_outer, n_inner, seed + 1)
    players = np.ones(P, dtype=bool)
    stream = StreamedShapley(game, players)
    rng = np.random.default_rng(seed)
    error = draw_until_converged(
        stream, lambda: design_of(players, kernel_subsets(P, 20 * P, rng)),
        thresh=0.025, max_batches=4)
    fitted = stream.terms().effects[:, 0]
    print(f"fitted: {effects_line(fitted, truth)}; v_f(all) {float(stream.full[0]):.3f}, "
          f"{stream.n_batches} batches, design error {error.std:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["game", "design", "forests", "fitted"])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--min-samples-leaf", type=int, default=5)
    parser.add_argument("--leaves", type=int, nargs="*", default=[],
                        help="forests: these leaf sizes at mtry p/3 instead of the settings")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--outer", type=int, default=500,
                        help="fitted: draws of X per set (Monte Carlo)")
    parser.add_argument("--inner", type=int, default=8,
                        help="fitted: completions of each draw per set")
    args = parser.parse_args()
    dataset, coef = design_data(args.n, args.seed)
    if args.part == "forests":
        run_forests(dataset, args.trees, args.seed, args.leaves)
        return
    model = page_forest(dataset, args.trees, args.seed, args.min_samples_leaf)
    print(f"n = {args.n}, {args.trees} trees, depth "
          f"{max(tree.get_depth() for tree in model.estimators_)}")
    if args.part == "game":
        run_game(model, dataset, coef)
    elif args.part == "fitted":
        run_fitted(model, dataset, coef, args.outer, args.inner, args.seed)
    else:
        run_design(model, dataset)


if __name__ == "__main__":
    main()
