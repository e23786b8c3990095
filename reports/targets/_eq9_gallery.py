"""The forests of the gallery, refitted for Eq. 9 (Sutera et al. 2021) on ``sutera2021-examples``.

One representative forest per distinct forest spec and data setting of each page, with the
page's own spec, data set and seed, except the number of trees, capped at :data:`TREES`: Eq. 9
is an identity of each tree (see :mod:`harness.reports.targets._eq9`), so the cap sets how many
trees are checked, not what is checked, and it keeps the page's Eq. 9 section within its time
budget. Pages whose trees are not scikit-learn forests are listed in :data:`NOT_FORESTS` with
the reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from sklearn.ensemble import ExtraTreesClassifier, RandomForestRegressor

from harness.api import load_dataset
from harness.core.spec import parse_spec
from harness.core.types import Dataset
from harness.forest.models import fit_model
from harness.reports.targets import (
    _srs_experiment,
    _sutera,
    benard2022_shaff,
    benard2022_sobol_mda,
    geurts_masking,
    scornet_mda,
    scornet_mdi_bias,
)

#: trees per refitted forest at most (full, quick)
TREES = {False: 100, True: 10}
#: the representative training size of the Scornet pages (in both of their n grids)
SCORNET_N = {False: 1000, True: 100}
MDA_N = {False: 2000, True: 1200}

#: page -> why its trees are not checked here
NOT_FORESTS = {
    "louppe2013-led, louppe2013-theorems (paper-rule forests)": (
        "grow_multiway_forest keeps each tree's MDI, not the tree (multiway splits, no node "
        "impurities stored): there is no tree whose local MDI could be taken"),
    "geurts2016-srs (RS / SRS trees)": (
        "scikit-learn ExtraTrees on column subsets plus a permuted probe column; local MDI "
        "applies to each of them, but the method keeps no forest view and the probe's "
        "permutation is not stored, so they are not refitted here (the page's grid forest, "
        "which lends its criterion, is)"),
    "scornet-mdi-lemmas": (
        "cart_mdi grows its own CART level by level and keeps only the MDI sums, no tree"),
    "geurts-masking (MI bias, strong relevance), geurts-subspace-theory": (
        "exact expectations and formulas only, no forest is grown"),
}


@dataclass(frozen=True)
class Learned:
    """A fitted forest with its learning rows in fit order and their weights (or None)."""

    model: object
    X: np.ndarray
    y: np.ndarray
    weight: np.ndarray | None


@dataclass(frozen=True)
class GalleryForest:
    """One forest of the gallery: where it comes from and how to refit it."""

    pages: str
    dataset: str
    forest: str
    seed: int
    fit: Callable[[], Learned]


def capped(spec: str, quick: bool) -> str:
    """``spec`` with ``n_estimators`` at most :data:`TREES`."""
    trees = int(re.search(r"n_estimators=(\d+)", spec).group(1))
    return spec.replace(f"n_estimators={trees}", f"n_estimators={min(trees, TREES[quick])}")


@lru_cache(maxsize=2)
def _dataset(spec: str, seed: int) -> Dataset:
    name, grid = parse_spec(spec)
    return load_dataset(name, seed=seed, **{k: v[0] for k, v in grid.items()})


def _fit_spec(dataset: str, forest: str, seed: int) -> Learned:
    data = _dataset(dataset, seed)
    model = fit_model(forest, data, seed=seed)
    train = model.harness_fit_["train_index"]
    weight = None if data.sample_weight is None else data.sample_weight[train]
    return Learned(model, data.X[train], data.y[train], weight)


def spec_forest(pages: str, dataset: str, forest: str, seed: int = 0) -> GalleryForest:
    """A forest the runner grows: ``fit_model(forest, dataset loaded with seed, seed)``."""
    return GalleryForest(pages, dataset, forest, seed, lambda: _fit_spec(dataset, forest, seed))


def sutera_forests(quick: bool) -> list[GalleryForest]:
    """The Sutera pages' forests (fig1, fig2, fig3, table4), the Thm 2 replicates included."""
    def forest(k: int) -> str:
        return capped(_sutera.forest(k, quick), quick)

    forests = [spec_forest("sutera2021 fig1, fig2, fig3", "led", forest(k)) for k in range(1, 8)]
    forests += [spec_forest("sutera2021 fig3 (Thm 2 replicates)", "led", forest(1), seed)
                for seed in range(1, 16)]
    digits = [1, 8, 64] if quick else [1, 2, 4, 8, 16, 32, 64]
    forests += [spec_forest("sutera2021 fig2, fig3, table4", "digits", forest(k))
                for k in digits]
    forests += [spec_forest("sutera2021 table4", spec, forest(1))
                for spec in ("led[n_samples=200]", "iris", "wine", "breast_cancer")]
    return forests


def louppe_geurts_forests(quick: bool) -> list[GalleryForest]:
    """louppe2013-led (K = 1..7), louppe2013-theorems (LED + irrelevant bits), geurts-xor
    (three depths), geurts2016-srs (the grid's one-tree forest, every p of the protocol)."""
    trees = TREES[quick]
    et = f"extra_trees[n_estimators={trees},max_features={{k}},criterion=entropy,bootstrap=false"
    forests = [spec_forest("louppe2013-led", "led", et.format(k=k) + "]") for k in range(1, 8)]
    irrelevant = 8 if quick else 12
    forests.append(spec_forest("louppe2013-theorems", f"led[n_irrelevant={irrelevant}]",
                               et.format(k=1) + "]"))
    forests += [spec_forest("geurts-xor", "xor", et.format(k=1) + depth + "]")
                for depth in ("", ",max_depth=1", ",max_depth=2")]
    sizes = (480,) if quick else (480, 1480, 2980, 5480)
    forests += [spec_forest("geurts2016-srs (grid forest)",
                            f"madelon_like[n_irrelevant={k},n_samples={_srs_experiment.N_ROWS}]",
                            _srs_experiment.MODEL) for k in sizes]
    return forests


