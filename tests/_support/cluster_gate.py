"""A method whose cells wait at a gate, for tests that break a Dask cluster mid-run.

Installed as a plugin through an entry point (tests/run/test_dask_cluster.py writes the
``*.dist-info`` folder), so that ``python -m harness compare -m cluster_gate`` finds it by
name and the ``dask worker`` processes import it by reference. A cell writes
``waiting-<pid>-<n>`` into the folder ``$HARNESS_TEST_GATE`` (its worker's process id) and
waits until the file ``open`` is there; then, and at once when the gate is open or no gate is
set, it returns the model's own impurity importances (the same numbers wherever it runs).
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

import numpy as np

from harness.core.method import Method

#: Seconds a cell waits at a closed gate at most (a test that died leaves no cell behind).
PATIENCE = 300.0
_SERIAL = itertools.count()


class ClusterGate(Method):
    name, scope, family = "cluster_gate", "global", "test"
    unit, explains = "impurity decrease", "the model's own feature_importances_"

    def _explain(self, model, data, rng):
        gate = os.environ.get("HARNESS_TEST_GATE")
        if gate and not (Path(gate) / "open").exists():
            marker = Path(gate) / f"waiting-{os.getpid()}-{next(_SERIAL)}"
            marker.write_text(str(os.getpid()))
            give_up = time.monotonic() + PATIENCE
            while not (Path(gate) / "open").exists() and time.monotonic() < give_up:
                time.sleep(0.02)
        return np.asarray(model.feature_importances_, dtype=float)
