"""The OOB family against its theoretical targets (Bénard, Da Veiga, Scornet 2022).

Tolerances were derived from 12 seeds of the same setting (seeds 0-11, measured when these
tests were written) as |mean error| + 4 standard deviations over seeds, per feature:

===============  =======  =======  =======  =========
quantity           X1       X2       X3     X4, X5
===============  =======  =======  =======  =========
ST_j              0.640    0.160    0.040    0
sobol_mda - ST    0.027 ± 0.024  0.002 ± 0.014  -0.006 ± 0.004  -0.001 ± 0.001
bc / 2V - ST     -0.013 ± 0.025  -0.006 ± 0.013  -0.008 ± 0.004  0.000 ± 0.001
ik / V - ST      -0.010 ± 0.025  -0.007 ± 0.013  -0.008 ± 0.004  -0.001 ± 0.001
bc / ik - 2      -0.009 ± 0.008  0.014 ± 0.024  0.004 ± 0.076   (undefined)
===============  =======  =======  =======  =========
"""

from __future__ import annotations

import numpy as np
import pytest

import harness

ST_TOLERANCE = np.array([0.12, 0.06, 0.03, 0.01, 0.01])
RATIO_TOLERANCE = np.array([0.05, 0.12, 0.35])

INDEPENDENT = {"n_samples": 2000, "coef": (2.0, 1.0, 0.5, 0.0, 0.0), "noise": 1.0}
FOREST = {"forest": "random_forest", "n_estimators": 200, "max_features": "all",
          "min_samples_leaf": 5, "test_size": 0.01}


def _training_rows(dataset, model):
    rows = model.harness_fit_["train_index"]
    return dataset.X[rows], dataset.y[rows]


@pytest.mark.parametrize("seed", [0, 1])
def test_independent_linear_gaussian_matches_the_theoretical_limits(seed):
    dataset = harness.load_dataset("linear_gaussian", seed=seed, **INDEPENDENT)
    total = dataset.truth.quantities["sobol_total"].values
    var_y = dataset.truth.var_y
    np.testing.assert_allclose(total, [0.64, 0.16, 0.04, 0, 0])
    model = harness.fit_model(FOREST, dataset, seed=seed)
    X, y = _training_rows(dataset, model)
    sobol = harness.explain("sobol_mda", model, X, y, seed=seed).values
    bc = harness.explain("mda_bc", model, X, y, seed=seed).values
    ik = harness.explain("mda_ik", model, X, y, seed=seed).values
    assert np.all(np.abs(sobol - total) <= ST_TOLERANCE), sobol - total
    assert np.all(np.abs(bc / (2 * var_y) - total) <= ST_TOLERANCE), bc / (2 * var_y) - total
    assert np.all(np.abs(ik / var_y - total) <= ST_TOLERANCE), ik / var_y - total
    assert np.all(np.abs(bc[:3] / ik[:3] - 2) <= RATIO_TOLERANCE), bc[:3] / ik[:3]


def test_grouped_setting_sobol_mda_finds_the_active_variables_and_mda_bc_does_not():
    """The phenomenon of the slides' p = 200 table (seed 002, "Sobol-MDA Experiments").

    Five independent blocks of 40 Gaussians with correlation 0.9, one active variable per
    block. Sobol-MDA ranks X1, X41, X81, X121, X161 first; Breiman-Cutler MDA ranks the
    inactive partners of X1 (which share its block) ahead of the other actives. Measured on
    seeds 0-4 with this forest: Sobol-MDA's top 5 was exactly the active set every time;
    mda_bc's top 5 held 2 or 3 of them.
    """
    dataset = harness.load_dataset("linear_gaussian", seed=0, preset="benard2022")
    active = np.flatnonzero(dataset.truth.relevant)
    np.testing.assert_array_equal(active, [0, 40, 80, 120, 160])
    model = harness.fit_model({"forest": "random_forest", "n_estimators": 300,
                               "max_features": 0.5, "min_samples_leaf": 5,
                               "max_samples": 0.632, "test_size": 0.01}, dataset, seed=0)
    X, y = _training_rows(dataset, model)
    sobol = harness.explain("sobol_mda", model, X, y, seed=0).values
    bc = harness.explain("mda_bc", model, X, y, seed=0).values
    assert set(np.argsort(-sobol)[:5]) == set(active)
    assert len(set(np.argsort(-bc)[:5]) & set(active)) <= 3
