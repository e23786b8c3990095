"""Where SHAFF's p = 200 effects go, block by block, as the sample grows (issue 20).

The p = 200 design has five independent blocks of 40 inputs, so its exact game is additive
over the blocks: v(block 1) = v(blocks 2-5) = 0.45, v(all) = 0.9, and each block's Shapley
effects sum to its v. SHAFF's effects are summed by block, beside its v̂(all) (the
out-of-bag forest's explained share, Bénard et al. 2022, step 2) and the share of its
projected predictions that found no in-bag row in their cell and took a shallower level (the
Sobol-MDA reference rule). One forest per row, the page's (mtry = p/3, min_samples_leaf = 5)
over n, then one whose leaves grow with n, at fewer trees than the page's main run, since
SHAFF's cost grows with n.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from sklearn.ensemble import RandomForestRegressor

import harness

#: exact values of the p = 200 design (closed form)
EXACT = {"v(block 1)": 0.45, "v(blocks 2-5)": 0.45, "v(all)": 0.9}


#: the page's forest: mtry = p/3, leaves of at least 5 rows; the page's noise, 10 % of V[Y]
PAGE_MTRY, PAGE_MIN_SAMPLES_LEAF, PAGE_NOISE = 0.33, 5, 0.1


@dataclass(frozen=True)
class BlockRow:
    """SHAFF's effects by block, for one forest."""

    n: int
    n_trees: int
    min_samples_leaf: int
    mtry: str  # the share of the features tried at each split: "p/3" or "√p"
    depth: int
    v_all: float
    walked_up: float
    sum_block1: float
    sum_rest: float
    x1: float
    weak_signals: float
    shared_top5: int
    seconds: float
    noise_fraction: float = PAGE_NOISE  # the noise's share of V[Y] in the data
    design_std: float = 0.0  # the subset design's own error (SHAFF's two half designs)
    n_subsets: int = 0  # the sets SHAFF drew


#: the two readings of the unstated mtry (randomForest's regression default p/3, ranger's
#: √p), by their labels, as on the Sobol-MDA page
MTRY_READINGS = {"p/3": PAGE_MTRY, "√p": "sqrt"}


def page_forest(dataset, n_trees: int, seed: int,
                min_samples_leaf: int = PAGE_MIN_SAMPLES_LEAF,
                max_features: float | str = PAGE_MTRY, n_jobs: int | None = None
                ) -> RandomForestRegressor:
    """The page's forest, fitted on ``dataset`` (larger leaves for the by-block row whose
    leaves grow with n; other leaves and mtry for the exploratory runs)."""
    return RandomForestRegressor(n_estimators=n_trees, max_features=max_features,
                                 min_samples_leaf=min_samples_leaf, random_state=seed,
                                 n_jobs=n_jobs).fit(dataset.X, dataset.y)


def block_row(dataset, n_trees: int, seed: int,
              min_samples_leaf: int = PAGE_MIN_SAMPLES_LEAF, mtry: str = "p/3") -> BlockRow:
    """Fit the page's forest on ``dataset`` (5 equal blocks, the signals first in each), with
    leaves of at least ``min_samples_leaf`` rows and the ``mtry`` reading (a key of
    :data:`MTRY_READINGS`), and sum SHAFF's effects (its defaults) by block.

    A data set with another noise share than the page's (a noise-free response, ``Y = m(X)``)
    has its effects and v̂(all) put on the page's scale: they are fractions of its own V[Y] =
    V[m(X)] / (1 − noise), so they are multiplied by (1 − 0.1) / (1 − noise), and the page's
    exact values apply to every row."""
    if mtry not in MTRY_READINGS:
        raise ValueError(f"mtry must be one of {sorted(MTRY_READINGS)}; got {mtry!r}.")
    block = dataset.n_features // 5
    model = page_forest(dataset, n_trees, seed, min_samples_leaf,
                        max_features=MTRY_READINGS[mtry])
    start = time.perf_counter()
    result = harness.explain("shaff", model, dataset.X, dataset.y, seed=seed)
    seconds = time.perf_counter() - start
    noise = float(dataset.params["noise_fraction"])
    scale = (1.0 - PAGE_NOISE) / (1.0 - noise)
    values = scale * np.asarray(result.values)
    truth = dataset.truth.quantities["shapley_effect"].values
    signals = np.arange(block, dataset.n_features, block)
    shared = len(set(np.argsort(-values)[:5]) & set(np.argsort(-truth)[:5]))
    return BlockRow(n=dataset.n_samples, n_trees=n_trees, min_samples_leaf=min_samples_leaf,
                    mtry=mtry,
                    depth=max(tree.get_depth() for tree in model.estimators_),
                    v_all=scale * float(result.extra["explained_variance"]),
                    walked_up=float(result.extra["walked_up_share"]),
                    sum_block1=float(values[:block].sum()),
                    sum_rest=float(values[block:].sum()), x1=float(values[0]),
                    weak_signals=float(values[signals].mean()), shared_top5=shared,
                    seconds=seconds, noise_fraction=noise,
                    design_std=scale * float(result.extra["design_std"]),
                    n_subsets=int(result.extra["n_subsets_drawn"]))
