"""Compiled walks over a fitted forest, grouped by family.

- :mod:`~harness.kernels.paths`: decision-path walks (local MDI, Saabas);
- :mod:`~harness.kernels.treeshap`: exact TreeSHAP, path-dependent and interventional;
- :mod:`~harness.kernels.sage`: coalition curves of tree SAGE and their per-forest tables;
- :mod:`~harness.kernels.reroute`: re-routing of permuted or projected rows (the three MDA,
  Sobol-MDA, SHAFF's subset projections);
- :mod:`~harness.kernels.debiased`: the node sums of MDI-oob and UFI.

numba is configured here, once, before any kernel module is imported: the runner forks one
process per cell, and GNU OpenMP (numba's usual threading layer) aborts a forked child once
its parent has used it, so the fork-safe work queue is chosen unless the user set
``NUMBA_THREADING_LAYER`` themselves. Kernels never touch the store, the runner or the CLI.
"""

import os

import numba

if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"
