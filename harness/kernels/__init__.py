"""Compiled walks over a fitted forest, grouped by family.

- :mod:`~harness.kernels.paths`: decision-path walks (local MDI, Saabas);
- :mod:`~harness.kernels.treeshap`: exact TreeSHAP, path-dependent and interventional;
- :mod:`~harness.kernels.sage`: coalition curves of tree SAGE and their per-forest tables;
- :mod:`~harness.kernels.reroute`: re-routing of permuted or projected rows (the three MDA,
  Sobol-MDA, SHAFF's subset projections);
- :mod:`~harness.kernels.debiased`: the node sums of MDI-oob and UFI.

numba's threading layer is the fork-safe work queue (:mod:`harness.core.threading_layer`,
imported by ``import harness`` and here, before any kernel module). Kernels never touch the
store, the runner or the CLI.
"""

import harness.core.threading_layer  # noqa: F401
