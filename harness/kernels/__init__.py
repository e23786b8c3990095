"""Compiled walks over a fitted forest, grouped by family.

- :mod:`~harness.kernels.paths`: decision-path walks (local MDI, Saabas);
- :mod:`~harness.kernels.treeshap`: exact TreeSHAP, path-dependent and interventional;
- :mod:`~harness.kernels.sage`: coalition curves of tree SAGE and their per-forest tables;
- :mod:`~harness.kernels.reroute`: re-routing of permuted or projected rows (the three MDA,
  Sobol-MDA, SHAFF's subset projections);
- :mod:`~harness.kernels.debiased`: the node sums of MDI-oob and UFI.

One compiled copy per kernel: numba types a bare ``int`` or ``bool`` constant (``0``,
``True``, a module-level integer such as a stream number, a variable only ever assigned one)
as a literal, and compiles the kernel it is passed to once more for each value, with its
callees. Calls between kernels pass ``np.int64(0)``, ``np.bool_(True)`` instead, and the
arrays of one argument share a dtype: that took the compile of every method's kernels from
59 to 46-48 s of CPU (tree SAGE's, which walks Saabas's paths for both values of a flag, from
26.5 to 19-20 s), with the same bits and speed (Sobol-MDA's out-of-bag key walk, the one
call where a folded constant looked faster, ran at 1.27-1.65 s on Friedman #1 / RF 300 with a
literal and 1.31-1.59 s without). A copy kept on purpose would be marked
``# specialise: literal`` on the call's last line; ``tests/kernels/test_one_copy_per_kernel.py``
holds every other call to the rule.

numba's threading layer is the fork-safe work queue (:mod:`harness.core.threading_layer`,
imported by ``import harness`` and here, before any kernel module). Kernels never touch the
store, the runner or the CLI.
"""

import harness.core.threading_layer  # noqa: F401
