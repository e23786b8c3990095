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
arrays of one argument share a dtype. Measured in four interleaved pairs of one-worker
compiles of every method from an empty cache: 53.2-58.6 s of CPU before, 51.1-55.1 s after
(3.5 s less in three pairs, 0.8 s in one); Saabas's and local MDI's walks alone, which had
two copies of their lane walk for a flag, 9.2-12.8 -> 7.2-8.6 s. Most of a kernel's compile
is LLVM's optimisation of the one copy. The same bits and speed (Sobol-MDA's out-of-bag key
walk, the one call where a folded constant looked faster, ran at 1.27-1.65 s on Friedman #1 /
RF 300 with a literal and 1.31-1.59 s without). A copy kept on purpose would be marked
``# specialise: literal`` on the call's last line; ``tests/kernels/test_one_copy_per_kernel.py``
holds every other call to the rule.

numba's threading layer is the fork-safe work queue (:mod:`harness.core.threading_layer`,
imported by ``import harness`` and here, before any kernel module). Kernels never touch the
store, the runner or the CLI.
"""

import harness.core.threading_layer  # noqa: F401
