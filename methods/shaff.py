"""SHAFF: Shapley effects from projected out-of-bag forests (Bénard et al., AISTATS 2022)."""

from __future__ import annotations

import numpy as np

from harness.core.method import ExplainData
from harness.core.params import Interval, NoneValue, Options, Param
from harness.core.types import Importances
from harness.estimators.oob import OOBMethod
from harness.estimators.shaff import (
    ForestGame,
    StreamedShapley,
    default_n_subsets,
    design,
    draw_until_converged,
    row_std,
    split_variables,
)
from harness.forest.inbag import target_matrix


class SHAFF(OOBMethod):
    """Sh_j = Σ_U weights · [v(U ∪ {j}) − v(U)], v(U) = V(E[Y | X_U]) / V(Y).

    Bénard, Biau, Da Veiga, Scornet 2022 (AISTATS, arXiv 2105.11724), Algorithm 1: subsets U
    paired with their complements, beside the p singletons and their complements taken
    exactly, so that the regression is well posed in any dimension; by default the sizes
    are drawn from the Shapley kernel (stratified), as the path frequencies of the paper
    (``sampling="paths"``) never reach the middle sizes when p is large
    (:mod:`harness.estimators.shaff`). How many: by default (``n_subsets=None``) batches
    of max(128, 20 p) draws until the design's own error, estimated from two half designs,
    is at most ``thresh`` (2.5 %) of the effects' range, sage's convergence rule, or
    ``max_batches`` are drawn (``extra``: ``design_std``, ``design_ratio``,
    ``design_converged``, ``n_batches``); one batch at p = 200 left an error of sd 0.003
    on the exact game of issue 20, which mis-ranks effects of 0.010 and 0.015. v̂(U) =
    1 − OOB squared error of the forest projected on U / σ²_Y
    (:mod:`harness.kernels.reroute.subset_projection`; a projected cell without in-bag rows
    takes the deepest shared level of its descent, the Sobol-MDA reference rule, share in
    ``extra["walked_up_share"]``); the Shapley effects solve the Shapley-kernel regression
    of v̂ on an additive game plus a free effect per size (a control variate with exactly
    known Shapley values that keeps the estimate exact under enumeration), with
    Σ_j Sh_j = v̂(all) (exact efficiency). v̂ is taken relative to v̂(∅), the projection on
    no variable (the trees' in-bag means, whose OOB error is slightly above σ²_Y): the game
    must have v(∅) = 0, and a variable that no tree splits on is a null player of v̂ and
    gets exactly 0. With ``2^p − 2 ≤ n_subsets`` every subset is used and the result is the
    exact Shapley value of v̂. Shapley effects are well defined for dependent inputs, where
    they split a shared effect between the correlated variables (Owen & Prieur 2017).

    Limit (measured, ``benard2022-shaff`` gallery page): the estimate is only as good as v̂.
    On p = 200 inputs in five correlated blocks at n = 1000, the forest explains 0.76 of the
    0.9 and the shortfall falls on the four weak blocks: their signals get 0.007 (exact
    0.015), below the 0.010 of X1's block-mates, and the top five shares X1 alone, with
    4 000 draws as with 16 000 (the design's error is not what mis-ranks them there).
    The forest's own predictions, explained exactly under the inputs' law (their Shapley
    effects by Monte Carlo with the exact conditionals), rank them worse still (weak signals
    0.0014-0.0020, a fifth of X1's block-mates): the projected forests recover more of
    E[Y | X_U] than the leaf values hold (``docs/experiments/shaff_p200.py fitted``).
    Leaves that grow with n (populated cells, as the consistency theorem's (A3) asks) bring
    the ranking back: at n = 3·10⁴ with min_samples_leaf 300 the top five is the exact one,
    though the values are not (X1 0.16 against its exact 0.06: trees with few leaves split
    on X1 and rarely on its block-mates).

    Classification (our extension, as for ``sobol_mda``): class-probability vectors are
    projected and v̂ uses the Brier score over Σ_k V(1[Y = k]). ``std`` is the standard error
    over the scored rows of the (linear) estimator, given the subsets and the trees; the
    subsets' own error is ``extra["design_std"]`` (root mean square over the effects).

    Complexity: O(K T n V) + O(K p²) for K = 2p + 2 n_subsets subsets (n_subsets defaults to
    batches of max(128, 20 p), at most 8, so K ∝ p), T trees, n training rows and V the
    nodes a projected descent visits (it branches only where the subset's variables still
    split below): one projected out-of-bag prediction per (subset, tree, row) (Bénard et
    al. 2022, Algorithm 1), then the weighted least squares on the K subsets, and again on
    each half design after every batch. Linear in p while the projections dominate. Memory
    beyond the forest: O(p n + p² + K p), not O(K n): the subsets are projected and
    regressed in chunks (:class:`harness.estimators.shaff.StreamedShapley`).
    """

    name = "shaff"
    # 2: exact singletons and complements, K = max(128, 2p), null players get exactly 0
    # 3: sizes drawn from the Shapley kernel (stratified), size effects in the regression,
    #    K = max(128, 20 p)
    # 4: an empty projected cell takes the deepest non-empty level of its descent (Sobol-MDA
    #    reference rule), not the cover-weighted mean of the reached leaves
    # 5: by default, batches of draws until the design's error (two half designs) is at most
    #    thresh of the effects' range
    version = 5
    scope = "global"
    family = "shapley"
    summary = "SHAFF: Shapley effects by projected OOB forests (Bénard et al. 2022)"
    complexity = {"n": 1, "p": 1, "trees": 1, "depth": None}
    # Shapley effects of the monotone game V(E[Y | X_U]) / V(Y), whose values lie in [0, 1]
    # (Owen 2014); also for the class-probability vector over sum_k V(1[Y = k])
    value_range = (0.0, 1.0)
    parameters = {
        "n_subsets": Param(None, (NoneValue(), Interval(int, 0, None)),
                           "K, subsets of sizes 2..p-2 drawn (each with its complement; the "
                           "p singletons and their complements are always used); None: "
                           "batches of max(128, 20 p) until the design's error is below "
                           "'thresh'; all subsets when 2^p - 2 <= K"),
        "thresh": Param(0.025, (Interval(float, 0, 1, "neither"),),
                        "with n_subsets=None, draw batches until the design's standard "
                        "error is below thresh x (max - min) of the effects (sage's rule)"),
        "max_batches": Param(8, (Interval(int, 1, None, "left"),),
                             "with n_subsets=None, the most batches drawn"),
        "sampling": Param("kernel", (Options({"kernel", "paths"}),),
                          "law of the drawn subsets: 'kernel', sizes stratified by the "
                          "Shapley kernel, uniform within a size; 'paths', the frequencies "
                          "of the forest's paths (Bénard et al. 2022)"),
        "path_depth": Param(4, (Interval(int, 1, None),),
                            "depth of the root-to-node paths whose variable sets are drawn "
                            "(sampling='paths')"),
    }

    def _explain(self, model, data: ExplainData, rng: np.random.Generator) -> Importances:
        inputs = self.oob_inputs(model, data)
        forest = inputs.forest
        p = forest.n_features
        adaptive = self.params["n_subsets"] is None
        n_subsets = default_n_subsets(p) if adaptive else self.params["n_subsets"]

        def batch():
            return design(forest, n_subsets, self.params["path_depth"], rng,
                          self.params["sampling"])

        players = split_variables(forest)
        stream = StreamedShapley(
            ForestGame(forest, inputs.X32, inputs.inbag.counts, inputs.inbag.n_oob_trees,
                       target_matrix(inputs.view, data.y)), players)
        error = draw_until_converged(stream, batch, self.params["thresh"],
                                     self.params["max_batches"] if adaptive else 1,
                                     data.progress)
        enumerated = stream.enumerated
        terms = stream.terms()
        # null players (never split on) get exactly 0; the others share v̂(all)
        n_rows = len(terms.explained)
        values = np.zeros(p)
        values[players] = terms.effects.mean(axis=1)
        std = None
        if n_rows > 1:
            std = np.zeros(p)
            std[players] = row_std(terms.effects) / np.sqrt(n_rows)
        return Importances(
            values=values, scope="global", feature_names=data.feature_names,
            unit="fraction of Var(Y)", explains="Shapley effect of the regression function"
            if not forest.classifier else "Shapley effect of the class-probability vector",
            std=std,
            extra={"std_of": "mean over rows", "n_rows_scored": int(n_rows),
                   "n_subsets_used": stream.n_sets,
                   "n_subsets_drawn": int(n_subsets * stream.n_batches),
                   "n_batches": int(stream.n_batches),
                   "design_std": error.std, "design_ratio": error.ratio,
                   "design_converged": bool(error.ratio <= self.params["thresh"]),
                   "sampling": self.params["sampling"],
                   "n_players": int(players.sum()),
                   "all_subsets": enumerated,
                   "explained_variance": float(terms.explained.mean()),
                   "v_empty": terms.v_empty,
                   # over every projected prediction, v̂(∅)'s included (which never walk
                   # up: every in-bag row shares the one cell of no variable)
                   "walked_up_share": float(terms.walked_up / max(
                       1, (stream.n_sets + 2)
                       * inputs.inbag.n_oob_trees.sum()))},
        )
