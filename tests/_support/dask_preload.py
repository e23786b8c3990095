"""Dask worker preload of tests/run/test_dask.py: a worker imports what its cells need first.

A fresh Dask worker would otherwise import the harness, the test methods and the compiled
kernels inside its first cell, which the per-cell timeout counts from submission: a second on
an idle machine, ten or more on a busy one. ``distributed.worker.preload`` runs this module in
every worker process (a nanny's replacement for a killed worker too) before it joins the
cluster, so a timeout in the tests measures the cell alone.
"""

from __future__ import annotations

import harness.run.executors.dask  # noqa: F401  (the worker side of a cell)
import tests.run.test_dask  # noqa: F401  (the test methods, unpickled by reference)
from harness.core import registry

for _name in ("mdi", "saabas"):  # the registered methods of the timed runs
    registry.get_method_class(_name).prepare()