def _masking_fit(delta: float, n_irrelevant: int, k: int, trees: int) -> Learned:
    X, y, prob = geurts_masking.masking_population(delta, n_irrelevant)
    keep = prob > 0
    X, y, prob = X[keep].astype(float), y[keep], prob[keep]
    model = ExtraTreesClassifier(n_estimators=trees, criterion="entropy", max_features=k,
                                 bootstrap=False, random_state=int(1000 * delta) + k)
    return Learned(model.fit(X, y, sample_weight=prob), X, y, prob)


def masking_forests(quick: bool) -> list[GalleryForest]:
    """geurts-masking's forests (its ``forest_mdi``): every δ and (p, K) of the page."""
    trees = TREES[quick]
    return [GalleryForest(
        "geurts-masking", f"masking δ = {delta}, p = {2 + n_irr}",
        f"ExtraTreesClassifier(n_estimators={trees}, entropy, max_features={k}, "
        "bootstrap=False)", int(1000 * delta) + k,
        lambda d=delta, n=n_irr, k=k: _masking_fit(d, n, k, trees))
        for delta in geurts_masking.DELTAS for n_irr, k in ((0, 1), (0, 2), (1, 2))]


def scornet_forests(quick: bool) -> list[GalleryForest]:
    """scornet-mdi-bias (three tree kinds, σ² = 3 and 12) and scornet-mda (two forest
    readings on Friedman #1 and on the dependent inputs, ρ = 0.5 and 0.8): bootstrap."""
    n, trees = SCORNET_N[quick], TREES[quick]
    forests = [spec_forest("scornet-mdi-bias", scornet_mdi_bias.dataset_spec(n, noise),
                           scornet_mdi_bias.model_spec(n, kind, min(trees, 50)))
               for noise in (scornet_mdi_bias.BIAS_NOISE, scornet_mdi_bias.RANK_NOISE)
               for kind in scornet_mdi_bias.KINDS]
    n = MDA_N[quick]
    total = -(-4 * n // 3)  # the page's rows: the 0.25 held-out split leaves n to train
    datasets = [f"friedman1[n_samples={total},n_features={scornet_mda.P},"
                f"noise={scornet_mda.NOISE}]"]
    datasets += [f"sqrt_weights[n_samples={total},p={scornet_mda.DEP_P},rho={rho},"
                 f"noise_var={scornet_mda.DEP_NOISE}]" for rho in scornet_mda.DEP_RHOS]
    forests += [spec_forest("scornet-mda", data, spec.format(trees=trees,
                                                              leaves=scornet_mda.leaves(n)))
                for data in datasets for spec in scornet_mda.READINGS.values()]
    return forests + toy_forests(quick)


def _toy_fit(leaf: int, bootstrap: bool, trees: int) -> Learned:
    X = scornet_mda.TOY[["X1", "X2", "Xj", "Xp"]].to_numpy()
    y = scornet_mda.TOY["Y"].to_numpy()
    model = RandomForestRegressor(n_estimators=trees, min_samples_leaf=leaf,
                                  bootstrap=bootstrap, random_state=0)
    return Learned(model.fit(X, y), X, y, None)


def toy_forests(quick: bool) -> list[GalleryForest]:
    """scornet-mda's toy-table forests (five printed rows), seed 0 of its range."""
    trees = TREES[quick]
    return [GalleryForest("scornet-mda (toy)", "the slides' 5-row table",
                          f"RandomForestRegressor(n_estimators={trees}, min_samples_leaf="
                          f"{leaf}, bootstrap={bootstrap})", 0,
                          lambda leaf=leaf, b=bootstrap: _toy_fit(leaf, b, trees))
            for leaf in (1, 2) for bootstrap in (True, False)]


def _shaff_fit(setting, trees: int) -> Learned:
    data = setting.dataset(0)
    model = RandomForestRegressor(n_estimators=trees, max_features=0.33, min_samples_leaf=5,
                                  random_state=0)
    return Learned(model.fit(data.X, data.y), data.X, data.y, None)


def benard_forests(quick: bool) -> list[GalleryForest]:
    """benard2022-sobol-mda (the main and √p forests and the mtry / subsample sensitivity)
    and benard2022-shaff (every linear setting), seed 0: bootstrap, min_samples_leaf = 5."""
    trees = TREES[quick]
    mdi = benard2022_sobol_mda
    specs = [mdi.forest(trees, "0.33"), mdi.forest(trees, "sqrt")]
    specs += [mdi.forest(trees, features, samples) for _, features, samples in mdi.SENSITIVITY
              if (features, samples) not in (("0.33", None), ("sqrt", None))]
    forests = [spec_forest("benard2022-sobol-mda", mdi.DATASET, spec) for spec in specs]
    scale = benard2022_shaff.QUICK if quick else benard2022_shaff.FULL
    forests += [GalleryForest(
        "benard2022-shaff", f"linear_gaussian {setting.label}",
        f"RandomForestRegressor(n_estimators={trees}, max_features=0.33, min_samples_leaf=5)",
        0, lambda s=setting: _shaff_fit(s, trees)) for setting in scale.settings]
    return forests


def gallery_forests(quick: bool) -> list[GalleryForest]:
    """Every forest of the gallery that Eq. 9 is computed on (see the module docstring)."""
    return (sutera_forests(quick) + louppe_geurts_forests(quick) + masking_forests(quick)
            + scornet_forests(quick) + benard_forests(quick))
